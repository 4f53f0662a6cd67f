"""DESIGN §1: dependencies point down only. Read every module's imports and check the layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "engram_ls"
ADAPTER_LIBS = ("pygls", "lsprotocol", "mcp")


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add("." * node.level + (node.module or ""))
    return found


def modules(sub: str) -> list[Path]:
    return sorted((PACKAGE / sub).rglob("*.py")) if (PACKAGE / sub).exists() else []


def _bad(found: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(m for m in found if any(m == p or m.startswith(p + ".") for p in prefixes))


@pytest.mark.parametrize("path", modules("core"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_imports_no_adapter(path: Path) -> None:
    found = imports_of(path)
    forbidden = (*ADAPTER_LIBS, "engram_ls.lsp", "engram_ls.mcp_server", "engram_ls.cli")
    assert _bad(found, forbidden) == [], f"{path.name} reaches up out of core"
    assert not any(m.startswith("..") for m in found if m.startswith(".")), "no relative escapes"


@pytest.mark.parametrize("path", modules("lsp"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_lsp_does_not_import_mcp(path: Path) -> None:
    assert _bad(imports_of(path), ("mcp", "engram_ls.mcp_server", "engram_ls.cli")) == []


@pytest.mark.parametrize("path", modules("mcp_server"), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_mcp_does_not_import_lsp(path: Path) -> None:
    assert _bad(imports_of(path), ("pygls", "lsprotocol", "engram_ls.lsp", "engram_ls.cli")) == []


def test_core_has_modules() -> None:
    """The check above must be looking at something."""
    names = {p.name for p in modules("core")}
    assert {"parse.py", "request.py", "sync.py", "vault.py"} <= names


def test_no_print_in_package() -> None:
    """stdout belongs to the protocols; the CLI writes through sys.stdout explicitly."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []


FEATURES = "engram_ls.lsp.features"


def _feature_modules() -> list[Path]:
    return [p for p in modules("lsp/features") if p.name != "__init__.py"]


def _imports_features(found: set[str]) -> list[str]:
    """Imports of the features package or any feature module (relative ones included)."""
    return sorted(m for m in found if m == FEATURES or m.startswith(FEATURES + ".") or m[:1] == ".")


@pytest.mark.parametrize("path", _feature_modules(), ids=lambda p: p.name)
def test_features_never_import_features(path: Path) -> None:
    """A feature module holds one concern; what features share lives in ``lsp/document.py``
    or ``lsp/convert.py``, and only ``features/__init__.py`` (the registry) knows them all."""
    assert _imports_features(imports_of(path)) == [], f"{path.name} reaches into another feature"


@pytest.mark.parametrize(
    "path",
    [p for p in modules("lsp") if p.parent.name != "features" and p.name != "server.py"],
    ids=lambda p: p.name,
)
def test_lsp_helpers_do_not_import_features(path: Path) -> None:
    """The shared LSP modules sit below the features (``server.py`` only calls the registry)."""
    assert _imports_features(imports_of(path)) == []


def test_features_are_found() -> None:
    assert {"links.py", "topics.py"} <= {p.name for p in _feature_modules()}


@pytest.mark.parametrize("path", modules("core/index"), ids=lambda p: p.name)
def test_index_never_imports_search(path: Path) -> None:
    """The index sits below the search service that plans queries over it."""
    found = imports_of(path)
    assert _bad(found, ("engram_ls.core.search",)) == [], f"{path.name} imports the search layer"
    assert not any(m.startswith("..") for m in found), "no relative imports out of the index"


ARCHITECTURE_DOC = PACKAGE.parent / "docs" / "architecture.md"


def test_every_module_is_named_in_the_layout_doc() -> None:
    """docs/architecture.md names every module, so the layout it describes is the real one."""
    text = ARCHITECTURE_DOC.read_text(encoding="utf-8")
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if path.name in ("__main__.py", "__init__.py") and rel != "lsp/features/__init__.py":
            continue  # entry points and package markers (the features' one registers methods)
        if f"`{rel}`" not in text:
            missing.append(rel)
    assert missing == [], f"docs/architecture.md does not name {missing}"


MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80
PARSER_BUILDERS = {"build_parser"}
"""Argument-parser construction is a declaration, exempt from the function length."""


@pytest.mark.parametrize("path", modules(""), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_and_functions_stay_small(path: Path) -> None:
    """No module over 700 lines and no function over 80 (argument-parser construction aside)."""
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") <= MAX_MODULE_LINES, f"{path.name} is over {MAX_MODULE_LINES} lines"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
        and node.name not in PARSER_BUILDERS
    ]
    assert long == [], f"{path.name}: functions over {MAX_FUNCTION_LINES} lines: {long}"

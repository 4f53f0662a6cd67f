"""The docs cannot drift from what Engram prints: every ``console`` example of README.md and
docs/*.md (a ``$ engram ...`` line and the output shown under it) is run on a copy of the example
vault, from its folder, and its whole output must be what the page shows, once timing figures,
index generations and times and the vault's own path are normalized (``normalize``). Every
``engram`` command of a ``sh`` example that names ``examples/vault`` must succeed. The JSON
examples of an ``engram/search`` exchange (docs/lsp.md) and of a task (docs/tasks.md) are what
``engram-ls`` and ``engram tasks --json`` answer.

After a deliberate change of the output, ``ENGRAM_UPDATE_DOCS=1 pytest
tests/test_docs_examples.py`` writes what the commands print into the console blocks (then read
the diff: it is what users will see)."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.conftest import ROOT, copy_tree
from tests.conftest import engram_in_process as engram

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHOWN_ROOT = "/home/me/notes"
"""The vault's folder as the pages show it."""
ENV = {"COLUMNS": "100", "NO_COLOR": None, "TERM": None, "ENGRAM_VAULT": None}
"""What a reader's terminal would be (the CLI cuts snippets to its width)."""
UPDATE = os.environ.get("ENGRAM_UPDATE_DOCS") == "1"

_BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)
_SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)
_NORMAL = [
    (re.compile(r"(, )\d+(?:\.\d+)? ms$", re.MULTILINE), r"\1N ms"),
    (re.compile(r'("elapsed_ms": )[0-9.]+'), r"\1N"),
    (re.compile(r'("generation": )\d+'), r"\1N"),
    (re.compile(r'("updated_at": )"[^"]*"'), r'\1"T"'),
    (re.compile(r'("today": )"\d{4}-\d{2}-\d{2}"'), r'\1"D"'),
    (re.compile(r'("commit": )"[0-9a-f]{40}"'), r'\1"C"'),
    (re.compile(r'("dirty": )(?:true|false)'), r"\1D"),
]


def normalize(text: str, root: Path | None = None) -> str:
    """Timing figures, generations, times, the day it ran, commits and the vault's own path made
    the same."""
    if root is not None:
        text = text.replace("file://" + quote(str(root)), "file://" + SHOWN_ROOT)
        text = text.replace(str(root), SHOWN_ROOT)
    for pattern, repl in _NORMAL:
        text = pattern.sub(repl, text)
    return text


def examples(page: Path) -> list[tuple[list[str], str]]:
    """(arguments, the output shown) of each console block of ``page``."""
    out = []
    for block in _BLOCK.findall(page.read_text(encoding="utf-8")):
        first, _, shown = block.partition("\n")
        assert first.startswith("$ engram "), f"{page.name}: {first}"
        out.append((shlex.split(first[2:])[1:], shown))
    return out


EXAMPLES = [(page, *example) for page in PAGES for example in examples(page)]


def test_the_pages_have_examples() -> None:
    counted = {page.name: len(examples(page)) for page in PAGES}
    for name in ("semantic.md", "queries.md", "tasks.md", "search.md"):
        assert counted[name] >= 4 if name != "search.md" else counted[name] >= 1, counted
    assert counted["cli.md"] >= 2, counted


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_tree(ROOT / "examples" / "vault", tmp_path_factory.mktemp("docs") / "vault")
    proc = engram("index", str(root))
    assert proc.returncode == 0 and "embedded 31 notes" in proc.stdout, proc.stdout + proc.stderr
    return root


@pytest.mark.parametrize(
    ("page", "args", "shown"),
    EXAMPLES,
    ids=[f"{p.name}: {' '.join(a)}" for p, a, _ in EXAMPLES],
)
def test_an_example_prints_what_the_page_shows(
    indexed: Path, page: Path, args: list[str], shown: str
) -> None:
    proc = engram(*args, cwd=indexed, env=ENV)
    assert proc.returncode == 0, proc.stderr
    printed = normalize(proc.stdout, indexed)
    if UPDATE and normalize(shown) != printed:
        as_shown = proc.stdout.replace("file://" + quote(str(indexed)), "file://" + SHOWN_ROOT)
        _rewrite(page, args, shown, as_shown.replace(str(indexed), SHOWN_ROOT))
    assert printed == normalize(shown)


def _rewrite(page: Path, args: list[str], shown: str, printed: str) -> None:
    text = page.read_text(encoding="utf-8")
    command = "$ engram " + shlex.join(args)
    for block in _BLOCK.findall(text):
        first, _, old = block.partition("\n")
        if first.startswith("$ engram ") and shlex.split(first[2:])[1:] == args and old == shown:
            text = text.replace(f"```console\n{block}```", f"```console\n{first}\n{printed}```", 1)
            break
    else:
        raise AssertionError(f"{page.name}: {command} not found to update")
    page.write_text(text, encoding="utf-8")


def _sh_commands() -> list[tuple[Path, list[str]]]:
    out = []
    for page in PAGES:
        for block in _SH_BLOCK.findall(page.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                command = line.split(" #", 1)[0].strip()
                if not command.startswith((".venv/bin/engram ", "engram ")):
                    continue
                words = shlex.split(command)
                if (
                    words
                    and words[0] in (".venv/bin/engram", "engram")
                    and any(w.startswith("examples/vault") for w in words)
                ):
                    out.append((page, words[1:]))
    return out


SH = _sh_commands()


def test_the_readme_runs_commands_on_the_example_vault() -> None:
    assert any(page.name == "README.md" for page, _ in SH), SH


@pytest.mark.parametrize(("page", "args"), SH, ids=[f"{p.name}: {' '.join(a)}" for p, a in SH])
def test_a_shell_example_runs(indexed: Path, page: Path, args: list[str]) -> None:
    named = [
        str(indexed) + a.removeprefix("examples/vault") if a.startswith("examples/vault") else a
        for a in args
    ]
    proc = engram(*named, cwd=indexed.parent, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()


def _json_blocks(page: str) -> list[Any]:
    """The JSON examples of a page that are whole JSON (not the ones eliding parts)."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    out = []
    for block in re.findall(r"```json\n(.*?)```", text, re.DOTALL):
        try:
            out.append(json.loads(block))
        except json.JSONDecodeError:
            continue
    return out


def test_the_task_example_is_a_task_of_the_example_vault(indexed: Path) -> None:
    (shown,) = [b for b in _json_blocks("tasks.md") if "state" in b and "path" in b]
    proc = engram("tasks", "--json", "--limit", "1000", cwd=indexed, env=ENV)
    assert proc.returncode == 0, proc.stderr
    tasks = json.loads(proc.stdout)["tasks"]
    (found,) = [t for t in tasks if (t["path"], t["line"]) == (shown["path"], shown["line"])]
    assert found == shown


async def test_the_lsp_search_exchange_is_what_engram_ls_answers(indexed: Path) -> None:
    from tests.lsp.conftest import lsp_session, request, wait_ready

    blocks = _json_blocks("lsp.md")
    ask = next(b for b in blocks if b.get("method") == "engram/search")
    shown = next(b for b in blocks if "result" in b and "results" in b["result"])
    async with lsp_session([indexed], "neovim") as client:
        await wait_ready(client)
        result = await request(client, "engram/search", ask["params"])
    answer = {"jsonrpc": "2.0", "id": ask["id"], "result": result}
    printed = normalize(json.dumps(answer, ensure_ascii=False, sort_keys=True), indexed)
    assert printed == normalize(json.dumps(shown, ensure_ascii=False, sort_keys=True))


async def test_the_lsp_related_example_is_what_engram_ls_answers(indexed: Path) -> None:
    from tests.lsp.conftest import lsp_session, request, wait_ready

    shown = next(b for b in _json_blocks("lsp.md") if "results" in b and "reasons" in str(b))
    note = indexed / "reference" / "profiling.md"  # the note the page names
    async with lsp_session([indexed], "neovim") as client:
        await wait_ready(client)
        await wait_embedded(client)
        result = await request(client, "engram/related", {"uri": note.as_uri(), "limit": 3})
    printed = normalize(json.dumps(result, ensure_ascii=False, sort_keys=True), indexed)
    expected = normalize(json.dumps(shown, ensure_ascii=False, sort_keys=True))
    if UPDATE and printed != expected:
        _rewrite_related(result, indexed)
    assert printed == expected


def _rewrite_related(result: dict[str, Any], root: Path) -> None:
    """The related example of docs/lsp.md, one hit a line, written from ``result``."""
    page = ROOT / "docs" / "lsp.md"
    text = page.read_text(encoding="utf-8")
    start = text.index('{"results": [\n')
    end = text.index("```", start)
    rows = [json.dumps(hit, ensure_ascii=False) for hit in result["results"]]
    block = '{"results": [\n' + ",\n".join(f"  {row}" for row in rows) + "\n]}\n"
    block = block.replace("file://" + quote(str(root)), "file://" + SHOWN_ROOT)
    page.write_text(text[:start] + block + text[end:], encoding="utf-8")


async def wait_embedded(client: Any) -> None:
    import asyncio

    from tests.lsp.conftest import request

    for _ in range(600):
        status = await request(client, "engram/status", {})
        semantic = status["vaults"][0]["semantic"]
        if semantic["state"] in ("ready", "unavailable", "failed", "off"):
            return
        await asyncio.sleep(0.05)

"""Hostile requests: property-based fuzzing of the FTS quoting helper and of every MCP tool's
arguments, and path traversal through every parameter that takes a path (LSP, MCP, CLI).

Already covered elsewhere (docs/reliability.md lists them): search requests
(tests/core/test_fuzz_search.py), the frontmatter and note parsers (tests/core/test_parse.py,
test_frontmatter.py) and raw JSON-RPC garbage (tests/lsp/test_lsp_malformed.py).
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from engram_ls.core.index.fts import parse_query, to_fts
from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server
from tests.conftest import DATA, copy_tree, engram_in_process
from tests.lsp.conftest import request, wait_ready
from tests.reliability.helpers import lsp_session
from tests.reliability.oracle import snapshot

FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ATOMS = st.sampled_from(
    ['"', "'", "*", "^", "(", ")", ":", "-", "+", "NEAR", "NEAR(", "AND", "OR", "NOT", "title:",
     "{title body}:", "\\", "\x00", "..", "/", "%", "_", "é", "\u200b", "🧠", "日本語", "ǅ", "ß",
     "ﬁ", "İ", "\ufeff", "\r\n", "--", "*)", '""', '"*"', "a*b"]
)  # fmt: skip
TEXT = st.lists(st.one_of(ATOMS, st.text(max_size=8)), max_size=10).map("".join)
TRAVERSALS = [
    "../outside/secret.md",
    "../../etc/passwd",
    "/etc/passwd",
    "a/../../outside/secret.md",
    "leak.md",
    "leakdir/secret.md",
    "..",
    "./../outside",
    "a\x00.md",
    "",
]
INSIDE_ODDITIES = ["%2e%2e/outside/secret.md", "..\\outside\\secret.md", "~/secret.md"]
"""Names that look like escapes but are ordinary names inside the vault on Linux."""
SECRET = "topsecretword"


# -- the FTS quoting helper -------------------------------------------------------------------


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE t USING fts5"
        " (title, body, tokenize = 'unicode61 remove_diacritics 2')"
    )
    conn.execute("INSERT INTO t VALUES ('near and or not', 'memory leak é 🧠 日本語 ß')")
    yield conn
    conn.close()


@FUZZ
@given(TEXT)
def test_fts_quoting_never_makes_an_sqlite_syntax_error(fts: sqlite3.Connection, q: str) -> None:
    expr = to_fts(parse_query(q))
    if expr:
        fts.execute("SELECT rowid FROM t WHERE t MATCH ?", (expr,)).fetchall()


# -- MCP tool arguments -----------------------------------------------------------------------

BAD_TEXT = st.sampled_from(["\ud800", "\udc00 x", "g\udcffo.md", "**/" * 40 + "x", "*a" * 30])
"""Lone surrogates (JSON ``"\\ud800"``), undecodable bytes as Python holds them
(surrogateescape) and globs that backtracked. Values only: the client cannot even encode a
lone surrogate in an object key."""
JSONISH = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=False),
        TEXT,
        BAD_TEXT,
    ),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
TOOL_ARGS = {
    "search_notes": [
        "query", "mode", "tags", "tags_mode", "date_from", "date_to", "path", "limit", "offset",
    ],
    "get_session_context": ["query", "session_id", "tags", "date_from", "date_to"],
    "read_note": ["path", "offset", "max_chars"],
    "list_topics": ["prefix", "limit"],
    "index_status": [],
    "write_note": ["path", "content", "overwrite"],
    "add_topics": ["path", "topics"],
}  # fmt: skip
ANSWERED = re.compile(r"ENGRAM_[A-Z_]+|validation error|rejected arguments")


def _make_vault(base: Path) -> Path:
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"---\ntags: [secret]\n---\n{SECRET}\n", "utf-8")
    root = copy_tree(DATA / "tags", base / "vault")
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "leakdir").symlink_to(outside)
    return root


@pytest.fixture(scope="module")
def mcp_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Engram]]:
    base = tmp_path_factory.mktemp("mcp-fuzz")
    root = _make_vault(base)
    engram = Engram(root)
    engram.open()
    engram.sync()
    yield root, engram
    engram.close()


def _args(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from(TOOL_ARGS[tool]) if TOOL_ARGS[tool] else st.nothing()
    values = st.one_of(JSONISH, BAD_TEXT, st.sampled_from(TRAVERSALS + INSIDE_ODDITIES))
    return st.dictionaries(st.one_of(keys, keys, TEXT), values, max_size=5)


async def _call_all(engram: Engram, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with Client(create_server(engram, allow_write=True)) as client:
        return [await client.call_tool(tool, args) for tool, args in calls]


@FUZZ
@given(st.lists(st.sampled_from(sorted(TOOL_ARGS)).flatmap(
    lambda tool: st.tuples(st.just(tool), _args(tool))), min_size=1, max_size=6))  # fmt: skip
@pytest.mark.slow
def test_mcp_tools_answer_any_arguments(
    mcp_vault: tuple[Path, Engram], calls: list[tuple[str, dict[str, Any]]]
) -> None:
    """Every call answers: a result, or a tool error naming an Engram code or the invalid
    argument; never a bare internal error; nothing outside the vault is read or written."""
    root, engram = mcp_vault
    outside = root.parent / "outside"
    before = snapshot(outside)
    results = asyncio.run(_call_all(engram, calls))
    for (tool, args), result in zip(calls, results, strict=True):
        text = " ".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            assert ANSWERED.search(text), (tool, args, text)
        assert SECRET not in text and SECRET not in json.dumps(result.structured_content or {})
    assert snapshot(outside) == before
    for path in root.rglob("*"):
        assert path.is_symlink() or path.resolve().is_relative_to(root.resolve())


# -- path traversal in every parameter that takes a path --------------------------------------


async def test_mcp_path_parameters_never_leave_the_vault(
    mcp_vault: tuple[Path, Engram],
) -> None:
    root, engram = mcp_vault
    outside = root.parent / "outside"
    before = snapshot(outside)
    async with Client(create_server(engram, allow_write=True)) as client:
        for bad in TRAVERSALS:
            for tool, args in [
                ("read_note", {"path": bad}),
                ("write_note", {"path": bad, "content": "x", "overwrite": True}),
                ("write_note", {"path": bad + "/x.md", "content": "x"}),
                ("add_topics", {"path": bad, "topics": ["owned"]}),
            ]:
                r = await client.call_tool(tool, args)
                assert r.is_error, (tool, bad)
                assert ANSWERED.search(r.content[0].text), r.content[0].text
            r = await client.call_tool("search_notes", {"query": SECRET, "path": bad})
            assert r.is_error or r.structured_content["total"] == 0, bad
        for odd in INSIDE_ODDITIES:
            r = await client.call_tool("write_note", {"path": odd, "content": "x"})
            if not r.is_error:  # a plain name inside the vault (hidden ones are refused)
                assert (root / odd).resolve().is_relative_to(root.resolve())
    assert snapshot(outside) == before


def _code(exc: Exception) -> str:
    data = getattr(exc, "data", None)
    return str(data.get("code", "")) if isinstance(data, dict) else ""


async def test_lsp_path_and_uri_never_leave_the_vault(tmp_path: Path) -> None:
    root = _make_vault(tmp_path)
    outside = tmp_path / "outside"
    async with lsp_session([root], "neovim") as client:
        await wait_ready(client)
        for bad in TRAVERSALS:
            try:
                res = await request(client, "engram/search", {"query": SECRET, "path": bad})
            except Exception as exc:  # an error answer
                assert _code(exc).startswith("ENGRAM_"), exc
            else:
                assert res["total"] == 0, bad
        for uri in [
            outside.as_uri(),
            (outside / "secret.md").as_uri(),
            root.as_uri() + "/../outside",
            "file:///etc/passwd",
            "http://example.com/x.md",
            "file://other-host/x.md",
            "not a uri",
        ]:
            try:
                res = await request(client, "engram/search", {"query": SECRET, "uri": uri})
            except Exception as exc:
                assert _code(exc) == "ENGRAM_OUTSIDE_VAULT", exc
            else:
                assert res["total"] == 0, uri
        res = await request(client, "engram/search", {"query": "", "tags": ["python"]})
        assert res["total"] == 3  # still serving


def test_cli_path_vault_and_index_parameters(tmp_path: Path) -> None:
    """In-process (no process behaviour is under test here; argv bytes are tested as a process)."""
    root = _make_vault(tmp_path)
    outside = tmp_path / "outside"
    before = snapshot(root)
    for bad in [b for b in TRAVERSALS + INSIDE_ODDITIES if "\x00" not in b]:  # argv: no NUL
        out = engram_in_process("search", SECRET, "--vault", str(root), "--path", bad, "--json")
        assert out.returncode in (0, 2), out.stderr
        if out.returncode == 0:
            assert json.loads(out.stdout)["total"] == 0, bad
        else:
            assert "ENGRAM_" in out.stderr
    out = engram_in_process("search", SECRET, "--vault", str(root / ".." / "missing"))
    assert out.returncode == 2 and "ENGRAM_NOT_FOUND" in out.stderr
    # An --index naming a note of the vault must never turn that note into a database (or
    # move it aside as a damaged index).
    for target in ("b-memory-lower.md", "leak.md"):
        out = engram_in_process(
            "search", "memory", "--vault", str(root), "--index", str(root / target)
        )
        assert out.returncode in (0, 2)
    (outside / "notes.sqlite").write_bytes(b"")
    assert snapshot(root) == before
    assert (outside / "secret.md").read_text("utf-8").endswith(f"{SECRET}\n")

"""Hostile content in a vault: binary and non-UTF-8 notes, a 50 MB note, 10,000 topics, a YAML
alias bomb, deep folders, symlink loops, symlinks out of the vault, a FIFO named like a note and
file names with spaces, quotes, a newline and emoji. Indexing finishes, equals a fresh build,
touches no file; every front end answers and none of them ever reads outside the vault.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from mcp import Client

from engram_ls.core.service import Engram
from engram_ls.lsp.convert import uri_to_path
from engram_ls.mcp_server.server import create_server
from tests.conftest import engram_in_process
from tests.lsp.conftest import search, wait_ready
from tests.reliability.helpers import engram_cli, lsp_session
from tests.reliability.oracle import assert_files_unchanged, assert_index_matches_vault, snapshot

SECRET = "topsecretword"
BIG_TAIL = "zebrafinale"
ODD_NAMES = {
    "with space.md": "oddspace",
    'it\'s "quoted".md': "oddquote",
    "new\nline.md": "oddnewline",
    "emoji 🧠 note.md": "oddemoji",
    "back\\slash.md": "oddbackslash",
    "percent %20 #hash.md": "oddpercent",
    "-e --pre=sh.md": "odddash",
    "ünïcödé/日本語 ノート.md": "oddunicode",
}
DEPTH = 60


def _bomb() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [{', '.join('*' + prev for _ in range(10))}]")
    return "---\n" + "\n".join(lines) + "\ntags: [bomb]\n---\nbody of the bomb oddbomb\n"


def build_hostile(root: Path, outside: Path) -> set[str]:
    """Write the hostile vault; returns the paths a correct index holds."""
    outside.mkdir(parents=True)
    (outside / "secret.md").write_text(f"---\ntags: [secret]\n---\n{SECRET}\n", "utf-8")
    root.mkdir(parents=True)
    expected: set[str] = set()

    def note(rel: str, data: bytes | str) -> None:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        expected.add(rel)

    note("plain.md", "---\ntags: [python]\n---\n# Plain\nA normal note.\n")
    note("binary.md", bytes(range(256)) * 64)
    note("latin1.md", "---\ntags: [latin]\n---\ncafé crème oddlatin\n".encode("latin-1"))
    note("bom-crlf.md", "\ufeff---\r\ntags: [crlf]\r\n---\r\n# CRLF oddcrlf\r\n")
    big = ["---\ntags: [big]\n---\n# Big\n"]
    line = "lorem ipsum dolor sit amet " * 4 + "\n"
    big.append(line * (50 * 1024 * 1024 // len(line)))
    big.append(f"{BIG_TAIL}\n")
    note("big.md", "".join(big))
    topics = ",".join(f"t{i}" for i in range(10_000))  # under the 64 KiB frontmatter cap
    note("many-topics.md", f"---\ntags: [{topics}]\n---\n# Topics galore\n")
    note("bomb.md", _bomb())
    note("/".join(f"d{i}" for i in range(DEPTH)) + "/deep.md", "---\ntags: [deep]\n---\noddd\n")
    for name, word in ODD_NAMES.items():
        note(name, f"---\ntags: [odd]\n---\n# {word}\n{word} lives here\n")
    # symlinks: loops, a link to a note inside (counts), links out (never followed)
    os.symlink(".", root / "loop")
    os.symlink("loop-b.md", root / "loop-a.md")
    os.symlink("loop-a.md", root / "loop-b.md")
    os.symlink("plain.md", root / "alias.md")
    expected.add("alias.md")
    os.symlink(outside / "secret.md", root / "leak.md")
    os.symlink(outside, root / "leakdir")
    os.symlink("../outside/secret.md", root / "relative-leak.md")
    os.mkfifo(root / "fifo.md")
    return expected


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, set[str]]]:
    base = tmp_path_factory.mktemp("hostile")
    root = base / "vault"
    expected = build_hostile(root, base / "outside")
    yield root, expected


def _no_secret(obj: Any) -> None:
    assert SECRET not in json.dumps(obj, ensure_ascii=False, default=str)


def test_core_indexes_everything_it_should(hostile: tuple[Path, set[str]], tmp_path: Path) -> None:
    root, expected = hostile
    before = snapshot(root)
    idx = tmp_path / "index.sqlite"
    engram = Engram(root, index_path=idx)
    engram.open()
    done = threading.Event()
    threading.Thread(target=lambda: (engram.sync(), done.set()), daemon=True).start()
    assert done.wait(120), "indexing the hostile vault did not finish"
    assert_index_matches_vault(idx, root, tmp_path)
    assert_files_unchanged(root, before)
    from tests.reliability.oracle import contents

    assert {row[0] for row in contents(idx)["notes"]} == expected
    assert [h.path for h in engram.search({"tags": ["big"]}).results] == ["big.md"]
    assert [h.path for h in engram.search({"tags": ["t9999"]}).results] == ["many-topics.md"]
    assert [t.name for t in engram.topics("t9999")] == ["t9999"]
    lit = engram.search({"query": BIG_TAIL, "mode": "literal"})
    assert [h.path for h in lit.results] == ["big.md"]
    assert [h.path for h in engram.search({"query": "oddbomb"}).results] == ["bomb.md"]
    codes = {(p["path"], p["code"]) for p in engram.problems()}
    assert any(path == "bomb.md" for path, _ in codes)
    assert any(path == "binary.md" for path, _ in codes)
    for mode in ("text", "literal", "regex"):
        res = engram.search({"query": SECRET, "mode": mode})
        assert res.total == 0, mode
    assert engram.search({"query": "", "tags": ["secret"]}).total == 0
    for name, word in ODD_NAMES.items():
        assert [h.path for h in engram.search({"query": word}).results] == [name]
    deep = engram.search({"tags": ["deep"]}).results
    assert [h.path.count("/") for h in deep] == [DEPTH]
    engram.close()


def test_cli_handles_odd_names_and_never_leaves(hostile: tuple[Path, set[str]]) -> None:
    root, _ = hostile
    idx = root.parent / "cli-index.sqlite"
    proc = engram_cli("index", str(root), "--index", str(idx))
    assert proc.returncode == 0, proc.stderr
    # the real process prints every odd name; the searches after it run in-process
    out = engram_cli("search", "--tag", "odd", "--vault", str(root), "--index", str(idx), "--json")
    assert out.returncode == 0, out.stderr
    assert sorted(r["path"] for r in json.loads(out.stdout)["results"]) == sorted(ODD_NAMES)
    for name, word in ODD_NAMES.items():
        out = engram_in_process("search", word, "--vault", str(root), "--index", str(idx), "--json")
        assert out.returncode == 0, out.stderr
        assert [r["path"] for r in json.loads(out.stdout)["results"]] == [name]
    for mode in ("text", "literal", "regex"):
        out = engram_in_process(
            "search", SECRET, "--mode", mode, "--vault", str(root), "--index", str(idx), "--json"
        )
        assert out.returncode == 0 and json.loads(out.stdout)["total"] == 0, out.stderr


async def test_language_server_handles_odd_names(hostile: tuple[Path, set[str]]) -> None:
    root, _ = hostile
    env = {"ENGRAM_INDEX": str(root.parent / "lsp-index.sqlite")}
    async with lsp_session([root], "neovim", env) as client:
        await wait_ready(client, timeout=120)
        for name, word in ODD_NAMES.items():
            res = await search(client, query=word)
            assert [r["path"] for r in res["results"]] == [name]
            assert uri_to_path(res["results"][0]["uri"]) == root / name
        for mode in ("text", "literal", "regex"):
            res = await search(client, query=SECRET, mode=mode)
            _no_secret(res)
            assert res["total"] == 0
        symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="odd"))
        _no_secret([s.name for s in symbols or []])
        assert symbols
        res = await search(client, query="", tags=["t1234"])
        assert [r["path"] for r in res["results"]] == ["many-topics.md"]


async def test_mcp_handles_odd_names_and_refuses_the_rest(hostile: tuple[Path, set[str]]) -> None:
    root, _ = hostile
    engram = Engram(root, index_path=root.parent / "mcp-index.sqlite")
    engram.open()
    engram.sync()
    async with Client(create_server(engram)) as client:
        for name, word in ODD_NAMES.items():
            r = await client.call_tool("search_notes", {"query": word})
            assert [h["path"] for h in r.structured_content["results"]] == [name]
            r = await client.call_tool("read_note", {"path": name})
            assert not r.is_error and word in r.content[0].text
        for path in ("leak.md", "relative-leak.md", "leakdir/secret.md", "fifo.md", "loop-a.md"):
            r = await client.call_tool("read_note", {"path": path})
            assert r.is_error, path
            _no_secret(r.content[0].text)
        r = await client.call_tool("read_note", {"path": "big.md", "max_chars": 100})
        assert not r.is_error and "more characters" in r.content[0].text
        r = await client.call_tool("list_topics", {"prefix": "t", "limit": 10_000})
        assert len(r.structured_content["topics"]) == 10_000
        r = await client.call_tool("get_session_context", {"query": SECRET})
        _no_secret(r.content[0].text)
    engram.close()

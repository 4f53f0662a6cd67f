"""Nothing outside the vault is ever read, written, moved or indexed (issue 13, items 1-3, 5
and the long-name part of 9), through the real front ends: the ``engram`` CLI process, the MCP
SDK client (in-process and over stdio against the real ``engram-mcp``), and the real
``engram-ls`` process over stdio (pytest-lsp).

The race tests swap a vault folder with a symlink to a folder outside, atomically
(``renameat2(RENAME_EXCHANGE)``) and without pause, in another process, while the front end
works on paths in that folder: whatever the timing, nothing outside may be written, read or
indexed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from mcp import Client, StdioServerParameters

from engram_ls.core.errors import InvalidRequest
from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server
from tests.lsp.conftest import request
from tests.reliability.helpers import engram_cli, lsp_session, save, until
from tests.reliability.oracle import assert_index_matches_vault, snapshot

OUTSIDE_WORD = "zanzibaroutside"
OUTSIDE_TOPIC = "outsidetopic"


def _note(text: str, topic: str = "inside") -> str:
    return f"---\ntags: [{topic}]\n---\n# Note\n\n{text}\n"


def make_vault(tmp_path: Path, outside_notes: int = 0) -> tuple[Path, Path]:
    """A vault with a few notes and a folder ``race/``, and a folder outside holding notes
    (``s.md``, ``n.md``, ``o0.md`` …) whose text and topic no answer may ever contain."""
    root = tmp_path / "vault"
    (root / ".engram").mkdir(parents=True)
    (root / "README.md").write_text(_note("the readme"), encoding="utf-8")
    (root / "folder").mkdir()
    (root / "folder" / "a.md").write_text(_note("a in folder"), encoding="utf-8")
    (root / "race").mkdir()
    (root / "race" / "s.md").write_text(_note("inside race text"), encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ["s.md", "n.md", *(f"o{i}.md" for i in range(outside_notes))]:
        (outside / name).write_text(_note(OUTSIDE_WORD, OUTSIDE_TOPIC), encoding="utf-8")
    return root, outside


def _libc_exchange() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    return getattr(libc, "renameat2", None)


SWAPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    names = [os.fsencode(p) for p in sys.argv[1:]]
    pairs = list(zip(names[::2], names[1::2]))
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    print("swapping", flush=True)
    while True:
        for a, b in pairs:
            if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
                raise OSError(ctypes.get_errno(), "renameat2")
    """
)


@contextlib.contextmanager
def swapping(root: Path, outside: Path, folders: Sequence[str] = ("race",)) -> Iterator[None]:
    """Keep exchanging each of ``folders`` (real folders of the vault) with a symlink to
    ``outside``, without pause, in another process, until the block ends; then the real
    folders are put back in place."""
    if sys.platform != "linux" or _libc_exchange() is None:
        pytest.skip("needs Linux renameat2 to swap a folder atomically")
    pairs = [(root / name, root / f".{name}-swap") for name in folders]
    args: list[str] = []
    for real, link in pairs:
        link.symlink_to(outside, target_is_directory=True)
        args += [str(real), str(link)]
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "swapping"
        yield
    finally:
        proc.kill()  # ours, by its pid
        proc.wait(timeout=10)
        for real, link in pairs:
            if real.is_symlink():  # stopped while swapped: exchange back
                os.rename(real, root / ".tmp-link")
                os.rename(link, real)
                os.rename(root / ".tmp-link", link)
            link.unlink()


def outside_unchanged(outside: Path, before: dict[str, bytes]) -> None:
    after = snapshot(outside)
    assert sorted(after) == sorted(before), (
        f"files appeared outside the vault: {sorted(set(after) - set(before))}"
    )
    assert after == before, "a file outside the vault was changed"


def indexed_paths(index_file: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{index_file}?mode=ro", uri=True, timeout=30)
    try:
        return {row[0] for row in conn.execute("SELECT path FROM notes")}
    finally:
        conn.close()


def fts_has(index_file: Path, word: str) -> int:
    conn = sqlite3.connect(f"file:{index_file}?mode=ro", uri=True, timeout=30)
    try:
        query = "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?"
        return int(conn.execute(query, (word,)).fetchone()[0])
    finally:
        conn.close()


# -- item 1: engram mv through a symlinked folder ----------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "relative"),
    [
        pytest.param("README.md", "outlink/R.md", False, id="note"),
        pytest.param("folder", "outlink/folder", False, id="folder"),
        pytest.param("README.md", "outlink/deep/new/R.md", True, id="relative-new-folders"),
    ],
)
def test_mv_never_moves_out_through_a_symlinked_folder(
    tmp_path: Path, old: str, new: str, relative: bool
) -> None:
    root, outside = make_vault(tmp_path)
    (root / "outlink").symlink_to(outside, target_is_directory=True)
    before_out, before_in = snapshot(outside), snapshot(root)
    assert engram_cli("index", str(root)).returncode == 0
    args = ["mv", old, new, *(["--relative"] if relative else [])]
    proc = engram_cli(*args, "--json", cwd=root)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "ENGRAM_OUTSIDE_VAULT" in proc.stderr
    outside_unchanged(outside, before_out)
    assert snapshot(root) == before_in  # nothing moved, no folder made, no link edited
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)
    assert {"README.md", "folder/a.md"} <= indexed_paths(root / ".engram" / "index.sqlite")


def test_mv_inside_the_vault_still_works(tmp_path: Path) -> None:
    root, _ = make_vault(tmp_path)
    assert engram_cli("index", str(root)).returncode == 0
    proc = engram_cli("mv", "folder", "moved/here", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert (root / "moved" / "here" / "a.md").is_file()
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)


# -- item 2: races between a check and the use of a path --------------------------------------

RACE_ROUNDS = 300


async def test_write_note_race_never_writes_outside(tmp_path: Path) -> None:
    root, outside = make_vault(tmp_path)
    before = snapshot(outside)
    engram = Engram(root)
    engram.open()
    engram.sync()
    ok: list[str] = []
    untyped: list[str] = []
    async with Client(create_server(engram, allow_write=True)) as client:
        with swapping(root, outside):
            for i in range(RACE_ROUNDS):
                rel = f"race/n{i}.md"
                r = await client.call_tool("write_note", {"path": rel, "content": f"w{i}\n"})
                if not r.is_error:
                    ok.append(rel)
                elif "ENGRAM_" not in r.content[0].text:
                    untyped.append(r.content[0].text)
    engram.close()
    outside_unchanged(outside, before)
    assert not untyped, f"errors without an Engram code: {untyped[:3]}"
    assert ok, "no write succeeded at all"
    for rel in ok:  # every write that answered OK is inside the vault
        assert (root / rel).read_text(encoding="utf-8") == f"w{rel[6:-3]}\n"
    assert not [p for p in snapshot(root) if p.endswith(".tmp")]


async def test_read_note_race_never_reads_outside(tmp_path: Path) -> None:
    root, outside = make_vault(tmp_path)
    engram = Engram(root)
    engram.open()
    engram.sync()
    answers = 0
    async with Client(create_server(engram)) as client:
        with swapping(root, outside):
            for _ in range(RACE_ROUNDS):
                r = await client.call_tool("read_note", {"path": "race/s.md"})
                text = r.content[0].text
                assert OUTSIDE_WORD not in text
                answers += not r.is_error
    engram.close()
    assert answers, "no read succeeded at all"


@pytest.mark.parametrize("mode", ["text", "semantic", "literal", "regex"])
def test_searches_race_never_fail_nor_answer_from_outside(tmp_path: Path, mode: str) -> None:
    """Searches of a page whose note lies in a folder swapped with a symlink to outside: each
    answers (the folder caught mid-swap is left out of that page, never an error from
    resolving its path) and never with an outside note. ``literal`` and ``regex`` scan the
    files with ripgrep, which opens them by path: where Linux has Landlock it is confined to
    the vault (``core/landlock.py``), else the race is open and the test is skipped."""
    if mode in ("literal", "regex"):
        from engram_ls.core import landlock

        if not landlock.available():
            pytest.skip("ripgrep is confined to the vault only where Linux has Landlock")
    root, outside = make_vault(tmp_path)
    for i in range(8):  # a page of several notes in the swapped folder
        (root / "race" / f"r{i}.md").write_text(_note(f"inside race text {i}"), encoding="utf-8")
        # outside, under the same names, the same words: what a scan through the swap reads
        text = f"inside race text {i} {OUTSIDE_WORD}"
        (outside / f"r{i}.md").write_text(_note(text), encoding="utf-8")
    engram = Engram(root)
    engram.open()
    engram.sync()
    if mode == "semantic":
        if not engram.status().capabilities.get("semantic"):
            pytest.skip("needs the semantic extra")
        engram.embed()
    answered = 0
    with swapping(root, outside):
        for _ in range(4 * RACE_ROUNDS):
            res = engram.search({"query": "inside race text", "mode": mode})
            assert not [h for h in res.results if OUTSIDE_WORD in h.snippet]
            answered += bool(res.results)
    engram.close()
    assert answered, "no search found the notes at all"


@pytest.mark.slow
def test_full_build_race_never_indexes_outside(tmp_path: Path) -> None:
    """Eight folders swapped at once: a walk that trusts a check made before the use enters
    one of them through its symlink in nearly every build (and then reads outside files)."""
    root, outside = make_vault(tmp_path, outside_notes=100)
    folders = ["race", *(f"race{i}" for i in range(1, 8))]
    for name in folders[1:]:
        (root / name).mkdir()
        (root / name / "s.md").write_text(_note("inside race text"), encoding="utf-8")
    idx = root / ".engram" / "index.sqlite"
    with swapping(root, outside, folders):
        for _ in range(8):
            proc = engram_cli("index", str(root), "--full")
            assert proc.returncode == 0, proc.stderr
            leaked = {p for p in indexed_paths(idx) if p.split("/")[-1].startswith("o")}
            assert not leaked, f"{len(leaked)} outside files indexed"
            assert fts_has(idx, OUTSIDE_WORD) == 0
            proc = engram_cli("search", OUTSIDE_WORD, "--vault", str(root), "--json")
            assert proc.returncode == 0, proc.stderr
            assert json.loads(proc.stdout)["total"] == 0


# -- item 3: a symlinked folder created while a server runs ------------------------------------


async def test_mcp_watcher_never_indexes_a_symlinked_folder(tmp_path: Path) -> None:
    root, _ = make_vault(tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root)]
    )
    async with Client(params) as client:
        r = await client.call_tool("search_notes", {"query": "readme"})
        assert r.structured_content["total"] == 1
        (root / "link").symlink_to(Path("..") / "outside", target_is_directory=True)
        (root / "after.md").write_text(_note("afterword"), encoding="utf-8")

        async def seen() -> bool:
            r = await client.call_tool("search_notes", {"query": "afterword"})
            return bool(r.structured_content["total"] == 1)

        await until(seen, timeout=20)
        await asyncio.sleep(0.5)  # let a later watcher batch land too
        r = await client.call_tool("search_notes", {"query": OUTSIDE_WORD})
        assert r.structured_content["total"] == 0, r.structured_content
        r = await client.call_tool("list_topics", {"prefix": "outside"})
        assert OUTSIDE_TOPIC not in json.dumps(r.structured_content or r.content[0].text)
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)


async def test_lsp_events_never_index_a_symlinked_folder(tmp_path: Path) -> None:
    root, _ = make_vault(tmp_path)
    (root / "ren.md").write_text(_note("to be renamed"), encoding="utf-8")
    async with lsp_session([root], preset="visual-studio-code") as client:
        await until(lambda: _ready(client))
        (root / "link").symlink_to(Path("..") / "outside", target_is_directory=True)
        o = root / "link" / "o.md"
        (root / "link" / "o.md").write_text(_note(OUTSIDE_WORD, OUTSIDE_TOPIC), encoding="utf-8")
        uri = o.as_uri()
        client.workspace_did_create_files(
            types.CreateFilesParams(
                files=[
                    types.FileCreate(uri=(root / "link").as_uri()),
                    types.FileCreate(uri=uri),
                ]
            )
        )
        save(client, o)
        os.rename(root / "ren.md", root / "link" / "ren.md")
        client.workspace_did_rename_files(
            types.RenameFilesParams(
                files=[
                    types.FileRename(
                        old_uri=(root / "ren.md").as_uri(),
                        new_uri=(root / "link" / "ren.md").as_uri(),
                    )
                ]
            )
        )
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=uri, type=types.FileChangeType.Created)]
            )
        )
        (root / "after.md").write_text(_note("afterword"), encoding="utf-8")
        save(client, root / "after.md")

        async def seen() -> bool:
            got = await request(client, "engram/search", {"query": "afterword"})
            return bool(got["total"] == 1)

        await until(seen, timeout=20)
        await asyncio.sleep(0.5)
        got = await request(client, "engram/search", {"query": OUTSIDE_WORD})
        assert got["total"] == 0, got
        got = await request(client, "engram/search", {"query": "renamed"})
        assert got["total"] == 0, got  # the renamed note left the vault
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=(root / "topic.md").as_uri(),
                    language_id="markdown",
                    version=1,
                    text="---\ntags: [outs\n---\n",
                )
            )
        )
        items = await asyncio.wait_for(
            client.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=(root / "topic.md").as_uri()),
                    position=types.Position(line=1, character=11),
                )
            ),
            30,
        )
        labels = [i.label for i in _items(items)]
        assert OUTSIDE_TOPIC not in labels, labels
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)


async def _ready(client: Any) -> bool:
    status = await request(client, "engram/status", {})
    return all(v["state"] == "ready" and not v["building"] for v in status["vaults"])


def _items(result: Any) -> list[types.CompletionItem]:
    if result is None:
        return []
    if isinstance(result, types.CompletionList):
        return list(result.items)
    return list(result)


# -- item 5: write_note keeps a note's mode -----------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


async def test_write_note_keeps_modes(tmp_path: Path, umask_022: None) -> None:
    root, _ = make_vault(tmp_path)
    existing = root / "folder" / "a.md"
    existing.chmod(0o640)
    engram = Engram(root)
    engram.open()
    engram.sync()
    async with Client(create_server(engram, allow_write=True)) as client:
        r = await client.call_tool("write_note", {"path": "new/fresh.md", "content": "new\n"})
        assert not r.is_error, r.content
        r = await client.call_tool(
            "write_note", {"path": "folder/a.md", "content": "replaced\n", "overwrite": True}
        )
        assert not r.is_error, r.content
    engram.close()
    assert stat.S_IMODE((root / "new" / "fresh.md").stat().st_mode) == 0o644
    assert stat.S_IMODE(existing.stat().st_mode) == 0o640
    assert existing.read_text(encoding="utf-8") == "replaced\n"


# -- item 9 (part): a name over 255 bytes -------------------------------------------------------


async def test_write_note_name_over_255_bytes_is_a_typed_error(tmp_path: Path) -> None:
    root, _ = make_vault(tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root), "--allow-write"]
    )
    async with Client(params) as client:
        for name in ["x" * 300 + ".md", "é" * 130 + ".md", "long" * 70 + "/n.md"]:
            r = await client.call_tool("write_note", {"path": name, "content": "x\n"})
            assert r.is_error
            assert "ENGRAM_INVALID_REQUEST" in r.content[0].text, r.content[0].text
        r = await client.call_tool("write_note", {"path": "ok.md", "content": "still here\n"})
        assert not r.is_error, r.content  # the server keeps serving
        r = await client.call_tool("search_notes", {"query": "still"})
        assert r.structured_content["total"] == 1


# -- a file name that is not UTF-8 ----------------------------------------------------------------


def test_a_name_that_is_not_utf8_is_no_note_and_breaks_nothing(tmp_path: Path) -> None:
    """A file (or a folder) named with bytes that are not UTF-8 is left out of the build and of
    a reconcile, which used to stop on it (the index holds paths as UTF-8), and writing a note
    at such a name is ENGRAM_INVALID_REQUEST, before anything is written."""
    root = tmp_path / "v"
    root.mkdir()
    (root / "ok.md").write_text("kept\n", "utf-8")
    base = os.fsencode(root)
    with open(base + b"/g\xffo.md", "wb") as fh:
        fh.write(b"bad name\n")
    os.mkdir(base + b"/d\xfe")
    with open(base + b"/d\xfe/inner.md", "wb") as fh:
        fh.write(b"bad folder\n")
    proc = engram_cli("index", str(root), "--no-semantic")
    assert proc.returncode == 0, proc.stderr
    with Engram(root, index_path=root / ".engram" / "index.sqlite") as engram:
        engram.sync()
        assert [h.path for h in engram.search({"query": "kept"}).results] == ["ok.md"]
        assert engram.search({"query": "bad"}).total == 0
        assert engram.status().notes == 1
        before = sorted(os.listdir(base))
        with pytest.raises(InvalidRequest):
            engram.write_note("n\udcffw.md", "x\n")
        assert sorted(os.listdir(base)) == before


def test_ripgrep_runs_unconfined_where_it_cannot_be_confined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the launcher threads cannot confine themselves (no Landlock, or a confined rg
    does not start), literal and regex searches answer as before, on the caller's thread; where
    they can, the answer is the same."""
    from engram_ls.core import landlock

    root, _ = make_vault(tmp_path)
    engram = Engram(root)
    engram.open()
    engram.sync()
    want = {
        mode: [h.path for h in engram.search({"query": "race text", "mode": mode}).results]
        for mode in ("literal", "regex")
    }
    assert want["literal"] == ["race/s.md"] == want["regex"]
    launchers = [c for (r, _), c in landlock._CONFINED.items() if r == str(root.resolve())]
    assert launchers and all(c.confined is landlock.available() for c in launchers)

    def refused(readable: list[tuple[str, int]]) -> None:
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(landlock, "restrict_thread", refused)
    monkeypatch.setattr(landlock, "_CONFINED", {})
    for mode in ("literal", "regex"):
        got = [h.path for h in engram.search({"query": "race text", "mode": mode}).results]
        assert got == want[mode]
    assert landlock._CONFINED, "the searches ran rg through a launcher"
    assert all(c.confined is False for c in landlock._CONFINED.values())
    engram.close()

"""Integrity: damage in the index is detected and never answered from, a -wal deleted under a
running server is recovered from, and a write tool never reports a failure for a note it wrote.

Each test runs the real parts: ``engram-mcp`` over stdio (the SDK's client), the ``engram`` CLI,
real index files damaged with random bytes, a real full disk (a tmpfs mounted by the test).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from engram_ls.core.service import Engram
from tests.lsp.conftest import request, wait_ready
from tests.reliability.helpers import PY, ROOT, engram_cli, grow, lsp_session, server_alive, until
from tests.reliability.oracle import assert_index_matches_vault

OFFSETS = (65_536, 3_000_000, 5_000_000)
"""Where 4 KiB of random bytes go: the issue's offsets. Not page-aligned except the first, so
each overwrites the end of one page and the header of the next (note rows, full-text segments
and their b-tree pages in a 2,000-note index of about 9 MB)."""
QUERIES: tuple[dict[str, Any], ...] = (
    {"query": "quokkafjord", "limit": 1000},
    {"query": "zephyrvault", "mode": "literal", "limit": 1000},
    {"query": "", "tags": ["cobol-migration"], "limit": 1000},
    {"query": "", "tags": ["sqlite"], "date_from": "2020-01-01", "limit": 1000},
)
"""Text and tag/date queries, each with an exact expected answer from a fresh build."""


@contextlib.asynccontextmanager
async def mcp_session(
    root: Path, *args: str, env: dict[str, str] | None = None, errlog: TextIO = sys.stderr
) -> AsyncIterator[Client]:
    """A real ``engram-mcp`` process on ``root`` (its stderr to ``errlog``)."""
    params = StdioServerParameters(
        command=PY,
        args=["-m", "engram_ls", "mcp", str(root), *args],
        env={**os.environ, **(env or {})},
        cwd=ROOT,
    )
    async with Client(stdio_client(params, errlog=errlog)) as client:
        yield client


async def tool(client: Client, name: str, args: dict[str, Any] | None = None) -> Any:
    result = await client.call_tool(name, args or {})
    assert not result.is_error, result.content
    return result.structured_content


def fill(disk: Path) -> None:
    """Take every free byte of a (small) disk with one file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)


# -- 13: a write tool on a full index disk ----------------------------------------------------


async def test_write_tools_report_the_write_when_the_index_disk_is_full(
    vault_copy: Callable[[str], Path], tmp_path: Path, tmpfs: Path
) -> None:
    """The index's disk is full, the vault's is not: ``write_note`` and ``add_topics`` write
    the note and say so (``indexed: false`` and a warning that the index will catch up), never
    ``ENGRAM_INDEX_UNAVAILABLE``; searches find the new note meanwhile (by scanning); once
    there is room again the server catches up by itself and the index equals a fresh build."""
    root = vault_copy("tags")
    idx = tmpfs / "index.sqlite"
    content = "---\ntags: [fulldisk]\n---\n# Written on a full disk\n"
    async with mcp_session(root, "--allow-write", env={"ENGRAM_INDEX": str(idx)}) as client:
        assert (await tool(client, "index_status"))["state"] == "ready"
        fill(tmpfs)

        written = await tool(client, "write_note", {"path": "full/new.md", "content": content})
        assert written["path"] == "full/new.md"
        assert written["indexed"] is False, written
        assert "catch up" in written["warning"]
        assert (root / "full" / "new.md").read_text(encoding="utf-8") == content

        before = (root / "e-python.md").read_bytes()
        added = await tool(client, "add_topics", {"path": "e-python.md", "topics": ["fulldisk"]})
        assert added["changed"] is True and "fulldisk" in added["topics"], added
        assert added["indexed"] is False and "catch up" in added["warning"]
        assert (root / "e-python.md").read_bytes() != before

        found = await tool(client, "search_notes", {"tags": ["fulldisk"]})
        assert found["index"]["served_by"] == "scan"
        assert sorted(h["path"] for h in found["results"]) == ["e-python.md", "full/new.md"]

        grow(tmpfs)  # room again (the WAL alone outgrows the 512 KiB before a checkpoint)

        async def caught_up() -> bool:
            res = await tool(client, "search_notes", {"tags": ["fulldisk"]})
            return res["index"]["served_by"] == "index" and res["total"] == 2

        await until(caught_up, timeout=60)
        assert (await tool(client, "index_status"))["state"] == "ready"
        again = await tool(client, "write_note", {"path": "after.md", "content": "# After\n"})
        assert again["indexed"] is True and again["warning"] is None
    assert_index_matches_vault(idx, root, tmp_path)


# -- 11: damage in the middle of the index ----------------------------------------------------


def _damage(index: Path, offset: int) -> int:
    """4 KiB of random bytes at ``offset`` of the main file, after a checkpoint (so that the
    pages damaged are the ones read, not newer copies in the -wal); returns the damaged file's
    inode. A server checking often may move the file aside at once: then SQLite's own check of
    the damage is left out, the server having seen it."""
    conn = sqlite3.connect(f"file:{index}?mode=rw", uri=True, timeout=30)  # never made anew
    try:
        assert conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
        offset = _on_a_btree_page(conn, offset)
    finally:
        conn.close()
    assert index.stat().st_size > offset + 4096
    with open(index, "r+b") as fh:
        fh.seek(offset)
        fh.write(os.urandom(4096))
        damaged = os.fstat(fh.fileno()).st_ino
    found: str | None = None
    with contextlib.suppress(sqlite3.OperationalError):  # moved aside before it was opened
        conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
        try:
            found = conn.execute("PRAGMA integrity_check").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            found = str(exc)
        finally:
            conn.close()
    with contextlib.suppress(FileNotFoundError):
        if index.stat().st_ino == damaged:  # still there: SQLite itself must see the damage
            assert found is not None and found != "ok", "the damage went unnoticed by SQLite"
    return damaged


def _on_a_btree_page(conn: sqlite3.Connection, offset: int) -> int:
    """``offset``, or as many whole pages further as it takes for the page whose start the 4 KiB
    overwrite (the page there, or for an unaligned offset the next one) to be a b-tree page: a
    free page's bytes are no one's, and no reader could notice them (where the free pages fall
    moves with every change of the schema)."""
    size = int(conn.execute("PRAGMA page_size").fetchone()[0])
    hit = offset // size + (1 if offset % size == 0 else 2)  # 1-based page number
    used = {
        int(r[0])
        for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE pagetype IN ('internal', 'leaf') AND pageno >= ?",
            (hit,),
        )
    }
    assert used, "no b-tree page at or after the offset"
    return offset + (min(used) - hit) * size


def _intact(index: Path) -> bool:
    """``PRAGMA integrity_check`` of the file (with its -wal) says ok."""
    conn = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
    try:
        return bool(conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok")
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def _answers(hits: list[Any]) -> list[tuple[str, int]]:
    return sorted((h["path"], h["line"]) if isinstance(h, dict) else (h.path, h.line) for h in hits)


def _expected(root: Path, tmp_path: Path) -> list[list[tuple[str, int]]]:
    """The answers of a fresh build of the vault (path and line of every hit)."""
    with Engram(root, index_path=tmp_path / "reference.sqlite") as ref:
        ref.sync(workers=1)
        want = [_answers(ref.search(q).results) for q in QUERIES]
    assert all(want), want
    return want


def _copies(index: Path) -> list[Path]:
    return [
        p
        for p in index.parent.iterdir()
        if p.name.startswith(index.name + ".corrupt-") and not p.name.endswith(("-wal", "-shm"))
    ]


@pytest.mark.slow
def test_damage_in_the_middle_is_found_and_rebuilt_by_the_cli(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    """Random bytes in the middle of the index (three offsets, one after the other): the CLI
    never answers from the damaged file (a search right after the damage gives the fresh
    build's paths and lines), ``engram index`` moves it aside and re-parses every note, the
    index then equals a fresh build, status names the one copy kept, and repeated damage
    leaves exactly one ``.corrupt`` copy."""
    root = generated(2000)
    idx = root / ".engram" / "index.sqlite"
    want = _expected(root, tmp_path)
    assert engram_cli("index", str(root)).returncode == 0
    for offset in OFFSETS:
        _damage(idx, offset)
        for q, expected in zip(QUERIES, want, strict=True):
            args = ["search", q["query"], "--vault", str(root), "--json", "--limit", "1000"]
            if "mode" in q:
                args += ["--mode", q["mode"]]
            for tag in q.get("tags", []):
                args += ["--tag", tag]
            if "date_from" in q:
                args += ["--from", q["date_from"]]
            res = engram_cli(*args)
            assert res.returncode == 0, res.stderr
            assert _answers(json.loads(res.stdout)["results"]) == expected, (offset, q)
        _damage(idx, offset)  # the search rebuilt it: damage the new file too
        done = engram_cli("index", str(root), "--json")
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["sync"]["parsed"] == 2000, report["sync"]
        assert "corrupt" in done.stderr, done.stderr
        moved = report["status"]["moved_aside"]
        assert moved["reason"] == "corrupt" and moved["detail"], moved
        assert [str(p) for p in _copies(idx)] == [moved["path"]]
        assert_index_matches_vault(idx, root, tmp_path)
    status = engram_cli("status", str(root), "--json")
    assert json.loads(status.stdout)["moved_aside"]["path"] == str(_copies(idx)[0])


@pytest.mark.slow
def test_damage_found_by_the_check_means_scan_until_rebuilt(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    """The service's check finds damage that no query has met: from then on status is not
    ``ready`` and searches are answered by scanning with the fresh build's answers, until the
    catch-up has rebuilt the index (then served by it, equal to a fresh build)."""
    root = generated(2000)
    idx = root / ".engram" / "index.sqlite"
    want = _expected(root, tmp_path)
    with Engram(root) as engram:
        engram.sync(workers=1)
        _damage(idx, OFFSETS[1])
        found = engram.verify()
        assert found is not None and found[0] == "corrupt", found
        assert engram.status().state != "ready"
        for q, expected in zip(QUERIES, want, strict=True):
            res = engram.search(q)
            assert res.index.served_by == "scan", res.index
            assert _answers(res.results) == expected
        assert engram.catch_up() is not None
        st = engram.status()
        assert st.state == "ready" and st.moved_aside is not None
        assert st.moved_aside["reason"] == "corrupt"
        for q, expected in zip(QUERIES, want, strict=True):
            res = engram.search(q)
            assert res.index.served_by == _served(q) and _answers(res.results) == expected
    assert_index_matches_vault(idx, root, tmp_path)


def _served(q: dict[str, Any]) -> str:
    """What answers ``q`` from a sound index: a literal query scans without the trigram index
    (off by default)."""
    return "scan" if q.get("mode") == "literal" else "index"


Status = Callable[[], Awaitable[dict[str, Any]]]
Search = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


def _checked_vault(generated: Callable[..., Path]) -> Path:
    """A 2,000-note vault, indexed by the CLI, whose servers check their index every 0.5 s."""
    root = generated(2000)
    (root / ".engram").mkdir()
    (root / ".engram" / "config.yaml").write_text(
        "limits:\n  check_interval_s: 0.5\n", encoding="utf-8"
    )
    assert engram_cli("index", str(root)).returncode == 0
    return root


async def _damage_found_and_rebuilt(
    root: Path, want: list[list[tuple[str, int]]], status: Status, search: Search
) -> None:
    """Damage the index of a running server twice; each time the server must find it by
    itself (status names a new moved-aside copy), answer every search from then on as a fresh
    build does (scanning until rebuilt), rebuild by itself, and keep one copy only."""
    idx = root / ".engram" / "index.sqlite"
    seen: set[str] = set()
    for offset in OFFSETS[1:]:
        damaged = _damage(idx, offset)

        async def moved(offset: int = offset, damaged: int = damaged) -> Any:
            path = ((await status()).get("moved_aside") or {}).get("path")
            if path and path not in seen:
                return path
            # A late write of the server's checkpointed over the damaged pages: damage again,
            # unless the server has just replaced the file (its status names it next).
            with contextlib.suppress(FileNotFoundError, sqlite3.OperationalError):
                if idx.stat().st_ino == damaged and _intact(idx):
                    _damage(idx, offset)
            return None

        seen.add(await until(moved, timeout=30))
        deadline = time.monotonic() + 60
        while True:
            for q, expected in zip(QUERIES, want, strict=True):
                res = await search(q)
                assert _answers(res["results"]) == expected, (offset, q, res["index"])
            st = await status()
            if st["state"] == "ready" and res["index"]["served_by"] == "index":
                break
            assert time.monotonic() < deadline, st
            await asyncio.sleep(0.1)
        assert [str(p) for p in _copies(idx)] == [st["moved_aside"]["path"]]


@pytest.mark.slow
async def test_damage_under_a_running_mcp_server_is_found_and_rebuilt(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    """engram-mcp checks its index in the background (here every 0.5 s): random bytes written
    into the file under it are found without any query meeting them, said at WARNING, the file
    moved aside (``index_status`` names it), every search from then on is right (scanning until
    the rebuild), the server rebuilds by itself, and damage again leaves one copy."""
    root = _checked_vault(generated)
    want = _expected(root, tmp_path)
    log_file = tmp_path / "mcp.stderr"
    with open(log_file, "w", encoding="utf-8") as errlog:
        async with mcp_session(root, errlog=errlog) as client:
            assert (await tool(client, "index_status"))["state"] == "ready"

            async def status() -> dict[str, Any]:
                st: dict[str, Any] = await tool(client, "index_status")
                return st

            async def search(q: dict[str, Any]) -> dict[str, Any]:
                res: dict[str, Any] = await tool(client, "search_notes", q)
                return res

            await _damage_found_and_rebuilt(root, want, status, search)
    assert "WARNING" in log_file.read_text(encoding="utf-8")
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)


@pytest.mark.slow
async def test_damage_under_a_running_language_server_is_found_and_rebuilt(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    """The same under engram-ls: ``engram/status`` names the moved-aside copy, every
    ``engram/search`` from then on is right, and the server rebuilds by itself."""
    root = _checked_vault(generated)
    want = _expected(root, tmp_path)
    async with lsp_session([root], "neovim") as client:
        await wait_ready(client, timeout=60)

        async def status() -> dict[str, Any]:
            st: dict[str, Any] = (await request(client, "engram/status", {}))["vaults"][0]
            return st

        async def search(q: dict[str, Any]) -> dict[str, Any]:
            res: dict[str, Any] = await request(client, "engram/search", q)
            return res

        await _damage_found_and_rebuilt(root, want, status, search)
        assert server_alive(client)
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)


# -- 12: the -wal deleted under engram-mcp ----------------------------------------------------


async def test_deleted_wal_under_a_running_server_recovers(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    """``index.sqlite-wal`` is deleted while engram-mcp runs (after writes, with more writes
    and searches in new threads after it): the server says so at WARNING on stderr, recovers
    within the retry back-off (a few seconds, not minutes), answers right throughout, and the
    index ends equal to a fresh build."""
    root = generated(300)
    idx = root / ".engram" / "index.sqlite"
    log_file = tmp_path / "mcp.stderr"
    note = "---\ntags: [wal-test]\n---\n# Written {i}\n"
    with open(log_file, "w", encoding="utf-8") as errlog:
        async with mcp_session(root, "--allow-write", errlog=errlog) as client:
            assert (await tool(client, "index_status"))["state"] == "ready"
            for i in range(3):
                await tool(client, "write_note", {"path": f"w{i}.md", "content": note.format(i=i)})
            wal = Path(f"{idx}-wal")
            assert wal.exists()
            wal.unlink()
            t0 = time.monotonic()
            for i in range(3, 6):
                await tool(client, "write_note", {"path": f"w{i}.md", "content": note.format(i=i)})
            (root / "w6.md").write_text(note.format(i=6), encoding="utf-8")
            query = {"query": "", "tags": ["wal-test"], "limit": 100}
            answers = await asyncio.gather(*(tool(client, "search_notes", query) for _ in range(8)))
            assert all(a["total"] >= 6 for a in answers), [a["total"] for a in answers]

            async def recovered() -> bool:
                st = await tool(client, "index_status")
                res = await tool(client, "search_notes", query)
                assert res["total"] >= 6, res
                return bool(
                    st["state"] == "ready"
                    and res["index"]["served_by"] == "index"
                    and res["total"] == 7
                )

            await until(recovered, timeout=20)
            took = time.monotonic() - t0
    stderr = log_file.read_text(encoding="utf-8")
    assert "WARNING" in stderr and "wal-lost" in stderr, stderr[-2000:]
    assert took < 20
    assert_index_matches_vault(idx, root, tmp_path)


def test_deleted_wal_is_noticed_by_the_connection_that_wrote_to_it(
    generated: Callable[..., Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The -wal deleted between two writes of one thread (whose connection keeps writing to the
    deleted file, where no other connection, and no later process, would see the writes): the
    next write notices it, says so at WARNING, and the index is rebuilt from the notes; reads
    of that thread notice it too. Nothing written is lost."""
    root = generated(120)
    idx = root / ".engram" / "index.sqlite"
    note = "---\ntags: [wal-test]\n---\n# Written {i}\n"
    query = {"query": "", "tags": ["wal-test"], "limit": 100}
    with Engram(root) as engram:
        engram.sync(workers=1)
        engram.write_note("w0.md", note.format(i=0))
        Path(f"{idx}-wal").unlink()
        with caplog.at_level("WARNING"):
            engram.write_note("w1.md", note.format(i=1))
        assert any("wal-lost" in r.getMessage() for r in caplog.records), caplog.text
        assert engram.status().moved_aside["reason"] == "wal-lost"  # type: ignore[index]
        assert engram.search(query).total == 2
        caplog.clear()
        Path(f"{idx}-wal").unlink()
        with caplog.at_level("WARNING"):
            res = engram.search(query)
        assert any("wal-lost" in r.getMessage() for r in caplog.records), caplog.text
        assert res.total == 2 and res.index.served_by == "scan"
        assert engram.catch_up() is not None
        assert engram.search(query).index.served_by == "index"
    with Engram(root) as engram:  # a later process sees every write
        assert engram.search(query).total == 2
    assert_index_matches_vault(idx, root, tmp_path)


def test_a_read_only_reader_outlives_the_writers_wal(generated: Callable[..., Path]) -> None:
    """A read-only reader (``engram search --no-sync`` beside a server), opened while no writer
    was there, keeps answering from the index while a writer comes, writes and goes (SQLite
    deletes the writer's -wal as it closes): that is no damage."""
    root = generated(60)
    idx = root / ".engram" / "index.sqlite"
    query = {"query": "", "date_from": "1900-01-01", "limit": 100}
    with Engram(root) as first:
        first.sync(workers=1)
    assert not Path(f"{idx}-wal").exists()
    with Engram(root, read_only=True) as reader:
        dated = reader.search(query).total
        assert dated > 0
        with Engram(root) as writer:
            writer.write_note("new.md", "---\ntags: [x]\n---\n# New\n")
            assert Path(f"{idx}-wal").exists()
            assert reader.search(query).index.served_by == "index"
        assert not Path(f"{idx}-wal").exists()
        res = reader.search(query)
        assert res.index.served_by == "index" and res.index.state == "ready", res.index
        assert res.total == dated
        assert reader.status().moved_aside is None

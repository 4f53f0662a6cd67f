"""Integrity: damage in the index is detected and never answered from, a -wal deleted under a
running server is recovered from, and a write tool never reports a failure for a note it wrote.

Each test runs the real parts: ``engram-mcp`` over stdio (the SDK's client), the ``engram`` CLI,
real index files damaged with random bytes, a real full disk (a tmpfs mounted by the test).
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TextIO

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.reliability.helpers import PY, ROOT, grow, until
from tests.reliability.oracle import assert_index_matches_vault


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

        grow(tmpfs)  # room again (the WAL alone outgrows the 256 KiB before a checkpoint)

        async def caught_up() -> bool:
            res = await tool(client, "search_notes", {"tags": ["fulldisk"]})
            return res["index"]["served_by"] == "index" and res["total"] == 2

        await until(caught_up, timeout=60)
        assert (await tool(client, "index_status"))["state"] == "ready"
        again = await tool(client, "write_note", {"path": "after.md", "content": "# After\n"})
        assert again["indexed"] is True and again["warning"] is None
    assert_index_matches_vault(idx, root, tmp_path)

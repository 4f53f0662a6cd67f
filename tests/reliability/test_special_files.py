"""A FIFO or a character device where a note was (issue 13 item 7, issue 14 item 3): every entry
point that reads a note goes through the vault's one reader, which refuses anything but a
regular file and caps what it reads, so nothing hangs on a FIFO or reads a device forever.

Each entry point is driven through its real front end (``engram-mcp`` over stdio, the real
``engram-ls`` process), with a timeout so that a hang fails the test instead of stalling it.
The device is ``/dev/zero``'s numbers (1, 5) made with ``mknod``, which needs root.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from mcp import Client, StdioServerParameters

from tests.lsp.conftest import request
from tests.reliability.helpers import IS_ROOT, lsp_session, until
from tests.reliability.oracle import snapshot

TIMEOUT = 20.0
"""Seconds an answer may take before the entry point counts as hung."""


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero_device(path: Path) -> None:
    if not IS_ROOT:
        pytest.skip("needs root to make a character device")
    try:
        os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("making a character device is not permitted here")


SPECIALS = [
    pytest.param(_fifo, id="fifo"),
    pytest.param(_zero_device, id="char-device"),
]


def make_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / ".engram").mkdir(parents=True)
    (root / "a.md").write_text("---\ntags: [a]\n---\n# A\n\nSee [[b]].\n", encoding="utf-8")
    (root / "b.md").write_text("---\ntags: [b]\n---\n# B\n\nthe b note\n", encoding="utf-8")
    return root


def mcp_params(root: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root), "--no-watch", *extra]
    )


@pytest.mark.parametrize("make", SPECIALS)
async def test_mcp_add_topics_refuses_a_special_file(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    root = make_vault(tmp_path)
    make(root / "x.md")
    async with Client(mcp_params(root, "--allow-write")) as client:
        r = await asyncio.wait_for(
            client.call_tool("add_topics", {"path": "x.md", "topics": ["t"]}), TIMEOUT
        )
        assert r.is_error
        assert "ENGRAM_INVALID_REQUEST" in r.content[0].text, r.content[0].text
        r = await asyncio.wait_for(
            client.call_tool("add_topics", {"path": "b.md", "topics": ["t"]}), TIMEOUT
        )
        assert not r.is_error, r.content  # the worker is still there
    assert stat.S_ISFIFO(os.lstat(root / "x.md").st_mode) or stat.S_ISCHR(
        os.lstat(root / "x.md").st_mode
    )


@pytest.mark.parametrize("make", SPECIALS)
async def test_mcp_related_notes_survive_a_special_file_in_place_of_a_note(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """``related_notes`` reads the notes linking to one (backlinks, with their text): one of
    them replaced by a FIFO or device after it was indexed is skipped, not read."""
    root = make_vault(tmp_path)
    async with Client(mcp_params(root)) as client:
        r = await asyncio.wait_for(client.call_tool("related_notes", {"path": "b.md"}), TIMEOUT)
        assert [b["path"] for b in r.structured_content["backlinks"]] == ["a.md"]
        (root / "a.md").unlink()
        make(root / "a.md")  # the server does not watch: the index still holds a.md
        r = await asyncio.wait_for(client.call_tool("related_notes", {"path": "b.md"}), TIMEOUT)
        assert not r.is_error, r.content
        r = await asyncio.wait_for(client.call_tool("read_note", {"path": "a.md"}), TIMEOUT)
        assert r.is_error


@pytest.mark.parametrize("make", SPECIALS)
async def test_lsp_document_symbols_and_diagnostics_survive_a_special_file(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """``textDocument/documentSymbol`` of a note not open in the editor reads the file; so do
    the diagnostics of a note just opened (whether the file is valid UTF-8)."""
    root = make_vault(tmp_path)
    special = root / "x.md"
    make(special)
    before = snapshot(root)
    async with lsp_session([root]) as client:
        await until(lambda: _ready(client), timeout=60)
        symbols = await request(
            client,
            types.TEXT_DOCUMENT_DOCUMENT_SYMBOL,
            types.DocumentSymbolParams(
                text_document=types.TextDocumentIdentifier(uri=special.as_uri())
            ),
            timeout=TIMEOUT,
        )
        assert not symbols
        published = client.protocol.wait_for_notification_async(
            types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS
        )
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=special.as_uri(),
                    language_id="markdown",
                    version=1,
                    text="---\ntags: [unclosed\n---\n# X\n",
                )
            )
        )
        await asyncio.wait_for(published, TIMEOUT)
        got = await until(lambda: _diagnostics(client, special.as_uri()), timeout=TIMEOUT)
        assert any(d.code == "yaml" for d in got), got
        status = await request(client, "engram/status", {}, timeout=TIMEOUT)
        assert status["vaults"][0]["state"] == "ready"
    assert snapshot(root) == before


async def _ready(client: object) -> bool:
    status = await request(client, "engram/status", {})  # type: ignore[arg-type]
    return all(v["state"] == "ready" and not v["building"] for v in status["vaults"])


async def _diagnostics(client: object, uri: str) -> list[types.Diagnostic]:
    return list(getattr(client, "diagnostics", {}).get(uri, []))

"""The MCP server and a running engram-ls on one vault: a note an agent writes through MCP is
found by the language server (its watcher, or the client's events), and the other way round."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from mcp import Client
from pytest_lsp import LanguageClient

from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server
from tests.conftest import DATA
from tests.lsp.conftest import search, start, wait_ready


@pytest.mark.presets
async def test_mcp_write_seen_by_engram_ls(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "tags", "tags")
    await start(client, [root], preset)
    await wait_ready(client)
    engram = Engram(root)
    engram.open()
    async with Client(create_server(engram, allow_write=True)) as agent:
        r = await agent.call_tool(
            "write_note", {"path": "agent.md", "content": "---\ntags: [from-agent]\n---\nhi\n"}
        )
        assert not r.is_error
        if preset == "visual-studio-code":  # VS Code's watcher reports the new file
            client.workspace_did_change_watched_files(
                types.DidChangeWatchedFilesParams(
                    changes=[
                        types.FileEvent(
                            uri=(root / "agent.md").as_uri(), type=types.FileChangeType.Created
                        )
                    ]
                )
            )
        loop = asyncio.get_running_loop()
        end = loop.time() + 2.0
        while (await search(client, tags=["from-agent"]))["total"] != 1:
            assert loop.time() < end, "engram-ls did not see the note within 2 s"
            await asyncio.sleep(0.05)
        # and a note saved in the editor is found by the agent
        note = root / "e-python.md"
        note.write_text("---\ntags: [python]\n---\nsaved in the editor: quince\n", "utf-8")
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=note.as_uri())
            )
        )
        await search(client, query="quince")  # the save is applied once this answers
        r = await agent.call_tool("search_notes", {"query": "quince"})
        assert [h["path"] for h in r.structured_content["results"]] == ["e-python.md"]

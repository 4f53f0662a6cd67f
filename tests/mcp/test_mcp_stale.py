"""``search_notes`` with ``require_index`` / ``max_staleness_ms`` and the source revision in
``search_notes`` and ``index_status`` (issue 15, item 4), through the MCP SDK's own client:
in-process, and over stdio against the real ``engram-mcp`` process on a git repository."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from mcp import Client, StdioServerParameters

from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server

GitVault = Callable[..., tuple[Path, str]]


async def test_the_tool_offers_the_fields(vault_copy: Callable[[str], Path]) -> None:
    engram = Engram(vault_copy("tags"))
    engram.open()
    async with Client(create_server(engram)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    props = tools["search_notes"].input_schema["properties"]
    assert props["require_index"]["default"] is False
    assert "ENGRAM_INDEX_STALE" in props["max_staleness_ms"]["description"]


async def test_require_index_while_the_index_cannot_serve(
    vault_copy: Callable[[str], Path], unmakeable_index: Path
) -> None:
    engram = Engram(vault_copy("tags"), index_path=unmakeable_index)
    engram.open()
    async with Client(create_server(engram)) as client:
        r = await client.call_tool("search_notes", {"tags": ["memory"]})
        assert not r.is_error and r.structured_content["index"]["served_by"] == "scan"
        r = await client.call_tool("search_notes", {"tags": ["memory"], "require_index": True})
        assert r.is_error and "ENGRAM_INDEX_STALE: " in r.content[0].text


async def test_max_staleness(vault_copy: Callable[[str], Path]) -> None:
    engram = Engram(vault_copy("tags"))
    engram.open()
    engram.sync()
    async with Client(create_server(engram)) as client:
        ok = await client.call_tool("search_notes", {"query": "memory", "max_staleness_ms": 60000})
        assert not ok.is_error and ok.structured_content["index"]["served_by"] == "index"
        r = await client.call_tool("search_notes", {"query": "memory", "max_staleness_ms": 0})
        assert r.is_error and "ENGRAM_INDEX_STALE" in r.content[0].text
        bad = await client.call_tool("search_notes", {"query": "memory", "max_staleness_ms": -5})
        assert bad.is_error


async def test_stdio_source_revision_of_a_dirty_repository(git_vault: GitVault) -> None:
    root, head = git_vault(dirty=True)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "engram_ls", "mcp", str(root), "--no-watch"],
        env={k: v for k, v in os.environ.items() if k not in ("ENGRAM_VAULT", "ENGRAM_INDEX")},
    )
    async with Client(params) as client:
        st = await client.call_tool("index_status", {})
        assert st.structured_content["source_revision"] == {"commit": head, "dirty": True}
        r = await client.call_tool(
            "search_notes", {"query": "hello", "require_index": True, "max_staleness_ms": 60000}
        )
        assert not r.is_error, r.content
        index = r.structured_content["index"]
        assert index["served_by"] == "index"
        assert index["source_revision"] == {"commit": head, "dirty": True}

"""Search by meaning through the real ``engram-mcp`` process and the SDK's client: the modes
offered, a note written through the server found by meaning, related notes by meaning."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters


async def _ready(client: Client) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    end = loop.time() + 60
    while True:
        st = (await client.call_tool("index_status", {})).structured_content
        if st["semantic"]["state"] == "ready":
            return st  # type: ignore[no-any-return]
        assert loop.time() < end, st["semantic"]
        await asyncio.sleep(0.1)


async def test_semantic_through_the_real_process(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", "--allow-write", str(root)]
    )
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        modes = tools["search_notes"].input_schema["properties"]["mode"]["enum"]
        assert modes == ["text", "literal", "regex", "semantic", "hybrid"]
        st = await _ready(client)
        assert st["capabilities"]["semantic"] is True and st["semantic"]["embedded"] == 31
        r = await client.call_tool(
            "search_notes", {"query": "how to ship a python library", "mode": "semantic"}
        )
        assert not r.is_error
        hits = r.structured_content["results"]
        assert hits[0]["path"] == "reference/python-packaging.md"
        assert all(0 <= h["score"] <= 1 for h in hits)
        w = await client.call_tool(
            "write_note",
            {
                "path": "inbox/pets.md",
                "content": "# Office animals\n\nShould we adopt a puppy or a kitten"
                " for the team?\n",
            },
        )
        assert not w.is_error
        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while True:
            r = await client.call_tool(
                "search_notes", {"query": "getting a pet dog or cat", "mode": "hybrid", "limit": 3}
            )
            if [h["path"] for h in r.structured_content["results"]][:1] == ["inbox/pets.md"]:
                break
            assert loop.time() < end, r.structured_content["results"]
            await asyncio.sleep(0.1)
        rel = await client.call_tool("related_notes", {"path": "projects/memory-leak-hunt.md"})
        data = rel.structured_content
        assert data["similar"] and all(0 <= s["score"] <= 1 for s in data["similar"])
        assert "projects/memory-leak-hunt.md" not in [s["path"] for s in data["similar"]]
        assert {"meaning"} <= {r for item in data["related"] for r in item["reasons"]}

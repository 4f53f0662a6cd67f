"""The second-generation MCP server through the SDK's client: several vaults in one server
(in process and the real ``engram-mcp --vault NAME=PATH`` over stdio), cursors that page with
no overlap and no gap and expire when the index changes, error texts that begin with the
Engram code (also for arguments the input schema refuses), tool annotations, and output
schemas that describe what each tool really returns."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server


def opened(root: Path) -> Engram:
    engram = Engram(root)
    engram.open()
    engram.sync()
    return engram


@pytest.fixture
def two(vault_copy: Callable[[str], Path]) -> dict[str, Engram]:
    return {"work": opened(vault_copy("example")), "tags": opened(vault_copy("tags"))}


async def test_two_vaults_in_one_server(two: dict[str, Engram]) -> None:
    async with Client(create_server(two)) as client:
        r = await client.call_tool("list_vaults", {})
        vaults = {v["name"]: v for v in r.structured_content["vaults"]}
        assert set(vaults) == {"work", "tags"}
        assert vaults["tags"]["notes"] == 9 and vaults["tags"]["state"] == "ready"
        assert vaults["work"]["notes"] == two["work"].status().notes
        assert "semantic" in vaults["work"]["capabilities"]
        # with two vaults, `vault` is required, and names the choices when missing or wrong
        r = await client.call_tool("search_notes", {"tags": ["python"]})
        assert r.is_error
        assert r.content[0].text.startswith("ENGRAM_INVALID_REQUEST: vault: several vaults")
        assert "work" in r.content[0].text and "tags" in r.content[0].text
        r = await client.call_tool("search_notes", {"tags": ["python"], "vault": "nope"})
        assert r.is_error and "no vault named 'nope'" in r.content[0].text
        # each vault answers from its own index
        r = await client.call_tool("search_notes", {"tags": ["python"], "vault": "tags"})
        assert r.structured_content["total"] == 3
        r = await client.call_tool("search_notes", {"tags": ["python"], "vault": "work"})
        assert r.structured_content["total"] != 3
        r = await client.call_tool("read_note", {"path": "a-memory-upper.md", "vault": "tags"})
        assert not r.is_error
        r = await client.call_tool("read_note", {"path": "a-memory-upper.md", "vault": "work"})
        assert r.is_error and r.content[0].text.startswith("ENGRAM_NOT_FOUND")
        for tool in ("list_topics", "index_status", "list_tasks"):
            r = await client.call_tool(tool, {"vault": "work"})
            assert not r.is_error, tool


async def test_one_vault_needs_no_name(two: dict[str, Engram]) -> None:
    async with Client(create_server(two["tags"])) as client:
        r = await client.call_tool("search_notes", {"tags": ["python"]})
        assert r.structured_content["total"] == 3
        name = (await client.call_tool("list_vaults", {})).structured_content["vaults"][0]
        assert name["name"] == "vault-tags"  # the folder's name
        r = await client.call_tool("search_notes", {"tags": ["python"], "vault": "vault-tags"})
        assert r.structured_content["total"] == 3


async def test_two_vaults_over_stdio(vault_copy: Callable[[str], Path]) -> None:
    work, tags = vault_copy("example"), vault_copy("tags")
    args = ["-m", "engram_ls.mcp_server", "--vault", f"work={work}", "--vault", f"tags={tags}"]
    async with Client(StdioServerParameters(command=sys.executable, args=args)) as client:
        r = await client.call_tool("list_vaults", {})
        assert [v["name"] for v in r.structured_content["vaults"]] == ["work", "tags"]
        r = await client.call_tool("search_notes", {"tags": ["python"], "vault": "tags"})
        assert r.structured_content["total"] == 3
        r = await client.call_tool("search_notes", {"tags": ["python"]})
        assert r.is_error and "several vaults" in r.content[0].text
    assert (work / ".engram" / "index.sqlite").is_file()
    assert (tags / ".engram" / "index.sqlite").is_file()


async def pages(client: Client, tool: str, args: dict[str, Any], key: str) -> list[Any]:
    """Every item of a paged list, following next_cursor."""
    out: list[Any] = []
    cursor = None
    for _ in range(1000):
        r = await client.call_tool(tool, {**args, **({"cursor": cursor} if cursor else {})})
        assert not r.is_error, r.content[0].text
        out += r.structured_content[key]
        cursor = r.structured_content["next_cursor"]
        if cursor is None:
            return out
    raise AssertionError("the cursor never ended")


async def test_cursors_page_with_no_overlap_and_no_gap(two: dict[str, Engram]) -> None:
    work = two["work"]
    async with Client(create_server(work)) as client:
        whole = await client.call_tool("search_notes", {"path": "**", "limit": 1000})
        paged = await pages(client, "search_notes", {"path": "**", "limit": 3}, "results")
        assert [h["path"] for h in paged] == [
            h["path"] for h in whole.structured_content["results"]
        ]
        topics = await pages(client, "list_topics", {"limit": 2}, "topics")
        assert [t["name"] for t in topics] == [t.name for t in work.topics("", 10_000)]
        tasks = await pages(client, "list_tasks", {"limit": 2}, "tasks")
        every = await client.call_tool("list_tasks", {"limit": 1000})
        assert [(t["path"], t["line"]) for t in tasks] == [
            (t["path"], t["line"]) for t in every.structured_content["tasks"]
        ]
        assert len(tasks) > 2


async def test_a_cursor_expires_when_the_index_changes(two: dict[str, Engram]) -> None:
    work = two["work"]
    async with Client(create_server(work)) as client:
        r = await client.call_tool("search_notes", {"path": "**", "limit": 2})
        cursor = r.structured_content["next_cursor"]
        assert cursor
        # another argument than the first page's: refused, not a page of another list
        r = await client.call_tool("search_notes", {"path": "x/**", "limit": 2, "cursor": cursor})
        assert r.is_error and r.content[0].text.startswith("ENGRAM_INVALID_REQUEST: cursor:")
        r = await client.call_tool("search_notes", {"path": "**", "limit": 2, "cursor": "junk"})
        assert r.is_error and r.content[0].text.startswith("ENGRAM_INVALID_REQUEST: cursor:")
        work.write_note("inbox/new-one.md", "# New\n\nhello\n")
        r = await client.call_tool("search_notes", {"path": "**", "limit": 2, "cursor": cursor})
        assert r.is_error
        assert r.content[0].text == "ENGRAM_INVALID_REQUEST: cursor expired, search again"


@pytest.mark.parametrize(
    ("tool", "args", "text"),
    [
        pytest.param(
            "search_notes",
            {"query": "x", "limit": "abc"},
            "ENGRAM_INVALID_REQUEST: limit: Input should be a valid integer",
            id="type",
        ),
        pytest.param(
            "search_notes",
            {"query": "x", "tag": "python"},
            "ENGRAM_INVALID_REQUEST: search_notes has no argument 'tag'",
            id="unknown",
        ),
        pytest.param(
            "read_note",
            {},
            "ENGRAM_INVALID_REQUEST: path: Field required",
            id="missing",
        ),
        pytest.param(
            "read_note",
            {"path": "../x"},
            "ENGRAM_OUTSIDE_VAULT: path leaves the vault: ../x",
            id="engram",
        ),
        pytest.param(
            "search_notes",
            {"query": "x", "limit": 5000},
            "ENGRAM_LIMIT: limit 5000 is above the cap",
            id="limit",
        ),
    ],
)
async def test_error_texts_begin_with_the_code(
    two: dict[str, Engram], tool: str, args: dict[str, Any], text: str
) -> None:
    async with Client(create_server(two["tags"])) as client:
        r = await client.call_tool(tool, args)
    assert r.is_error
    said = r.content[0].text
    assert said.startswith(text), said
    assert "pydantic" not in said and "http" not in said and "Error executing" not in said


async def test_annotations_and_output_schemas(two: dict[str, Engram]) -> None:
    work = two["work"]
    async with Client(create_server(work, allow_write=True)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("write_note", "add_topics", "complete_task"):
            hints = tools[name].annotations
            assert hints is not None
            assert hints.read_only_hint is False and hints.idempotent_hint is False, name
        calls = {
            "search_notes": {"query": "sqlite"},
            "list_topics": {},
            "related_notes": {"path": "reference/profiling.md"},
            "query_notes": {"base": "bases/work.base"},
            "list_tasks": {},
            "index_status": {},
            "list_vaults": {},
            "write_note": {"path": "inbox/schema.md", "content": "# S\n\n- [ ] a task\n"},
            "complete_task": {"path": "inbox/schema.md", "line": 3},
            "add_topics": {"path": "inbox/schema.md", "topics": ["x"]},
        }
        for name, args in calls.items():
            schema = tools[name].output_schema
            assert schema and schema.get("properties"), f"{name}: an empty output schema"
            r = await client.call_tool(name, args)
            assert not r.is_error, (name, r.content[0].text)
            jsonschema.validate(r.structured_content, schema)
            assert set(schema.get("required", ())) <= set(r.structured_content), name

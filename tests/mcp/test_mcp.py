"""The MCP server through the SDK's own client: in-process, and over stdio against the real
``engram-mcp`` process."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server

READ_TOOLS = {
    "search_notes",
    "get_session_context",
    "read_note",
    "list_topics",
    "related_notes",
    "query_notes",
    "list_tasks",
    "index_status",
    "list_vaults",
}
"""The tools every engram-mcp offers; with --allow-write also ``WRITE_TOOLS``."""
WRITE_TOOLS = {"write_note", "add_topics", "complete_task"}


@pytest.fixture
def tags_engram(vault_copy: Callable[[str], Path]) -> Engram:
    engram = Engram(vault_copy("tags"))
    engram.open()
    engram.sync()
    return engram


async def call(client: Client, tool: str, args: dict[str, Any]) -> Any:
    return await client.call_tool(tool, args)


async def test_tools_are_listed_read_only(tags_engram: Engram) -> None:
    async with Client(create_server(tags_engram)) as tags_client:
        tools = {t.name: t for t in (await tags_client.list_tools()).tools}
        assert set(tools) == READ_TOOLS
        for tool in tools.values():
            assert tool.description
            assert tool.annotations is not None and tool.annotations.read_only_hint


async def test_search_notes_structured(tags_engram: Engram) -> None:
    async with Client(create_server(tags_engram)) as tags_client:
        r = await call(tags_client, "search_notes", {"tags": ["memory", "-python"]})
        assert not r.is_error
        data = r.structured_content
        assert data["total"] == 2 and data["index"]["served_by"] == "index"
        assert sorted(h["path"] for h in data["results"]) == [
            "a-memory-upper.md",
            "b-memory-lower.md",
        ]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        pytest.param(
            {"query": "x", "date_from": "2024-13-01"}, "ENGRAM_INVALID_REQUEST", id="date"
        ),
        pytest.param({"query": "x", "path": "../.."}, "ENGRAM_OUTSIDE_VAULT", id="traversal"),
        pytest.param({"query": "(", "mode": "regex"}, "ENGRAM_INVALID_REQUEST", id="regex"),
        pytest.param({}, "ENGRAM_INVALID_REQUEST", id="nothing"),
    ],
)
async def test_search_errors_are_tool_errors(
    tags_engram: Engram, args: dict[str, Any], code: str
) -> None:
    async with Client(create_server(tags_engram)) as tags_client:
        r = await call(tags_client, "search_notes", args)
        assert r.is_error and code in r.content[0].text


async def test_get_session_context(tags_engram: Engram) -> None:
    async with Client(create_server(tags_engram)) as tags_client:
        r = await call(tags_client, "get_session_context", {"query": "memory", "tags": ["python"]})
        assert not r.is_error
        *lines, trailer = r.content[0].text.splitlines()
        assert lines and all(
            line.split(":")[0] in {"f-several.md", "g-undated.md"} for line in lines
        )
        assert trailer.startswith("[index ready, served by index")
        r = await call(tags_client, "get_session_context", {"session_id": "a-memory"})
        assert r.content[0].text.startswith("--- a-memory-upper.md ---")
        for bad in ({}, {"session_id": "../x"}, {"session_id": "a b"}):
            r = await call(tags_client, "get_session_context", bad)
            assert r.is_error and "ENGRAM_INVALID_REQUEST" in r.content[0].text


async def test_get_session_context_budget(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    for i in range(300):
        (root / f"bulk-{i:03}.md").write_text("needle " + "x" * 200 + "\n", "utf-8")
    engram = Engram(root)
    engram.open()
    engram.sync()
    async with Client(create_server(engram)) as client:
        r = await call(client, "get_session_context", {"query": "needle"})
    text = r.content[0].text
    assert "truncated" in text and len(text) <= engram.config.limits.response_chars + 200


async def test_read_note_and_refusals(
    tags_engram: Engram, vault_copy: Callable[[str], Path]
) -> None:
    async with Client(create_server(tags_engram)) as tags_client:
        r = await call(tags_client, "read_note", {"path": "e-python.md"})
        assert not r.is_error and "Python only" in r.content[0].text
        r = await call(
            tags_client, "read_note", {"path": "e-python.md", "offset": 5, "max_chars": 10}
        )
        assert "more characters" in r.content[0].text
        for bad in ("../../etc/passwd", "/etc/passwd", "nope.md", ".engram/index.sqlite"):
            r = await call(tags_client, "read_note", {"path": bad})
            assert r.is_error, bad
            assert "ENGRAM_" in r.content[0].text


async def test_read_note_refuses_symlink_out(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    root = vault_copy("tags")
    secret = tmp_path / "secret.md"
    secret.write_text("secret", "utf-8")
    os.symlink(secret, root / "leak.md")
    engram = Engram(root)
    engram.open()
    async with Client(create_server(engram)) as client:
        r = await call(client, "read_note", {"path": "leak.md"})
    assert r.is_error and "ENGRAM_OUTSIDE_VAULT" in r.content[0].text


async def test_topics_and_status(tags_engram: Engram) -> None:
    async with Client(create_server(tags_engram)) as tags_client:
        r = await call(tags_client, "list_topics", {"prefix": "mem"})
        assert [t["name"] for t in r.structured_content["topics"]] == [
            "memory",
            "Memory Leak",
            "memory-leak",
        ]
        r = await call(tags_client, "index_status", {})
        assert r.structured_content["state"] == "ready" and r.structured_content["notes"] == 9


async def test_stdio_real_process(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root)]
    )
    async with Client(params) as client:
        r = await call(client, "search_notes", {"tags": ["python"]})
        assert not r.is_error and r.structured_content["total"] == 3
        r = await call(client, "read_note", {"path": "../secret"})
        assert r.is_error


async def test_stdio_sees_files_changed_on_disk(vault_copy: Callable[[str], Path]) -> None:
    import asyncio

    root = vault_copy("tags")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root)]
    )
    async with Client(params) as client:
        r = await call(client, "search_notes", {"tags": ["python"]})
        assert r.structured_content["total"] == 3
        (root / "new.md").write_text("---\ntags: [written-by-git]\n---\nhello\n", "utf-8")
        loop = asyncio.get_running_loop()
        end = loop.time() + 2.0
        while True:
            r = await call(client, "search_notes", {"tags": ["written-by-git"]})
            if r.structured_content["total"] == 1:
                break
            assert loop.time() < end, "a file written on disk was not found within 2 s"
            await asyncio.sleep(0.05)


async def test_streamable_http(vault_copy: Callable[[str], Path]) -> None:
    from tests.mcp.http_server import mcp_http

    with mcp_http(vault_copy("tags")) as server:
        async with Client(server.url) as client:
            r = await call(client, "search_notes", {"tags": ["memory"]})
            assert r.structured_content["total"] == 4
            r = await call(client, "read_note", {"path": "/etc/passwd"})
            assert r.is_error
        out = server.output()
    assert "POST /mcp" not in out, "uvicorn's access log does not reach stdout (or stderr)"


async def test_writes_are_off_by_default(tags_engram: Engram) -> None:
    async with Client(create_server(tags_engram)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "write_note" not in names
        r = await call(client, "write_note", {"path": "x.md", "content": "x"})
        assert r.is_error
    assert not (tags_engram.vault.root / "x.md").exists()


async def test_write_note(tags_engram: Engram, tmp_path: Path) -> None:
    root = tags_engram.vault.root
    before = (root / "e-python.md").read_bytes()
    async with Client(create_server(tags_engram, allow_write=True)) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "write_note")
        assert tool.annotations is not None and tool.annotations.destructive_hint
        content = "---\ntags: [agent-made]\n---\n# From the agent\n\nkumquat\n"
        r = await call(client, "write_note", {"path": "agent/new.md", "content": content})
        assert not r.is_error, r.content
        assert (root / "agent" / "new.md").read_text("utf-8") == content
        r = await call(client, "search_notes", {"query": "kumquat"})
        assert [h["path"] for h in r.structured_content["results"]] == ["agent/new.md"]
        # refuses to replace without overwrite; the note is untouched
        r = await call(client, "write_note", {"path": "e-python.md", "content": "gone"})
        assert r.is_error and "overwrite" in r.content[0].text
        assert (root / "e-python.md").read_bytes() == before
        r = await call(
            client, "write_note", {"path": "e-python.md", "content": "replaced", "overwrite": True}
        )
        assert not r.is_error
        assert (root / "e-python.md").read_text("utf-8") == "replaced"
        for bad in ("../escape.md", "/tmp/abs.md", "notes.txt", ".hidden/x.md", "agent"):
            r = await call(client, "write_note", {"path": bad, "content": "x"})
            assert r.is_error, bad
    assert not (tmp_path / "escape.md").exists()
    assert not any(p.name.endswith(".tmp") for p in root.rglob("*"))


async def test_add_topics(tags_engram: Engram, tmp_path: Path) -> None:
    root = tags_engram.vault.root
    async with Client(create_server(tags_engram)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "add_topics" not in names  # a write tool: only with --allow-write
    note = root / "e-python.md"
    before = note.read_text("utf-8")
    async with Client(create_server(tags_engram, allow_write=True)) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "add_topics")
        assert tool.annotations is not None and not tool.annotations.read_only_hint
        r = await call(client, "add_topics", {"path": "e-python.md", "topics": ["kumquat-lore"]})
        assert not r.is_error, r.content
        assert r.structured_content["changed"] is True
        assert "kumquat-lore" in r.structured_content["topics"]
        after = note.read_text("utf-8")
        # only the topic entry changed
        changed = [
            (a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=True) if a != b
        ]
        assert len(changed) == 1 and "kumquat-lore" in changed[0][1]
        # searchable right away, and a second call changes nothing
        r = await call(client, "search_notes", {"tags": ["kumquat-lore"]})
        assert [h["path"] for h in r.structured_content["results"]] == ["e-python.md"]
        r = await call(client, "add_topics", {"path": "e-python.md", "topics": ["Kumquat-Lore"]})
        assert not r.is_error and r.structured_content["changed"] is False
        assert note.read_text("utf-8") == after
        # a note without frontmatter gets one; the body stays as it was
        plain = root / "i-no-frontmatter.md"
        body = plain.read_bytes()
        r = await call(client, "add_topics", {"path": "i-no-frontmatter.md", "topics": ["x"]})
        assert not r.is_error, r.content
        assert plain.read_bytes().endswith(body)
        for bad in ("../escape.md", "/etc/passwd", "notes.txt", "missing.md"):
            r = await call(client, "add_topics", {"path": bad, "topics": ["x"]})
            assert r.is_error, bad
        r = await call(client, "add_topics", {"path": "e-python.md", "topics": []})
        assert r.is_error
    assert not (tmp_path / "escape.md").exists()


async def test_related_notes(vault_copy: Callable[[str], Path]) -> None:
    engram = Engram(vault_copy("links"))
    engram.open()
    engram.sync()
    async with Client(create_server(engram)) as links_client:
        r = await call(links_client, "related_notes", {"path": "beta.md"})
        assert not r.is_error
        data = r.structured_content
        assert [o["path"] for o in data["outgoing"]] == ["names/§ Special Name.md"]
        assert [b["path"] for b in data["backlinks"]] == ["index.md", "projects/gamma.md"]
        assert {s["path"] for s in data["sharing_topics"]} == {
            "projects/gamma.md",
            "names/§ Special Name.md",
        }
        r = await call(links_client, "related_notes", {"path": "index.md", "limit": 50})
        statuses = {(o["target"], o["status"]) for o in r.structured_content["outgoing"]}
        assert ("Missing Note", "broken") in statuses and ("Dup", "ambiguous") in statuses
        assert not any(o["target"] == "../outside.md" for o in r.structured_content["outgoing"])


@pytest.mark.parametrize(
    ("path", "code"),
    [
        pytest.param("../../etc/passwd", "ENGRAM_", id="traversal"),
        pytest.param("/etc/passwd.md", "ENGRAM_OUTSIDE_VAULT", id="absolute"),
        pytest.param("nope.md", "ENGRAM_NOT_FOUND", id="missing"),
        pytest.param("alpha.txt", "ENGRAM_INVALID_REQUEST", id="not-a-note"),
    ],
)
async def test_related_notes_errors(
    vault_copy: Callable[[str], Path], path: str, code: str
) -> None:
    engram = Engram(vault_copy("links"))
    engram.open()
    engram.sync()
    async with Client(create_server(engram)) as links_client:
        r = await call(links_client, "related_notes", {"path": path})
        assert r.is_error and code in r.content[0].text


async def test_stdio_finds_notes_written_while_it_starts(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    """Notes written from the process's start until it answers (and a little after) are all
    found: none falls between the start-up reconcile and the watch."""
    import asyncio

    from tests.reliability.oracle import assert_index_matches_vault

    root = generated(600)
    with Engram(root) as engram:  # a warm start: the index exists
        engram.sync()
    area = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    written: list[str] = []
    answered = asyncio.Event()

    async def keep_writing() -> None:
        i, extra = 0, 10
        while extra:
            body = f"---\ntags: [startup]\n---\n# startupword{i}\n"
            (area / f"startup-{i}.md").write_text(body, "utf-8")
            written.append(f"startupword{i}")
            i += 1
            if answered.is_set():
                extra -= 1
            await asyncio.sleep(0.003)

    writer = asyncio.ensure_future(keep_writing())
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root)]
    )
    try:
        async with Client(params) as client:
            await call(client, "index_status", {})
            answered.set()
            await writer
            loop = asyncio.get_running_loop()
            end = loop.time() + 10
            while True:
                r = await call(client, "search_notes", {"tags": ["startup"], "limit": 1})
                if r.structured_content["total"] == len(written):
                    break
                assert loop.time() < end, (r.structured_content["total"], len(written))
                await asyncio.sleep(0.1)
    finally:
        answered.set()
        await writer
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)


async def test_search_notes_where(vault_copy: Callable[[str], Path]) -> None:
    """``where`` through the real ``engram-mcp`` process: its schema is in the tool's, text and
    objects are taken, and a malformed condition is a tool error naming the part."""
    root = vault_copy("example")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root)]
    )
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["search_notes"].input_schema["properties"]["where"]
        assert "anyOf" in schema and "status = done" in str(schema)
        r = await call(client, "search_notes", {"where": ["status = done", "rating >= 4"]})
        assert not r.is_error
        assert [h["path"] for h in r.structured_content["results"]] == ["reference/lsp-basics.md"]
        r = await call(
            client,
            "search_notes",
            {"query": "tokenizer", "where": {"property": "priority", "op": "=", "value": "low"}},
        )
        assert [h["path"] for h in r.structured_content["results"]] == [
            "projects/rust-tokenizer.md"
        ]
        r = await call(client, "search_notes", {"where": [{"property": "x", "op": "~"}]})
        assert r.is_error and "ENGRAM_INVALID_REQUEST" in r.content[0].text
        assert "where[0].op" in r.content[0].text


async def test_query_notes_runs_a_base(vault_copy: Callable[[str], Path]) -> None:
    """``query_notes`` through the real ``engram-mcp`` process: a ``.base`` file of the
    example vault by path, a base as text, and an unsupported construct as a tool error
    naming it and its line."""
    root = vault_copy("example")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root)]
    )
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["query_notes"].annotations.read_only_hint  # type: ignore[union-attr]
        r = await call(client, "query_notes", {"base": "bases/work.base", "view": "Open work"})
        assert not r.is_error, r.content
        rows = r.structured_content["rows"]
        assert [row["path"] for row in rows] == [
            "projects/lsp-server.md",
            "reference/testing-strategy.md",
        ]
        assert rows[0]["values"]["status"] == "doing"
        assert r.structured_content["columns"][1] == {"property": "status", "name": "Status"}
        r = await call(
            client,
            "query_notes",
            {"base": 'filters: file.hasTag("lsp")\nviews: [{name: v}]', "max_rows": 1},
        )
        assert r.structured_content["total"] > 1 and len(r.structured_content["rows"]) == 1
        assert r.structured_content["truncated"]
        r = await call(client, "query_notes", {"base": "filters: 'this.x == 1'"})
        assert r.is_error and "ENGRAM_INVALID_REQUEST" in r.content[0].text
        assert "'this'" in r.content[0].text and "line 1" in r.content[0].text
        r = await call(client, "query_notes", {"base": "../outside.base"})
        assert r.is_error and "ENGRAM_OUTSIDE_VAULT" in r.content[0].text


async def test_list_and_complete_tasks(vault_copy: Callable[[str], Path]) -> None:
    """``list_tasks`` and ``complete_task`` through the real ``engram-mcp`` process started
    with ``--allow-write``: the open tasks soonest first, a task completed (one line changed,
    then listed as done), the same line with a stale ``expect`` refused, and a second call
    giving the bytes back."""
    root = vault_copy("example")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", "--allow-write", str(root)]
    )
    note = root / "meetings/2024/2024-11-04 perf sync.md"
    before = note.read_bytes()
    async with Client(params) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["list_tasks"].annotations.read_only_hint  # type: ignore[union-attr]
        assert tools["complete_task"].annotations.destructive_hint  # type: ignore[union-attr]
        assert "due_before" in tools["list_tasks"].input_schema["properties"]
        r = await call(client, "list_tasks", {"status": "open", "sort": "due", "limit": 2})
        assert not r.is_error, r.content
        first = r.structured_content["tasks"][0]
        assert (first["path"], first["line"], first["overdue"]) == (
            "meetings/2024/2024-11-04 perf sync.md",
            27,
            True,
        )
        assert r.structured_content["total"] == 5 and r.structured_content["truncated"]
        r = await call(client, "complete_task", {"path": first["path"], "line": 27})
        assert not r.is_error, r.content
        done = r.structured_content
        assert done["done"] is True and done["indexed"] is True
        lines = note.read_bytes().split(b"\n")
        assert lines[26].decode().startswith("- [x] Measure the rename")
        r = await call(client, "list_tasks", {"status": "done", "path": "meetings/2024"})
        assert [t["line"] for t in r.structured_content["tasks"]] == [27, 28]
        r = await call(
            client, "complete_task", {"path": first["path"], "line": 27, "expect": "- [ ] x"}
        )
        assert r.is_error and "ENGRAM_INVALID_REQUEST" in r.content[0].text
        r = await call(
            client,
            "complete_task",
            {"path": first["path"], "line": 27, "expect": done["after"], "done": False},
        )
        assert not r.is_error and note.read_bytes() == before
        r = await call(client, "list_tasks", {"due_before": "never"})
        assert r.is_error and "ENGRAM_INVALID_REQUEST" in r.content[0].text

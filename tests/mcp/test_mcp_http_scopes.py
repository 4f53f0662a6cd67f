"""Issue 19 item 7: bearer tokens with scopes over streamable HTTP (``--tokens-file``). The real
``engram-mcp --http`` process serving two vaults, several SDK clients at once, each with its own
token: a read token cannot write (and is not offered the write tools), a write token can, a
token limited to a vault cannot use the other, a wrong token gets 401."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from engram_ls.mcp_server import server as mcp_server
from tests.conftest import DATA, EXAMPLE, copy_tree, in_process
from tests.mcp.http_server import INITIALIZE, PROTOCOL, McpHttp, mcp_http
from tests.mcp.test_mcp import WRITE_TOOLS

READ = "engram-read-token-" + "a1" * 12
WRITE = "engram-write-token-" + "b2" * 12
NOTES_WRITE = "engram-notes-write-" + "c3" * 12
TAGS_READ = "engram-tags-read-" + "d4" * 12
LEGACY = "engram-legacy-token-" + "e5" * 12
ALL_TOKENS = (READ, WRITE, NOTES_WRITE, TAGS_READ, LEGACY)
TOKENS_FILE = f"""\
# scope token [vaults]
read  {READ}
write {WRITE}

write {NOTES_WRITE} notes
read  {TAGS_READ} tags
"""


@pytest.fixture(autouse=True)
def _no_token_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_MCP_TOKEN", raising=False)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHttp]:
    """``notes`` (a copy of examples/vault) and ``tags``, with writes on, the tokens above, and
    a --token-file token beside them."""
    base = tmp_path_factory.mktemp("scopes")
    notes = copy_tree(EXAMPLE, base / "notes")
    tags = copy_tree(DATA / "tags", base / "tags")
    (base / "tokens").write_text(TOKENS_FILE)
    (base / "token").write_text(LEGACY + "\n")
    args = ("--vault", f"tags={tags}", "--allow-write", "--tokens-file", str(base / "tokens"))
    with mcp_http(notes, *args, "--token-file", str(base / "token")) as server:
        yield server


@contextlib.asynccontextmanager
async def connect(server: McpHttp, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    """An SDK client sending ``token``; ``mode="legacy"``: the 2025 handshake (the SDK's
    session transport), else the newest protocol (its per-request path)."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    transport = streamable_http_client(server.url, http_client=http)
    async with http, Client(transport, mode=mode) as client:  # type: ignore[arg-type]
        yield client


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


async def call(client: Client, tool: str, **args: Any) -> tuple[bool, Any]:
    """(whether it failed, the structured answer or the error text)."""
    r = await client.call_tool(tool, args)
    if r.is_error:
        return True, r.content[0].text  # type: ignore[union-attr]
    return False, r.structured_content


def root_of(server: McpHttp, vault: str) -> Path:
    """The folder of a vault the ``served`` server serves (the first argument is ``notes``)."""
    return Path(str(server.proc.args[3])).parent / vault  # type: ignore[index]


async def test_a_read_token_cannot_write(served: McpHttp) -> None:
    async with connect(served, READ) as client:
        names = await tool_names(client)
        assert "search_notes" in names and "list_vaults" in names
        assert not names & WRITE_TOOLS, "a read token is not offered the write tools"
        failed, text = await call(
            client, "write_note", vault="notes", path="inbox/read.md", content="x"
        )
        assert failed and text.startswith("ENGRAM_FORBIDDEN:"), text
        assert "write_note" in text
        failed, text = await call(
            client, "add_topics", vault="tags", path="e-python.md", topics=["nope"]
        )
        assert failed and text.startswith("ENGRAM_FORBIDDEN:"), text
        failed, text = await call(client, "complete_task", vault="notes", path="x.md", line=1)
        assert failed and text.startswith("ENGRAM_FORBIDDEN:"), text
        # everything read-only still works, on both vaults
        for vault in ("notes", "tags"):
            failed, found = await call(client, "search_notes", vault=vault, query="memory")
            assert not failed, found
        failed, found = await call(client, "list_vaults")
        assert [v["name"] for v in found["vaults"]] == ["notes", "tags"]
    assert not (root_of(served, "notes") / "inbox" / "read.md").exists()
    assert "nope" not in (root_of(served, "tags") / "e-python.md").read_text("utf-8")


async def test_a_write_token_can_write(served: McpHttp) -> None:
    for token, name in ((WRITE, "write"), (LEGACY, "legacy")):
        async with connect(served, token) as client:
            assert await tool_names(client) >= WRITE_TOOLS
            for vault in ("notes", "tags"):
                path = f"inbox/{name}-{vault}.md"
                failed, out = await call(
                    client, "write_note", vault=vault, path=path, content="# kumquat\n"
                )
                assert not failed, out
                assert (root_of(served, vault) / path).read_text("utf-8") == "# kumquat\n"


async def test_a_vault_limited_token(served: McpHttp) -> None:
    async with connect(served, NOTES_WRITE) as client:
        assert await tool_names(client) >= WRITE_TOOLS
        failed, found = await call(client, "list_vaults")
        assert [v["name"] for v in found["vaults"]] == ["notes"], "the other vault is not shown"
        for tool, args in (
            ("search_notes", {"query": "memory"}),
            ("index_status", {}),
            ("write_note", {"path": "inbox/elsewhere.md", "content": "x"}),
        ):
            failed, text = await call(client, tool, vault="tags", **args)
            assert failed and text.startswith("ENGRAM_FORBIDDEN:"), (tool, text)
            assert "'tags'" in text and "notes" in text, text
        assert not (root_of(served, "tags") / "inbox" / "elsewhere.md").exists()
        # its one vault is the default: no `vault` needed although the server serves two
        failed, found = await call(client, "index_status")
        assert not failed and found["name"] == "notes", found
        failed, out = await call(client, "write_note", path="inbox/limited.md", content="x")
        assert not failed, out
        assert (root_of(served, "notes") / "inbox" / "limited.md").exists()
    async with connect(served, TAGS_READ) as client:
        assert not await tool_names(client) & WRITE_TOOLS
        failed, found = await call(client, "search_notes", query="memory")
        assert not failed and found["total"] > 0
        failed, text = await call(client, "read_note", vault="notes", path="_about.md")
        assert failed and text.startswith("ENGRAM_FORBIDDEN:"), text
        failed, text = await call(client, "write_note", path="x.md", content="x")
        assert failed and text.startswith("ENGRAM_FORBIDDEN:"), text


async def test_a_vault_limited_token_with_resources_prompts_and_completion(
    served: McpHttp,
) -> None:
    """The other vault's notes are not listed, read, offered as prompts or completed."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import PromptReference, ResourceTemplateReference

    async with connect(served, TAGS_READ) as client:
        if not (await client.list_resource_templates()).resource_templates:
            pytest.skip("the server has no resources yet (resources.py)")
        listed = await client.list_resources()
        uris = [str(r.uri) for r in listed.resources]
        assert uris and all(u.startswith("engram://tags/") for u in uris), uris
        assert listed.next_cursor is None
        read = await client.read_resource("engram://tags/e-python.md")
        assert "python" in read.contents[0].text.lower()  # type: ignore[union-attr]
        with pytest.raises(MCPError) as refused:
            await client.read_resource("engram://notes/_about.md")
        assert refused.value.message.startswith("ENGRAM_FORBIDDEN:"), refused.value.message
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("notes_about", {"topic_or_question": "x", "vault": "notes"})
        assert refused.value.message.startswith("ENGRAM_FORBIDDEN:"), refused.value.message
        # its one vault is the prompt's default, and the completions' context
        prompt = await client.get_prompt("notes_about", {"topic_or_question": "memory"})
        text = prompt.messages[0].content.text  # type: ignore[union-attr]
        assert "'tags'" in text and "_about.md" not in text
        note = ResourceTemplateReference(type="ref/resource", uri="engram://{vault}/{+path}")
        vaults = await client.complete(note, {"name": "vault", "value": ""})
        assert vaults.completion.values == ["tags"]
        ref = PromptReference(type="ref/prompt", name="notes_about")
        topics = await client.complete(ref, {"name": "topic_or_question", "value": "mem"})
        assert topics is not None
        paths = await client.complete(note, {"name": "path", "value": ""}, {"vault": "notes"})
        assert paths.completion.values == []
    async with connect(served, NOTES_WRITE) as client:
        uris = [str(r.uri) for r in (await client.list_resources()).resources]
        assert uris and all(u.startswith("engram://notes/") for u in uris), uris


async def test_several_clients_at_once_keep_their_own_scopes(served: McpHttp) -> None:
    """Four clients with four tokens interleave their calls on one server: each call is judged
    by its own token. Two use the 2025 handshake, two the newest protocol: both of the SDK's
    streamable HTTP paths carry the request to the handler."""
    versions: set[str] = set()

    async def session(token: str, vaults: list[str], writes: bool, mode: str) -> None:
        async with connect(served, token, mode) as client:
            versions.add(client.protocol_version)
            for round_ in range(5):
                assert bool(await tool_names(client) & WRITE_TOOLS) == writes
                for vault in ("notes", "tags"):
                    failed, out = await call(client, "search_notes", vault=vault, query="a")
                    assert failed == (vault not in vaults), (token[:12], vault, out)
                failed, out = await call(
                    client,
                    "write_note",
                    vault=vaults[0],
                    path=f"inbox/{token[:12]}-{round_}.md",
                    content="x",
                )
                assert failed == (not writes), out
                await asyncio.sleep(0)

    await asyncio.gather(
        session(READ, ["notes", "tags"], writes=False, mode="legacy"),
        session(WRITE, ["notes", "tags"], writes=True, mode="auto"),
        session(NOTES_WRITE, ["notes"], writes=True, mode="legacy"),
        session(TAGS_READ, ["tags"], writes=False, mode="auto"),
    )
    assert len(versions) == 2, versions


def test_each_request_is_judged_by_its_own_token(served: McpHttp) -> None:
    """A session opened with a write token does not lend its scope to a request carrying
    another token."""
    opened = served.open_session(Authorization=f"Bearer {WRITE}")
    assert opened.status_code == 200
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": PROTOCOL}
    served.post(
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        Authorization=f"Bearer {WRITE}",
        **session,
    )
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "write_note",
            "arguments": {"vault": "notes", "path": "inbox/borrowed.md", "content": "x"},
        },
    }
    r = served.post(body, Authorization=f"Bearer {READ}", **session)
    assert r.status_code == 200, r.text
    assert "ENGRAM_FORBIDDEN:" in r.text and '"isError":true' in r.text.replace(" ", "")
    assert not (root_of(served, "notes") / "inbox" / "borrowed.md").exists()


async def test_a_wrong_token_gets_401(served: McpHttp) -> None:
    for headers in ({}, {"Authorization": f"Bearer {READ}x"}, {"Authorization": "Bearer"}):
        r = served.post(INITIALIZE, **headers)
        assert r.status_code == 401, headers
        assert r.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(Exception):  # noqa: B017 - the SDK client fails to connect, whatever its type
        async with connect(served, "engram-not-a-token-of-this-server"):
            pass
    out = served.output()
    for token in ALL_TOKENS:
        assert token not in out, "a token is never logged"


def _refusal(root: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    def serve(*_: object) -> None:
        pytest.fail("engram-mcp started serving instead of refusing")

    monkeypatch.setattr(mcp_server, "serve_http", serve)
    argv = [str(root), "--http", "--port", "0", "--no-watch", *args]
    proc = in_process(mcp_server.main, "engram-mcp", *argv)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(
    ("content", "says"),
    [
        pytest.param("", "holds no token", id="empty"),
        pytest.param("# only a comment\n", "holds no token", id="comments-only"),
        pytest.param(f"admin {READ}\n", "line 1", id="unknown-scope"),
        pytest.param("read\n", "line 1", id="no-token"),
        pytest.param("read short\n", "too short", id="short-token"),
        pytest.param(f"read {READ} tags extra\n", "line 1", id="too-many-fields"),
        pytest.param(f"read {READ}\nwrite {READ}\n", "same token as on line 1", id="duplicate"),
        pytest.param(f"read {READ} work\n", "no served vault named work", id="unknown-vault"),
        pytest.param(f"read {READ} ,\n", "no served vault", id="empty-vault-list"),
        pytest.param(None, "cannot read", id="missing-file"),
    ],
)
def test_a_bad_tokens_file_refuses_to_start(
    vault_copy: Callable[[str], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    content: str | None,
    says: str,
) -> None:
    tokens = tmp_path / "tokens"
    if content is not None:
        tokens.write_text(content)
    code, err = _refusal(vault_copy("tags"), monkeypatch, "--tokens-file", str(tokens))
    assert code == 2, err
    assert says in err, err
    assert READ not in err, "a token is never shown"


def test_a_tokens_file_lets_the_server_leave_loopback(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"read {READ}\nwrite {WRITE}\n")
    with mcp_http(vault_copy("tags"), "--tokens-file", str(tokens), host="0.0.0.0") as server:
        assert server.open_session().status_code == 401
        r = server.open_session(Authorization=f"Bearer {READ}")
        assert r.status_code == 200 and r.headers["mcp-session-id"]
        out = server.output()
        assert READ not in out and WRITE not in out
        assert "without --allow-write: no token can write" in out, out


def test_a_token_in_both_files_refuses_to_start(
    vault_copy: Callable[[str], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text(READ)
    (tmp_path / "tokens").write_text(f"write {WRITE}\nread {READ}\n")
    args = ("--token-file", str(tmp_path / "token"), "--tokens-file", str(tmp_path / "tokens"))
    code, err = _refusal(vault_copy("tags"), monkeypatch, *args)
    assert code == 2 and "line 2" in err and "the same token as --token-file" in err, err
    assert READ not in err


def test_a_plain_request_reaches_the_grant_through_the_sdk() -> None:
    """The grant travels in the HTTP request the SDK attaches to each message
    (``ctx.request``): checked here against the SDK's own types, so an SDK update that stops
    attaching it fails this test rather than letting every request through."""
    import dataclasses

    from mcp.server.context import ServerRequestContext
    from starlette.requests import Request

    from engram_ls.mcp_server.http import GRANT_KEY, NO_GRANT, Grant, grant_of

    fields = {f.name for f in dataclasses.fields(ServerRequestContext)}
    assert "request" in fields
    grant = Grant(write=False, vaults=frozenset({"tags"}))
    request = Request({"type": "http", "headers": [], GRANT_KEY: grant})
    ctx: Any = type("Ctx", (), {"request": request})()
    assert grant_of(ctx) is grant
    ctx.request = None  # stdio, or a message without its request: no grant, nothing allowed
    assert grant_of(ctx) is NO_GRANT


def test_a_wrong_token_with_httpx_and_a_session(served: McpHttp) -> None:
    """A session id does not stand in for the token."""
    opened = served.open_session(Authorization=f"Bearer {READ}")
    session_id = opened.headers["mcp-session-id"]
    r = httpx2.post(
        served.url,
        json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": PROTOCOL,
        },
        timeout=10,
    )
    assert r.status_code == 401


def test_behind_a_tls_terminating_proxy(vault_copy: Callable[[str], Path], tmp_path: Path) -> None:
    """docs/mcp.md, "Behind a reverse proxy": the proxy forwards the Host clients used in an
    ``https://`` URL (no port: 443), which ``--allowed-host NAME:443`` admits."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"read {READ}\n")
    args = ("--tokens-file", str(tokens), "--allowed-host", "notes.example.org:443")
    with mcp_http(vault_copy("tags"), *args) as server:
        ok = {"Authorization": f"Bearer {READ}"}
        for host, status in (
            ("notes.example.org", 200),
            ("Notes.Example.Org:443", 200),
            ("notes.example.org:80", 421),
            ("notes.example.org:8443", 421),
            ("other.example.org", 421),
            (f"localhost:{server.port}", 200),
        ):
            r = server.open_session(Host=host, **ok)
            assert r.status_code == status, (host, r.text)
        assert server.open_session(Host="notes.example.org").status_code == 401

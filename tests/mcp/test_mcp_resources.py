"""Notes as MCP resources, through the SDK's client: the ``engram://{vault}/{+path}`` template
(percent-encoded paths read back as listed, the refusals of ``read_note`` as errors naming the
Engram code), ``resources/list`` paged with opaque cursors over several vaults (no overlap, no
gap, expired once the index changed), and subscriptions in both protocol eras (a 2026-07-28
``subscriptions/listen`` stream and a 2025 ``resources/subscribe``) hearing of notes changed on
disk: in process and over stdio against the real ``engram-mcp``."""

from __future__ import annotations

import asyncio
import os
import sys
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated, Subscription
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from engram_ls.core.service import Engram
from engram_ls.core.sync import Change
from engram_ls.core.watch import VaultWatcher
from engram_ls.mcp_server.resources import MIME, PAGE, URI_TEMPLATE, note_uri, parse_uri
from engram_ls.mcp_server.server import create_server
from engram_ls.mcp_server.vaults import Served, Vaults

WAIT_S = 10.0


def opened(root: Path) -> Engram:
    engram = Engram(root)
    engram.open()
    engram.sync()
    return engram


def notes_on_disk(name: str, root: Path) -> set[str]:
    """The URIs of every note of a vault, from the files themselves."""
    return {
        note_uri(name, p.relative_to(root).as_posix())
        for p in root.rglob("*.md")
        if ".engram" not in p.relative_to(root).parts and not p.is_symlink()
    }


def write_notes(root: Path, count: int, prefix: str) -> None:
    """``count`` notes in two folders, dated over a few days (ties included), some undated."""
    for i in range(count):
        folder = root / ("old" if i % 2 else "new")
        folder.mkdir(exist_ok=True)
        date = "" if i % 7 == 0 else f"date: 2024-03-{1 + i % 5:02}\n"
        (folder / f"{prefix}-{i:03}.md").write_text(f"---\n{date}---\n# Note {i}\n", "utf-8")


async def all_pages(client: Client) -> tuple[list[types.ListResourcesResult], list[str]]:
    pages: list[types.ListResourcesResult] = []
    cursor: str | None = None
    while True:
        page = await client.list_resources(cursor=cursor)
        pages.append(page)
        cursor = page.next_cursor
        if not cursor:
            break
        assert len(pages) < 100, "the cursors never end"
    return pages, [r.uri for p in pages for r in p.resources]


@contextmanager
def no_deprecation() -> Iterator[None]:
    """``resources/subscribe`` is the 2025 era's: the SDK warns that it is gone in 2026."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


async def next_event(sub: Subscription, want: Callable[[Any], bool]) -> Any:
    with anyio.fail_after(WAIT_S):
        async for event in sub:
            if want(event):
                return event
    raise AssertionError("the listen stream ended")


class Updates:
    """What a 2025 client hears: the URIs of ``notifications/resources/updated``."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[str] = asyncio.Queue()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            await self.queue.put(message.params.uri)

    async def wait_for(self, uri: str) -> list[str]:
        """The URIs heard until ``uri`` (included)."""
        heard: list[str] = []
        with anyio.fail_after(WAIT_S):
            while not heard or heard[-1] != uri:
                heard.append(await self.queue.get())
        return heard

    def pending(self) -> list[str]:
        out = []
        while not self.queue.empty():
            out.append(self.queue.get_nowait())
        return out


@asynccontextmanager
async def watched(roots: dict[str, Path]) -> AsyncIterator[Vaults]:
    """Vaults served with their watchers running (what ``engram-mcp`` does, in process)."""
    served = [Served(name, opened(root)) for name, root in roots.items()]
    for s in served:
        s.watcher = VaultWatcher(s.engram, on_applied=s.applied)
        s.watcher.start()
        assert s.watcher.wait_established()
    try:
        yield Vaults(served)
    finally:
        for s in served:
            assert s.watcher is not None
            s.watcher.stop()
            s.engram.close()


@pytest.fixture
def tags_engram(vault_copy: Callable[[str], Path]) -> Engram:
    return opened(vault_copy("tags"))


# --- the template ------------------------------------------------------------------------


def test_uris_round_trip() -> None:
    for path in ("a.md", "sub dir/café note.md", "x/100% #1?.md", "日本/メモ.md", "a+b&c=d.md"):
        uri = note_uri("notes", path)
        assert " " not in uri and "#" not in uri and "?" not in uri
        assert parse_uri(uri) == ("notes", path), uri
    assert parse_uri("file:///etc/passwd") is None


async def test_template_is_listed_and_reads_a_note(tags_engram: Engram) -> None:
    async with Client(create_server(tags_engram)) as client:
        caps = client.server_capabilities.resources
        assert caps is not None and caps.subscribe
        templates = (await client.list_resource_templates()).resource_templates
        assert [(t.uri_template, t.mime_type) for t in templates] == [(URI_TEMPLATE, MIME)]
        r = await client.read_resource("engram://vault-tags/e-python.md")
        (content,) = r.contents
        assert isinstance(content, types.TextResourceContents)
        assert content.mime_type == MIME and "Python only" in content.text
        assert content.uri == "engram://vault-tags/e-python.md"
        assert content.text == (tags_engram.vault.root / "e-python.md").read_text("utf-8")


async def test_percent_encoded_paths_read_as_listed(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    odd = ["sub dir/café note.md", "日本/メモ.md", "x/100% done #1.md", "a+b&c=d.md"]
    for path in odd:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(f"# {path}\nbody of {path}\n", "utf-8")
    async with Client(create_server(opened(root))) as client:
        listed = {r.name: r.uri for r in (await client.list_resources()).resources}
        for path in odd:
            uri = listed[path]
            assert uri == note_uri("vault-tags", path)
            assert " " not in uri and "#" not in uri and all(ord(c) < 128 for c in uri)
            (content,) = (await client.read_resource(uri)).contents
            assert isinstance(content, types.TextResourceContents)
            assert content.text == f"# {path}\nbody of {path}\n"
        # %2F is a slash like any other: the same note
        r = await client.read_resource("engram://vault-tags/sub%20dir%2Fcaf%C3%A9%20note.md")
        assert "body of sub dir/café note.md" in r.contents[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("uri", "code"),
    [
        pytest.param("engram://vault-tags/../secret.md", "ENGRAM_OUTSIDE_VAULT", id="dotdot"),
        pytest.param("engram://vault-tags/a/%2E%2E/%2E%2E/x.md", "ENGRAM_OUTSIDE_VAULT", id="enc"),
        pytest.param("engram://vault-tags//etc/passwd", "ENGRAM_OUTSIDE_VAULT", id="absolute"),
        pytest.param("engram://vault-tags/leak.md", "ENGRAM_OUTSIDE_VAULT", id="symlink-out"),
        pytest.param("engram://vault-tags/nope.md", "ENGRAM_NOT_FOUND", id="missing"),
        pytest.param("engram://vault-tags/fifo.md", "ENGRAM_", id="fifo"),
        pytest.param(
            "engram://vault-tags/.engram/index.sqlite", "ENGRAM_INVALID_REQUEST", id="not-a-note"
        ),
        pytest.param("engram://vault-tags/", "ENGRAM_INVALID_REQUEST", id="the-vault"),
        pytest.param("engram://nope/e-python.md", "ENGRAM_INVALID_REQUEST", id="unknown-vault"),
        pytest.param("engram:///e-python.md", "ENGRAM_INVALID_REQUEST", id="no-vault"),
    ],
)
async def test_refusals_are_errors_naming_the_code(
    vault_copy: Callable[[str], Path], tmp_path: Path, uri: str, code: str
) -> None:
    root = vault_copy("tags")
    secret = tmp_path / "secret.md"
    secret.write_text("secret", "utf-8")
    os.symlink(secret, root / "leak.md")
    os.mkfifo(root / "fifo.md")
    async with Client(create_server(opened(root))) as client:
        with anyio.fail_after(WAIT_S), pytest.raises(MCPError) as err:
            await client.read_resource(uri)
    assert err.value.message.startswith(code), err.value.message
    assert err.value.error.code == types.INVALID_PARAMS


# --- the list and its cursors -------------------------------------------------------------


@pytest.fixture
def three(vault_copy: Callable[[str], Path], tmp_path: Path) -> dict[str, Path]:
    """A vault of exactly one page, the 9 notes of ``tags``, then 150 notes: pages that end
    on a vault's end and in a vault's middle."""
    hundred, bulk = tmp_path / "hundred", tmp_path / "bulk"
    hundred.mkdir()
    bulk.mkdir()
    write_notes(hundred, PAGE, "h")
    write_notes(bulk, 150, "b")
    return {"hundred": hundred, "tags": vault_copy("tags"), "bulk": bulk}


async def test_list_pages_every_note_once(three: dict[str, Path]) -> None:
    engrams = {name: opened(root) for name, root in three.items()}
    async with Client(create_server(engrams)) as client:
        pages, uris = await all_pages(client)
        assert [len(p.resources) for p in pages] == [PAGE, PAGE, 59]
        assert len(uris) == len(set(uris)), "a note listed twice"
        expected = set().union(*(notes_on_disk(n, r) for n, r in three.items()))
        assert set(uris) == expected, "a note missing"
        # vault by vault, in the order given; each newest first, the undated last
        vaults = [uri.split("/")[2] for uri in uris]
        assert vaults == sorted(vaults, key=list(three).index)
        for name in three:
            mine = [r for p in pages for r in p.resources if r.uri.split("/")[2] == name]
            dates = [(r.meta or {}).get("date") or "" for r in mine]
            assert dates == sorted(dates, reverse=True), name
        first = next(r for r in pages[1].resources if r.name == "f-several.md")
        assert first.uri == "engram://tags/f-several.md" and first.title == "Several topics"
        assert first.mime_type == MIME
        assert first.description is not None and "2025-01-01" in first.description
        assert "topics: python, memory, Memory Leak, sqlite" in first.description
        assert (
            first.annotations is not None
            and first.annotations.last_modified == "2025-01-01T00:00:00Z"
        )
        # what is listed reads
        for uri in (uris[0], uris[PAGE], uris[-1]):
            assert (await client.read_resource(uri)).contents


async def test_cursor_expires_when_the_index_changes(three: dict[str, Path]) -> None:
    engrams = {name: opened(root) for name, root in three.items()}
    async with Client(create_server(engrams)) as client:
        first = await client.list_resources()
        second = await client.list_resources(cursor=first.next_cursor)
        assert second.next_cursor
        # a change in a vault already listed leaves the cursor into "bulk" as it is
        (three["hundred"] / "late.md").write_text("# late\n", "utf-8")
        engrams["hundred"].sync()
        again = await client.list_resources(cursor=second.next_cursor)
        assert [r.uri for r in again.resources] == [
            r.uri for r in (await client.list_resources(cursor=second.next_cursor)).resources
        ]
        # a change in the vault the cursor continues expires it
        (three["bulk"] / "new" / "b-000.md").write_text("# changed\n", "utf-8")
        engrams["bulk"].sync()
        with pytest.raises(MCPError) as err:
            await client.list_resources(cursor=second.next_cursor)
        assert "ENGRAM_INVALID_REQUEST" in err.value.message
        assert "cursor expired, search again" in err.value.message
        # and a cursor that starts a vault expires when that vault changed
        (three["tags"] / "new.md").write_text("# new\n", "utf-8")
        engrams["tags"].sync()
        with pytest.raises(MCPError, match="cursor expired, search again"):
            await client.list_resources(cursor=first.next_cursor)
        # listing again from the start sees the new notes, once each
        _, uris = await all_pages(client)
        assert "engram://tags/new.md" in uris and "engram://hundred/late.md" in uris
        assert len(uris) == len(set(uris)) == 100 + 10 + 150 + 1


@pytest.mark.parametrize(
    "cursor", ["garbage", "tags.garbage", "nope.abc", "", "hundred." + "A" * 40]
)
async def test_a_foreign_cursor_is_refused(three: dict[str, Path], cursor: str) -> None:
    engrams = {name: opened(root) for name, root in three.items()}
    async with Client(create_server(engrams)) as client:
        if not cursor:  # an empty cursor is the first page
            assert len((await client.list_resources(cursor=cursor)).resources) == PAGE
            return
        with pytest.raises(MCPError) as err:
            await client.list_resources(cursor=cursor)
    assert err.value.message.startswith("ENGRAM_INVALID_REQUEST: cursor")


# --- subscriptions -----------------------------------------------------------------------


async def test_listen_hears_a_note_changed_on_disk(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    async with watched({"tags": root}) as vaults, Client(create_server(vaults)) as client:
        uri = "engram://tags/e-python.md"
        async with client.listen(resource_subscriptions=[uri], resources_list_changed=True) as sub:
            assert sub.honored.resource_subscriptions == [uri]
            (root / "e-python.md").write_text("# rewritten\n", "utf-8")
            await next_event(sub, lambda e: e == ResourceUpdated(uri=uri))
            (root / "brand new.md").write_text("# new\n", "utf-8")
            await next_event(sub, lambda e: isinstance(e, ResourcesListChanged))
            # and the note reads as it is now
            r = await client.read_resource(uri)
            assert r.contents[0].text == "# rewritten\n"  # type: ignore[union-attr]


async def test_legacy_subscribe_hears_a_note_changed_on_disk(
    vault_copy: Callable[[str], Path],
) -> None:
    root = vault_copy("tags")
    updates = Updates()
    async with (
        watched({"tags": root}) as vaults,
        Client(create_server(vaults), mode="legacy", message_handler=updates) as client,
    ):
        caps = client.server_capabilities.resources
        assert caps is not None and caps.subscribe
        uri = "engram://tags/a-memory-upper.md"
        with no_deprecation():
            await client.subscribe_resource(uri)
        (root / "a-memory-upper.md").write_text("# changed\n", "utf-8")
        await updates.wait_for(uri)
        with no_deprecation():
            await client.unsubscribe_resource(uri)
            await client.subscribe_resource("engram://tags/b-memory-lower.md")
        (root / "a-memory-upper.md").write_text("# changed again\n", "utf-8")
        (root / "b-memory-lower.md").write_text("# changed\n", "utf-8")
        heard = await updates.wait_for("engram://tags/b-memory-lower.md")
        await anyio.sleep(0.2)
        assert uri not in heard + updates.pending()
        with no_deprecation(), pytest.raises(MCPError) as err:
            await client.subscribe_resource("engram://tags/../x.md")
        assert err.value.message.startswith("ENGRAM_OUTSIDE_VAULT")


async def test_folder_changes_reach_the_notes_under_them(tags_engram: Engram) -> None:
    """A batch the watcher applied (here told to the vault as the watcher would): a note
    under a folder that moved or was deleted is updated; a folder's URI follows all below."""
    vaults = Vaults.of({"tags": tags_engram})
    (served,) = vaults
    root = tags_engram.vault.root
    updates = Updates()
    async with (
        Client(create_server(vaults), mode="legacy", message_handler=updates) as legacy,
        Client(create_server(vaults)) as modern,
        modern.listen(
            resource_subscriptions=["engram://tags/p/q/n.md", "engram://tags/p"],
            resources_list_changed=True,
        ) as sub,
    ):
        with no_deprecation():
            await legacy.subscribe_resource("engram://tags/p/q/n.md")
            await legacy.subscribe_resource("engram://tags/")
        await anyio.to_thread.run_sync(
            served.applied, [Change("renamed", str(root / "p"), str(root / "r"))]
        )
        await next_event(sub, lambda e: e == ResourceUpdated(uri="engram://tags/p/q/n.md"))
        await next_event(sub, lambda e: e == ResourceUpdated(uri="engram://tags/p"))
        await next_event(sub, lambda e: isinstance(e, ResourcesListChanged))
        await updates.wait_for("engram://tags/p/q/n.md")
        await updates.wait_for("engram://tags/")
        # a change beside the note reaches the vault's URI, not the note's
        await anyio.to_thread.run_sync(served.applied, [Change("changed", "p/other.md")])
        heard = await updates.wait_for("engram://tags/")
        await anyio.sleep(0.1)
        assert "engram://tags/p/q/n.md" not in heard + updates.pending()


# --- the real process over stdio ------------------------------------------------------------


def two_vaults_process(a: Path, b: Path) -> StdioServerParameters:
    args = ["-m", "engram_ls.mcp_server", "--vault", f"a={a}", "--vault", f"b={b}"]
    return StdioServerParameters(command=sys.executable, args=args)


async def test_stdio_two_vaults_list_read_and_refuse(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    a, b = vault_copy("tags"), vault_copy("example")
    write_notes(a, 120, "many")
    (b / "sub dir").mkdir()
    (b / "sub dir" / "café note.md").write_text("# Café\nau lait\n", "utf-8")
    secret = tmp_path / "secret.md"
    secret.write_text("secret", "utf-8")
    os.symlink(secret, a / "leak.md")
    async with Client(two_vaults_process(a, b)) as client:
        pages, uris = await all_pages(client)
        assert len(pages) > 1 and len(uris) == len(set(uris))
        assert set(uris) == notes_on_disk("a", a) | notes_on_disk("b", b)
        assert uris.index("engram://a/e-python.md") < uris.index("engram://b/_about.md")
        cafe = "engram://b/sub%20dir/caf%C3%A9%20note.md"
        assert cafe in uris
        r = await client.read_resource(cafe)
        assert r.contents[0].text == "# Café\nau lait\n"  # type: ignore[union-attr]
        for uri, code in [
            ("engram://a/../b/_about.md", "ENGRAM_OUTSIDE_VAULT"),
            ("engram://a/leak.md", "ENGRAM_OUTSIDE_VAULT"),
            ("engram://b/e-python.md", "ENGRAM_NOT_FOUND"),
            ("engram://c/e-python.md", "ENGRAM_INVALID_REQUEST"),
        ]:
            with pytest.raises(MCPError) as err:
                await client.read_resource(uri)
            assert err.value.message.startswith(code), (uri, err.value.message)


async def test_stdio_subscriptions_hear_changes_on_disk(vault_copy: Callable[[str], Path]) -> None:
    a, b = vault_copy("tags"), vault_copy("example")
    write_notes(a, PAGE, "many")  # more than a page: a cursor
    params = two_vaults_process(a, b)
    async with Client(params) as client:
        assert client.protocol_version == "2026-07-28"
        uri = "engram://b/sub%20dir/caf%C3%A9%20note.md"
        async with client.listen(resource_subscriptions=[uri]) as sub:
            (b / "sub dir").mkdir()
            (b / "sub dir" / "café note.md").write_text("# Café\n", "utf-8")
            await next_event(sub, lambda e: e == ResourceUpdated(uri=uri))
            (content,) = (await client.read_resource(uri)).contents
            assert content.text == "# Café\n"  # type: ignore[union-attr]
        # an expired cursor over stdio
        first = await client.list_resources()
        assert first.next_cursor
        (a / "later.md").write_text("# later\n", "utf-8")
        with anyio.fail_after(WAIT_S):
            while True:
                try:
                    await client.list_resources(cursor=first.next_cursor)
                except MCPError as exc:
                    assert "ENGRAM_INVALID_REQUEST" in exc.message
                    assert "cursor expired, search again" in exc.message
                    break
                await anyio.sleep(0.05)
    updates = Updates()
    async with Client(params, mode="legacy", message_handler=updates) as client:
        assert client.protocol_version == "2025-11-25"
        with no_deprecation():
            await client.subscribe_resource("engram://a/e-python.md")
        (a / "e-python.md").write_text("# rewritten\n", "utf-8")
        await updates.wait_for("engram://a/e-python.md")
        (a / "e-python.md").unlink()
        await updates.wait_for("engram://a/e-python.md")
        with pytest.raises(MCPError) as err:
            await client.read_resource("engram://a/e-python.md")
        assert err.value.message.startswith("ENGRAM_NOT_FOUND")

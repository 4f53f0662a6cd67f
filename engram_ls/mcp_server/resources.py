"""Notes as MCP resources: ``engram://VAULT/PATH`` reads a note, ``resources/list`` pages
through the notes of every vault, and subscribers hear when a note changes on disk.

- **Template** ``engram://{vault}/{+path}``: ``PATH`` is the vault-relative path of a note,
  percent-encoded (``engram://notes/caf%C3%A9/first%20day.md``); its ``/`` stay as they are.
  Reading one gives the note's whole text (``text/markdown``) with the refusals of
  ``read_note``: a path out of the vault (``..``, a symlink out, an absolute path) is
  ``ENGRAM_OUTSIDE_VAULT``, a missing note ``ENGRAM_NOT_FOUND``, a file that is no note or a
  vault that is not served ``ENGRAM_INVALID_REQUEST``: each a JSON-RPC error whose message
  begins with the code (``data.code`` holds it too).
- **List**: vault by vault in the order the server was given them, each vault's notes newest
  first (undated ones last), 100 a page. ``nextCursor`` is an opaque cursor
  (``cursors.py``): following it while the vault's index is unchanged gives the next page
  with no overlap and no gap; once the index changed it fails with
  ``ENGRAM_INVALID_REQUEST: cursor expired, search again`` (list again from the start).
  Each resource's ``name`` is the note's path, ``title`` its title, its ``description`` the
  date and topics (``2024-07-30 · topics: performance, memory``), ``annotations
  .lastModified`` the note's date (midnight UTC for a day), and ``_meta`` the vault, date
  and topics.
- **Subscriptions**, in both protocol eras the SDK speaks: a 2026-07-28 client opens
  ``subscriptions/listen`` with the URIs it follows (and ``resourcesListChanged`` if it
  wants to hear of notes created, deleted or moved); a 2025 client sends
  ``resources/subscribe`` and gets ``notifications/resources/updated``. The vault's watcher
  reports each batch of changes on disk (``Served.on_changes``, on the watcher's thread);
  the notifications are sent from the server's event loop. A note is reported when it
  changed, was deleted, created or moved (from or to it), or a folder holding it did;
  subscribing to a folder's URI (``engram://notes/projects``, or ``engram://notes/`` for the
  whole vault) reports under that URI any change below it. Notifications carry the URI the
  client subscribed with.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver.resources.templates import ResourceSecurity
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate
from mcp.types import (
    Annotations,
    EmptyResult,
    ListResourcesResult,
    PaginatedRequestParams,
    Resource,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    UnsubscribeRequestParams,
)

from engram_ls.core.errors import EngramError, InvalidRequest
from engram_ls.core.search.hits import SearchHit
from engram_ls.core.search.request import MAX_OFFSET
from engram_ls.core.sync import Change
from engram_ls.mcp_server.cursors import EXPIRED
from engram_ls.mcp_server.errors import protocol_error
from engram_ls.mcp_server.vaults import Served

if TYPE_CHECKING:
    from engram_ls.mcp_server.server import EngramMCP

log = logging.getLogger("engram_ls.mcp")
URI_TEMPLATE = "engram://{vault}/{+path}"
MIME = "text/markdown"
PAGE = 100
"""Resources per ``resources/list`` page."""
_TEMPLATE = UriTemplate.parse(URI_TEMPLATE)
_LIST_REQUEST = {"list": "notes", "page": PAGE}
"""What a ``resources/list`` cursor pages (its digest ties the cursor to this list)."""


def note_uri(vault: str, path: str) -> str:
    """The resource URI of a note: every character of the path but ``/`` and the unreserved
    ones percent-encoded (UTF-8), so that the URI reads back as the same path."""
    return f"engram://{vault}/{quote(path, safe='/')}"


def parse_uri(uri: str) -> tuple[str, str] | None:
    """(vault, path) of an ``engram://`` URI, percent-decoded; None for another URI."""
    found = _TEMPLATE.match(uri)
    if found is None:
        return None
    vault, path = found.get("vault"), found.get("path")
    if not isinstance(vault, str) or not isinstance(path, str):
        return None
    return vault, path


def add_resources(mcp: EngramMCP) -> None:
    """The note template, the paged ``resources/list``, and subscriptions (both eras)."""
    from engram_ls.mcp_server.server import _read  # server.py imports this module

    @mcp.resource(
        URI_TEMPLATE,
        name="note",
        title="A note",
        description="A note of a vault: engram://VAULT/PATH, PATH vault-relative and "
        "percent-encoded (resources/list gives each note's URI). The whole Markdown text.",
        mime_type=MIME,
        # The path's checks are the vault's own (below): they name the Engram code.
        security=ResourceSecurity(exempt_params={"vault", "path"}),
    )
    def note(vault: str, path: str) -> str:
        try:
            served = _named(mcp, vault)
            return str(_read(served.engram, path, 0, sys.maxsize))
        except EngramError as exc:
            raise protocol_error(exc, note_uri(vault, path)) from None

    lowlevel = mcp._lowlevel_server  # the SDK's own list handler ignores the cursor

    async def list_resources(
        ctx: ServerRequestContext[Any, Any], params: PaginatedRequestParams
    ) -> ListResourcesResult:
        return await anyio.to_thread.run_sync(partial(list_page, mcp, params.cursor))

    lowlevel.add_request_handler("resources/list", PaginatedRequestParams, list_resources)
    Subscriptions(mcp).install()


def list_page(mcp: EngramMCP, cursor: str | None) -> ListResourcesResult:
    """One page of ``resources/list``: the vaults in order, each newest first."""
    vaults = list(mcp.vaults)
    index, offset = 0, 0
    generation: int | None = None  # the current vault's, once known
    if cursor:
        name, _, token = cursor.rpartition(".")
        served = next((s for s in vaults if s.name == name), None)
        if served is None:
            raise protocol_error(
                InvalidRequest(
                    "cursor: not a cursor of this server (pass nextCursor as it was returned)",
                    data={"argument": "cursor"},
                )
            )
        now = served.engram.status().generation
        try:
            page = mcp.cursors.read(token, "resources", name, _LIST_REQUEST, now)
        except EngramError as exc:
            raise protocol_error(exc) from None
        index, offset, generation = vaults.index(served), page.offset, page.generation
    resources: list[Resource] = []
    next_cursor = None
    several = len(vaults) > 1
    while index < len(vaults) and len(resources) < PAGE:
        served = vaults[index]
        if generation is None:
            generation = served.engram.status().generation
        try:
            response = served.engram.search(
                {"path": "**", "limit": PAGE - len(resources), "offset": offset}
            )
        except EngramError as exc:
            raise protocol_error(exc) from None
        if response.index.generation != generation:
            if offset:  # the notes moved under the pages already given
                raise protocol_error(InvalidRequest(EXPIRED, data={"argument": "cursor"}))
            generation = response.index.generation
        hits = response.results
        resources += [_resource(served, hit, several) for hit in hits]
        offset += len(hits)
        if hits and offset < response.total and offset < MAX_OFFSET:
            if len(resources) >= PAGE:
                next_cursor = _cursor(mcp, served, offset, generation)
            continue
        index, offset, generation = index + 1, 0, None
        if len(resources) >= PAGE and index < len(vaults):
            following = vaults[index]
            next_cursor = _cursor(mcp, following, 0, following.engram.status().generation)
    return ListResourcesResult(resources=resources, next_cursor=next_cursor)


def _named(mcp: EngramMCP, vault: str) -> Served:
    """The vault a URI names: always by name (a URI never leaves it to the server)."""
    if not vault:
        raise InvalidRequest(
            f"vault: a URI names its vault: engram://NAME/PATH ({', '.join(mcp.vaults.names)})"
        )
    return mcp.vaults.get(vault)


def _cursor(mcp: EngramMCP, served: Served, offset: int, generation: int) -> str:
    token = mcp.cursors.issue("resources", served.name, _LIST_REQUEST, offset, generation)
    return f"{served.name}.{token}"  # a token has no '.': the vault is what precedes the last


def instant(date: str) -> str:
    """A note's date as the ISO 8601 date-time with an offset that ``lastModified`` must be
    (clients built on the TypeScript SDK drop a resource whose date is a bare day): a day is
    its midnight, a time without an offset is taken as UTC."""
    if len(date) == 10:
        return f"{date}T00:00:00Z"
    if date.endswith("Z") or re.search(r"[+-][0-9]{2}:?[0-9]{2}$", date[10:]):
        return date
    return date + "Z"


def _resource(served: Served, hit: SearchHit, several: bool) -> Resource:
    date = hit.created_at
    about = [date or "undated"]
    if hit.topics:
        about.append("topics: " + ", ".join(hit.topics))
    if several:
        about.insert(0, f"vault {served.name}")
    return Resource(
        uri=note_uri(served.name, hit.path),
        name=hit.path,
        title=hit.title or None,
        description=" · ".join(about),
        mime_type=MIME,
        annotations=Annotations(last_modified=instant(date)) if date else None,
        _meta={"vault": served.name, "date": date, "topics": list(hit.topics)},
    )


@dataclass(frozen=True, slots=True)
class Followed:
    """A URI a client follows, as the vault and vault-relative path it names."""

    uri: str
    vault: str
    path: str


def _touches(followed: str, changed: str) -> bool:
    """Whether a change at ``changed`` (a note or folder) concerns what is followed at
    ``followed`` (a note, or a folder: any change below it); "" is the whole vault."""
    if followed == changed or not changed or not followed:
        return True
    return followed.startswith(changed + "/") or changed.startswith(followed + "/")


class Subscriptions:
    """Who follows which notes, and the notifications when they change.

    Registrations happen on the server's event loop (the request handlers); the watcher calls
    ``on_changes`` on its own thread, which hands the batch to the loop the last subscription
    came from (``call_soon_threadsafe``): the matching and sending happen there, where the
    subscription bus and the sessions live."""

    def __init__(self, mcp: EngramMCP) -> None:
        self.mcp = mcp
        self.loop: asyncio.AbstractEventLoop | None = None
        self.listening: dict[int, list[Followed]] = {}
        """2026-07-28 ``subscriptions/listen`` streams: what each one follows."""
        self.legacy: dict[Any, dict[str, Followed]] = {}
        """2025 connections (``resources/subscribe``): what each one follows, by URI."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._streams = 0

    def install(self) -> None:
        lowlevel = self.mcp._lowlevel_server
        listen = lowlevel.get_request_handler("subscriptions/listen")
        if listen is not None:
            inner = listen.handler

            async def listen_and_follow(
                ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
            ) -> Any:
                self.loop = asyncio.get_running_loop()
                self._streams += 1
                key = self._streams
                wanted = params.notifications.resource_subscriptions or []
                self.listening[key] = [f for f in map(self._followed, wanted) if f is not None]
                try:
                    return await inner(ctx, params)
                finally:
                    self.listening.pop(key, None)

            lowlevel.add_request_handler(
                "subscriptions/listen", SubscriptionsListenRequestParams, listen_and_follow
            )
        lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, self.subscribe)
        lowlevel.add_request_handler(
            "resources/unsubscribe", UnsubscribeRequestParams, self.unsubscribe
        )
        for served in self.mcp.vaults:
            served.on_changes.append(self.on_changes)

    def _followed(self, uri: str) -> Followed | None:
        try:
            return self._check(uri)
        except MCPError:
            return None  # a listen stream is acknowledged as a whole: this URI never fires

    def _check(self, uri: str) -> Followed:
        """The note (or folder) ``uri`` names; an MCP error naming the Engram code when it
        is no URI of a served vault or leaves the vault."""
        parsed = parse_uri(uri)
        try:
            if parsed is None:
                raise InvalidRequest(f"uri: not a note of this server: {uri} ({URI_TEMPLATE})")
            served = _named(self.mcp, parsed[0])
            return Followed(uri, served.name, served.engram.vault.rel(parsed[1]))
        except EngramError as exc:
            raise protocol_error(exc, uri) from None

    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams
    ) -> EmptyResult:
        followed = self._check(params.uri)
        self.loop = asyncio.get_running_loop()
        connection = _connection(ctx)
        if connection not in self.legacy:
            self.legacy[connection] = {}
            stack = getattr(connection, "exit_stack", None)
            if stack is not None:  # forget the connection when it closes
                stack.callback(self.legacy.pop, connection, None)
        self.legacy[connection][followed.uri] = followed
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        self.legacy.get(_connection(ctx), {}).pop(params.uri, None)
        return EmptyResult()

    def on_changes(self, served: Served, changes: list[Change]) -> None:
        """The watcher's batch (on its thread): which paths changed, and whether the list of
        notes did; the notifications go out from the event loop."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return  # nobody ever subscribed
        paths, listed = changed_paths(served, changes)
        if not paths:
            return
        try:
            loop.call_soon_threadsafe(self._dispatch, served.name, paths, listed)
        except RuntimeError:  # the loop closed meanwhile: nobody to tell
            log.debug("%s: no event loop to notify subscribers", served.name)

    def _dispatch(self, vault: str, paths: list[str], listed: bool) -> None:
        task = asyncio.get_running_loop().create_task(self.notify(vault, paths, listed))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def notify(self, vault: str, paths: list[str], listed: bool) -> None:
        """Tell every subscriber following one of ``paths`` of ``vault`` (on the loop)."""
        try:
            bus = self.mcp._subscriptions
            streams = [f for followed in list(self.listening.values()) for f in followed]
            for uri in _matching(streams, vault, paths):
                await bus.publish(ResourceUpdated(uri=uri))
            if listed:
                await bus.publish(ResourcesListChanged())
            for connection, followed in list(self.legacy.items()):
                for uri in _matching(followed.values(), vault, paths):
                    await connection.send_resource_updated(uri)
        except Exception:  # a notification must never take the server down
            log.exception("%s: could not notify subscribers", vault)


def _matching(followed: Iterable[Followed], vault: str, paths: list[str]) -> list[str]:
    return list(
        dict.fromkeys(
            f.uri for f in followed if f.vault == vault and any(_touches(f.path, p) for p in paths)
        )
    )


def _connection(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The connection a request came on: what a 2025 client's subscriptions belong to (the
    SDK's per-request session has no public accessor for it)."""
    return getattr(ctx.session, "_connection", ctx.session)


def changed_paths(served: Served, changes: list[Change]) -> tuple[list[str], bool]:
    """The vault-relative paths a batch touches (both ends of a move; "" for the whole vault)
    and whether the list of notes may have changed (a note or folder created, deleted or
    moved, or a folder reconciled)."""
    vault = served.engram.vault
    paths: list[str] = []
    listed = False
    for change in changes:
        for raw in (change.path, change.new_path):
            if raw is None:
                continue
            try:
                rel = vault.rel(raw)
            except EngramError:
                continue  # not in this vault
            paths.append(rel)
            if change.kind != "changed" or not vault.filter.is_note(rel):
                listed = True
    return list(dict.fromkeys(paths)), listed

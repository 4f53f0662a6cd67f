"""``engram-ls``: the language server. ``create_server()`` builds it; ``main()`` runs it.

Lifecycle: ``initialize`` records the workspace folders and the ``initializationOptions``
(the config file's keys); ``initialized`` asks for the ``engram`` configuration section, opens
each vault's index and builds or reconciles it in the background with work-done progress, then
starts keeping it current (file operations, watched files, or the server's own watcher).
Every method is registered once, by ``features/__init__.py``, which lists its contributors.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcRequestCancelled
from pygls.lsp.server import LanguageServer
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
)

from engram_ls import __version__
from engram_ls.core.memory import one_heap
from engram_ls.core.net import is_loopback
from engram_ls.core.sync import SyncReport
from engram_ls.core.vault import find_vault_root
from engram_ls.core.watch import VaultWatcher
from engram_ls.lsp import convert, stdio
from engram_ls.lsp.executor import LifoExecutor
from engram_ls.lsp.vaults import VaultSession, VaultSessions

log = logging.getLogger("engram_ls.lsp")
if TYPE_CHECKING:
    from engram_ls.lsp.features import Contributors

T = TypeVar("T")
CONFIG_SECTION = "engram"
WORKERS = min(32, (os.cpu_count() or 1) + 4)
"""Worker threads at most (``ThreadPoolExecutor``'s default, which pygls used)."""
SHUTDOWN_WAIT_S = 1.0
"""Longest wait of ``shutdown`` for the requests before it (a client that sent one it no
longer waits for must not wait for ``shutdown`` either)."""


def _plain(obj: Any, cls: type) -> Any:
    """Custom messages as plain dicts; ``params`` may be absent (JSON-RPC makes it optional)."""
    fields = attrs.fields_dict(cls)
    return cls(**{name: obj.get(name) for name in fields})


class _Answered(JsonRpcException):
    """A request that could not be read, already answered with an error."""


class EngramProtocol(LanguageServerProtocol):
    """pygls' protocol, except that a request whose message cannot be read (wrong params for
    its method, say) gets an error response instead of leaving the client waiting."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            msg_id = data.get("id")
            if "method" not in data or not isinstance(msg_id, int | str):
                raise
            error = exc.to_response_error()
            cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
            error.message = f"cannot read the {data.get('method')!r} request{cause}"
            self._send_response(msg_id, error=error)
            raise _Answered(error.message) from exc


def _plain_response(msg: JsonRPCResponseMessage) -> dict[str, Any]:
    """A custom request's result as it is: plain JSON already, so walking it through cattrs
    (a third of a millisecond for a page of search hits) would only copy it. ``json.dumps``
    still hands anything that is not plain JSON to pygls' serializer."""
    return {"id": msg.id, "jsonrpc": msg.jsonrpc, "result": msg.result}


def converter_factory() -> cattrs.Converter:
    """lsprotocol's converter, but custom requests keep their params/results as plain dicts."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCResponseMessage, JsonRPCNotification):
        converter.register_structure_hook(cls, _plain)
    converter.register_unstructure_hook(JsonRPCResponseMessage, _plain_response)
    return converter


class EngramLanguageServer(LanguageServer):
    """The server object: protocol plumbing from pygls plus the session's vaults."""

    def __init__(self) -> None:
        super().__init__(
            "engram-ls",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            converter_factory=converter_factory,
            protocol_cls=EngramProtocol,
        )
        self.vaults = VaultSessions(self.run)
        self.settings: dict[str, Any] = {}
        self._setup: asyncio.Future[None] | None = None
        self.roots: list[Path] = []
        self.vault_settings: dict[str, Any] = {}
        """The settings the vaults were opened with (``initializationOptions`` and the
        ``engram`` configuration section), for a vault opened later."""
        self.watchers: list[VaultWatcher] = []
        """The server's own vault watchers (when the client cannot watch), stopped at shutdown."""
        self.on_started: list[Callable[[], Awaitable[None]]] = []
        """Run once the vaults exist (their builds may still be going on)."""
        self.on_vault_added: list[Callable[[VaultSession], None]] = []
        """Called for a vault opened after the start (the vault above a note opened outside
        every vault, a vault made again with new settings), before its build gets past opening
        its index."""
        self.on_vault_ready: list[Callable[[VaultSession], None]] = []
        """Called when a vault's first build or reconcile has finished."""
        self.on_changes_applied: list[Callable[[VaultSession, SyncReport], None]] = []
        self.on_reconfigured: list[Callable[[], None]] = []
        """Called once new settings are applied (whether or not a vault changed)."""
        self.own_watch = False
        """Whether the server watches the vaults itself (the client does not)."""

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, _Answered):
            log.warning("%s", error)  # the client got the error as the response
            return
        super().report_server_error(error, source)

    async def ready(self) -> None:
        """Wait until the vaults exist (after ``initialized``); their builds may still run."""
        if self._setup is not None and not self._setup.done():
            await asyncio.shield(self._setup)

    @property
    def thread_pool(self) -> LifoExecutor:  # type: ignore[override]
        """The worker threads (``lsp/executor.py``: the most recently idle one first, so that
        requests one at a time find its connection's page cache warm)."""
        if self._thread_pool is None:
            self._thread_pool = LifoExecutor(WORKERS)  # type: ignore[assignment]
        return self._thread_pool  # type: ignore[return-value]

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking core work (SQLite, file reads) off the event loop."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.thread_pool, partial(fn, *args))

    # -- helpers for features --------------------------------------------------------------

    def vault_for_uri(
        self, uri: str, resolved: dict[Path, Path] | None = None
    ) -> tuple[VaultSession, str] | None:
        """The vault of a ``file://`` URI and the path in it; ``resolved`` as in
        ``VaultSessions.for_path`` (for a batch of URIs)."""
        path = convert.uri_to_path(uri)
        return self.vaults.for_path(path, resolved) if path is not None else None

    def request_vault(self, uri: str | None) -> tuple[VaultSession, str]:
        """The vault a request names by ``uri`` (and the path in it), else the first one;
        ``-32602`` (``ENGRAM_OUTSIDE_VAULT``, ``ENGRAM_NOT_FOUND``) when there is none."""
        if uri is not None:
            found = self.vault_for_uri(uri)
            if found is None:
                raise JsonRpcInvalidParams(
                    message=f"{uri} is in no workspace folder",
                    data={"code": "ENGRAM_OUTSIDE_VAULT"},
                )
            return found
        first = next(iter(self.vaults), None)
        if first is None:
            raise JsonRpcInvalidParams(
                message="no workspace folder is open", data={"code": "ENGRAM_NOT_FOUND"}
            )
        return first, ""

    def supports(self, *names: str) -> bool:
        """Whether the client declared a nested capability, e.g. ``supports("window",
        "work_done_progress")``."""
        node: Any = self.client_capabilities
        for name in names:
            node = getattr(node, name, None)
            if node is None:
                return False
        return bool(node)

    def message(self, text: str, kind: types.MessageType = types.MessageType.Warning) -> None:
        self.window_show_message(types.ShowMessageParams(type=kind, message=text))

    # -- startup ---------------------------------------------------------------------------

    async def _settings(self, pushed: Any = None) -> dict[str, Any]:
        """The ``engram`` settings: ``initializationOptions``, with the client's ``engram``
        configuration section on top (asked with ``workspace/configuration`` when the client
        answers it, else the section of the settings it pushed)."""
        settings = dict(self.settings)
        if self.supports("workspace", "configuration"):
            try:
                items = [types.ConfigurationItem(section=CONFIG_SECTION)]
                result = await self.workspace_configuration_async(
                    types.ConfigurationParams(items=items)
                )
                if result and isinstance(result[0], dict):
                    settings.update(result[0])
            except Exception as exc:  # a client that fails the request: keep going
                log.warning("workspace/configuration failed: %s", exc)
        elif isinstance(pushed, dict) and isinstance(pushed.get(CONFIG_SECTION), dict):
            settings.update(pushed[CONFIG_SECTION])
        return settings

    async def start_vaults(self) -> None:
        settings = self.vault_settings = await self._settings()
        self._start(self.vaults.setup(self.roots, settings))
        # Run before any build gets past opening its index (the callbacks that start the
        # server's own watchers do not wait for anything), so ``_build`` sees the watcher.
        for started in self.on_started:
            await started()

    def _start(self, vaults: Sequence[VaultSession]) -> None:
        for vault in vaults:
            for warning in vault.warnings:
                self.message(f"Engram ({vault.root.name}): {warning}")
            vault.on_applied = self._applied
            vault.build = asyncio.ensure_future(self._build(vault))

    async def reconfigure(self, pushed: Any = None) -> None:
        """``workspace/didChangeConfiguration``: read the ``engram`` settings again and apply
        them; a vault whose configuration changed is made again with it and reconciled (every
        note re-parsed when what parsing depends on changed), with no restart."""
        await self.ready()
        settings = self.vault_settings = await self._settings(pushed)
        for old, new in self.vaults.reconfigure(settings):
            if new is old:  # the same configuration, with problems to tell (bad values)
                for warning in new.warnings:
                    self.message(f"Engram ({new.root.name}): {warning}")
                continue
            log.info("new settings for %s: reopening its index", new.root)
            if old.watcher is not None:
                old.watcher.stop()
                if old.watcher in self.watchers:
                    self.watchers.remove(old.watcher)
            for added in self.on_vault_added:
                added(new)
            self._start([new])
        for callback in self.on_reconfigured:
            callback()

    async def open_vault_of(self, uri: str) -> None:
        """For a note opened outside every vault (a client that sent no root, a note of
        another vault): open the vault above it, the nearest folder holding ``.engram/`` or
        ``.obsidian/``, as a workspace folder's is. Without one nothing is opened: a note's own
        folder is never made a vault."""
        await self.ready()
        path = convert.uri_to_path(uri)
        if path is None or self.vaults.for_path(path) is not None:
            return
        root = find_vault_root(path.parent)
        if root is None:
            return
        created = self.vaults.setup([root], self.vault_settings, client_folders=False)
        self._start(created)
        for vault in created:
            log.info("opened the vault %s of %s", vault.root, uri)
            for added in self.on_vault_added:
                added(vault)

    def _applied(self, vault: VaultSession, report: SyncReport) -> None:
        for callback in self.on_changes_applied:
            callback(vault, report)

    async def _build(self, vault: VaultSession) -> SyncReport | None:
        try:
            await self.run(vault.engram.open)
        except Exception as exc:  # open() reports failures itself; anything else is a bug
            log.exception("opening the index of %s failed", vault.root)
            self.message(f"Engram: opening the index of {vault.root} failed: {exc}")
            return None
        if vault.engram.unavailable:
            self.message(
                f"Engram: the index of {vault.root} cannot be used ({vault.engram.unavailable});"
                " searches read the files directly."
            )
            vault.retry_later()
            return None
        token: str | None = None
        if self.supports("window", "work_done_progress"):
            token = f"engram-build-{uuid.uuid4().hex}"
            try:
                await self.work_done_progress.create_async(token)
                self.work_done_progress.begin(
                    token,
                    types.WorkDoneProgressBegin(
                        title=f"Engram: indexing {vault.root.name}",
                        percentage=0,
                        cancellable=False,
                    ),
                )
            except Exception:
                token = None
        loop = asyncio.get_running_loop()
        last = [-1]

        def progress(done: int, total: int) -> None:
            pct = int(100 * done / max(total, 1))
            if token is None or pct == last[0]:
                return
            last[0] = pct
            report = types.WorkDoneProgressReport(message=f"{done}/{total} notes", percentage=pct)
            loop.call_soon_threadsafe(self.work_done_progress.report, token, report)

        result: SyncReport | None = None
        try:
            # The watch first, then the reconcile's walk: a change made before the watch is
            # on disk when the walk comes, one made after it is an event.
            watcher = vault.watcher
            if watcher is not None and not await self.run(watcher.wait_established):
                log.warning("the watch of %s is not in place yet; reconciling", vault.root)
            result = await self.run(partial(vault.engram.sync, progress=progress))
            vault.start_checks()
            vault.start_embedding(self._embedding_progress(vault))
        except Exception as exc:
            log.exception("building the index of %s failed", vault.root)
            self.message(f"Engram: indexing {vault.root} failed: {exc}", types.MessageType.Error)
            vault.retry_later()
        finally:
            if token is not None:
                status = await self.run(vault.engram.status)
                self.work_done_progress.end(
                    token,
                    types.WorkDoneProgressEnd(message=f"{status.notes} notes, {status.state}"),
                )
        for callback in self.on_vault_ready:
            callback(vault)
        return result

    def _embedding_progress(self, vault: VaultSession) -> Callable[[int, int], None] | None:
        """Work-done progress for a vault's embedding passes, called from the embedding thread:
        begun at a pass's first report of work, ended when it reports all done."""
        if not self.supports("window", "work_done_progress"):
            return None
        loop = asyncio.get_running_loop()
        state: dict[str, Any] = {"token": None, "pct": -1}

        async def begin(token: str) -> None:
            await self.work_done_progress.create_async(token)
            self.work_done_progress.begin(
                token,
                types.WorkDoneProgressBegin(
                    title=f"Engram: embedding {vault.root.name}", percentage=0, cancellable=False
                ),
            )

        def on_loop(done: int, total: int) -> None:
            token = state["token"]
            if token is None:
                if done >= total:
                    return
                token = state["token"] = f"engram-embed-{uuid.uuid4().hex}"
                state["started"] = asyncio.ensure_future(begin(token))
            pct = int(100 * done / max(total, 1))
            started = state["started"]
            if done >= total:
                state["token"], state["pct"] = None, -1
                end = types.WorkDoneProgressEnd(message="embedding ended")
                started.add_done_callback(lambda _: self.work_done_progress.end(token, end))
            elif pct != state["pct"]:
                state["pct"] = pct
                report = types.WorkDoneProgressReport(
                    message=f"{done}/{total} notes", percentage=pct
                )
                started.add_done_callback(lambda _: self.work_done_progress.report(token, report))

        def progress(done: int, total: int) -> None:
            loop.call_soon_threadsafe(on_loop, done, total)

        return progress

    def stop_all(self) -> None:
        for watcher in self.watchers:
            watcher.stop()
        self.watchers.clear()
        self.vaults.stop()


def _roots(params: types.InitializeParams) -> list[Path]:
    uris: list[str] = []
    if params.workspace_folders:
        uris = [f.uri for f in params.workspace_folders]
    elif params.root_uri:
        uris = [params.root_uri]
    elif params.root_path:
        return [Path(params.root_path)]
    return [p for p in (convert.uri_to_path(u) for u in uris) if p is not None]


def create_server(contributors: Contributors | None = None) -> EngramLanguageServer:
    """Build a server with every method registered (no global state); ``contributors``
    replaces the listed contributors of the methods that have several."""
    from engram_ls.lsp import features

    server = EngramLanguageServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: EngramLanguageServer, params: types.InitializeParams) -> None:
        ls.roots = _roots(params)
        options = params.initialization_options
        ls.settings = dict(options) if isinstance(options, dict) else {}

    @server.feature(types.INITIALIZED)
    async def initialized(ls: EngramLanguageServer, params: types.InitializedParams) -> None:
        ls._setup = asyncio.ensure_future(ls.start_vaults())
        await ls._setup

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(
        ls: EngramLanguageServer, params: types.DidChangeConfigurationParams
    ) -> None:
        await ls.reconfigure(params.settings)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: EngramLanguageServer, params: None) -> None:
        # The requests that came before are answered first (after shutdown, pygls would
        # answer them with an error).
        await stdio.answered(ls, timeout=SHUTDOWN_WAIT_S)
        ls.stop_all()

    features.register(server, contributors or features.CONTRIBUTORS)
    return server


class _ExpectedErrors(logging.Filter):
    """pygls logs every error response with a traceback; a request the client got wrong
    (invalid params, cancelled, unknown id) or one that ran past its deadline is answered, not
    a server fault: one line at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        timeout = isinstance(exc, JsonRpcException) and exc.data == {"code": "ENGRAM_TIMEOUT"}
        if isinstance(exc, JsonRpcInvalidParams | JsonRpcRequestCancelled) or timeout:
            record.msg, record.args = "%s: %s", (record.getMessage(), exc)
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
        elif record.getMessage().startswith("Cancel notification for unknown message id"):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return record.levelno >= logging.getLogger().getEffectiveLevel()


def main(argv: Sequence[str] | None = None) -> int:
    one_heap()  # before any thread starts: core/memory.py
    parser = argparse.ArgumentParser(
        prog="engram-ls", description="The Engram language server (stdio by default)."
    )
    parser.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (default)")
    parser.add_argument("--tcp", metavar="HOST:PORT", help="serve over TCP instead")
    parser.add_argument("--log-level", default="WARNING", help="log level on stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    for handler in logging.getLogger().handlers:
        handler.addFilter(_ExpectedErrors())
    server = create_server()
    try:
        if args.tcp:
            host, _, port = args.tcp.rpartition(":")
            if not host or not port.isdigit():
                parser.error("--tcp needs HOST:PORT, e.g. 127.0.0.1:2087")
            if not is_loopback(host):
                sys.stderr.write(
                    f"engram-ls: warning: serving on {host}:{port}, reachable beyond this "
                    "machine, without any authentication: whoever connects can open any folder "
                    "of this machine as a workspace and read its notes; prefer 127.0.0.1 (and "
                    "an SSH tunnel for a remote editor)\n"
                )
            server.start_tcp(host, int(port))
        else:
            stdio.serve(server)
    finally:
        server.stop_all()
    return 0


__all__ = ["EngramLanguageServer", "create_server", "main"]

"""``textDocument/publishDiagnostics``: the core's problems with the note being edited.

The open buffer is parsed exactly as the indexer parses a file (``parse_note`` on its UTF-8
bytes, in the thread pool) and each :class:`~engram_ls.core.model.Problem` becomes a
diagnostic on its line (``source="engram"``, ``code`` = the problem code): malformed YAML,
frontmatter that is not a mapping, an unclosed ``---``, NUL bytes (errors); unparseable
dates, a note over the size cap (warnings). Links whose target is missing or ambiguous, and
anchors naming no heading, come from ``features/links.py`` (they need the index: none while
the first build runs; the open notes are checked again when it ends). A buffer is always
valid text, so whether the *file* is valid UTF-8 is checked on disk when the note is opened
or saved (``encoding``, warning) and kept until the next check.

When: at once on ``didOpen``; 300 ms after the last ``didChange`` (typing restarts the
wait); at once after a save or a file change has reached the index (``on_changes_applied``,
which ``didSave`` feeds), and for documents opened before the vaults existed once they do.
A note whose problems are gone gets an empty list; ``didClose`` clears its diagnostics.
Only notes of a vault are checked (its include/exclude globs); a result that is older than
the buffer is dropped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument

from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import EngramError
from engram_ls.core.model import Problem
from engram_ls.core.parse import parse_note
from engram_ls.core.sync import SyncReport
from engram_ls.core.vault import Vault as CoreVault
from engram_ls.lsp import convert
from engram_ls.lsp.features.links import link_diagnostics, link_problems

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import Vault

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.3
"""Quiet time after the last change before the buffer is parsed again."""
DISK_CODES = frozenset({"encoding"})
"""Problems only the file on disk can have (the editor's buffer is already decoded)."""

Found = list[tuple[Problem, str]]
"""Problems with the text of their line."""


def check_text(
    rel: str, text: str, config: EngramConfig, disk: CoreVault | None, kept: tuple[Problem, ...]
) -> tuple[Found, tuple[Problem, ...]]:
    """Problems of the buffer (plus the file's, read again from ``disk`` when given, else
    ``kept``) with their line texts, and the file's problems. Blocking; never raises."""
    if disk is not None:
        kept = _disk_problems(rel, disk, config)
    note = parse_note(rel, text.encode("utf-8", "replace"), config)
    problems = list(note.problems)
    codes = {p.code for p in problems}
    problems.extend(p for p in kept if p.code not in codes)
    lines = text.split("\n") if problems else []
    found: Found = []
    for problem in problems:
        index = max((problem.line or 1) - 1, 0)
        line = lines[index] if index < len(lines) else ""
        found.append((problem, line[:-1] if line.endswith("\r") else line))
    return found, kept


def _disk_problems(rel: str, vault: CoreVault, config: EngramConfig) -> tuple[Problem, ...]:
    try:
        data = vault.read(rel, config.limits.max_note_bytes + 1)[0]
    except (OSError, EngramError):  # gone, not a regular file (a FIFO), or outside the vault
        return ()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        note = parse_note(rel, data, config)
        return tuple(p for p in note.problems if p.code in DISK_CODES)
    return ()


class Diagnostics:
    """Per-document checks: one pending task per URI, the file's problems, what is shown."""

    def __init__(self, ls: EngramLanguageServer) -> None:
        self.ls = ls
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.read_disk: set[str] = set()
        """URIs whose pending check must read the file again."""
        self.disk: dict[str, tuple[Problem, ...]] = {}
        self.shown: set[str] = set()
        """URIs with diagnostics on screen."""

    def _document(self, uri: str) -> TextDocument | None:
        doc: TextDocument | None = self.ls.workspace.text_documents.get(unquote(uri))
        return doc

    def schedule(self, uri: str, delay: float, *, disk: bool = False, keep: bool = False) -> None:
        """Check ``uri`` after ``delay`` seconds (replacing a pending check unless ``keep``)."""
        if disk:
            self.read_disk.add(uri)
        pending = self.tasks.get(uri)
        if pending is not None and not pending.done():
            if keep:
                return
            pending.cancel()
        task = asyncio.ensure_future(self._check(uri, delay))
        self.tasks[uri] = task
        task.add_done_callback(lambda done: self._finished(uri, done))

    def _finished(self, uri: str, task: asyncio.Task[None]) -> None:
        if self.tasks.get(uri) is task:
            del self.tasks[uri]
        if not task.cancelled() and task.exception() is not None:
            log.error("checking %s failed", uri, exc_info=task.exception())

    def close(self, uri: str) -> None:
        pending = self.tasks.pop(uri, None)
        if pending is not None:
            pending.cancel()
        self.read_disk.discard(uri)
        self.disk.pop(uri, None)
        self.shown.discard(uri)
        if self.ls.vault_for_uri(uri) is not None:
            self._publish(uri, [], None)

    def recheck_open(self, vault: Vault | None = None, *, keep: bool = False) -> None:
        """Check every open document (of ``vault``), reading the files again."""
        docs: list[TextDocument] = list(self.ls.workspace.text_documents.values())
        for doc in docs:
            found = self.ls.vault_for_uri(doc.uri)
            if found is not None and (vault is None or found[0] is vault):
                self.schedule(doc.uri, 0, disk=True, keep=keep)

    async def _check(self, uri: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        doc = self._document(uri)
        if doc is None:
            return
        found = self.ls.vault_for_uri(uri)
        if found is None or not found[0].engram.vault.filter.is_note(found[1]):
            if uri in self.shown:
                self.shown.discard(uri)
                self._publish(uri, [], None)
            return
        vault, rel = found
        text, version = doc.source, doc.version
        disk = vault.engram.vault if uri in self.read_disk else None
        self.read_disk.discard(uri)
        kept = self.disk.get(uri, ())
        try:
            problems, kept = await self.ls.run(check_text, rel, text, vault.config, disk, kept)
        except asyncio.CancelledError:
            if disk is not None:
                self.read_disk.add(uri)
            raise
        self.disk[uri] = kept
        found_links = await self.ls.run(link_problems, vault, rel, text)
        current = self._document(uri)
        if current is not doc or current.version != version:
            return  # the buffer changed meanwhile: its own check is scheduled
        units = doc.position_codec.client_num_units
        diagnostics = [convert.problem_diagnostic(p, line, units) for p, line in problems]
        diagnostics += link_diagnostics(found_links, text, units)
        if not diagnostics and uri not in self.shown:
            return
        self._publish(uri, diagnostics, version)

    def _publish(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        if diagnostics:
            self.shown.add(uri)
        else:
            self.shown.discard(uri)
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )


def register(server: EngramLanguageServer) -> None:
    checks = Diagnostics(server)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: EngramLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri, 0, disk=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: EngramLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri, DEBOUNCE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: EngramLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        checks.close(params.text_document.uri)

    def applied(vault: Vault, report: SyncReport) -> None:
        # A save (or another change to the vault's files) is in the index: check the open
        # notes of that vault against their files again; a check already pending (typing)
        # is kept and reads the file when it runs.
        checks.recheck_open(vault, keep=True)

    async def started() -> None:
        checks.recheck_open()  # documents opened before the vaults existed

    def built(vault: Vault) -> None:
        checks.recheck_open(vault, keep=True)  # link diagnostics need the built index

    server.on_changes_applied.append(applied)
    server.on_started.append(started)
    server.on_vault_ready.append(built)

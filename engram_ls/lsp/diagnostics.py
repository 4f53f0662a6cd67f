"""``textDocument/publishDiagnostics``: when the open notes are checked, and what is shown.

What a note's problems are comes from the contributors listed in ``features/__init__.py``
(the core's problems with the text and the file; link problems); this module decides when
they run and publishes what they found together:

at once on ``didOpen``; 300 ms after the last ``didChange`` (typing restarts the wait); at
once after a save or a file change has reached the index (``on_changes_applied``, which
``didSave`` feeds), once a vault's first build has finished, and for documents opened before
the vaults existed once they do. A note whose problems are gone gets an empty list;
``didClose`` clears its diagnostics. Only notes of a vault are checked (its include/exclude
globs), and its Obsidian bases (``.base`` files, with their own contributors); a result that
is older than the buffer is dropped. A contributor that fails is logged and skipped; the
others' diagnostics are still published.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument

from engram_ls.lsp.registry import every_answer

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

log = logging.getLogger(__name__)

DEBOUNCE_S = 0.3
"""Quiet time after the last change before the buffer is checked again."""
METHOD = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS


@dataclass(slots=True)
class Check:
    """One check of an open note: what its contributors look at."""

    vault: VaultSession
    rel: str
    doc: TextDocument
    text: str
    """The buffer's text when the check started."""
    read_disk: bool
    """Whether the file on disk is to be read again (opened, saved or changed on disk)."""
    memo: dict[str, Any] = field(default_factory=dict)
    """The document's memory across checks (kept until it is closed), by contributor."""


DiagnosticsContributor = Callable[
    ["EngramLanguageServer", Check], Awaitable[list[types.Diagnostic]]
]


class Diagnostics:
    """Per-document checks: one pending task per URI, what is remembered and what is shown."""

    def __init__(
        self,
        ls: EngramLanguageServer,
        contributors: Sequence[DiagnosticsContributor],
        base_contributors: Sequence[DiagnosticsContributor] = (),
    ) -> None:
        self.ls = ls
        self.contributors = tuple(contributors)
        self.base_contributors = tuple(base_contributors)
        """Those of an Obsidian base (a ``.base`` file) instead."""
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.read_disk: set[str] = set()
        """URIs whose pending check must read the file again."""
        self.memo: dict[str, dict[str, Any]] = {}
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
        self.memo.pop(uri, None)
        self.shown.discard(uri)
        if self.ls.vault_for_uri(uri) is not None:
            self._publish(uri, [], None)

    def recheck_open(self, vault: VaultSession | None = None, *, keep: bool = False) -> None:
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
        paths = found[0].engram.vault.filter if found is not None else None
        base = paths is not None and found is not None and paths.is_base(found[1])
        if found is None or paths is None or not (base or paths.is_note(found[1])):
            if uri in self.shown:
                self.shown.discard(uri)
                self._publish(uri, [], None)
            return
        vault, rel = found
        version = doc.version
        read_disk = uri in self.read_disk
        self.read_disk.discard(uri)
        check = Check(vault, rel, doc, doc.source, read_disk, self.memo.setdefault(uri, {}))
        try:
            contributors = self.base_contributors if base else self.contributors
            diagnostics = await every_answer(METHOD, contributors, self.ls, check)
        except asyncio.CancelledError:
            if read_disk:
                self.read_disk.add(uri)
            raise
        current = self._document(uri)
        if current is not doc or current.version != version:
            return  # the buffer changed meanwhile: its own check is scheduled
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

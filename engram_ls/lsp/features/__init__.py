"""Every LSP method Engram answers, registered once here, with the contributors that answer it.

A feature module holds one concern (topics, properties, links, the librarian's suggestions,
the core's problems with a note, symbols, search, bases, tasks, keeping the index current) and
never imports another feature module; what they share is in ``lsp/document.py`` (the
document and positions), ``lsp/slots.py`` (where a frontmatter value is being written) and
``lsp/convert.py`` (core ↔ protocol). A method with several contributors asks them in the
order listed in ``Contributors`` (``lsp/registry.py``: a contributor that fails is logged and
skipped, the others still answer):

- hover, completion: the first contributor with an answer (the cursor is in a link, on a
  topic, or on a property's name or value);
- code actions, diagnostics: every contributor's items, in order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from engram_ls.lsp import diagnostics as publish
from engram_ls.lsp.document import is_base_uri, open_document
from engram_ls.lsp.features import (
    bases,
    files,
    lenses,
    librarian,
    links,
    problems,
    properties,
    search,
    symbols,
    tasks,
    topics,
)
from engram_ls.lsp.registry import Contributor, every_answer, first_answer

if TYPE_CHECKING:
    from engram_ls.core.sync import SyncReport
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

TRIGGER_CHARACTERS = ["#", "[", ",", " ", "-", "(", "/"]
"""Completion triggers: ``#`` (tags, anchors), ``[`` and ``(`` (links), ``/`` (folders in a
link), ``,``, space and ``-`` (topic lists)."""


@dataclass(frozen=True, slots=True)
class Contributors:
    """The contributors of each method with several, in the order they are asked."""

    hover: Sequence[Contributor[types.Hover | None]] = (
        links.hover,
        topics.hover,
        properties.hover,
    )
    completion: Sequence[Contributor[types.CompletionList | None]] = (
        links.complete,
        topics.complete,
        properties.complete,
    )
    code_actions: Sequence[Contributor[Sequence[types.CodeAction]]] = (
        links.create_note_actions,
        tasks.toggle_actions,
        librarian.suggested_topics,
    )
    diagnostics: Sequence[publish.DiagnosticsContributor] = (
        problems.diagnose,
        links.diagnose,
        bases.diagnose,
        tasks.diagnose,
    )
    base_hover: Contributor[types.Hover | None] = bases.hover
    """Hover, completion and diagnostics of an Obsidian base (a ``.base`` file)."""
    base_completion: Contributor[types.CompletionList | None] = bases.complete
    base_diagnostics: Sequence[publish.DiagnosticsContributor] = (bases.diagnose,)


CONTRIBUTORS = Contributors()


def register(server: EngramLanguageServer, contributors: Contributors = CONTRIBUTORS) -> None:
    """Register every method on ``server``, each once."""
    _register_single(server)
    _register_documents(server, contributors)
    _register_diagnostics(server, contributors.diagnostics, contributors.base_diagnostics)


def _register_documents(server: EngramLanguageServer, contributors: Contributors) -> None:
    """The methods on a position or range of a note: the document is opened once, then its
    contributors (or the one feature that answers) are asked."""

    def on_document(
        method: str,
        answer: Callable[..., Awaitable[Any]],
        options: Any = None,
        base: Contributor[Any] | None = None,
    ) -> None:
        @server.feature(method, options)
        async def handle(ls: EngramLanguageServer, params: Any) -> Any:
            uri = params.text_document.uri
            if is_base_uri(uri):  # an Obsidian base: its own contributor, if it has one
                document = open_document(ls, uri, base=True)
                if document is None or base is None:
                    return None
                return await first_answer(method, (base,), ls, document, params)
            document = open_document(ls, uri)
            return None if document is None else await answer(ls, document, params)

    on_document(
        types.TEXT_DOCUMENT_HOVER,
        partial(first_answer, types.TEXT_DOCUMENT_HOVER, contributors.hover),
        base=contributors.base_hover,
    )
    on_document(
        types.TEXT_DOCUMENT_COMPLETION,
        partial(first_answer, types.TEXT_DOCUMENT_COMPLETION, contributors.completion),
        types.CompletionOptions(trigger_characters=TRIGGER_CHARACTERS),
        base=contributors.base_completion,
    )
    on_document(types.TEXT_DOCUMENT_DEFINITION, links.definition)
    on_document(
        types.TEXT_DOCUMENT_CODE_LENS,
        lenses.code_lens,
        types.CodeLensOptions(resolve_provider=False),
    )
    on_document(
        types.TEXT_DOCUMENT_INLAY_HINT,
        lenses.inlay_hints,
        types.InlayHintOptions(resolve_provider=False),
    )
    on_document(types.TEXT_DOCUMENT_REFERENCES, links.references)

    kind = librarian.KIND

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[kind], resolve_provider=False),
    )
    async def code_action(
        ls: EngramLanguageServer, params: types.CodeActionParams
    ) -> list[types.CodeAction] | None:
        only = params.context.only
        if only and not any(k == kind or kind.startswith(f"{k}.") for k in only):
            return None
        await ls.ready()
        document = open_document(ls, params.text_document.uri)
        if document is None:
            return None
        actions = await every_answer(
            types.TEXT_DOCUMENT_CODE_ACTION, contributors.code_actions, ls, document, params
        )
        return actions or None


def _register_diagnostics(
    server: EngramLanguageServer,
    contributors: Sequence[publish.DiagnosticsContributor],
    base_contributors: Sequence[publish.DiagnosticsContributor] = (),
) -> None:
    """Diagnostics of the open notes (and bases): checked on open, change, save and index
    updates."""
    checks = publish.Diagnostics(server, contributors, base_contributors)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: EngramLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri, 0, disk=True)
        await ls.open_vault_of(params.text_document.uri)  # outside every vault: the one above

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: EngramLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        checks.schedule(params.text_document.uri, publish.DEBOUNCE_S)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: EngramLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        checks.close(params.text_document.uri)

    def applied(vault: VaultSession, report: SyncReport) -> None:
        # A save (or another change to the vault's files) is in the index: check the open
        # notes of that vault against their files again; a check already pending (typing)
        # is kept and reads the file when it runs.
        checks.recheck_open(vault, keep=True)

    async def started() -> None:
        checks.recheck_open()  # documents opened before the vaults existed

    def built(vault: VaultSession) -> None:
        checks.recheck_open(vault, keep=True)  # link diagnostics need the built index

    server.on_changes_applied.append(applied)
    server.on_started.append(started)
    server.on_vault_ready.append(built)


def _register_single(server: EngramLanguageServer) -> None:
    """The methods one feature answers alone."""
    feature = server.feature
    feature(types.WORKSPACE_WILL_RENAME_FILES, files.FILE_OPERATIONS)(links.will_rename)
    feature(types.WORKSPACE_SYMBOL)(symbols.on_workspace_symbol)
    feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(symbols.on_document_symbol)
    feature(search.SEARCH)(search.search)
    feature(search.STATUS)(search.status)
    feature(search.RELATED)(search.related)
    feature(bases.QUERY)(bases.query)
    feature(tasks.TASKS)(tasks.tasks)
    server.command(tasks.TOGGLE)(tasks.toggle_command)
    feature(types.TEXT_DOCUMENT_DID_SAVE)(files.did_save)
    feature(types.WORKSPACE_DID_CREATE_FILES, files.FILE_OPERATIONS)(files.did_create)
    feature(types.WORKSPACE_DID_RENAME_FILES, files.FILE_OPERATIONS)(files.did_rename)
    feature(types.WORKSPACE_DID_DELETE_FILES, files.FILE_OPERATIONS)(files.did_delete)
    feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(files.did_change_watched)

    async def start_watching() -> None:
        await files.start_watching(server)

    server.on_started.append(start_watching)
    server.on_vault_added.append(partial(files.watch_added, server))
    # Backlink counts and link titles follow the index; new settings may switch them.
    server.on_changes_applied.append(lambda _vault, _report: lenses.refresh(server))
    server.on_vault_ready.append(lambda _vault: lenses.refresh(server))
    server.on_reconfigured.append(partial(lenses.refresh, server))

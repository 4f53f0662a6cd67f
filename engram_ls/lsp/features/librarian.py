"""Code action contributor: "Add suggested topics" on a note (the other contributor, "Create
note" for a broken link, is in ``features/links.py``).

The suggestions come from the vault's ``keyword_topics`` map (``core.librarian``), read from the
open buffer; the action's ``WorkspaceEdit`` replaces only the lines of the frontmatter's topic
entry (or inserts a frontmatter), exactly the edit ``engram librarian --apply`` would write.
Nothing is offered when the map is empty, nothing matches, or the frontmatter cannot be edited
safely (malformed YAML: the diagnostics say why).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from lsprotocol import types

from engram_ls.core.errors import EngramError
from engram_ls.core.librarian import TopicEdit, add_topics_edit, suggest_topics
from engram_ls.lsp.document import Document

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from engram_ls.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)

KIND = types.CodeActionKind.QuickFix
"""The kind of every code action Engram offers."""
TITLE = "Add suggested topics"


def edit_range(doc: TextDocument, source: str, edit: TopicEdit) -> types.Range:
    """The client range of ``edit``'s whole lines (``end`` may be past the last line)."""
    lines = source.split("\n")
    start = types.Position(line=edit.start, character=0)
    if edit.end < len(lines):
        return types.Range(start=start, end=types.Position(line=edit.end, character=0))
    last = len(lines) - 1
    units = doc.position_codec.client_num_units(lines[last])
    return types.Range(start=start, end=types.Position(line=last, character=units))


def suggested_action(
    doc: TextDocument, source: str, topics: list[str], edit: TopicEdit, versioned: bool
) -> types.CodeAction:
    text_edit = types.TextEdit(range=edit_range(doc, source, edit), new_text=edit.text)
    if versioned:
        workspace_edit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=doc.uri, version=doc.version
                    ),
                    edits=[text_edit],
                )
            ]
        )
    else:
        workspace_edit = types.WorkspaceEdit(changes={doc.uri: [text_edit]})
    return types.CodeAction(
        title=f"{TITLE}: {', '.join(topics)}",
        kind=KIND,
        edit=workspace_edit,
        is_preferred=True,
    )


async def suggested_topics(
    ls: EngramLanguageServer, document: Document, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """Code action contributor: "Add suggested topics" from the vault's ``keyword_topics``."""
    config = document.vault.config
    if not config.keyword_topics:
        return []
    source = document.source

    def plan() -> tuple[list[str], TopicEdit | None]:
        topics = suggest_topics(source, config)
        return topics, add_topics_edit(source, topics, config) if topics else None

    try:
        topics, edit = await ls.run(plan)
    except EngramError as exc:
        log.debug("no topic suggestion for %s: %s", params.text_document.uri, exc)
        return []
    if edit is None:
        return []
    versioned = ls.supports("workspace", "workspace_edit", "document_changes")
    return [suggested_action(document.doc, source, topics, edit, versioned)]

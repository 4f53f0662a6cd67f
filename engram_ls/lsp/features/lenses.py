"""Code lenses and inlay hints: what the vault's links say about a note, shown in the note.

- ``textDocument/codeLens``: "N backlinks" on the line of the note's title (every link to the
  note) and on each heading that links name by their anchor (a heading no link names gets
  none); "related" beside the title's lens when search by meaning is available. The backlinks
  lens runs ``engram.showReferences`` with the arguments of VS Code's references peek (the
  note's URI, the lens position, the links' locations): the editor runs it itself (the VS Code
  extension, the Neovim plugin); it is not a server command. The related lens runs
  ``engram.relatedNotes`` with the note's URI (the editors' related-notes command).
- ``textDocument/inlayHint``: after a wiki link written with a file name
  (``[[2024-01-15 kickoff]]``), the title of its note, when the title says something the link
  does not (``nav.link_titles``).

Both follow the configuration's ``editor`` keys (``code_lens``, ``inlay_hints``). The client is
asked to refresh them (when it can be) after the index changed and after a settings change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from engram_ls.core.errors import EngramError, IndexUnavailable
from engram_ls.core.links import scan_links
from engram_ls.core.navigation import Backlink, named_headings
from engram_ls.core.parse import parse_note
from engram_ls.lsp import convert
from engram_ls.lsp.document import (
    Document,
    buffers,
    link_locations,
    read_once,
    strip_cr,
    units_of,
)

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer

SHOW_REFERENCES = "engram.showReferences"
"""The backlinks lens's command (run by the editor): ``[uri, position, locations]``."""
RELATED = "engram.relatedNotes"
"""The related lens's command (run by the editor): ``[uri]``."""
MAX_BACKLINKS = 1000
"""Links counted for one note's lenses; more show as "1000+ backlinks"."""


def _count(n: int, more: bool) -> str:
    return f"{n}{'+' if more else ''} backlink{'' if n == 1 and not more else 's'}"


def _lens(
    uri: str, line: int, label: str, locations: list[types.Location] | None
) -> types.CodeLens:
    at = types.Position(line=line, character=0)
    if locations is None:
        command = types.Command(title=label, command=RELATED, arguments=[uri])
    else:
        command = types.Command(
            title=label, command=SHOW_REFERENCES, arguments=[uri, at, locations]
        )
    return types.CodeLens(range=types.Range(start=at, end=at), command=command)


async def code_lens(
    ls: EngramLanguageServer, document: Document, params: types.CodeLensParams
) -> list[types.CodeLens] | None:
    vault, rel, source = document.vault, document.rel, document.source
    if not vault.config.editor.code_lens:
        return None
    await ls.ready()
    await vault.settled()
    read = read_once(buffers(ls, vault))
    note = await ls.run(parse_note, rel, source.encode("utf-8", "replace"), vault.config)
    headings = [h for h in note.headings if h.level > 1]
    try:
        links: list[Backlink] = await ls.run(
            lambda: vault.engram.backlinks(rel, None, read_text=read, limit=MAX_BACKLINKS)
        )
    except IndexUnavailable:
        return None
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    more = len(links) >= MAX_BACKLINKS
    uri = params.text_document.uri
    locations = await ls.run(link_locations, vault, links, read, units_of(ls))
    title = note.title_line - 1
    out = [_lens(uri, title, _count(len(links), more), locations)]
    if vault.engram.semantic.available:
        out.append(_lens(uri, title, "related", None))
    named: list[list[types.Location]] = [[] for _ in headings]
    for location, at in zip(
        locations, named_headings(links, [h.text for h in headings]), strict=True
    ):
        if at is not None:
            named[at].append(location)
    for heading, found in zip(headings, named, strict=True):
        if found:
            out.append(_lens(uri, heading.line - 1, _count(len(found), False), found))
    return out


async def inlay_hints(
    ls: EngramLanguageServer, document: Document, params: types.InlayHintParams
) -> list[types.InlayHint] | None:
    vault, rel, source = document.vault, document.rel, document.source
    if not vault.config.editor.inlay_hints:
        return None
    first, last = params.range.start.line, params.range.end.line
    spans = [
        s
        for s in scan_links(source)
        if first <= s.line <= last and s.kind == "wiki" and not s.label
    ]
    if not spans:
        return []
    await ls.ready()
    await vault.settled()
    try:
        titles = await ls.run(vault.engram.link_titles, rel, spans)
    except IndexUnavailable:
        return None
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    units = units_of(ls)
    lines = source.split("\n")
    out = []
    for found in titles:
        span = found.span
        text = strip_cr(lines[span.line])
        out.append(
            types.InlayHint(
                position=types.Position(line=span.line, character=units(text[: span.end])),
                label=found.title,
                padding_left=True,
                tooltip=found.path,
            )
        )
    return out


def refresh(ls: EngramLanguageServer) -> None:
    """Ask the client to ask for lenses and hints again (when it says it can)."""
    if ls.supports("workspace", "code_lens", "refresh_support"):
        ls.workspace_code_lens_refresh(None)
    if ls.supports("workspace", "inlay_hint", "refresh_support"):
        ls.workspace_inlay_hint_refresh(None)

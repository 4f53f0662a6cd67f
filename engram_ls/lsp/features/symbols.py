"""``workspace/symbol`` and ``textDocument/documentSymbol``.

``workspace/symbol`` lists, from the index (never a walk of the vault), what matches the query
in every vault, ranked together and capped at ``limits.workspace_symbols`` (the largest of
the vaults' settings, 100 by default):

- notes by title: ``SymbolKind.File`` on the line the title comes from (the frontmatter's
  ``title:`` line, else the note's first ``# `` heading, else line 0 for a title taken from
  the file name), so a client that shows the line (eglot's ``*xref*``) shows the title;
  container: the note's folder (prefixed with the vault's folder name when the workspace has
  several vaults);
- headings: ``SymbolKind.String`` on the heading's line; container: the note's title (a
  heading that repeats the note's title is left out: the note stands for it);
- topics: ``SymbolKind.Key`` in the newest note using the topic, on the line that names it
  (its frontmatter item, else its ``#tag``, else line 1); container: how many notes use it.

Matching is fuzzy (the query's characters in order, any case); exact matches come first, then
prefixes, then matches at a word start, then other subsequences; within each, more recent
notes first, then shorter names. In very large vaults the loosest matches (other
subsequences), and everything for one- or two-character queries, come from the newest
notes only (see ``engram_ls/core/index/symbols.py``). An empty query lists the most recent
notes. Vaults whose index cannot be opened contribute nothing.

``textDocument/documentSymbol`` is the heading outline of a note in a vault, nested by level
(an ``h2`` under the ``h1`` before it, ...). A heading's range runs from its line to the end
of the line before the next heading of the same or a higher level (or to the end of the
document); its selection range is the heading line. It is computed from the editor's buffer
(``didOpen``/``didChange`` text, so unsaved edits count), else from the file on disk. A
document outside every vault, or not Markdown, has no symbols.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types

from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import EngramError
from engram_ls.core.index.symbol_match import SymbolHit
from engram_ls.core.model import Heading
from engram_ls.core.parse import parse_note
from engram_ls.lsp import convert

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

KINDS: dict[str, types.SymbolKind] = {
    "note": types.SymbolKind.File,
    "heading": types.SymbolKind.String,
    "topic": types.SymbolKind.Key,
    "task": types.SymbolKind.Event,
}
MARKDOWN_SUFFIXES = (".md", ".markdown")


# -- workspace/symbol ------------------------------------------------------------------------


def workspace_symbol(hit: SymbolHit, vault: VaultSession, several: bool) -> types.WorkspaceSymbol:
    uri = convert.path_to_uri(vault.root / hit.path)
    start = types.Position(line=max(hit.line - 1, 0), character=0)
    container = hit.container
    if several and hit.kind == "note":
        container = f"{vault.root.name}/{container}" if container else vault.root.name
    return types.WorkspaceSymbol(
        name=hit.name,
        kind=KINDS[hit.kind],
        location=types.Location(uri=uri, range=types.Range(start=start, end=start)),
        container_name=container,
    )


async def find_symbols(
    ls: EngramLanguageServer, query: str
) -> list[tuple[SymbolHit, VaultSession]]:
    """Every vault's best hits, ranked together and capped."""
    await ls.ready()
    vaults: list[VaultSession] = list(ls.vaults)
    if not vaults:
        return []
    limit = max(v.config.limits.workspace_symbols for v in vaults)
    cancel = threading.Event()
    try:
        for vault in vaults:
            await vault.settled()
        found = await asyncio.gather(
            *(ls.run(partial(v.engram.symbols, query, limit=limit, cancel=cancel)) for v in vaults)
        )
    except asyncio.CancelledError:
        cancel.set()
        raise
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    ranked = [(hit, vault) for vault, hits in zip(vaults, found, strict=True) for hit in hits]
    ranked.sort(key=lambda pair: pair[0].rank)
    return ranked[:limit]


# -- textDocument/documentSymbol -------------------------------------------------------------


@dataclass(slots=True)
class _Node:
    heading: Heading
    end: tuple[int, int] = (0, 0)
    children: list[_Node] = field(default_factory=list)


def outline(
    text: str, headings: Sequence[Heading], units: Callable[[str], int] = len
) -> list[types.DocumentSymbol]:
    """Nested document symbols of ``headings`` (1-based lines) in ``text``; ``units``
    counts a string in the client's position units."""
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    last = len(lines) - 1

    def line_end(line: int) -> tuple[int, int]:
        line = min(max(line, 0), last)
        return line, units(lines[line])

    roots: list[_Node] = []
    open_: list[_Node] = []
    for heading in headings:
        if heading.line - 1 > last:
            break
        while open_ and open_[-1].heading.level >= heading.level:
            open_.pop().end = line_end(heading.line - 2)
        node = _Node(heading)
        (open_[-1].children if open_ else roots).append(node)
        open_.append(node)
    for node in open_:
        node.end = line_end(last)

    def convert_node(node: _Node) -> types.DocumentSymbol:
        zero = node.heading.line - 1
        text_line = lines[zero]
        indent = len(text_line) - len(text_line.lstrip())
        selection = types.Range(
            start=types.Position(line=zero, character=units(text_line[:indent])),
            end=types.Position(line=zero, character=units(text_line)),
        )
        end_line, end_char = max(node.end, (zero, units(text_line)))
        return types.DocumentSymbol(
            name=node.heading.text,
            kind=types.SymbolKind.String,
            range=types.Range(
                start=types.Position(line=zero, character=0),
                end=types.Position(line=end_line, character=end_char),
            ),
            selection_range=selection,
            detail="#" * node.heading.level,
            children=[convert_node(child) for child in node.children],
        )

    return [convert_node(node) for node in roots]


def document_outline(
    rel: str, text: str, config: EngramConfig, units: Callable[[str], int] = len
) -> list[types.DocumentSymbol]:
    note = parse_note(rel, text.encode("utf-8", errors="replace"), config)
    return outline(text, note.headings, units)


def _read(vault: VaultSession, rel: str) -> str | None:
    data = vault.engram.vault.read_or_none(rel, vault.config.limits.max_note_bytes)
    return None if data is None else data.decode("utf-8", errors="replace")


async def document_symbols(ls: EngramLanguageServer, uri: str) -> list[types.DocumentSymbol]:
    await ls.ready()
    found = ls.vault_for_uri(uri)
    if found is None:
        return []
    vault, rel = found
    path = convert.uri_to_path(uri)
    if path is None or not rel.lower().endswith(MARKDOWN_SUFFIXES):
        return []
    doc = ls.workspace.text_documents.get(unquote(uri))
    if doc is not None:
        text: str | None = doc.source
        units = doc.position_codec.client_num_units
    else:
        text = await ls.run(_read, vault, rel)
        units = ls.workspace.position_codec.client_num_units
    if text is None:
        return []
    return await ls.run(document_outline, rel, text, vault.config, units)


async def on_workspace_symbol(
    ls: EngramLanguageServer, params: types.WorkspaceSymbolParams
) -> list[types.WorkspaceSymbol]:
    ranked = await find_symbols(ls, params.query)
    several = len(ls.vaults) > 1
    return [workspace_symbol(hit, vault, several) for hit, vault in ranked]


async def on_document_symbol(
    ls: EngramLanguageServer, params: types.DocumentSymbolParams
) -> list[types.DocumentSymbol]:
    try:
        return await document_symbols(ls, params.text_document.uri)
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None

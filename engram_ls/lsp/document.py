"""The document a request is about, and positions in it: what every feature shares.

- ``open_document``: the vault session, vault-relative path, pygls document and text of a
  Markdown document (or an Obsidian base) in a vault (the editor's buffer, or the file when
  it is not open, read through the vault's reader: a FIFO or device is never waited on).
- ``locate``: what the line of a position is (frontmatter, body, or a fence line), reading
  only the frontmatter and that line.
- Columns: the core counts code points, the client its negotiated units (UTF-16 by default);
  ``to_column`` and the range helpers convert, each with the line's own text.
- ``buffers``: the open buffers of a vault as a ``read_text`` for the core.
- ``index_ready``, ``wants_markdown``: what the index and the client can do now.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument

from engram_ls.core.health import SERVABLE_STATES
from engram_ls.core.links import LinkSpan
from engram_ls.core.navigation import Backlink
from engram_ls.core.parse import in_fence
from engram_ls.lsp import convert

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

Units = Callable[[str], int]
"""How many client position units a string takes."""

MAX_FRONTMATTER_LINES = 5000
"""Beyond this many lines an unclosed ``---`` block is not treated as frontmatter."""

_OPEN_FENCE_RE = re.compile(r"---[ \t]*")
_CLOSE_FENCE_RE = re.compile(r"(?:---|\.\.\.)[ \t]*")


# -- the document --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Document:
    """A Markdown document of a vault, as a request sees it."""

    vault: VaultSession
    rel: str
    """The vault-relative path."""
    doc: TextDocument
    source: str
    """The open buffer's text (or the file's, when the document is not open)."""


def open_document(ls: EngramLanguageServer, uri: str, *, base: bool = False) -> Document | None:
    """The Markdown document ``uri`` of a vault (with ``base``: the Obsidian base, a ``.base``
    file), or None (outside the vaults, another kind of file, unreadable)."""
    found = ls.vault_for_uri(uri)
    if found is None:
        return None
    vault, rel = found
    opened: TextDocument | None = ls.workspace.text_documents.get(unquote(uri))
    if base:
        if not vault.engram.vault.filter.is_base(rel):
            return None
    elif opened is not None:
        if not (rel.lower().endswith(".md") or opened.language_id == "markdown"):
            return None
    elif not rel.lower().endswith(".md"):
        return None
    if opened is not None:
        return Document(vault, rel, opened, opened.source)
    # Not open: the file, through the vault's reader (pygls' own would wait on a FIFO).
    text = vault.engram.read_text(rel)
    if text is None:
        return None
    return Document(vault, rel, ls.workspace.get_text_document(uri), text)


def is_base_uri(uri: str) -> bool:
    """Whether ``uri`` names an Obsidian base (a ``.base`` file)."""
    return unquote(uri).lower().split("?")[0].endswith(".base")


def buffers(
    ls: EngramLanguageServer, vault: VaultSession, *, strict: bool = False
) -> Callable[[str], str | None]:
    """A ``read_text`` for the core: the editor's buffer of a note when it is open, else the
    file (not UTF-8: decoded as the index parsed it, or None with ``strict``, for text that
    is edited: ``Engram.read_text``). The buffers are copied now (on the event loop), so the
    core may run in a thread."""
    open_texts: dict[str, str] = {}
    for doc in list(ls.workspace.text_documents.values()):
        path = convert.uri_to_path(doc.uri)
        found = ls.vaults.for_path(path) if path is not None else None
        if found is not None and found[0] is vault:
            open_texts[found[1]] = doc.source
    engram = vault.engram

    def read(rel: str) -> str | None:
        text = open_texts.get(rel)
        return text if text is not None else engram.read_text(rel, strict=strict)

    return read


def read_once(read: Callable[[str], str | None]) -> Callable[[str], str | None]:
    """``read``, each note read once: for a request that reads the notes linking to one note
    twice (the core, to confirm their links; the answer, for the links' ranges)."""
    seen: dict[str, str | None] = {}

    def again(rel: str) -> str | None:
        if rel not in seen:
            seen[rel] = read(rel)
        return seen[rel]

    return again


def index_ready(vault: VaultSession) -> bool:
    """Blocking: whether the index can answer now, without a scan of every note while the
    first build runs."""
    return not vault.building or vault.engram.status().state in SERVABLE_STATES


def wants_markdown(ls: EngramLanguageServer) -> bool:
    """Whether the client renders Markdown in hovers (it does unless it says otherwise)."""
    caps = ls.client_capabilities.text_document
    formats = caps.hover.content_format if caps and caps.hover else None
    return not formats or types.MarkupKind.Markdown in formats


def uri_of(vault: VaultSession, rel: str) -> str:
    return convert.path_to_uri(vault.root / rel)


# -- lines -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Where:
    """What the line of a position is: frontmatter, body, or a fence line."""

    kind: Literal["yaml", "body", "fence"]
    line: str
    """The line's text without its line break."""
    above: tuple[str, ...] = ()
    """For ``yaml``: the frontmatter lines from the opening fence up to the line (excluded)."""
    source: str = ""
    body_start: int = 0
    """For ``body``: the offset where the body starts (the fence scan starts there)."""
    line_end: int = 0
    """The offset where the line's text ends (its line break, if any, starts there)."""

    def in_fence(self) -> bool:
        """Whether the line is inside (or is) a fenced code block of the body."""
        return in_fence(self.source, self.body_start, self.line_end)


def strip_cr(text: str) -> str:
    return text[:-1] if text.endswith("\r") else text


def next_line(source: str, pos: int) -> tuple[str, int, int]:
    """The line starting at ``pos``: (text, offset of its end, offset of the next line or -1)."""
    nl = source.find("\n", pos)
    end = len(source) if nl < 0 else nl
    return strip_cr(source[pos:end]), end, (-1 if nl < 0 else nl + 1)


def locate(source: str, line: int) -> Where | None:
    """Classify ``line`` of ``source``, reading only the frontmatter and that line."""
    if line < 0:
        return None
    pos, first, body_start = 0, 0, 0
    if source.startswith(("---", "\ufeff---")):
        text, end, nxt = next_line(source, 0)
        if _OPEN_FENCE_RE.fullmatch(text.lstrip("\ufeff")) and nxt >= 0:
            if line == 0:
                return Where("fence", text, line_end=end, source=source)
            above = [text]
            index, pos = 1, nxt
            while True:
                text, end, nxt = next_line(source, pos)
                closing = _CLOSE_FENCE_RE.fullmatch(text) is not None
                if index == line:
                    kind: Literal["yaml", "fence"] = "fence" if closing else "yaml"
                    return Where(kind, text, tuple(above), source, 0, end)
                if closing:
                    if nxt < 0:
                        return None  # nothing after the closing fence
                    pos = body_start = nxt
                    first = index + 1
                    break
                if nxt < 0 or index >= MAX_FRONTMATTER_LINES:
                    pos = 0  # unclosed: the core reads the whole text as body
                    break
                above.append(text)
                index, pos = index + 1, nxt
    for _ in range(line - first):
        nl = source.find("\n", pos)
        if nl < 0:
            return None
        pos = nl + 1
    text, end, _nxt = next_line(source, pos)
    return Where("body", text, (), source, body_start, end)


def line_of(text: str, line: int) -> str:
    """Line ``line`` (0-based) of ``text`` without its line break; "" past the end."""
    lines = text.split("\n")
    return strip_cr(lines[line]) if 0 <= line < len(lines) else ""


# -- columns and ranges ----------------------------------------------------------------------


def units_of(ls: EngramLanguageServer) -> Units:
    """The client's position units (for text that is not an open document's)."""
    return ls.workspace.position_codec.client_num_units


def to_column(doc: TextDocument, line: str, character: int) -> int:
    """A client column (in the negotiated UTF-16/UTF-8/UTF-32 units) as a code-point column."""
    if line.isascii():
        return min(character, len(line))
    units = doc.position_codec.client_num_units
    count = 0
    for index, char in enumerate(line):
        if count >= character:
            return index
        count += units(char)
    return len(line)


def line_range(units: Units, line: int, text: str, start: int, end: int) -> types.Range:
    """The code-point columns ``start``..``end`` of line ``line`` (whose text is ``text``)
    as a range in the client's units."""
    return types.Range(
        start=types.Position(line=line, character=units(text[:start])),
        end=types.Position(line=line, character=units(text[:end])),
    )


def client_range(doc: TextDocument, line: int, text: str, start: int, end: int) -> types.Range:
    """A range of code-point columns of one line of an open document, in the client's units."""
    return line_range(doc.position_codec.client_num_units, line, text, start, end)


def span_range(units: Units, text: str, span: LinkSpan, *, whole: bool) -> types.Range:
    """The range of a link (``whole``) or of its target in ``text``."""
    start, end = (span.start, span.end) if whole else (span.target_start, span.target_end)
    return line_range(units, span.line, line_of(text, span.line), start, end)


def link_locations(
    vault: VaultSession, links: Sequence[Backlink], read: Callable[[str], str | None], units: Units
) -> list[types.Location]:
    """Where each link is (the whole link), each source note's text read once by ``read``."""
    texts: dict[str, str] = {}
    out = []
    for link in links:
        text = texts.get(link.source)
        if text is None:
            text = texts[link.source] = read(link.source) or ""
        out.append(
            types.Location(
                uri=uri_of(vault, link.source), range=span_range(units, text, link.span, whole=True)
            )
        )
    return out


def location(vault: VaultSession, path: str, line: int | None) -> types.Location:
    """The start of a (1-based) line of a note; line 1 when unknown."""
    pos = types.Position(line=max((line or 1) - 1, 0), character=0)
    return types.Location(uri=uri_of(vault, path), range=types.Range(start=pos, end=pos))

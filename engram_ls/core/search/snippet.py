"""What a hit's snippet shows: which line of the note (a line of prose before a heading, a
heading before markup), the text of that line with its markup taken away, and the part of it
around the match; and where a query matches in a piece of text (``Matcher``), which places the
cut and lets a front end highlight the match.

Markup is what a reader does not read as words: a code fence, a table rule, a horizontal
rule, an image, an HTML tag, the brackets and targets of a link. A line that is nothing but
markup is never chosen while a line of words matches; the text shown keeps a link's words
(``[[target|alias]]`` reads ``alias``, ``[words](url)`` reads ``words``) and an image's alt
text. Literal and regex searches show the matching line as it is written (the match may be the
markup itself), as grep does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engram_ls.core.index import fts

Span = tuple[int, int]
"""A match in a text: [start, end) character offsets."""

PROSE, HEADING, SHORT, TITLE, MARKUP = 0, 1, 2, 3, 4
"""How good a line is as a snippet, best first (``line_kind``). A ``TITLE`` (a ``#`` heading)
repeats what a hit shows as its title: a note matched only there shows its summary or its
first line of prose instead."""
PROSE_WORDS = 3
"""Fewer words are a ``SHORT`` line: the tail of a wrapped sentence (``[[sqlite]].``) says
less than the heading above it."""

WINDOW_CHARS = 64_000
"""How far past a note's first matching line a better one (prose, not a heading or markup) is
looked for; a note is read up to 50 MB, its snippet should not cost a pass over all of it."""
MAX_TRIES = 16
"""Matching lines looked at before the best of them is taken."""
CLEAN_CHARS = 20_000
"""Longer lines (a minified blob, a base64 image) are cut around the match as they are."""

_FENCE = re.compile(r"^(```|~~~)")
_TABLE_RULE = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$")
_RULE = re.compile(r"^([-*_])(\s*\1){2,}$")
_TARGET = r"\((?:[^()\n]|\([^()\n]*\))*\)"  # a link's (target), one level of (parens) inside
_IMAGE = re.compile(r"!\[\[[^\]\n]*\]\]|!\[([^\]\n]*)\]" + _TARGET)
_TAG = re.compile(r"<!--.*?-->|</?[A-Za-z][\w-]*(?:\s[^<>\n]*)?/?>")
_WIKI = re.compile(r"\[\[([^\]|\n]*)(?:\|([^\]\n]*))?\]\]")
_LINK = re.compile(r"\[([^\]\n]*)\]" + _TARGET)
_HEADING = re.compile(r"^#{1,6}\s+")
_URL = re.compile(r"<?\b[a-z][a-z0-9+.-]*://[^\s>]*>?", re.IGNORECASE)
_RAW_OPERATORS = frozenset({"and", "or", "not", "near"})


def clean_markup(line: str) -> str:
    """``line`` as a reader reads it: images, HTML tags and link syntax taken away (a link's
    words and an image's alt text kept), heading marks dropped, spaces collapsed."""
    text = line.strip()
    if len(text) > CLEAN_CHARS or not ("[" in text or "<" in text or text[:1] == "#"):
        return " ".join(text.split())  # too long to clean, or nothing to take away
    text = _IMAGE.sub(lambda m: m[1] or "", text)
    text = _TAG.sub(" ", text)
    text = _WIKI.sub(lambda m: m[2] or m[1], text)
    text = _LINK.sub(r"\1", text)
    text = _HEADING.sub("", text)
    return " ".join(text.split())


def readable(line: str) -> str:
    """The words a reader reads in ``line``: its markup and web addresses taken away."""
    return _URL.sub(" ", clean_markup(line))


def line_kind(line: str) -> int:
    """``MARKUP`` (a fence, a table or horizontal rule, a bare address, or a line with no
    word once its images, tags and link targets are taken away), ``TITLE`` (``# ...``),
    ``HEADING``, ``SHORT`` (fewer than ``PROSE_WORDS`` words) or ``PROSE``."""
    text = line.strip()
    if not text or _FENCE.match(text) or _TABLE_RULE.match(text) or _RULE.match(text):
        return MARKUP
    words = readable(_IMAGE.sub(" ", text))  # an image's alt text is not a line of prose
    count = sum(1 for _ in zip(range(PROSE_WORDS), fts._TOKEN.finditer(words), strict=False))
    if count == 0:
        return MARKUP
    heading = _HEADING.match(text)
    if heading:
        return TITLE if heading.group().rstrip() == "#" else HEADING
    return SHORT if count < PROSE_WORDS else PROSE


def best_matching_line(terms: Sequence[fts.Term], body: str) -> tuple[int, str] | None:
    """The line of ``body`` to show for a text query, as (0-based index, line): the first
    matching line of prose, else the first matching heading, else the first short one, among
    the first ``MAX_TRIES`` matching lines within ``WINDOW_CHARS`` of the first; None when no
    line matches, or only the title or markup does (a code fence's language, a link
    target)."""
    found = fts.find_matching_line(list(terms), body)
    if found is None:
        return None
    best = (_kind(terms, found[1]), found)
    if best[0] == PROSE:
        return found
    index, line = found
    pos = _line_start(body, index) + len(line) + 1
    end = body.find("\n", pos + WINDOW_CHARS)
    end = len(body) if end == -1 else end
    for _ in range(MAX_TRIES):
        if pos >= end:
            break
        chunk = body[pos:end]
        more = fts.find_matching_line(list(terms), chunk)
        if more is None:
            break
        j, text = more
        kind = _kind(terms, text)
        if kind < best[0]:
            best = (kind, (index + 1 + j, text))
            if kind == PROSE:
                break
        pos += _line_start(chunk, j) + len(text) + 1
        index += 1 + j
    return best[1] if best[0] < TITLE else None


def _kind(terms: Sequence[fts.Term], line: str) -> int:
    """``line_kind`` of a matching line, ``MARKUP`` when the terms match only in its markup
    (a link target, a web address, an image's file name)."""
    kind = line_kind(line)
    if kind != MARKUP and not fts.line_matches(list(terms), readable(line)):
        return MARKUP
    return kind


def first_prose_line(body: str) -> tuple[int, str] | None:
    """The first line of prose of ``body`` outside code blocks, as (0-based index, line)."""
    fence: str | None = None
    for i, line in enumerate(body.split("\n")):
        text = line.strip()
        opened = _FENCE.match(text)
        if fence is not None:
            if opened and text.startswith(fence):
                fence = None
            continue
        if opened:
            fence = opened[1]
            continue
        if line_kind(text) == PROSE:
            return i, text
    return None


def _line_start(text: str, index: int) -> int:
    """The offset of line ``index`` (0-based) of ``text``."""
    pos = 0
    for _ in range(index):
        pos = text.index("\n", pos) + 1
    return pos


@dataclass(frozen=True, slots=True)
class Matcher:
    """Where a search's query matches in a piece of text: its words (text and hybrid modes,
    by the index's notion of a word, any case and accents), its substring (literal). A regex
    is matched by ripgrep alone (its engine runs in linear time; Python's would backtrack on
    a pattern such as ``(a+)+$``), so it has no spans here; nor has a search by meaning."""

    mode: str
    query: str
    case_sensitive: bool = False
    terms: tuple[fts.Term, ...] = ()

    @classmethod
    def of(
        cls, mode: str, query: str, *, case_sensitive: bool = False, raw_fts: bool = False
    ) -> Matcher:
        """The matcher of a request's ``mode``, ``query``, ``case_sensitive`` and ``raw_fts``."""
        terms: tuple[fts.Term, ...] = ()
        if mode in ("text", "hybrid"):
            terms = tuple(fts.parse_query(query))
            if raw_fts:  # FTS5 operators are not words of the notes
                terms = tuple(t for t in terms if t.tokens[0] not in _RAW_OPERATORS)
        return cls(mode, query, case_sensitive, terms)

    def spans(self, text: str, *, first: bool = False) -> list[Span]:
        """The matches in ``text``, in order (only the first with ``first``)."""
        out: list[Span] = []
        if self.mode == "literal" and self.query:
            flags = 0 if self.case_sensitive else re.IGNORECASE
            for m in re.finditer(re.escape(self.query), text, flags):
                out.append(m.span())
                if first:
                    break
            return out
        if not self.terms:
            return out
        whole = {tok for t in self.terms for tok in t.tokens}
        prefixes = tuple(t.tokens[-1] for t in self.terms if t.prefix)
        for m in fts._TOKEN.finditer(text):  # the index's notion of a word
            token = fts.fold(m.group())
            if token in whole or (prefixes and token.startswith(prefixes)):
                out.append(m.span())
                if first:
                    break
        return out


def cut_around(line: str, limit: int, at: int | None) -> tuple[str, int]:
    """``line`` in at most ``limit`` characters: whole when it fits, else from about a third of
    ``limit`` before offset ``at`` (the match) or from its start, ``…`` marking each cut end.
    Returns the text and the shift: a position ``p`` of ``line`` is ``p + shift`` in it."""
    if len(line) <= limit:
        return line, 0
    start = 0
    if at is not None and at > limit // 3:
        start = min(at - limit // 3, max(len(line) - (limit - 1), 0))
        space = line.find(" ", start, at)  # begin at a word when one starts soon enough
        if space != -1 and space - start < limit // 6:
            start = space + 1
    lead = "…" if start else ""
    room = limit - len(lead)
    if len(line) - start <= room:
        return lead + line[start:], len(lead) - start
    return lead + line[start : start + room - 1] + "…", len(lead) - start

"""Matching and ranking of workspace symbol names (pure: no SQLite); ``symbols.py`` searches
the index with them.

Matching: a name matches when the query's characters occur in it in order (a subsequence),
case-insensitively (Unicode case folding, checked in Python; the SQL prefilters fold ASCII and
let any other query character match any one character, so they drop no match, except where
case folding changes a string's length, e.g. ``ß`` against ``ss``).

Ranking, best first (:func:`rank`):

1. tier: ``0`` exact, ``1`` prefix, ``2`` word start (the query starts right after a
   character that is neither a letter nor a digit: space, ``-``, ``_``, ``/``, ``(`` ...),
   ``3`` any other subsequence ("loose" matches);
2. the more recent note first (its date; undated notes last; a topic is as recent as the
   newest note using it);
3. the shorter name first; then name, kind, path and line, so that the order is total.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

SymbolKind = Literal["note", "heading", "topic", "task"]

FTS_MIN_CHARS = 3
"""Queries shorter than this are searched among the newest notes; a shorter last word is
left out of a full-text phrase (a short prefix merges too many terms)."""
TOPIC_READ_BYTES = 65_536
"""How much of a note is read to find the line naming a topic."""

EXACT, PREFIX, WORD, FUZZY = 0, 1, 2, 3
TIERS = (EXACT, PREFIX, WORD, FUZZY)
_KIND_ORDER: dict[str, int] = {"note": 0, "heading": 1, "topic": 2, "task": 3}

Rank = tuple[int, int, int, str, int, str, int]


@dataclass(frozen=True, slots=True)
class SymbolHit:
    """One matching name."""

    kind: SymbolKind
    name: str
    path: str
    """Vault-relative path of the note; for a topic, of the newest note using it ('' until
    resolved by the caller)."""
    line: int
    """1-based line of a heading (or of a topic in ``path``). A note's is 0 while hits are
    ranked, then the line its title is written on (``Engram.symbols``)."""
    container: str | None
    """A heading's note title, a note's folder, a topic's note count."""
    tier: int
    day: str | None
    """Date of the note (of a topic's newest note), ``YYYY-MM-DD``; None when undated."""
    ref: int = 0
    """Note id (topic id for a topic): identity within one index."""

    def at(self, path: str, line: int) -> SymbolHit:
        """The same hit at another place (a topic, once its note is known)."""
        return replace(self, path=path, line=line)

    @property
    def rank(self) -> Rank:
        """Sort key: smaller is better; comparable across vaults."""
        return rank(self.tier, self.day, self.name, self.kind, self.path, self.line)


def rank(tier: int, day: str | None, name: str, kind: str, path: str, line: int) -> Rank:
    return (tier, -day_number(day), len(name), name.casefold(), _KIND_ORDER[kind], path, line)


def day_number(day: str | None) -> int:
    """``2024-03-05`` → 20240305; undated (or unreadable) → 0, i.e. oldest."""
    if not day:
        return 0
    digits = day[:10].replace("-", "")
    return int(digits) if digits.isdigit() else 0


# -- matching ----------------------------------------------------------------------------------


def normalize(query: str) -> str:
    """The folded query that names are matched against ('' means: list recent notes)."""
    return query.strip().casefold()


def match_tier(name: str, folded_query: str) -> int | None:
    """The tier of ``name`` for a folded, non-empty query, or None when it does not match."""
    return tier_of(name.casefold(), folded_query)


def tier_of(text: str, q: str) -> int | None:
    if text == q:
        return EXACT
    if text.startswith(q):
        return PREFIX
    at = text.find(q, 1)
    while at != -1:
        if not text[at - 1].isalnum():
            return WORD
        at = text.find(q, at + 1)
    return FUZZY if is_subsequence(q, text) else None


def is_subsequence(small: str, big: str) -> bool:
    pos = 0
    for ch in small:
        pos = big.find(ch, pos)
        if pos < 0:
            return False
        pos += 1
    return True


def _mask_bit(ch: str) -> int:
    """Bit of one character in a :func:`char_mask`: ``a``-``z`` 0-25, ``0``-``9`` 26-35, space
    36, other ASCII characters 37-44, any other character 45-62 (several share a bit)."""
    o = ord(ch)
    if 97 <= o <= 122:
        return o - 97
    if 48 <= o <= 57:
        return o - 48 + 26
    if o == 32:
        return 36
    if o < 128:
        return 37 + o % 8
    return 45 + o % 18


_MASK_BITS = {chr(o): 1 << _mask_bit(chr(o)) for o in range(128)}


def char_mask(folded: str) -> int:
    """The characters of ``folded`` (a case-folded name or query) as a set of bits: a name
    can match a query (any tier: every tier is a subsequence of the folded name) only when
    its mask holds every bit of the query's. Stored in the index (``names.mask``): changing
    the bits means a new schema version."""
    if folded.isascii():  # the usual case, and the cheapest (a build computes ~6 a note)
        return sum(set(map(_MASK_BITS.__getitem__, folded)))  # distinct bits: sum = or
    mask = 0
    get = _MASK_BITS.get
    for ch in set(folded):
        bit = get(ch)
        mask |= bit if bit is not None else 1 << _mask_bit(ch)
    return mask


KEY_CHARS = 8
"""Characters of a name kept in one ``name_keys`` key (longer queries are looked up by their
first ones, then checked). Stored in the index: changing it means a new schema version."""
START = "\x01"
"""Marks the key of a name's start (exact and prefix matches) among its word starts."""


def name_keys(name: str) -> set[str]:
    """The ``name_keys`` keys of a name: :data:`START` and its folded start, then the folded
    text from every later word start (after a character that is neither a letter nor a digit,
    as in :func:`tier_of`), each cut to :data:`KEY_CHARS` characters. Every name of tier 0-2
    for a folded query ``q`` has a key starting with :func:`key_range`'s prefix."""
    folded = name.casefold()
    keys = {START + folded[:KEY_CHARS]}
    for i in range(1, len(folded)):
        if not folded[i - 1].isalnum():
            keys.add(folded[i : i + KEY_CHARS])
    return keys


def key_range(q: str, *, start: bool) -> tuple[str, str]:
    """The ``name_keys`` range (inclusive bounds) holding every key that starts with the folded
    query ``q`` cut to :data:`KEY_CHARS` (at a name's start when ``start``, else at a later
    word start)."""
    prefix = (START if start else "") + q[:KEY_CHARS]
    return prefix, prefix + "\U0010ffff" * (KEY_CHARS + 1)


def key_ranges(q: str, tier: int) -> list[tuple[str, str]]:
    """The ``name_keys`` ranges holding a key of every name of tier ``tier`` (0-2) or better
    for the folded query ``q``: for exact matches, the one key of names starting with ``q``
    cut to :data:`KEY_CHARS` (``q`` itself when shorter); for prefix matches, the names'
    starts; for word starts, the later word starts too."""
    first = key_range(q, start=True)
    if tier == EXACT:
        return [(first[0], first[0])]
    return [first] if tier == PREFIX else [first, key_range(q, start=False)]


def _like_char(ch: str) -> str:
    if ch in "%_\\":
        return "\\" + ch
    # LIKE folds ASCII only: another character may differ in case, so it matches any one
    # character here and Python checks the real match.
    return ch if ch.isascii() else "_"


@dataclass(frozen=True, slots=True)
class Patterns:
    """LIKE patterns of a query, one per tier: each matches a superset of the names of its
    tier and of every better tier."""

    exact: str
    prefix: str
    substring: str
    subsequence: str
    escape: str
    """`` ESCAPE '\\'`` when the query has a LIKE wildcard or a backslash, else ''."""

    @classmethod
    def of(cls, query: str) -> Patterns:
        raw = query.strip()
        chars = [_like_char(c) for c in raw]
        body = "".join(chars)
        escape = " ESCAPE '\\'" if any(c in "%_\\" for c in raw) else ""
        return cls(body, body + "%", "%" + body + "%", "%" + "%".join(chars) + "%", escape)

    def for_tier(self, tier: int) -> str:
        return (self.exact, self.prefix, self.substring, self.subsequence)[tier]


def fts_phrase(query: str) -> str | None:
    """An FTS5 phrase matching every text in which ``query`` starts at a word (the text's
    words are a superset), or None when the full-text index cannot help.

    The query must start with a letter or digit. Its words become the phrase; the last one is
    a prefix unless the query ends after it, and is left out when it is shorter than
    :data:`FTS_MIN_CHARS` (a short prefix merges too many terms)."""
    raw = query.strip()
    if not raw or not raw[0].isalnum():
        return None
    words: list[str] = []
    current: list[str] = []
    for ch in raw:
        if ch.isalnum():
            current.append(ch)
        elif current:
            words.append("".join(current))
            current = []
    prefix = bool(current)
    if current:
        words.append("".join(current))
    if prefix and len(words[-1]) < FTS_MIN_CHARS:
        words.pop()
        prefix = False
    if not words or sum(len(w) for w in words) < FTS_MIN_CHARS:
        return None
    return '"' + " ".join(words) + '"' + (" *" if prefix else "")


# -- topics: where a note names one ------------------------------------------------------


def topic_line(text: str, topic: str) -> int:
    """1-based line where a note names a topic: a frontmatter line holding it as a whole
    item, else an inline ``#topic``; 1 (the frontmatter) when neither is found."""
    want = topic.casefold()
    lines = text.split("\n")
    in_front = bool(lines) and lines[0].strip() == "---"
    for i, line in enumerate(lines):
        if i and in_front and line.strip() in ("---", "..."):
            in_front = False
            continue
        folded = line.casefold()
        start = folded.find(want)
        while start != -1:
            end = start + len(want)
            before = folded[start - 1] if start else " "
            after = folded[end] if end < len(folded) else " "
            whole = not after.isalnum() and after not in "-_/"
            if whole and (before == "#" or (in_front and not before.isalnum())):
                return i + 1
            start = folded.find(want, start + 1)
    return 1


__all__ = [
    "EXACT",
    "FTS_MIN_CHARS",
    "FUZZY",
    "KEY_CHARS",
    "PREFIX",
    "START",
    "TIERS",
    "TOPIC_READ_BYTES",
    "WORD",
    "Patterns",
    "Rank",
    "SymbolHit",
    "SymbolKind",
    "char_mask",
    "day_number",
    "fts_phrase",
    "is_subsequence",
    "key_range",
    "key_ranges",
    "match_tier",
    "name_keys",
    "normalize",
    "rank",
    "tier_of",
    "topic_line",
]

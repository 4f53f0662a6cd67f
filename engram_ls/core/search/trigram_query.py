"""The trigrams any match of a regular expression must contain (Russ Cox, "Regular Expression
Matching with a Trigram Index").

``trigram_query(pattern, case_sensitive=...)`` reads a pattern in ripgrep's syntax (the Rust
``regex`` crate's) with its own parser and gives a ``Query``: an AND/OR tree of 3-character
strings, or ``ALL`` (no requirement: the caller scans). For each sub-expression it computes
whether it can match the empty string, its exact set of strings (while small), the prefixes and
suffixes every match starts and ends with, and the query every match satisfies; the set limits
(``MAX_EXACT``, ``MAX_SET``, ``MAX_CLASS``, ``MAX_QUERY``) keep every step small.
``fts5_match(query)`` renders it for an FTS5 table with the ``trigram`` tokenizer.

Soundness is the contract: whenever rg matches the pattern in a text, the query holds of the
text's trigrams (``text_trigrams``). Whatever the parser does not model is weakened, never
guessed: a construct outside the modelled subset (``(?x)``, ``(?-u)``, nested classes and class
set operations, ``\\b{...}``, escapes other than the listed ones, a repetition of a repetition,
anything rg would reject), a pattern over ``MAX_PATTERN_CHARS`` or nested deeper than
``MAX_DEPTH`` gives ``ALL``; Perl and Unicode classes (``\\w``, ``\\d``, ``\\p{..}``), ``.``,
negated classes and large classes are "one character, unknown"; anchors and word boundaries are
the empty string; a repetition ``x{n,m}`` is read as at most three copies of ``x`` then ``x+``.

Folding (``Requirement.folded``). A pattern run case-sensitively with no ``i`` in any flag
group gives the pattern's own characters (any Unicode), sound for an index of the exact text,
and for an FTS5 ``trigram`` table with ``case_sensitive 0`` too, since FTS5 folds the strings of
a MATCH expression as it folds the text. Any other pattern (rg's ``--ignore-case``, or ``(?i)``
anywhere, even scoped: the whole query is then folded) gives lower-case ASCII trigrams only, any
position that is not ASCII being unknown (no trigram spans it). Such a query is sound only for
an index that folds text with a folding ``F`` that maps ``A``-``Z`` to ``a``-``z``, U+212A
KELVIN SIGN to ``k`` and U+017F LONG S to ``s`` (the only non-ASCII characters that rg's case
folding equates with ASCII letters) and leaves every other ASCII character as it is; what ``F``
does to other non-ASCII characters does not matter. The FTS5 ``trigram`` tokenizer with
``case_sensitive 0`` is such an ``F``; ``text_trigrams(..., case_sensitive=False)`` is the
reference one.
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from engram_ls.core.index.fts import quoted

MAX_PATTERN_CHARS = 4096
"""Longer patterns get no requirement (the search request caps a query at 1,000 characters)."""
MAX_DEPTH = 64
"""Deeper group nesting gets no requirement (keeps the recursive parser far from Python's limit)."""
MAX_EXACT = 7
"""Exact string sets larger than this become trigram queries (Cox's ``maxExact``)."""
MAX_SET = 20
"""Prefix and suffix sets are cut to shorter strings beyond this size (Cox's ``maxSet``)."""
MAX_CLASS = 100
"""A class of more characters is "one character, unknown" (Cox's limit)."""
MAX_QUERY = 200
"""Trigram leaves a query keeps: a larger OR becomes ALL, a larger AND drops conjuncts."""

_FOLD_CI = str.maketrans(
    {**{chr(c): chr(c + 32) for c in range(ord("A"), ord("Z") + 1)}, "\u212a": "k", "\u017f": "s"}
)
_ESCAPABLE = set(string.punctuation + " ") - set("<>")
"""ASCII characters rg reads escaped as themselves (``\\<`` and ``\\>`` are word boundaries)."""
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_UNKNOWN_ESCAPES = set("dDwWsSpP")
_ZERO_WIDTH_ESCAPES = set("bBAz<>")
_FLAGS = set("imsUR-")


class _Unsupported(Exception):
    """A construct the parser does not model: the pattern gets no requirement."""


@dataclass(frozen=True, slots=True)
class Query:
    """A boolean query over trigrams: ``op`` of ``trigrams`` and ``subs``.

    ``ALL`` (an ``and`` of nothing) holds of any text: the pattern requires no trigram.
    """

    op: Literal["and", "or"]
    trigrams: frozenset[str] = frozenset()
    subs: tuple[Query, ...] = ()

    @property
    def is_all(self) -> bool:
        return self.op == "and" and not self.trigrams and not self.subs

    @property
    def size(self) -> int:
        return len(self.trigrams) + sum(s.size for s in self.subs)

    def holds(self, trigrams: set[str] | frozenset[str]) -> bool:
        """Whether a text with these trigrams satisfies the query."""
        if self.op == "and":
            return self.trigrams <= trigrams and all(s.holds(trigrams) for s in self.subs)
        return bool(self.trigrams & trigrams) or any(s.holds(trigrams) for s in self.subs)

    def __str__(self) -> str:
        return fts5_match(self) or "ALL"


ALL = Query("and")


def _leaf(trigram: str) -> Query:
    return Query("and", frozenset((trigram,)))


def _normal(op: Literal["and", "or"], trigrams: frozenset[str], subs: list[Query]) -> Query:
    unique = tuple(dict.fromkeys(subs))
    if not trigrams and len(unique) == 1:
        return unique[0]
    if len(trigrams) == 1 and not unique:
        return _leaf(next(iter(trigrams)))
    return Query(op, trigrams, unique)


def and_(*queries: Query) -> Query:
    """The conjunction, flattened; conjuncts beyond ``MAX_QUERY`` leaves are dropped (weaker)."""
    trigrams: set[str] = set()
    subs: list[Query] = []
    for q in queries:
        if q.op == "and":
            trigrams |= q.trigrams
            subs.extend(q.subs)
        else:
            subs.append(q)
    # An OR that one of the required trigrams satisfies is implied.
    subs = [s for s in subs if not (s.trigrams & trigrams)]
    kept = frozenset(sorted(trigrams)[:MAX_QUERY])
    room = MAX_QUERY - len(kept)
    bounded: list[Query] = []
    for s in subs:
        if s.size <= room:
            bounded.append(s)
            room -= s.size
    return _normal("and", kept, bounded)


def or_(*queries: Query) -> Query:
    """The disjunction, flattened; ``ALL`` when a branch is ``ALL`` or it exceeds ``MAX_QUERY``."""
    trigrams: set[str] = set()
    subs: list[Query] = []
    for q in queries:
        if q.is_all:
            return ALL
        if q.op == "or" or (len(q.trigrams) == 1 and not q.subs):
            trigrams |= q.trigrams
            subs.extend(q.subs)
        else:
            subs.append(q)
    # An AND that requires one of the alternative trigrams implies that alternative.
    subs = [s for s in subs if not (s.op == "and" and s.trigrams & trigrams)]
    out = _normal("or", frozenset(trigrams), subs)
    return ALL if out.size > MAX_QUERY else out


def trigrams_of(text: str) -> list[str]:
    """The 3-character windows of ``text``, in order (duplicates kept)."""
    return [text[i : i + 3] for i in range(len(text) - 2)]


def text_trigrams(text: str, *, case_sensitive: bool) -> frozenset[str]:
    """The trigrams of a text as a query derived with ``case_sensitive`` expects them: the text's
    own, or those of its folding by ``F`` (see the module docstring)."""
    return frozenset(trigrams_of(text if case_sensitive else text.translate(_FOLD_CI)))


# --- the analysis of Cox's paper -------------------------------------------------------------

_NO_INFO = frozenset({""})


@dataclass(frozen=True, slots=True)
class _Info:
    emptyable: bool
    exact: frozenset[str] | None
    """Every string the expression matches, while small; None when unknown."""
    prefix: frozenset[str]
    """Every match starts with one of these (meaningful when ``exact`` is None)."""
    suffix: frozenset[str]
    """Every match ends with one of these (meaningful when ``exact`` is None)."""
    match: Query

    @property
    def pre(self) -> frozenset[str]:
        return self.exact if self.exact is not None else self.prefix

    @property
    def suf(self) -> frozenset[str]:
        return self.exact if self.exact is not None else self.suffix


_EMPTY = _Info(True, frozenset({""}), _NO_INFO, _NO_INFO, ALL)
_ANY_CHAR = _Info(False, None, _NO_INFO, _NO_INFO, ALL)


def _and_strings(q: Query, strings: Iterable[str]) -> Query:
    """``q`` AND (one of ``strings`` occurs), when every string is long enough to say so."""
    strings = list(strings)
    if not strings or min(len(s) for s in strings) < 3:
        return q
    alternatives = [
        and_(*(_leaf(t) for t in dict.fromkeys(trigrams_of(s)) if "\0" not in t)) for s in strings
    ]
    return and_(q, or_(*alternatives))


def _cut(strings: frozenset[str], *, suffix: bool) -> frozenset[str]:
    """A prefix (or suffix) set with strings of at most 2 characters, at most ``MAX_SET`` of
    them, shortening further while too many (a shorter prefix is still a prefix)."""
    n = 2
    out = strings
    while True:
        out = frozenset(s[-n:] if suffix and n else s[:n] for s in out)
        if len(out) <= MAX_SET or n == 0:
            return out
        n -= 1


def _simplify(info: _Info) -> _Info:
    """Move a large (or long) exact set into the match query, and cut prefix/suffix sets, adding
    the trigrams of strings a cut would lose to the match query first."""
    emptyable, exact, prefix, suffix = info.emptyable, info.exact, info.prefix, info.suffix
    match = info.match
    if exact is not None:
        if len(exact) <= MAX_EXACT and min(map(len, exact)) < 3:
            return info
        match = _and_strings(match, exact)
        prefix, suffix, exact = exact, exact, None
    match = _and_strings(match, prefix)
    match = _and_strings(match, suffix)
    return _Info(emptyable, None, _cut(prefix, suffix=False), _cut(suffix, suffix=True), match)


def _cross(xs: frozenset[str], ys: frozenset[str]) -> frozenset[str]:
    return frozenset(x + y for x in xs for y in ys)


def _char_set(chars: frozenset[str] | None) -> _Info:
    if chars is None or not chars or len(chars) > MAX_CLASS:
        return _ANY_CHAR
    return _simplify(_Info(False, chars, _NO_INFO, _NO_INFO, ALL))


def _concat(x: _Info, y: _Info) -> _Info:
    match = and_(x.match, y.match)
    if x.exact is not None and y.exact is not None:
        return _simplify(_Info(x.emptyable and y.emptyable, _cross(x.exact, y.exact), _NO_INFO,
                               _NO_INFO, match))  # fmt: skip
    if x.exact is not None:
        prefix = _cross(x.exact, y.prefix)
    else:
        prefix = x.prefix | (y.pre if x.emptyable else frozenset())
    if y.exact is not None:
        suffix = _cross(x.suffix, y.exact)
    else:
        suffix = y.suffix | (x.suf if y.emptyable else frozenset())
    if x.exact is None and y.exact is None:
        match = _and_strings(match, _cross(x.suffix, y.prefix))
    return _simplify(_Info(x.emptyable and y.emptyable, None, prefix, suffix, match))


def _alternate(infos: list[_Info]) -> _Info:
    emptyable = any(i.emptyable for i in infos)
    match = or_(*(i.match for i in infos))
    exacts = [i.exact for i in infos]
    if all(e is not None for e in exacts):
        union = frozenset().union(*(e for e in exacts if e is not None))
        if len(union) <= MAX_EXACT * MAX_EXACT:
            return _simplify(_Info(emptyable, union, _NO_INFO, _NO_INFO, match))
    # Each branch's exact set goes into its own branch of the OR before the sets merge.
    match = or_(*(_and_strings(i.match, i.exact) if i.exact is not None else i.match
                  for i in infos))  # fmt: skip
    prefix = _cut(frozenset().union(*(i.pre for i in infos)), suffix=False)
    suffix = _cut(frozenset().union(*(i.suf for i in infos)), suffix=True)
    return _simplify(_Info(emptyable, None, prefix, suffix, match))


def _star(x: _Info) -> _Info:
    return _Info(True, None, _NO_INFO, _NO_INFO, ALL)


def _plus(x: _Info) -> _Info:
    """x+: every match starts with a match of x, ends with one, and contains one."""
    if x.exact is None:
        return x
    match = _and_strings(x.match, x.exact)
    return _simplify(_Info(x.emptyable, None, x.exact, x.exact, match))


def _repeat(x: _Info, low: int, high: int | None) -> _Info:
    """x{low,high} (high None: unbounded), read as at most three copies of x then x+."""
    if high is not None and high < low:
        raise _Unsupported("a repetition whose maximum is below its minimum")
    if low == 0:
        return _EMPTY if high == 0 else _star(x)
    if low == high and low <= 3:
        out = x
        for _ in range(low - 1):
            out = _concat(out, x)
        return out
    out = _plus(x)
    for _ in range(min(low, 3) - 1):
        out = _concat(x, out)
    return out


def _final(info: _Info) -> Query:
    match = info.match
    if info.exact is not None:
        match = _and_strings(match, info.exact)
    else:
        match = _and_strings(_and_strings(match, info.prefix), info.suffix)
    return match


# --- the parser of ripgrep's (Rust regex) syntax ---------------------------------------------


class _Parser:
    """Recursive descent over the modelled subset of the Rust ``regex`` syntax, building the
    analysis as it goes. ``_Unsupported`` for anything else."""

    def __init__(self, pattern: str, *, folded: bool) -> None:
        self.p = pattern
        self.i = 0
        self.depth = 0
        self.folded = folded

    def peek(self) -> str | None:
        return self.p[self.i] if self.i < len(self.p) else None

    def take(self) -> str:
        if self.i >= len(self.p):
            raise _Unsupported("unexpected end of pattern")
        ch = self.p[self.i]
        self.i += 1
        return ch

    def parse(self) -> _Info:
        info = self.alternation()
        if self.i != len(self.p):
            raise _Unsupported("unbalanced parenthesis")
        return info

    def alternation(self) -> _Info:
        branches = [self.concatenation()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.concatenation())
        return branches[0] if len(branches) == 1 else _alternate(branches)

    def concatenation(self) -> _Info:
        out = _EMPTY
        while (ch := self.peek()) is not None and ch not in "|)":
            atom = self.atom()
            if atom is None:  # a flag group such as (?i) for the rest of the group
                continue
            out = _concat(out, self.repetitions(atom))
        return out

    def repetitions(self, atom: _Info) -> _Info:
        ch = self.peek()
        if ch is None or ch not in "*+?{":
            return atom
        self.i += 1
        if ch == "*":
            out = _star(atom)
        elif ch == "+":
            out = _plus(atom)
        elif ch == "?":
            out = _alternate([atom, _EMPTY])
        else:
            out = _repeat(atom, *self.counts())
        if self.peek() == "?":  # lazy: the same strings
            self.i += 1
        nxt = self.peek()
        if nxt is not None and nxt in "*+?{":
            raise _Unsupported("a repetition of a repetition")
        return out

    def counts(self) -> tuple[int, int | None]:
        end = self.p.find("}", self.i)
        if end == -1:
            raise _Unsupported("an unclosed counted repetition")
        low_text, comma, high_text = self.p[self.i : end].partition(",")
        self.i = end + 1
        if not low_text.isascii() or not low_text.isdigit() or len(low_text) > 6:
            raise _Unsupported("a counted repetition this parser does not read")
        if high_text and (not high_text.isascii() or not high_text.isdigit() or len(high_text) > 6):
            raise _Unsupported("a counted repetition this parser does not read")
        low = int(low_text)
        if not comma:
            return low, low
        return low, int(high_text) if high_text else None

    def atom(self) -> _Info | None:
        ch = self.take()
        if ch == "(":
            return self.group()
        if ch == "[":
            return _char_set(self.char_class())
        if ch == ".":
            return _ANY_CHAR
        if ch in "^$":
            return _EMPTY
        if ch == "\\":
            return self.escape()
        if ch in "*+?{}]":
            raise _Unsupported("a metacharacter out of place")
        return _char_set(self.literal(ch))

    def literal(self, ch: str) -> frozenset[str] | None:
        """The characters (as the trigrams expect them) a literal character matches: itself, or
        folded by ``F``, None when ``F`` is not known there (not ASCII). Folded, a literal gives
        the same whether its part of the pattern ignores case or not."""
        if not self.folded:
            return frozenset(ch)
        if ch.isascii() or ch in "\u212a\u017f":
            return frozenset(ch.translate(_FOLD_CI))
        return None

    def escape(self) -> _Info:
        ch = self.take()
        if ch in _ZERO_WIDTH_ESCAPES:
            if ch == "b" and self.peek() == "{":
                raise _Unsupported("a special word boundary")
            return _EMPTY
        if ch in _UNKNOWN_ESCAPES:
            self.skip_class_name(ch)
            return _ANY_CHAR
        return _char_set(self.literal(self.escaped_char(ch)))

    def escaped_char(self, ch: str) -> str:
        if ch in _ESCAPABLE:
            return ch
        if ch in _ESCAPES:
            return _ESCAPES[ch]
        if ch == "x":
            if self.peek() == "{":
                end = self.p.find("}", self.i)
                digits = self.p[self.i + 1 : end] if end != -1 else ""
                self.i = end + 1
            else:
                digits = self.p[self.i : self.i + 2]
                self.i += 2
            if not 1 <= len(digits) <= 6 or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise _Unsupported("a hexadecimal escape this parser does not read")
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise _Unsupported("not a Unicode scalar value")
            return chr(code)
        raise _Unsupported(f"the escape \\{ch}")

    def skip_class_name(self, ch: str) -> None:
        if ch not in "pP":
            return
        if self.peek() == "{":
            end = self.p.find("}", self.i)
            if end == -1:
                raise _Unsupported("an unclosed Unicode class")
            self.i = end + 1
        else:
            self.take()

    def group(self) -> _Info | None:
        if self.p.startswith("?", self.i):
            self.i += 1
            if self.p.startswith("P<", self.i) or self.p.startswith("<", self.i):
                end = self.p.find(">", self.i)
                if end == -1:
                    raise _Unsupported("an unclosed group name")
                self.i = end + 1
            else:
                scoped = self.flags()
                if not scoped:
                    return None
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Unsupported("groups nested too deeply")
        inner = self.alternation()
        self.depth -= 1
        if self.peek() != ")":
            raise _Unsupported("an unclosed group")
        self.i += 1
        return inner

    def flags(self) -> bool:
        """Reads ``flags)`` (for the rest of the group: False) or ``flags:`` (True). Case is
        decided for the whole pattern (``_ignores_case``); the others do not change trigrams."""
        while True:
            ch = self.take()
            if ch in ":)":
                return ch == ":"
            if ch not in _FLAGS:
                raise _Unsupported(f"the flag {ch}")

    def char_class(self) -> frozenset[str] | None:
        """A bracketed class after its ``[``: the characters it matches, None when unknown
        (negated, Perl or Unicode classes inside, or too many)."""
        negated = self.p.startswith("^", self.i)
        if negated:
            self.i += 1
        chars: set[str] | None = set()
        first = True
        while True:
            ch = self.take()
            if ch == "]" and not first:
                break
            first = False
            if ch == "[" or (ch in "&-~" and self.peek() == ch):
                raise _Unsupported("a nested class or a class set operation")
            if ch == "\\":
                esc = self.take()
                if esc in _UNKNOWN_ESCAPES:
                    self.skip_class_name(esc)
                    chars = None
                    continue
                ch = self.escaped_char(esc)
            if self.peek() == "-" and self.p[self.i + 1 : self.i + 2] not in ("]", ""):
                self.i += 1
                high = self.take()
                if high in "[\\":
                    raise _Unsupported("a class range this parser does not read")
                chars = self.add_range(chars, ch, high)
            elif chars is not None:
                chars = self.add_chars(chars, ch, ch)
        return None if negated or chars is None else frozenset(chars)

    def add_range(self, chars: set[str] | None, low: str, high: str) -> set[str] | None:
        if ord(high) < ord(low):
            raise _Unsupported("a reversed class range")
        if chars is None or ord(high) - ord(low) >= MAX_CLASS:
            return None
        return self.add_chars(chars, low, high)

    def add_chars(self, chars: set[str], low: str, high: str) -> set[str] | None:
        for code in range(ord(low), ord(high) + 1):
            folded = self.literal(chr(code))
            if folded is None:
                return None
            chars |= folded
        return chars


@dataclass(frozen=True, slots=True)
class Requirement:
    """What ``pattern`` requires of a text's trigrams."""

    query: Query
    folded: bool
    """The trigrams are folded by ``F`` (lower-case ASCII only): the query must be evaluated
    against the folded text's trigrams, as an FTS5 ``trigram`` table with ``case_sensitive 0``
    does. False: the pattern's own characters, sound against the exact text's trigrams, or
    against a folded text's when the query's strings are folded the same way (an FTS5 table
    folds the strings of a MATCH expression itself)."""

    def fts5(self) -> str | None:
        return fts5_match(self.query)


def trigram_query(pattern: str, *, case_sensitive: bool) -> Requirement:
    """What every text that ``pattern`` matches satisfies, as rg runs it (``--case-sensitive``
    when ``case_sensitive``, else ``--ignore-case``). The query is ``ALL`` when nothing is
    required (or the pattern is not one this module reads): the caller scans."""
    if len(pattern) > MAX_PATTERN_CHARS or not _encodable(pattern):
        return Requirement(ALL, not case_sensitive)
    folded = not case_sensitive or _ignores_case(pattern)
    try:
        info = _Parser(pattern, folded=folded).parse()
    except _Unsupported:
        return Requirement(ALL, folded)
    return Requirement(_final(info), folded)


def _ignores_case(pattern: str) -> bool:
    """Whether any ``(?...)`` group of the pattern names the flag ``i`` (an over-estimate:
    escaped parentheses and group names count too, which only folds a query that need not be)."""
    start = pattern.find("(?")
    while start != -1:
        end = len(pattern)
        for stop in (":", ")"):
            found = pattern.find(stop, start + 2)
            if found != -1:
                end = min(end, found)
        if "i" in pattern[start + 2 : end]:
            return True
        start = pattern.find("(?", start + 2)
    return False


def _encodable(pattern: str) -> bool:
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def fts5_match(query: Query) -> str | None:
    """The query as an FTS5 MATCH expression over a ``trigram``-tokenized table: quoted
    3-character strings joined by AND/OR, each compound part in parentheses. None for ``ALL``
    (every note is a candidate: scan)."""
    if query.is_all:
        return None
    parts = [quoted(t) for t in sorted(query.trigrams)]
    for sub in query.subs:
        rendered = fts5_match(sub)
        if rendered is not None:
            parts.append(f"({rendered})" if sub.size > 1 else rendered)
    joiner = " AND " if query.op == "and" else " OR "
    return joiner.join(parts)

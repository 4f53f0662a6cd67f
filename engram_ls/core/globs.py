"""Path globs (``include``/``exclude`` config, the search ``path`` scope), matched in linear time.

A glob is gitignore-like over vault-relative POSIX paths: ``**`` matches any number of folders
(including none), ``*`` and ``?`` never cross a ``/``, ``[...]`` is a character class (``[!...]``
negates). A pattern without a ``/`` matches the name at any depth (``*.tmp.md`` matches
``a/b/x.tmp.md``), as in ``.gitignore``.

The meaning is that of translating each ``**/`` to ``(?:.*/)?``, a ``**`` to ``.*``, ``*`` to
``[^/]*`` and ``?`` to ``[^/]``; but such a regex backtracks exponentially in Python's ``re``
(``"**/" * 40 + "x"`` took 1.1 s over 885 paths, ``* 500`` never ended), and no deadline can
interrupt one ``re`` call. So patterns are compiled to one of two matchers, both linear in the
length of the path for a given pattern:

- the usual shape — every ``**`` a whole path segment, no class that can match ``/`` — becomes
  a regex without ambiguity: a run of ``**`` segments is one ``(?:[^/]*/)*`` scan, each group
  of plain segments after it is found at its leftmost place inside an atomic group, and inside
  a segment each piece between two ``*`` is found at its leftmost place the same way (the
  leftmost place is always a correct choice when what follows may skip anything, so nothing is
  ever retried);
- anything else (``a**b``, ``[!x]`` that could match ``/``) runs as a Thompson NFA simulated
  with bit sets: one pass over the path, a few integer operations per character.

``tests/core/test_globs.py`` checks both against the backtracking regex on generated patterns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

GLOB_CHARS = frozenset("*?[")

Kind = Literal["lit", "one", "class", "star", "any", "optdir"]
"""A glob token: a literal character, ``?``, ``[...]``, ``*``, ``**`` (not before ``/``) and
``**/``."""


@dataclass(frozen=True, slots=True)
class _Token:
    kind: Kind
    text: str = ""
    """The character (``lit``) or the regex of the class (``class``)."""
    rx: re.Pattern[str] | None = None
    """The compiled class (``class``)."""


class _Invalid(Exception):
    """A character class that does not compile: the pattern is taken literally."""


def is_glob(pattern: str) -> bool:
    return any(ch in GLOB_CHARS for ch in pattern)


def _tokens(pat: str) -> list[_Token]:
    out: list[_Token] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**/", i):
            out.append(_Token("optdir"))
            i += 3
        elif pat.startswith("**", i):
            out.append(_Token("any"))
            i += 2
        elif c == "*":
            out.append(_Token("star"))
            i += 1
        elif c == "?":
            out.append(_Token("one"))
            i += 1
        elif c == "[":
            j = pat.find("]", i + 2 if pat[i + 1 : i + 2] in ("!", "]") else i + 1)
            if j == -1:
                out.append(_Token("lit", c))
                i += 1
            else:
                body = pat[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                text = "[" + body.replace("\\", "\\\\") + "]"
                try:
                    rx = re.compile(text, re.DOTALL)
                except re.error:
                    raise _Invalid(text) from None
                out.append(_Token("class", text, rx))
                i = j + 1
        else:
            out.append(_Token("lit", c))
            i += 1
    return _normalized(out)


_ABSORBS = {
    # (a, b) -> what ``a`` followed by ``b`` is the same as (both match exactly the same)
    ("any", "any"): "any",
    ("any", "star"): "any",
    ("star", "any"): "any",
    ("any", "optdir"): "any",
    ("optdir", "any"): "any",
    ("optdir", "optdir"): "optdir",
    ("star", "star"): "star",
}


def _normalized(tokens: list[_Token]) -> list[_Token]:
    """Merge neighbours that mean one token (``**/**/`` is ``**/``, ``**`` then ``*`` is
    ``**``), so that runs of them cost nothing."""
    out: list[_Token] = []
    for tok in tokens:
        if out:
            merged = _ABSORBS.get((out[-1].kind, tok.kind))
            if merged is not None:
                out[-1] = _Token(merged)  # type: ignore[arg-type]
                continue
        out.append(tok)
    return out


# -- the usual shape: one regex without ambiguity ---------------------------------------------

_GLOBSTAR = None
"""A whole ``**`` segment, in the segment list."""


def _segments(tokens: list[_Token]) -> list[list[_Token] | None] | None:
    """The pattern as path segments (None for a ``**`` segment), or None when it is not of the
    usual shape."""
    segs: list[list[_Token] | None] = []
    cur: list[_Token] = []
    for tok in tokens:
        if tok.kind == "lit" and tok.text == "/":
            if cur and cur[0].kind == "any":
                return None  # ``***/``: ``.*/`` needs a slash, a ``**/`` segment does not
            segs.append(cur)
            cur = []
        elif tok.kind == "optdir":
            if cur:
                return None  # ``a**/``
            segs.append(_GLOBSTAR)
        elif tok.kind == "any":
            if cur:
                return None  # ``a**``
            cur = [tok]
        elif tok.kind == "class" and tok.rx is not None and tok.rx.match("/"):
            return None  # a class that can cross a folder boundary
        else:
            if cur and cur[0].kind == "any":
                return None  # ``**a``
            cur.append(tok)
    if cur and cur[0].kind == "any":
        segs.append(_GLOBSTAR)
    else:
        segs.append(cur)
    # A ``**`` segment that is not the last one came from ``**/`` (it owns its slash); the
    # last one came from a final ``**``: both are whole segments.
    return segs


def _piece(tok: _Token) -> str:
    if tok.kind == "lit":
        return re.escape(tok.text)
    if tok.kind == "one":
        return "[^/]"
    return tok.text  # class


def _segment_rx(seg: list[_Token]) -> str:
    """One path segment: the pieces between ``*`` each at their leftmost place, the last one
    ending the segment; the whole atomic, so it matches one way or not at all."""
    chunks: list[str] = [""]
    for tok in seg:
        if tok.kind == "star":
            chunks.append("")
        else:
            chunks[-1] += _piece(tok)
    if len(chunks) == 1:
        return chunks[0]
    middle = "".join(f"(?>[^/]*?{c})" for c in chunks[1:-1] if c)
    return f"(?>{chunks[0]}{middle}[^/]*{chunks[-1]}(?![^/]))"


def _plain_rx(segs: list[list[_Token] | None]) -> str:
    out: list[str] = []
    i, n = 0, len(segs)
    floating = False
    while i < n:
        if segs[i] is _GLOBSTAR:
            while i < n and segs[i] is _GLOBSTAR:
                i += 1
            if i == n:  # a final run matches whatever is left (at least one segment)
                out.append(".*")
                return "".join(out)
            floating = True
            continue
        j = i
        while j < n and segs[j] is not _GLOBSTAR:
            j += 1
        group = "/".join(_segment_rx(s) for s in segs[i:j])  # type: ignore[arg-type]
        last = j == n
        if not floating:
            out.append(group if last else group + "/")
        elif last:
            out.append(f"(?:[^/]*/)*?{group}")
        else:
            out.append(f"(?>(?:[^/]*/)*?{group}/)")
        floating = False
        i = j
    return "".join(out)


# -- anything else: a bit-parallel NFA --------------------------------------------------------


@dataclass(slots=True)
class _Nfa:
    """A Thompson NFA run over bit sets: bit ``j`` set means "the pattern is matched up to
    state ``j``"; one pass over the path, a few integer operations per character.

    Each token is one state, but ``**/`` is two: its entry (which may be skipped, or left on a
    slash) and its inside (``.*`` until a slash). A character moves a state one or two states
    on, or keeps it (``*``, ``**``, inside ``**/``); skippable states pass their bit on at once
    (the closure).
    """

    tokens: list[_Token]
    skip1: int = 0
    """States left without a character for the next one (``*``, ``**``)."""
    skip2: int = 0
    """States left without a character for the one after next (the entry of ``**/``)."""
    accept: int = 0
    start: int = 0
    kinds: list[str] = field(default_factory=list)
    _masks: dict[str, tuple[int, int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for tok in self.tokens:
            self.kinds += ["opt", "opt-in"] if tok.kind == "optdir" else [tok.kind]
        for j, kind in enumerate(self.kinds):
            if kind in ("star", "any"):
                self.skip1 |= 1 << j
            elif kind == "opt":
                self.skip2 |= 1 << j
        self.accept = 1 << len(self.kinds)
        self.start = self._closure(1)

    def _closure(self, d: int) -> int:
        while True:
            e = d | ((d & self.skip1) << 1) | ((d & self.skip2) << 2)
            if e == d:
                return d
            d = e

    def _masks_for(self, ch: str) -> tuple[int, int, int]:
        """(move one state on, move two on, stay) masks for character ``ch``."""
        got = self._masks.get(ch)
        if got is not None:
            return got
        one = two = stay = 0
        slash = ch == "/"
        classes = [t for t in self.tokens for _ in range(2 if t.kind == "optdir" else 1)]
        for j, kind in enumerate(self.kinds):
            bit = 1 << j
            tok = classes[j]
            if kind == "lit":
                if ch == tok.text:
                    one |= bit
            elif kind == "one":
                if not slash:
                    one |= bit
            elif kind == "class":
                if tok.rx is not None and tok.rx.match(ch):
                    one |= bit
            elif kind == "star":
                if not slash:
                    stay |= bit
            elif kind == "any":
                stay |= bit
            elif kind == "opt":  # the first character of ``.*/``: inside, or done if a slash
                one |= bit
                if slash:
                    two |= bit
            else:  # inside ``**/``: anything, ended by a slash
                stay |= bit
                if slash:
                    one |= bit
        got = (one, two, stay)
        if len(self._masks) < 4096:
            self._masks[ch] = got
        return got

    def match(self, path: str) -> bool:
        d = self.start
        for ch in path:
            one, two, stay = self._masks_for(ch)
            d = self._closure(((d & one) << 1) | ((d & two) << 2) | (d & stay))
            if not d:
                return False
        return bool(d & self.accept)


# -- the compiled glob ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Glob:
    """A compiled glob; ``match(path)`` says whether the whole path matches."""

    pattern: str
    rx: re.Pattern[str] | None
    nfa: _Nfa | None

    def match(self, path: str) -> bool:
        if self.rx is not None:
            return self.rx.match(path) is not None
        assert self.nfa is not None
        return self.nfa.match(path)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    """Compile a glob (see the module docstring) over vault-relative POSIX paths."""
    pat = pattern.strip().lstrip("/")
    if pat.startswith("./"):
        pat = pat[2:]
    if pat.endswith("/"):
        pat += "**"
    if "/" not in pat:
        pat = "**/" + pat
    try:
        tokens = _tokens(pat)
    except _Invalid:
        return Glob(pattern, re.compile(re.escape(pattern) + r"\Z"), None)
    segs = _segments(tokens)
    if segs is not None:
        return Glob(pattern, re.compile(_plain_rx(segs) + r"\Z", re.DOTALL), None)
    return Glob(pattern, None, _Nfa(tokens))

"""The one place that turns a user's text query into FTS5 syntax, plus a matching tokenizer.

A text query is words, ``"quoted phrases"`` and ``prefix*`` terms, all of which must occur
(implicit AND). Every term is emitted as an FTS5 string literal, so operators (``AND``, ``OR``,
``NOT``, ``NEAR(``), column filters (``col:``), parentheses and stray ``*`` or quotes in user
input are plain words and can never be an FTS5 syntax error. Raw FTS5 syntax is an explicit
opt-in of the request (``raw_fts``) and is passed through unchanged, once ``check_raw`` has
found it valid: an invalid one is the caller's error (``ENGRAM_INVALID_REQUEST`` with SQLite's
message) on every path, never an index failure (SQLite's "no such column" would otherwise look
like damage) or a scan that cannot serve it.

The same tokenization (Unicode letters and digits, case-folded, diacritics removed) is used by
the scan path and to find a matching line, so all three agree on what a word is.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from engram_ls.core.errors import InvalidRequest
from engram_ls.core.index.schema import DDL

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_QUERY_PART = re.compile(r'"([^"]*)"?|(\S+)')


@dataclass(frozen=True, slots=True)
class Term:
    tokens: tuple[str, ...]
    """Folded tokens; more than one means a phrase (consecutive tokens)."""
    prefix: bool = False
    """The last token may be a prefix of a word."""


@lru_cache(maxsize=4096)
def fold(word: str) -> str:
    """Lower-case and strip diacritics, like ``unicode61 remove_diacritics 2`` (which neither
    expands ``ß`` nor maps compatibility forms such as ligatures and full-width letters)."""
    lowered = word.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFD", lowered)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def tokenize(text: str) -> list[str]:
    return [fold(t) for t in _TOKEN.findall(text)]


def parse_query(query: str) -> list[Term]:
    """Split a user's text query into terms. Never raises; unbalanced quotes close at the end."""
    terms: list[Term] = []
    for match in _QUERY_PART.finditer(query):
        phrase, word = match.group(1), match.group(2)
        if phrase is not None:
            tokens = tuple(tokenize(phrase))
            if tokens:
                terms.append(Term(tokens))
            continue
        assert word is not None
        prefix = word.endswith("*")
        tokens = tuple(tokenize(word))
        if not tokens:
            continue
        terms.append(Term(tokens, prefix=prefix))
    return terms


def quoted(text: str) -> str:
    """``text`` as one FTS5 string (a ``"`` inside doubled): never read as syntax."""
    return '"' + text.replace('"', '""') + '"'


def to_fts(terms: list[Term]) -> str:
    """Render terms as an FTS5 query: each a quoted string, ``*`` outside the quotes for prefix."""
    return " ".join(quoted(" ".join(t.tokens)) + ("*" if t.prefix else "") for t in terms)


_FTS_TABLE = re.search(r"CREATE VIRTUAL TABLE notes_fts USING fts5 \(.*?\);", DDL, re.DOTALL)
assert _FTS_TABLE is not None, "schema.DDL defines notes_fts"
_PROBE_DDL = _FTS_TABLE.group(0).replace("notes_fts", "probe", 1)
_probe = threading.local()


def check_raw(query: str) -> None:
    """Raise InvalidRequest, with SQLite's message, when ``query`` is not a valid FTS5 query
    for the index's full-text table.

    FTS5 parses a MATCH expression before it reads any row, so an empty in-memory copy of the
    table (same columns and tokenizer, from the schema's own statement) rejects exactly the
    queries the index would: syntax errors, unterminated strings, unknown columns, ``*`` alone.
    """
    conn: sqlite3.Connection | None = getattr(_probe, "conn", None)
    if conn is None:
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        conn.execute(_PROBE_DDL)
        _probe.conn = conn
    try:
        conn.execute("SELECT rowid FROM probe WHERE probe MATCH ?", (query,)).fetchall()
    except sqlite3.OperationalError as exc:
        raise InvalidRequest(
            f"FTS5 query error: {exc}", data={"query": query[:200], "sqlite": str(exc)}
        ) from None


def _term_positions(term: Term, tokens: list[str]) -> bool:
    n = len(term.tokens)
    last = n - 1
    for i in range(len(tokens) - n + 1):
        ok = True
        for j, want in enumerate(term.tokens):
            got = tokens[i + j]
            if got != want and not (term.prefix and j == last and got.startswith(want)):
                ok = False
                break
        if ok:
            return True
    return False


def matches(terms: list[Term], tokens: list[str]) -> bool:
    """Whether a token list contains every term (the scan path's text match)."""
    return all(_term_positions(term, tokens) for term in terms)


def count_hits(terms: list[Term], tokens: list[str]) -> int:
    """Occurrences of the terms' first tokens: a simple relevance score for the scan path."""
    firsts = {t.tokens[0]: t.prefix and len(t.tokens) == 1 for t in terms}
    hits = 0
    for tok in tokens:
        for want, prefix in firsts.items():
            if tok == want or (prefix and tok.startswith(want)):
                hits += 1
    return hits


def line_matches(terms: list[Term], line: str) -> bool:
    """Whether a line contains any of the terms (used to place a snippet)."""
    tokens = tokenize(line)
    return any(_term_positions(term, tokens) for term in terms)


@lru_cache(maxsize=256)
def _start_regex(words: tuple[str, ...]) -> re.Pattern[str] | None:
    if not words or not all(w.isascii() for w in words):
        return None
    alts = "|".join(re.escape(w) for w in sorted(set(words), key=len, reverse=True))
    return re.compile(rf"(?<![^\W_])(?:{alts})", re.IGNORECASE)


def find_matching_line(terms: list[Term], text: str) -> tuple[int, str] | None:
    """The first line of ``text`` containing any term, as (0-based index, line).

    Jumps between candidate positions with one regex (the terms' first words, at word starts)
    instead of tokenizing every line; falls back to a line-by-line scan for non-ASCII terms
    or text, where case folding and diacritics need the tokenizer.
    """
    if not terms:
        return None
    firsts = tuple(t.tokens[0] for t in terms)
    if text.isascii() and all(w.isascii() for w in firsts):
        low = text.lower()
        best: tuple[int, str] | None = None
        for word in set(firsts):
            pos = low.find(word)
            while pos != -1 and (best is None or pos < best[0]):
                if pos == 0 or not low[pos - 1].isalnum():
                    start = low.rfind("\n", 0, pos) + 1
                    end = low.find("\n", pos)
                    line = text[start : len(text) if end == -1 else end]
                    if line_matches(terms, line):
                        best = (start, line)
                        break
                    if end == -1:
                        break
                    pos = low.find(word, end)
                else:
                    pos = low.find(word, pos + 1)
        if best is None:
            return None
        return text.count("\n", 0, best[0]), best[1]
    rx = _start_regex(firsts)
    if rx is not None:
        pos = 0
        while True:
            m = rx.search(text, pos)
            if m is None:
                break
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            end = len(text) if end == -1 else end
            line = text[start:end]
            if line_matches(terms, line):
                return text.count("\n", 0, start), line
            pos = end + 1
    for i, line in enumerate(text.split("\n")):
        if line.strip() and line_matches(terms, line):
            return i, line
    return None

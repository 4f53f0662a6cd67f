"""The trigram index of what ripgrep searches: each note file's whole text (frontmatter
included), by trigrams, so that a ``literal`` search reads only the notes that can match.

The index gives candidates, never the answer: ripgrep verifies them, so an answer is exactly
what a scan gives. Candidates are a superset of the notes ripgrep would find:

- A file whose bytes are not text that SQLite sees as ripgrep does (a NUL byte, bytes that are
  not UTF-8, more than ``limits.max_note_bytes``) has no trigrams; it is listed in
  ``tri_unindexed`` and is a candidate of every search.
- The FTS5 ``trigram`` tokenizer folds case one code point at a time (ASCII, and the Kelvin
  sign and long s to ``k`` and ``s``, as ripgrep's ``-i`` does). A case-sensitive search may
  use every trigram of the query (an exact substring folds to the same trigrams). A
  case-insensitive one uses only its ASCII trigrams: ripgrep's Unicode case classes of other
  letters (Greek sigma, for one) are not SQLite's, so those are left to the verification.
- A query with a control character (a line break cannot match inside one line; ripgrep
  refuses some) or without a usable trigram cannot be narrowed: the caller scans.

Measured on the generated vaults (``benchmarks/bench_build.py``; docs/benchmarks.md): at 10,000
notes (17 MB of notes) the table with its content takes 31 MB beside a 50 MB index (+63 %), at
100,000 (171 MB) 297 MiB beside 502 MiB (+59 %). What it costs a cold build is the writing
process's CPU, which a build waits on: at 100,000 notes 86-91 s against 46-50 s without it
(the parse process's hardly changes), so a build's notes/s about halves. Nearly all of it is the
FTS5 trigram tokenizer and its term hash (one term per character of text): SQLite's merge
options (``automerge``, ``crisismerge``, ``pgsz``, ``hashsize``, no automerge and one
``optimize`` at the end) change it by no more than the machine's noise. A contentless table
would take 11 MB at 10,000 notes and about 17 % less time, but SQLite 3.40 deletes a
contentless row only given its old text, which the index does not keep.
"""

from __future__ import annotations

import sqlite3

from engram_ls.core.index.fts import quoted

MAX_TRIGRAMS = 12
"""Trigrams of a query AND-ed in one lookup (spread over the query); each narrows less than the
one before, and any subset still gives a superset of the matches."""

TABLES = ("notes_tri", "tri_unindexed")
"""The tables of the trigram index (cleared with the notes)."""


def note_text(data: bytes, max_bytes: int) -> str | None:
    """The text the trigram index holds for a file's bytes; None when it cannot hold it
    safely (then the note is a candidate of every literal search)."""
    if len(data) > max_bytes or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def query_trigrams(query: str, case_sensitive: bool) -> list[str]:
    """Trigrams every line matching ``query`` holds (as the tokenizer folds them), at most
    ``MAX_TRIGRAMS``; empty when the query cannot be narrowed."""
    if any(ord(c) < 0x20 or c == "\x7f" for c in query):
        return []
    grams: list[str] = []
    seen: set[str] = set()
    for i in range(len(query) - 2):
        gram = query[i : i + 3]
        if not case_sensitive and not gram.isascii():
            continue
        key = gram.lower() if gram.isascii() else gram
        if key not in seen:
            seen.add(key)
            grams.append(gram)
    if len(grams) > MAX_TRIGRAMS:
        step = (len(grams) - 1) / (MAX_TRIGRAMS - 1)
        grams = [grams[round(i * step)] for i in range(MAX_TRIGRAMS)]
    return grams


def match_expression(grams: list[str]) -> str:
    """The FTS5 query AND-ing ``grams``, each a quoted string of one trigram."""
    return " AND ".join(quoted(g) for g in grams)


CANDIDATES_SQL = (
    "SELECT rowid FROM notes_tri WHERE notes_tri MATCH ?"
    " UNION ALL SELECT note_id FROM tri_unindexed"
)
"""Ids of the notes that can hold a match of the trigram expression bound to it."""


def size_bytes(conn: sqlite3.Connection) -> int | None:
    """Bytes the trigram index takes in the file, or None where SQLite cannot tell (no
    ``dbstat`` table). Reads every page of its tables: 30-80 ms at 10,000 notes, so it is
    measured when a build ends (``meta.trigram_bytes``), not on every status."""
    marks = ",".join("?" * len(_SHADOWS))
    try:
        row = conn.execute(
            f"SELECT sum(pgsize) FROM dbstat WHERE name IN ({marks})", _SHADOWS
        ).fetchone()
    except sqlite3.OperationalError:
        return None
    return int(row[0] or 0)


_SHADOWS = (
    "notes_tri_data",
    "notes_tri_idx",
    "notes_tri_content",
    "notes_tri_docsize",
    "notes_tri_config",
    "tri_unindexed",
)

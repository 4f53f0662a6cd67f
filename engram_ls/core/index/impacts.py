"""Exact top-k BM25 for a frequent word or phrase: its postings ordered by impact, beside FTS5.

FTS5 ranks a query by calling ``bm25()`` on every row that matches and sorting them all: a word
in half of 100,000 notes costs 40 ms or more however few results are asked for. For a query of
one word or one phrase, FTS5's score of a note is (fts5_aux.c)

    -idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))

where ``f`` is the weighted count of the word (of the phrase's starts) in the note, each adding
its column's weight, ``D`` the note's number of tokens, and ``idf`` and ``avgdl`` are the same
for every note of the query. The score improves with ``f`` and worsens with ``D``: among the
notes that share one ``f``, ordering by (``D``, rowid) is ordering by (score, rowid). So the
first k of every ``f`` group hold the best k of all, and a group can be left at its first note
that scores worse than the k-th best found so far.

:class:`Postings` are the notes grouped by ``f`` and sorted by (``D``, rowid), read from FTS5
itself (the ``fts5vocab`` instance table, with token offsets for a phrase, and the ``docsize``
shadow table), so the counts are FTS5's own; a reading whose notes are not exactly those FTS5
matches is never used. Scores are computed with the same operations in the same order as
fts5_aux.c, in IEEE doubles: bit for bit FTS5's, which tests check against ``bm25()`` for every
note of generated vaults. Totals come from FTS5's ``averages`` record of the same snapshot.

Postings are read on a background thread the second time a word or phrase in ``MIN_MATCHES``
notes or more (or one that took FTS5 ``SLOW_S`` to rank) is ranked by FTS5 (so a one-off
search, such as the CLI's, never pays for them), in the state of that thread's snapshot, whose
generation they keep. A search uses them only when its own snapshot is at that generation;
otherwise FTS5 ranks as it always did (and the postings are read again). Either way the hits,
scores, order and total are the same.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
from array import array
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from engram_ls.core.index.bitmaps import bitmap
from engram_ls.core.index.fts import quoted
from engram_ls.core.index.snapshot_cache import SnapshotCache, Source, generation

K1 = 1.2
B = 0.75
"""FTS5's bm25 constants (fts5_aux.c)."""
MIN_MATCHES = 5000
"""Words matching fewer notes are ranked by FTS5 (cheap enough: a few ms at most)..."""
SLOW_S = 0.005
"""... unless FTS5 took this long to rank them (a phrase of frequent words: its positions are
compared in every note that holds all of them, however few hold the phrase)."""
HOT_WORDS = 4
"""Words and phrases whose postings are kept (the most recently used): 4.6 MB for a word in
54,700 notes."""


def varints(blob: bytes) -> list[int]:
    """The SQLite varints of an FTS5 record (big-endian 7-bit groups, the 9th byte whole)."""
    out: list[int] = []
    i, n = 0, len(blob)
    while i < n:
        value = 0
        for k in range(9):
            byte = blob[i]
            i += 1
            if k == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        out.append(value)
    return out


def token_count(docsize: bytes) -> int:
    """A note's tokens in all columns, from its ``docsize`` record (what bm25 reads through
    ``xColumnSize(-1)``): its bytes' sum when every column holds under 128 tokens."""
    if max(docsize, default=0) < 0x80:
        return sum(docsize)
    return sum(varints(bytes(docsize)))


def totals(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """(rows, tokens in all columns) of the full-text table, from its ``averages`` record:
    what bm25 reads through ``xRowCount`` and ``xColumnTotalSize(-1)``."""
    row = conn.execute("SELECT block FROM notes_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return None
    values = varints(bytes(row[0]))
    return values[0], sum(values[1:])


@dataclass(frozen=True, slots=True)
class Group:
    f: float
    ids: array[int]
    """Rowids sorted by (``D``, rowid)."""
    sizes: array[int]
    """``D`` of each rowid."""


@dataclass(frozen=True, slots=True)
class Postings:
    generation: int
    groups: tuple[Group, ...]
    """By ``f``, highest first."""
    ids: frozenset[int]
    usable: bool
    """FTS5 matches exactly these notes (False: it tokenizes the query otherwise)."""
    bits: int = 0
    """``ids`` as a bitmap (``bitmaps``): counted among other bitmaps' notes at once."""

    @property
    def count(self) -> int:
        return len(self.ids)


def vocabulary(conn: sqlite3.Connection) -> None:
    """Give ``conn`` the ``temp.engram_instances`` table (``fts5vocab`` instance rows of the
    full-text table). Only a connection of its own: a read-only one may write its temp schema
    for the moment it takes (the index file stays opened read-only)."""
    was = conn.execute("PRAGMA query_only").fetchone()[0]
    conn.execute("PRAGMA query_only = OFF")
    try:
        conn.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_instances"
            " USING fts5vocab(main, notes_fts, instance)"
        )
    finally:
        conn.execute(f"PRAGMA query_only = {'ON' if was else 'OFF'}")


def _frequencies(
    conn: sqlite3.Connection, tokens: Sequence[str], weight: dict[str, float]
) -> dict[int, float]:
    """Each note's weighted count of the phrase (of the word when it is one): as bm25 adds
    the column's weight for every place the phrase starts at."""
    freq: dict[int, float] = {}
    if len(tokens) == 1:
        for doc, col, n in conn.execute(
            "SELECT doc, col, count(*) FROM temp.engram_instances WHERE term = ? GROUP BY doc, col",
            (tokens[0],),
        ):
            freq[int(doc)] = freq.get(int(doc), 0.0) + weight[str(col)] * int(n)
        return freq
    sql = "SELECT doc, col, offset FROM temp.engram_instances WHERE term = ?"
    later = [
        {(int(d), str(c), int(o)) for d, c, o in conn.execute(sql, (token,))}
        for token in tokens[1:]
    ]
    for doc, col, offset in conn.execute(sql, (tokens[0],)):
        d, c, o = int(doc), str(col), int(offset)
        if all((d, c, o + j) in places for j, places in enumerate(later, 1)):
            freq[d] = freq.get(d, 0.0) + weight[c]
    return freq


def read_postings(
    conn: sqlite3.Connection, tokens: Sequence[str], weights: Sequence[float]
) -> Postings:
    """A word's or a phrase's postings, read in the caller's read snapshot (``vocabulary``
    first)."""
    if any(w != int(w) or w <= 0 for w in weights):
        raise ValueError("weights must be positive whole numbers (sums stay exact)")
    gen = generation(conn)
    columns = [str(r[1]) for r in conn.execute("PRAGMA table_info(notes_fts)")]
    weight = dict(zip(columns, (float(w) for w in weights), strict=True))
    freq = _frequencies(conn, tokens, weight)
    matches = conn.execute(
        "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?", (quoted(" ".join(tokens)),)
    ).fetchone()[0]
    by_f: dict[float, list[tuple[int, int]]] = {}
    for rowid, blob in conn.execute("SELECT id, sz FROM notes_fts_docsize"):
        f = freq.get(rowid)
        if f is not None:
            by_f.setdefault(f, []).append((token_count(blob), rowid))
    groups = []
    for f in sorted(by_f, reverse=True):
        entries = sorted(by_f[f])
        groups.append(
            Group(f, array("q", (i for _, i in entries)), array("q", (d for d, _ in entries)))
        )
    ids = frozenset(freq)
    return Postings(gen, tuple(groups), ids, matches == len(ids), bitmap(ids))


def idf(rows: int, hits: int) -> float:
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def top(
    postings: Postings,
    rows: int,
    tokens: int,
    k: int,
    allowed: Collection[int] | None = None,
) -> list[tuple[int, float]]:
    """The best ``k`` (rowid, bm25) of the word's notes (those in ``allowed`` if given), in
    FTS5's order (bm25, then rowid), with bm25 as FTS5 computes it (negative: lower is
    better)."""
    if k <= 0:
        return []
    weight = idf(rows, postings.count)
    avgdl = float(tokens) / float(rows)
    heap: list[tuple[float, int]] = []
    """(-bm25, -rowid): the root is the worst of the best k so far."""
    for group in postings.groups:
        f = group.f
        top_part = f * (K1 + 1.0)
        sizes = group.sizes
        for j, rowid in enumerate(group.ids):
            if allowed is not None and rowid not in allowed:
                continue
            d = float(sizes[j])
            r = -1.0 * (0.0 + weight * (top_part / (f + K1 * (1 - B + B * d / avgdl))))
            if len(heap) < k:
                heapq.heappush(heap, (-r, -rowid))
                continue
            worst_r = -heap[0][0]
            if r > worst_r:
                break  # every later note of the group scores no better
            if (r, rowid) < (worst_r, -heap[0][1]):
                heapq.heapreplace(heap, (-r, -rowid))
    return sorted(((-i, -nr) for nr, i in heap), key=lambda t: (t[1], t[0]))


Key = tuple[tuple[str, ...], tuple[float, ...]]
"""(the word or the phrase's words, column weights)."""


def _read(conn: sqlite3.Connection, key: Key) -> Postings:
    return read_postings(conn, key[0], key[1])


def postings_cache(source: Source) -> SnapshotCache[Key, Postings]:
    """The postings of the most recently searched frequent words and phrases of one index."""
    return SnapshotCache("engram-postings", source, _read, HOT_WORDS, prepare=vocabulary)

"""Exact top-k BM25 for a frequent word: its postings ordered by impact, beside FTS5.

FTS5 ranks a query by calling ``bm25()`` on every row that matches and sorting them all: a word
in half of 100,000 notes costs 40 ms or more however few results are asked for. For a query of
one word, FTS5's score of a note is (fts5_aux.c)

    -idf * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))

where ``f`` is the word's weighted count in the note (each occurrence adds its column's
weight), ``D`` the note's number of tokens, and ``idf`` and ``avgdl`` are the same for every
note of the query. The score improves with ``f`` and worsens with ``D``: among the notes that
share one ``f``, ordering by (``D``, rowid) is ordering by (score, rowid). So the first k of
every ``f`` group hold the best k of all, and a group can be left at its first note that
scores worse than the k-th best found so far.

:class:`Postings` are a word's notes grouped by ``f`` and sorted by (``D``, rowid), read from
FTS5 itself (the ``fts5vocab`` instance table and the ``docsize`` shadow table), so they are
FTS5's own counts. Scores are computed with the same operations in the same order as
fts5_aux.c, in IEEE doubles: bit for bit FTS5's, which tests check against ``bm25()`` on every
note of generated vaults. Totals come from FTS5's ``averages`` record of the same snapshot.

Postings are read on a background thread the second time a frequent word is searched (a
one-off search, such as the CLI's, never pays for them), for the index generation that
thread's snapshot saw. A search uses them only when its own snapshot is at that generation
and FTS5 counts as many matches as they hold; otherwise FTS5 ranks as it always did. Either
way the results, scores, order and total are the same.
"""

from __future__ import annotations

import heapq
import logging
import math
import sqlite3
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from engram_ls.core.index import db

log = logging.getLogger(__name__)

K1 = 1.2
B = 0.75
"""FTS5's bm25 constants (fts5_aux.c)."""
MIN_MATCHES = 5000
"""Words matching fewer notes are ranked by FTS5 (cheap enough: a few ms at most)."""
HOT_WORDS = 4
"""Words whose postings are kept (the most recently used); about 3 MB for a word in 50,000
notes."""
ASKED_MAX = 1000
"""Words searched once that are remembered (for their second search)."""
COLUMNS = ("title", "summary", "topics", "body")
"""The full-text table's columns, in order (``schema.DDL``)."""

Opener = Callable[[], sqlite3.Connection]


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


def totals(conn: sqlite3.Connection) -> tuple[int, int] | None:
    """(rows, tokens in all columns) of the full-text table, from its ``averages`` record:
    what bm25 reads through ``xRowCount`` and ``xColumnTotalSize(-1)``."""
    row = conn.execute("SELECT block FROM notes_fts_data WHERE id = 1").fetchone()
    if row is None or not row[0]:
        return None
    values = varints(bytes(row[0]))
    return values[0], sum(values[1:])


def generation(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


@dataclass(frozen=True, slots=True)
class Group:
    f: float
    ids: array[int]
    """Rowids sorted by (``D``, rowid)."""
    sizes: array[int]
    """``D`` of each rowid."""


@dataclass(frozen=True, slots=True)
class Postings:
    word: str
    weights: tuple[float, ...]
    generation: int
    groups: tuple[Group, ...]
    """By ``f``, highest first."""
    ids: frozenset[int]

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


def read_postings(conn: sqlite3.Connection, word: str, weights: Sequence[float]) -> Postings:
    """A word's postings, read in the caller's read snapshot (``vocabulary`` first)."""
    if any(w != int(w) or w <= 0 for w in weights):
        raise ValueError("weights must be positive whole numbers (sums stay exact)")
    gen = generation(conn)
    weight = dict(zip(COLUMNS, (float(w) for w in weights), strict=True))
    freq: dict[int, float] = {}
    for doc, col, n in conn.execute(
        "SELECT doc, col, count(*) FROM temp.engram_instances WHERE term = ? GROUP BY doc, col",
        (word,),
    ):
        freq[int(doc)] = freq.get(int(doc), 0.0) + weight[str(col)] * int(n)
    by_f: dict[float, list[tuple[int, int]]] = {}
    for rowid, blob in conn.execute("SELECT id, sz FROM notes_fts_docsize"):
        f = freq.get(int(rowid))
        if f is not None:
            by_f.setdefault(f, []).append((sum(varints(bytes(blob))), int(rowid)))
    groups = []
    for f in sorted(by_f, reverse=True):
        entries = sorted(by_f[f])
        groups.append(
            Group(f, array("q", (i for _, i in entries)), array("q", (d for d, _ in entries)))
        )
    return Postings(word, tuple(weights), gen, tuple(groups), frozenset(freq))


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


Key = tuple[str, tuple[float, ...]]
"""(word, column weights)."""


class ImpactCache:
    """The postings of a few frequent words, for one index file; safe to share by threads."""

    def __init__(self, opener: Opener) -> None:
        self._opener = opener
        self._lock = threading.Lock()
        self._kept: OrderedDict[Key, Postings] = OrderedDict()
        self._asked: set[Key] = set()
        self._reading: threading.Thread | None = None
        self._stop = threading.Event()

    def current(
        self, conn: sqlite3.Connection, word: str, weights: Sequence[float], matches: int
    ) -> Postings | None:
        """The word's postings if they are those of ``conn``'s snapshot; otherwise None, and
        from the word's second search on, postings are read in the background."""
        key = (word, tuple(weights))
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
        if found is not None and found.generation == generation(conn):
            # Read in this snapshot's state: usable unless FTS5 counts the word otherwise
            # (a word FTS5 tokenizes differently), which reading again would not change.
            return found if found.count == matches else None
        self._want(key)
        return None

    def words(self) -> list[str]:
        """The words whose postings are kept, least recently used first."""
        with self._lock:
            return [word for word, _ in self._kept]

    def read(self, word: str, weights: Sequence[float]) -> Postings | None:
        """Read a word's postings now, on a connection of its own, and keep them; None when
        the index cannot be read or the cache was cleared meanwhile."""
        stop = self._stop
        try:
            conn = self._opener()
        except (OSError, sqlite3.Error) as exc:
            log.info("cannot read the postings of %r: %s", word, exc)
            return None
        try:
            vocabulary(conn)
            with db.interruptible(conn, stop, None), db.read_tx(conn):
                postings = read_postings(conn, word, weights)
        except (sqlite3.Error, db.Interrupted) as exc:
            log.info("cannot read the postings of %r: %s", word, exc)
            return None
        finally:
            conn.close()
        key = (word, tuple(weights))
        with self._lock:
            if stop.is_set():
                return None
            self._kept[key] = postings
            self._kept.move_to_end(key)
            while len(self._kept) > HOT_WORDS:
                self._kept.popitem(last=False)
        return postings

    def clear(self) -> None:
        """Forget every word and stop a reading under way (the index file is being closed
        or replaced): nothing of the cache runs once this returns."""
        with self._lock:
            self._stop.set()
            self._stop = threading.Event()
            self._kept.clear()
            self._asked.clear()
            reading, self._reading = self._reading, None
        if reading is not None and reading is not threading.current_thread():
            reading.join()

    def _want(self, key: Key) -> None:
        with self._lock:
            if key not in self._asked:
                if len(self._asked) >= ASKED_MAX:
                    self._asked.clear()
                self._asked.add(key)  # the first search: a one-off search reads nothing
                return
            if self._reading is not None and self._reading.is_alive():
                return
            thread = threading.Thread(
                target=self.read, args=key, name="engram-postings", daemon=True
            )
            self._reading = thread
            thread.start()  # under the lock: a clear() now waits for it

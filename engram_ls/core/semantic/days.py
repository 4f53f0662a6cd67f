"""Every note's date in memory, for one state of the index: date filters of a search by meaning.

A date filter passes thousands of notes (a year of a 100,000-note vault: 12,000). Listing their
ids in SQL for each search takes a few milliseconds; their chunks are then masked in the
in-memory table (``core/semantic/vectors.py``). ``NoteDays`` keeps, for one index generation, the
rank of each note's ``created_at`` among the vault's distinct dates, in an array indexed by note
id, so that a date range becomes two comparisons over that array. Ranks follow the order of the
date strings themselves (Python compares code points, SQLite's ``BINARY`` compares UTF-8 bytes:
the same order), so the mask passes exactly the notes that ``created_at >= lo AND created_at <=
hi`` passes. It is a ``SnapshotCache`` value: used only in the index state it was read in, read
by the servers after each embedding pass (``SemanticSearcher.prepare``), else in the background
from the second search that could use it.
"""

from __future__ import annotations

import bisect
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engram_ls.core.index.snapshot_cache import SnapshotCache, Source, generation
from engram_ls.core.memory import give_back

if TYPE_CHECKING:
    import numpy.typing as npt


@dataclass(frozen=True, slots=True)
class NoteDays:
    generation: int
    days: tuple[str, ...]
    """The distinct dates of the notes, in order."""
    rank: npt.NDArray[np.int32]
    """By note id: 1 + the index of the note's date in ``days``; 0 for a note without one."""
    usable: bool = True

    def within(self, lo: str, hi: str) -> npt.NDArray[np.bool_]:
        """By note id: whether the note's date is within ``lo``..``hi`` (both included)."""
        first = bisect.bisect_left(self.days, lo) + 1
        last = bisect.bisect_right(self.days, hi)
        passing: npt.NDArray[np.bool_] = (self.rank >= first) & (self.rank <= last)
        return passing


def read_days(conn: sqlite3.Connection, _key: int) -> NoteDays:
    """Every dated note's date, read in the caller's read snapshot (from ``notes_by_date``):
    the distinct dates, then each note's rank among them as two strings of numbers (no
    Python object per note: the garbage of 100,000 would stay in the process). The ranks
    are numbered over the few thousand distinct dates and joined to the notes by the index
    (a rank computed over every note, ``dense_rank()``, took 2-3 times as long at 100,000);
    both strings come from one pass over the same rows, so they stay in step."""
    days = tuple(
        str(r[0])
        for r in conn.execute(
            "SELECT DISTINCT created_at FROM notes WHERE created_at IS NOT NULL ORDER BY 1"
        )
    )
    ids, ranks = conn.execute(
        "WITH d(created_at, r) AS MATERIALIZED (SELECT created_at, row_number() OVER"
        " (ORDER BY created_at) FROM (SELECT DISTINCT created_at FROM notes"
        " WHERE created_at IS NOT NULL))"
        " SELECT group_concat(n.id), group_concat(d.r) FROM d"
        " JOIN notes n ON n.created_at = d.created_at"
    ).fetchone()
    if not ids:
        return NoteDays(generation(conn), (), np.zeros(1, dtype=np.int32))
    note_ids = np.fromstring(str(ids), dtype=np.int64, sep=",")
    rank = np.zeros(int(note_ids.max()) + 1, dtype=np.int32)
    rank[note_ids] = np.fromstring(str(ranks), dtype=np.int32, sep=",")
    del ids, ranks, note_ids
    give_back()  # the strings read (2 MB at 100,000 notes)
    return NoteDays(generation(conn), days, rank)


def days_cache(source: Source) -> SnapshotCache[int, NoteDays]:
    return SnapshotCache("engram-days", source, read_days, 1)


__all__ = ["NoteDays", "days_cache", "read_days"]

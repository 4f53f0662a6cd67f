"""The notes of a large topic as a set in memory, for one state of the index.

Counting the notes that have two large topics (``tags_mode: all``), or ranking a frequent word
among a large topic's notes, reads every ``note_topics`` row of the topics on each search:
tens of thousands of rows at 100,000 notes. A topic in ``MIN_NOTES`` notes or more keeps its
note ids as a frozen set (``SnapshotCache``: used only in the index state it was read in), so
that such filters become set operations.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engram_ls.core.index.snapshot_cache import SnapshotCache, Source, generation

MIN_NOTES = 5000
"""Topics with fewer notes are read from ``note_topics`` by each search (a few ms at most)."""
HOT_TOPICS = 4
"""Topics kept (the most recently used): 2.7 MB for one of 23,400 notes at 100,000."""


@dataclass(frozen=True, slots=True)
class TopicNotes:
    topic_id: int
    generation: int
    ids: frozenset[int]
    usable: bool = True


def read_topic(conn: sqlite3.Connection, topic_id: int) -> TopicNotes:
    """A topic's note ids, read in the caller's read snapshot."""
    ids = frozenset(
        int(r[0])
        for r in conn.execute("SELECT note_id FROM note_topics WHERE topic_id = ?", (topic_id,))
    )
    return TopicNotes(topic_id, generation(conn), ids)


def topic_cache(source: Source) -> SnapshotCache[int, TopicNotes]:
    return SnapshotCache("engram-topics", source, read_topic, HOT_TOPICS)


def canonical_names(conn: sqlite3.Connection, keys: list[str]) -> dict[str, str]:
    """The canonical name of each of the topics ``keys`` that the index has."""
    out: dict[str, str] = {}
    for i in range(0, len(keys), 500):
        part = keys[i : i + 500]
        marks = ",".join("?" * len(part))
        for k, name in conn.execute(f"SELECT key, name FROM topics WHERE key IN ({marks})", part):
            out[str(k)] = str(name)
    return out

"""The semantic tables of the index (``chunks``, ``vectors``, ``embedded``; schema.py): what is
pending, what is known, one note's chunks written, vectors read back for re-ranking.

No numpy here: vectors cross as bytes (float16 for ``vectors.vec``, 32 bytes of sign bits for
``chunks.code``), so the base installation can delete and count chunks without the extra.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

MODEL_KEY = "semantic_model"
"""meta key: the key of the model the chunks were made with."""
GENERATION_KEY = "semantic_generation"
"""meta key: increases with every committed change of the chunks by the embedder."""
_IN_MAX = 500


@dataclass(frozen=True, slots=True)
class NoteChunks:
    """One note's chunks as they will be stored."""

    note_id: int
    path: str
    hash: bytes
    """The content hash of the bytes the chunks were made from (``notes.hash`` when current)."""
    chunks: Sequence[tuple[int, bytes, bytes, str]]
    """(line, key, code, snippet) in file order."""


def _batches(items: Sequence[bytes]) -> Iterator[Sequence[bytes]]:
    for i in range(0, len(items), _IN_MAX):
        yield items[i : i + _IN_MAX]


def model_key(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (MODEL_KEY,)).fetchone()
    return None if row is None else str(row[0])


def generation(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (GENERATION_KEY,)).fetchone()
    return int(row[0]) if row is not None else 0


def use_model(conn: sqlite3.Connection, key: str) -> bool:
    """Make ``key`` the model of the chunks (inside a write transaction): chunks of another
    model are deleted (their vectors stay until ``collect``). True when the model changed."""
    if model_key(conn) == key:
        return False
    conn.execute("DELETE FROM chunks")
    conn.execute("DELETE FROM embedded")
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (MODEL_KEY, key))
    bump(conn)
    return True


def bump(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, 1)"
        " ON CONFLICT (key) DO UPDATE SET value = value + 1",
        (GENERATION_KEY,),
    )


def counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """(notes, notes whose chunks are current, chunks)."""
    notes = int(conn.execute("SELECT count(*) FROM notes").fetchone()[0])
    done = int(
        conn.execute(
            "SELECT count(*) FROM embedded e JOIN notes n ON n.id = e.note_id WHERE e.hash = n.hash"
        ).fetchone()[0]
    )
    chunks = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
    return notes, done, chunks


def pending(conn: sqlite3.Connection, after: int, limit: int) -> list[tuple[int, str]]:
    """(id, path) of the next notes after id ``after`` whose chunks are missing or are of other
    content, in id order."""
    return [
        (int(i), str(p))
        for i, p in conn.execute(
            "SELECT n.id, n.path FROM notes n LEFT JOIN embedded e ON e.note_id = n.id"
            " WHERE n.id > ? AND (e.hash IS NULL OR e.hash != n.hash) ORDER BY n.id LIMIT ?",
            (after, limit),
        )
    ]


def known_vectors(conn: sqlite3.Connection, keys: Sequence[bytes]) -> dict[bytes, bytes]:
    """The stored vectors (float16 bytes) of those of ``keys`` that have one."""
    out: dict[bytes, bytes] = {}
    for part in _batches(list(dict.fromkeys(keys))):
        marks = ",".join("?" * len(part))
        out.update(
            (bytes(k), bytes(v))
            for k, v in conn.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", part)
        )
    return out


def write(
    conn: sqlite3.Connection, notes: Iterable[NoteChunks], vectors: dict[bytes, bytes]
) -> int:
    """Store new ``vectors`` and replace each note's chunks (inside a write transaction); a
    note whose row is gone or now names another file is left out. Returns the notes written."""
    conn.executemany(
        "INSERT OR IGNORE INTO vectors (key, vec) VALUES (?, ?)", list(vectors.items())
    )
    written = 0
    for n in notes:
        row = conn.execute("SELECT path FROM notes WHERE id = ?", (n.note_id,)).fetchone()
        if row is None or row[0] != n.path:
            continue
        conn.execute("DELETE FROM chunks WHERE note_id = ?", (n.note_id,))
        conn.executemany(
            "INSERT INTO chunks (note_id, line, key, code, snippet) VALUES (?, ?, ?, ?, ?)",
            [(n.note_id, *c) for c in n.chunks],
        )
        conn.execute(
            "INSERT OR REPLACE INTO embedded (note_id, hash) VALUES (?, ?)", (n.note_id, n.hash)
        )
        written += 1
    bump(conn)
    return written


def collect(conn: sqlite3.Connection) -> int:
    """Delete the vectors no chunk uses (inside a write transaction); how many."""
    cur = conn.execute(
        "DELETE FROM vectors WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.key = vectors.key)"
    )
    return max(cur.rowcount, 0)


def codes_after(conn: sqlite3.Connection, after: int) -> list[tuple[int, int, bytes]]:
    """(chunk id, note id, code) of the chunks with ids above ``after``, in id order."""
    return [
        (int(i), int(n), bytes(c))
        for i, n, c in conn.execute(
            "SELECT id, note_id, code FROM chunks WHERE id > ? ORDER BY id", (after,)
        )
    ]


def chunk_vectors(
    conn: sqlite3.Connection, ids: Sequence[int]
) -> list[tuple[int, int, int, str, bytes]]:
    """(chunk id, note id, line, snippet, vector) of those chunks of ``ids`` that still exist."""
    out: list[tuple[int, int, int, str, bytes]] = []
    for i in range(0, len(ids), _IN_MAX):
        part = list(ids[i : i + _IN_MAX])
        marks = ",".join("?" * len(part))
        out.extend(
            (int(c), int(n), int(ln), str(s), bytes(v))
            for c, n, ln, s, v in conn.execute(
                "SELECT c.id, c.note_id, c.line, c.snippet, v.vec FROM chunks c"
                f" JOIN vectors v ON v.key = c.key WHERE c.id IN ({marks})",
                part,
            )
        )
    return out


def live_chunks(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


__all__ = [
    "GENERATION_KEY",
    "MODEL_KEY",
    "NoteChunks",
    "bump",
    "chunk_vectors",
    "codes_after",
    "collect",
    "counts",
    "generation",
    "known_vectors",
    "live_chunks",
    "model_key",
    "pending",
    "use_model",
    "write",
]

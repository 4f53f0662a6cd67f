"""The semantic tables of the index (``chunks``, ``chunk_vectors``, ``embedded``; schema.py):
what is pending, what is known, one note's chunks written, vectors read back for re-ranking.

A chunk that no longer stands for its note (the note was deleted, re-embedded or rebuilt) is
an orphan, ``note_id`` 0: never searched, but its vector can be taken by a chunk of the same
key until ``collect`` deletes the orphans at the end of an embedding pass.

No numpy here: vectors cross as bytes (float16 for ``chunk_vectors.vec``; for ``chunks.code``,
32 bytes of sign bits and 32 of magnitude bits, ``bits.chunk_codes``), so the base
installation can orphan and count chunks without the extra. An index written before the
magnitude bits has codes of 32 bytes: ``short_codes`` and ``set_codes`` lengthen them from the
stored vectors (an embedding pass does, once), and ``CODES_KEY`` says when none is left.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from engram_ls.core.semantic.model import Vectors

T = TypeVar("T")

MODEL_KEY = "semantic_model"
"""meta key: the key of the model the chunks were made with."""
GENERATION_KEY = "semantic_generation"
"""meta key: increases with every committed change of the chunks by the embedder."""
DIMS_KEY = "semantic_dims"
"""meta key: the dimensions of that model's vectors."""
CODES_KEY = "semantic_codes"
"""meta key: ``LONG_CODE`` when every chunk's code holds its magnitude bits too."""
LONG_CODE = 64
_IN_MAX = 999
"""Values bound in one ``IN (...)`` (SQLite's default limit of variables is far higher)."""


@dataclass(frozen=True, slots=True)
class NoteChunks:
    """One note's chunks as they will be stored."""

    note_id: int
    path: str
    hash: bytes
    """The content hash of the bytes the chunks were made from (``notes.hash`` when current)."""
    chunks: Sequence[tuple[int, bytes, bytes, str]]
    """(line, key, code, snippet) in file order."""


def _batches(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), _IN_MAX):
        yield items[i : i + _IN_MAX]


def _meta(conn: sqlite3.Connection, key: str) -> Any:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def model_key(conn: sqlite3.Connection) -> str | None:
    value = _meta(conn, MODEL_KEY)
    return None if value is None else str(value)


def generation(conn: sqlite3.Connection) -> int:
    value = _meta(conn, GENERATION_KEY)
    return 0 if value is None else int(value)


def dims(conn: sqlite3.Connection) -> int | None:
    value = _meta(conn, DIMS_KEY)
    return None if value is None else int(value)


def state(conn: sqlite3.Connection) -> tuple[str | None, int]:
    """(model key, semantic generation) in one read: what the in-memory code table follows."""
    found = dict(
        conn.execute(
            "SELECT key, value FROM meta WHERE key IN (?, ?)", (MODEL_KEY, GENERATION_KEY)
        ).fetchall()
    )
    key = found.get(MODEL_KEY)
    return (None if key is None else str(key)), int(found.get(GENERATION_KEY) or 0)


def use_model(conn: sqlite3.Connection, key: str, dims: int) -> bool:
    """Make ``key`` the model of the chunks (inside a write transaction): chunks of another
    model are deleted. True when the model changed."""
    if model_key(conn) == key:
        return False
    conn.execute("DELETE FROM chunks")
    conn.execute("DELETE FROM chunk_vectors")
    conn.execute("DELETE FROM embedded")
    conn.executemany(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
        [(MODEL_KEY, key), (DIMS_KEY, dims), (CODES_KEY, LONG_CODE)],
    )
    bump(conn)
    return True


def codes_long(conn: sqlite3.Connection) -> bool:
    """Whether every chunk's code holds its magnitude bits (``LONG_CODE`` bytes)."""
    value = _meta(conn, CODES_KEY)
    return value is not None and int(value) >= LONG_CODE


def short_codes(conn: sqlite3.Connection, after: int, limit: int) -> list[tuple[int, bytes]]:
    """(chunk id, vector) of the first ``limit`` chunks above ``after`` whose code is short
    (written before the magnitude bits), in id order."""
    return [
        (int(i), bytes(v))
        for i, v in conn.execute(
            "SELECT c.id, v.vec FROM chunks c JOIN chunk_vectors v ON v.id = c.id"
            " WHERE c.id > ? AND length(c.code) < ? ORDER BY c.id LIMIT ?",
            (after, LONG_CODE, limit),
        )
    ]


def set_codes(conn: sqlite3.Connection, codes: Iterable[tuple[int, bytes]]) -> None:
    """Replace the codes of chunks (inside a write transaction): (chunk id, code)."""
    conn.executemany("UPDATE chunks SET code = ? WHERE id = ?", [(c, i) for i, c in codes])


def mark_codes_long(conn: sqlite3.Connection) -> None:
    """Record that no chunk's code is short any more (inside a write transaction): once
    ``short_codes`` has none left (chunks are written long from then on)."""
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (CODES_KEY, LONG_CODE))


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
    return notes, done, live_chunks_after(conn, 0)


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
    """The stored vectors (float16 bytes) of those of ``keys`` that a chunk (orphans too) has."""
    out: dict[bytes, bytes] = {}
    for part in _batches(list(dict.fromkeys(keys))):
        marks = ",".join("?" * len(part))
        out.update(
            (bytes(k), bytes(v))
            for k, v in conn.execute(
                "SELECT c.key, v.vec FROM chunks c JOIN chunk_vectors v ON v.id = c.id"
                f" WHERE c.key IN ({marks})",
                part,
            )
        )
    return out


def write(
    conn: sqlite3.Connection, notes: Iterable[NoteChunks], vectors: dict[bytes, bytes]
) -> int:
    """Replace each note's chunks (inside a write transaction), their vectors taken from
    ``vectors`` by key; the old chunks become orphans. A note whose row is gone or now names
    another file is left out. Returns the notes written."""
    written = 0
    for n in notes:
        row = conn.execute("SELECT path FROM notes WHERE id = ?", (n.note_id,)).fetchone()
        if row is None or row[0] != n.path:
            continue
        conn.execute("UPDATE chunks SET note_id = 0 WHERE note_id = ?", (n.note_id,))
        for line, key, code, snippet in n.chunks:
            cur = conn.execute(
                "INSERT INTO chunks (note_id, line, key, code, snippet) VALUES (?, ?, ?, ?, ?)",
                (n.note_id, line, key, code, snippet),
            )
            conn.execute(
                "INSERT INTO chunk_vectors (id, vec) VALUES (?, ?)", (cur.lastrowid, vectors[key])
            )
        conn.execute(
            "INSERT OR REPLACE INTO embedded (note_id, hash) VALUES (?, ?)", (n.note_id, n.hash)
        )
        written += 1
    bump(conn)
    return written


def has_orphans(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM chunks WHERE note_id = 0 LIMIT 1").fetchone() is not None


def collect(conn: sqlite3.Connection) -> int:
    """Delete the orphan chunks and their vectors (inside a write transaction); how many."""
    conn.execute("DELETE FROM chunk_vectors WHERE id IN (SELECT id FROM chunks WHERE note_id = 0)")
    cur = conn.execute("DELETE FROM chunks WHERE note_id = 0")
    return max(cur.rowcount, 0)


def codes_after(
    conn: sqlite3.Connection, after: int, limit: int = -1
) -> list[tuple[int, int, bytes]]:
    """(chunk id, note id, code) of the (first ``limit``) chunks with ids above ``after``
    (orphans left out), in id order."""
    return [
        (int(i), int(n), bytes(c))
        for i, n, c in conn.execute(
            "SELECT id, note_id, code FROM chunks WHERE id > ? AND note_id > 0 ORDER BY id LIMIT ?",
            (after, limit),
        )
    ]


def vectors_in(conn: sqlite3.Connection, ids: Sequence[int]) -> tuple[list[int], Vectors]:
    """(chunk ids, their vectors as rows of a float32 matrix), by chunk id, for those of
    ``ids`` that still have a vector (read by rowid alone: the caller knows each chunk's note,
    and orphans' ids from ``orphan_ids``)."""
    from engram_ls.core.semantic.bits import from_blobs

    found: list[int] = []
    blobs: list[bytes] = []
    for part in _batches(sorted(ids)):
        marks = ",".join("?" * len(part))
        for i, vec in conn.execute(
            f"SELECT id, vec FROM chunk_vectors WHERE id IN ({marks})", part
        ):
            found.append(int(i))
            blobs.append(vec)
    return found, from_blobs(blobs)


def orphan_ids(conn: sqlite3.Connection) -> list[int]:
    """The chunks that no longer stand for a note (until ``collect`` deletes them)."""
    return [int(r[0]) for r in conn.execute("SELECT id FROM chunks WHERE note_id = 0")]


def chunk_places(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, tuple[int, str]]:
    """(line, snippet) of each of the chunks ``ids``."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {
        int(c): (int(ln), str(s))
        for c, ln, s in conn.execute(
            f"SELECT id, line, snippet FROM chunks WHERE id IN ({marks})", list(ids)
        )
    }


def note_chunk_ids(conn: sqlite3.Connection, note_id: int) -> list[int]:
    return [int(r[0]) for r in conn.execute("SELECT id FROM chunks WHERE note_id = ?", (note_id,))]


def live_chunks_after(conn: sqlite3.Connection, after: int) -> int:
    """Chunks with ids above ``after`` that stand for a note (orphans left out)."""
    return int(
        conn.execute(
            "SELECT count(*) FROM chunks WHERE id > ? AND note_id > 0", (after,)
        ).fetchone()[0]
    )


__all__ = [
    "GENERATION_KEY",
    "MODEL_KEY",
    "NoteChunks",
    "bump",
    "chunk_places",
    "codes_after",
    "codes_long",
    "collect",
    "counts",
    "dims",
    "generation",
    "has_orphans",
    "known_vectors",
    "live_chunks_after",
    "mark_codes_long",
    "model_key",
    "note_chunk_ids",
    "orphan_ids",
    "pending",
    "set_codes",
    "short_codes",
    "state",
    "use_model",
    "vectors_in",
    "write",
]

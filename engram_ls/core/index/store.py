"""The index file: opening (with rebuild on damage), status, and typed write batches.

A damaged file (garbage, truncation, not SQLite) or one of another schema version is moved
aside and a fresh, empty index is created; the vault is never touched. Readers get one
connection per thread; writers use short ``BEGIN IMMEDIATE`` transactions.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from engram_ls.core.errors import IndexUnavailable
from engram_ls.core.index import db
from engram_ls.core.index.schema import DDL, NO_DATE, SCHEMA_VERSION
from engram_ls.core.index.symbols import char_mask
from engram_ls.core.links import link_key, stem_key
from engram_ls.core.model import Note

log = logging.getLogger(__name__)
OPEN_CHECK_BYTES = 32 * 1024 * 1024
"""Index files up to this size get a full ``PRAGMA quick_check`` every time they are opened
(about 60 ms at this size: the check reads ~600 MB/s here, warm); larger ones would delay a
warm start by 0.6-0.8 s at 100k notes (482 MB; 2.5 s with a cold cache), past its 1.5 s
target, so the servers check them in the background after opening (``core/check.py``) and
``engram index`` checks before it reconciles."""

State = Literal["empty", "building", "ready", "stale", "failed"]
STATES: tuple[State, ...] = ("empty", "building", "ready", "stale", "failed")


@dataclass(frozen=True, slots=True)
class IndexStatus:
    state: State
    generation: int
    updated_at: str | None
    notes: int
    problems: int
    topics: int
    path: str
    fingerprint: str | None = None
    moved_aside: dict[str, Any] | None = None
    """The damaged copy kept after the index was last replaced: ``{path, reason, detail,
    at}`` (reason ``corrupt``, ``wal-lost`` or ``version``); None when there is none."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "generation": self.generation,
            "updated_at": self.updated_at,
            "notes": self.notes,
            "problems": self.problems,
            "topics": self.topics,
            "path": self.path,
            "moved_aside": self.moved_aside,
        }


@dataclass(frozen=True, slots=True)
class Fresh:
    id: int
    mtime_ns: int
    size: int
    hash: bytes


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def folder_range(folder: str) -> tuple[str, str]:
    """Bounds such that ``lo <= path < hi`` selects every path under ``folder/``."""
    return folder + "/", folder + "0"  # '0' is the character after '/'


class Index:
    """One index file. Safe to share between threads; each thread gets its own connection."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        """Use the file as it is (``engram status``, ``topics``, ``search --no-sync``): never
        create, replace or write it; a missing or unusable file is IndexUnavailable."""
        self._local = threading.local()
        self._epoch = 0
        self._lock = threading.Lock()
        self._inode: int | None = None
        self.rebuilt_reason: str | None = None
        """Why the last open replaced the file (``corrupt``, ``wal-lost``, ``version``)."""
        self._moved: dict[str, Any] | None = None
        """The copy moved aside by the last replacement, until the new file records it."""

    # -- opening ---------------------------------------------------------------------------

    def open(self) -> None:
        """Make the file usable: create it, or move a damaged/foreign one aside and recreate.

        Raises IndexUnavailable when no index can be created (read-only folder, full disk).
        """
        if self.read_only:
            self._open_existing()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise IndexUnavailable(
                f"cannot create the index folder {self.path.parent}: {exc.strerror or exc}"
            ) from exc
        for attempt in range(3):
            try:
                self._check_or_create()
                self._record_moved()
                return
            except _Damaged as exc:
                self.close()
                self._replace("corrupt", str(exc))
                continue
            except sqlite3.DatabaseError as exc:
                self.close()
                reason = db.damage(exc)
                if reason is not None and attempt < 2:
                    self._replace(reason, str(exc))
                    continue
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc).lower():
                    raise IndexUnavailable(
                        f"the index is locked by another process: {exc}"
                    ) from exc
                raise IndexUnavailable(f"cannot open the index {self.path}: {exc}") from exc
            except _VersionMismatch:
                self.close()
                self._replace("version")
                continue
            except OSError as exc:
                self.close()
                raise IndexUnavailable(f"cannot open the index {self.path}: {exc}") from exc

    def _open_existing(self) -> None:
        """The read-only open: check the file as ``open`` does, change nothing."""
        if not self.path.is_file():
            raise IndexUnavailable(
                f"there is no index at {self.path} yet", data={"path": str(self.path)}
            )
        try:
            conn = self.conn()
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == SCHEMA_VERSION:
                self._check_tables(conn)
        except (sqlite3.DatabaseError, OSError) as exc:
            self.close()
            raise IndexUnavailable(f"cannot read the index {self.path}: {exc}") from exc
        if version != SCHEMA_VERSION:
            self.close()
            raise IndexUnavailable(
                f"the index {self.path} has schema version {version}, not {SCHEMA_VERSION};"
                " `engram index` rebuilds it"
            )
        self._remember_inode()

    @staticmethod
    def _check_tables(conn: sqlite3.Connection) -> None:
        conn.execute("SELECT key, value FROM meta LIMIT 1").fetchall()
        conn.execute("SELECT id FROM notes LIMIT 1").fetchall()
        conn.execute("SELECT rowid FROM notes_fts LIMIT 1").fetchall()

    def _check_or_create(self) -> None:
        conn = self.conn()
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            self._check_tables(conn)
            if os.path.getsize(self.path) <= OPEN_CHECK_BYTES:
                found = db.quick_check(self.path)
                if found is not None:
                    raise _Damaged(found[1])
            self._remember_inode()
            return
        if version != 0:
            raise _VersionMismatch(version)
        with db.write_tx(conn):
            # Another process may have created it between our check and the lock.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
                if tables:
                    raise _VersionMismatch(0)
                for statement in _split_sql(DDL):
                    conn.execute(statement)
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("state", "empty"), ("generation", 0), ("notes", 0)],
                )
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            elif version != SCHEMA_VERSION:
                raise _VersionMismatch(version)
        self._remember_inode()

    def _remember_inode(self) -> None:
        with contextlib.suppress(OSError):
            self._inode = os.stat(self.path).st_ino

    def replaced_by_other(self) -> bool:
        """True when the file at our path is no longer the one we opened."""
        try:
            return os.stat(self.path).st_ino != self._inode
        except OSError:
            return True

    def _replace(self, reason: str, detail: str | None = None) -> None:
        """The one place an index file is replaced: moved aside (only the newest copy is
        kept; ``status`` names it), said at WARNING when it was damaged."""
        self.close()
        if self.read_only:
            raise IndexUnavailable(
                f"the index {self.path} is damaged ({reason}); `engram index` rebuilds it"
            )
        moved = db.move_aside(self.path, reason)
        log.log(
            logging.INFO if reason == "version" else logging.WARNING,
            "the index %s was replaced (%s: %s), the old file moved to %s; it is rebuilt from"
            " the notes, and searches read the files meanwhile",
            self.path,
            reason,
            detail or "another schema version",
            moved or "nowhere (deleted)",
        )
        self.rebuilt_reason = reason
        self._moved = {
            "path": str(moved) if moved is not None else None,
            "reason": reason,
            "detail": detail,
            "at": now_iso(),
        }

    def _record_moved(self) -> None:
        """Note in the new file what was moved aside (``status`` reports it)."""
        moved, self._moved = self._moved, None
        if moved is not None:
            with db.write_tx(self.conn()) as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('moved_aside', ?)",
                    (json.dumps(moved),),
                )

    def recover(self, reason: str = "corrupt", detail: str | None = None) -> None:
        """After damage was found (``db.damage`` gives the reason): reopen if someone already
        replaced the file, else move it aside and start a new one."""
        if not self.replaced_by_other():
            self._replace(reason, detail)
        else:
            self.close()
        self.open()

    def opened_file(self) -> int | None:
        """The inode of the file opened last (it changes with every replacement)."""
        return self._inode

    def quick_check(self) -> tuple[str, str] | None:
        """``db.quick_check`` of the file open now: (reason, detail) when it is damaged."""
        return db.quick_check(self.path)

    # -- connections -----------------------------------------------------------------------

    def conn(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use and after every ``close``."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "epoch", None) != self._epoch:
            with contextlib.suppress(sqlite3.Error):
                conn.close()  # ours, opened before the last close(): safe to close here
            conn = None
        if conn is None:
            conn = (db.connect_read_only if self.read_only else db.connect)(self.path)
            self._local.conn = conn
            self._local.epoch = self._epoch
        return conn

    def close(self) -> None:
        """Close this thread's connection; every other thread reopens on its next use.

        A connection is only ever closed by the thread that uses it: closing one that
        another thread is using can crash the process.
        """
        with self._lock:
            self._epoch += 1
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
            self._local.conn = None

    # -- reading ---------------------------------------------------------------------------

    def meta(self, conn: sqlite3.Connection | None = None) -> dict[str, Any]:
        conn = conn or self.conn()
        return {str(k): v for k, v in conn.execute("SELECT key, value FROM meta")}

    def status(self, conn: sqlite3.Connection | None = None) -> IndexStatus:
        meta = self.meta(conn)
        state = str(meta.get("state", "empty"))
        return IndexStatus(
            state=state if state in STATES else "failed",
            generation=int(meta.get("generation", 0) or 0),
            updated_at=meta.get("updated_at"),
            notes=int(meta.get("notes", 0) or 0),
            problems=int(meta.get("problems", 0) or 0),
            topics=int(meta.get("topics", 0) or 0),
            path=str(self.path),
            fingerprint=meta.get("fingerprint"),
            moved_aside=_moved_aside(meta.get("moved_aside")),
        )

    def stats(self, under: str = "") -> dict[str, tuple[int, int]]:
        """Stored (mtime_ns, size) of every note, or of those under a folder."""
        conn = self.conn()
        if under:
            lo, hi = folder_range(under)
            rows = conn.execute(
                "SELECT path, mtime_ns, size FROM notes WHERE path >= ? AND path < ?", (lo, hi)
            )
        else:
            rows = conn.execute("SELECT path, mtime_ns, size FROM notes")
        return {path: (m, s) for path, m, s in rows}

    def stats_sorted(self) -> Iterator[tuple[str, int, int]]:
        """(path, mtime_ns, size) of every note in path order (``BINARY``: UTF-8 bytes, the
        same order as Python's ``str``), streamed from the path index: never all at once."""
        rows: Iterator[tuple[str, int, int]] = self.conn().execute(
            "SELECT path, mtime_ns, size FROM notes ORDER BY path"
        )
        return rows

    def hashes(self, paths: list[str]) -> dict[str, bytes]:
        """Stored content hashes of these paths (those that have a row)."""
        return {path: fresh.hash for path, fresh in self.fresh_many(paths).items()}

    def fresh_many(self, paths: list[str]) -> dict[str, Fresh]:
        """Id, stat and content hash of these paths (those that have a row), a few queries
        in all."""
        out: dict[str, Fresh] = {}
        conn = self.conn()
        for i in range(0, len(paths), 500):
            part = paths[i : i + 500]
            marks = ",".join("?" * len(part))
            for path, *row in conn.execute(
                f"SELECT path, id, mtime_ns, size, hash FROM notes WHERE path IN ({marks})", part
            ):
                out[path] = Fresh(*row)
        return out

    def sample_folder(self, folder: str, limit: int) -> list[str]:
        """Up to ``limit`` paths of notes under ``folder/`` (any, in path order)."""
        lo, hi = folder_range(folder)
        rows = self.conn().execute(
            "SELECT path FROM notes WHERE path >= ? AND path < ? ORDER BY path LIMIT ?",
            (lo, hi, limit),
        )
        return [str(r[0]) for r in rows]

    def topics(
        self, key_prefix: str, limit: int, conn: sqlite3.Connection | None = None
    ) -> list[tuple[str, int]]:
        """(name, notes) of topics whose case-folded key starts with ``key_prefix``."""
        conn = conn or self.conn()
        if key_prefix:
            rows = conn.execute(
                "SELECT name, notes FROM topics WHERE key >= ? AND key < ?"
                " ORDER BY notes DESC, key LIMIT ?",
                (key_prefix, key_prefix + "\U0010ffff", limit),
            )
        else:
            rows = conn.execute(
                "SELECT name, notes FROM topics ORDER BY notes DESC, key LIMIT ?", (limit,)
            )
        return [(str(n), int(c)) for n, c in rows]

    def problems(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for path, raw in self.conn().execute(
            "SELECT path, problems FROM notes WHERE problems IS NOT NULL ORDER BY path"
        ):
            out.extend({"path": path, **p} for p in json.loads(raw))
        return out

    def has_folder(self, folder: str) -> bool:
        lo, hi = folder_range(folder)
        row = (
            self.conn()
            .execute("SELECT 1 FROM notes WHERE path >= ? AND path < ? LIMIT 1", (lo, hi))
            .fetchone()
        )
        return row is not None

    # -- writing ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def batch(self) -> Iterator[Batch]:
        """A write transaction; on exit topics are refreshed and the generation increases."""
        conn = self.conn()
        with db.write_tx(conn):
            b = Batch(conn)
            yield b
            b.finish()


class NoteRows(NamedTuple):
    """A parsed note as the rows the index stores, without the note id.

    Plain values only: cheap to send from a parse process to the writing process (a parsed
    ``Note`` of frozen dataclasses costs more to pickle than to parse).
    """

    path: str
    values: tuple[Any, ...]
    """mtime_ns, size, hash, title, created_at, created_ts, summary, topics JSON, body_line,
    problems JSON, title_key, stem_key: the ``notes`` columns in insert order."""
    topics: tuple[str, ...]
    day: str
    headings: tuple[tuple[int, int, str], ...]
    links: tuple[tuple[int, int, str, str, str | None, str | None, str], ...]
    aliases: tuple[tuple[str, str], ...]
    """(key, name) of each alias."""
    masks: tuple[int, ...]
    """``names.mask`` of the title, then of each heading (in ``headings`` order); 0 for a
    heading that is not a name of its own (it repeats the title, in any case: the note
    stands for it)."""
    fts: tuple[str, str, str, str]
    has_problems: bool


def note_rows(note: Note, mtime_ns: int, size: int, digest: bytes) -> NoteRows:
    problems_json = (
        json.dumps(
            [{"code": p.code, "message": p.message, "line": p.line} for p in note.problems],
            ensure_ascii=False,
        )
        if note.problems
        else None
    )
    values = (
        mtime_ns,
        size,
        digest,
        note.title,
        note.created_at,
        note.created_ts,
        note.summary,
        json.dumps(list(note.topics), ensure_ascii=False),
        note.body_line,
        problems_json,
        note.title.casefold(),  # title_key, also the folded name of names.mask
        stem_key(note.path),
    )
    return NoteRows(
        path=note.path,
        values=values,
        topics=note.topics,
        day=note.created_at or NO_DATE,
        headings=tuple((h.line, h.level, h.text) for h in note.headings),
        links=tuple(
            (link.line, seq, link.kind, link.target, link.anchor, link.label, link_key(link.target))
            for seq, link in enumerate(note.links)
        ),
        aliases=tuple((name.casefold(), name) for name in note.aliases),
        masks=(char_mask(values[10]), *(_heading_mask(h.text, values[10]) for h in note.headings)),
        fts=(note.title, note.summary or "", " ".join(note.topics), note.body),
        has_problems=bool(note.problems),
    )


def _heading_mask(text: str, title_key: str) -> int:
    folded = text.casefold()
    return 0 if folded == title_key else char_mask(folded)


@dataclass(slots=True)
class _ChildRows:
    topics: list[tuple[Any, ...]] = field(default_factory=list)
    headings: list[tuple[Any, ...]] = field(default_factory=list)
    links: list[tuple[Any, ...]] = field(default_factory=list)
    aliases: list[tuple[Any, ...]] = field(default_factory=list)
    names: list[tuple[Any, ...]] = field(default_factory=list)
    fts: list[tuple[Any, ...]] = field(default_factory=list)


class _VersionMismatch(Exception):
    pass


class _Damaged(Exception):
    """The quick check on open found damage (the message says what)."""


def _moved_aside(raw: Any) -> dict[str, Any] | None:
    """The recorded moved-aside copy, while it still exists (the user may delete it)."""
    if not isinstance(raw, str):
        return None
    try:
        moved = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(moved, dict) or not moved.get("path"):
        return None
    return moved if os.path.exists(moved["path"]) else None


def _split_sql(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


class Batch:
    """Writes inside one transaction. Never commits itself; ``Index.batch`` does."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._topic_ids: dict[str, int] = {}
        self._touched_topics: set[int] = set()
        self._refresh_all_topics = False
        self.changed = 0
        self.notes_delta = 0
        self.problems_delta = 0
        self._recount = False
        self._state: State | None = None
        self._meta: dict[str, Any] = {}

    # notes ------------------------------------------------------------------------------

    def upsert(self, rows: NoteRows) -> int:
        """Insert or replace a note's rows (keeps its id when the path already exists)."""
        c = self.conn
        row = c.execute(
            "SELECT id, problems IS NOT NULL FROM notes WHERE path = ?", (rows.path,)
        ).fetchone()
        if row is None:
            note_id = int(
                c.execute(
                    "INSERT INTO notes (mtime_ns, size, hash, title, created_at, created_ts,"
                    " summary, topics, body_line, problems, title_key, stem_key, path)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*rows.values, rows.path),
                ).lastrowid
                or 0
            )
            self.notes_delta += 1
        else:
            note_id = int(row[0])
            self.problems_delta -= int(row[1])
            self._clear_children(note_id)  # while the row holds the old date (names)
            c.execute(
                "UPDATE notes SET mtime_ns = ?, size = ?, hash = ?, title = ?, created_at = ?,"
                " created_ts = ?, summary = ?, topics = ?, body_line = ?, problems = ?,"
                " title_key = ?, stem_key = ? WHERE id = ?",
                (*rows.values, note_id),
            )
        children = _ChildRows()
        self._child_rows(note_id, rows, children)
        self._write_children(children)
        self.problems_delta += rows.has_problems
        self.changed += 1
        return note_id

    def insert_new(self, items: list[NoteRows]) -> None:
        """Insert notes whose paths are not in the index yet, with one statement per table.

        The bulk path of a build. If a path turns out to exist (another process added it
        meanwhile), falls back to ``upsert`` for the whole list.
        """
        if not items:
            return
        c = self.conn
        c.execute("SAVEPOINT insert_new")
        try:
            first = int(c.execute("SELECT coalesce(max(id), 0) + 1 FROM notes").fetchone()[0])
            c.executemany(
                "INSERT INTO notes (id, mtime_ns, size, hash, title, created_at, created_ts,"
                " summary, topics, body_line, problems, title_key, stem_key, path)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(first + i, *rows.values, rows.path) for i, rows in enumerate(items)],
            )
        except sqlite3.IntegrityError:
            c.execute("ROLLBACK TO insert_new")
            c.execute("RELEASE insert_new")
            for rows in items:
                self.upsert(rows)
            return
        c.execute("RELEASE insert_new")
        children = _ChildRows()
        for i, rows in enumerate(items):
            self._child_rows(first + i, rows, children)
            self.problems_delta += rows.has_problems
        self._write_children(children)
        self.notes_delta += len(items)
        self.changed += len(items)

    def _child_rows(self, note_id: int, rows: NoteRows, out: _ChildRows) -> None:
        seen: set[int] = set()
        for spelling in rows.topics:
            tid = self._topic_id(spelling)
            if tid in seen:
                continue
            seen.add(tid)
            out.topics.append((tid, rows.day, note_id, spelling))
        self._touched_topics.update(seen)
        out.headings.extend((note_id, *h) for h in rows.headings)
        out.links.extend((note_id, *link) for link in rows.links)
        out.aliases.extend((key, note_id, name) for key, name in rows.aliases)
        title_mask, *masks = rows.masks
        out.names.append((rows.day, note_id, 0, title_mask, rows.values[3]))  # values[3]: title
        lines: set[int] = set()
        for (line, _level, text), mask in zip(rows.headings, masks, strict=True):
            if line not in lines:  # the first heading of a line, as in ``headings``
                lines.add(line)
                if mask:
                    out.names.append((rows.day, note_id, line, mask, text))
        out.fts.append((note_id, *rows.fts))

    def _write_children(self, rows: _ChildRows) -> None:
        c = self.conn
        if rows.topics:
            c.executemany(
                "INSERT INTO note_topics (topic_id, created_at, note_id, spelling)"
                " VALUES (?, ?, ?, ?)",
                rows.topics,
            )
        if rows.headings:
            c.executemany(
                "INSERT OR IGNORE INTO headings (note_id, line, level, text) VALUES (?, ?, ?, ?)",
                rows.headings,
            )
        if rows.links:
            c.executemany(
                "INSERT INTO links (note_id, line, seq, kind, target, anchor, label, key)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows.links,
            )
        if rows.aliases:
            c.executemany(
                "INSERT OR IGNORE INTO aliases (key, note_id, name) VALUES (?, ?, ?)",
                rows.aliases,
            )
        if rows.names:
            rows.names.sort()  # in key order: fewer pages touched in a large batch
            c.executemany(
                "INSERT OR IGNORE INTO names (day, note_id, line, mask, name)"
                " VALUES (?, ?, ?, ?, ?)",
                rows.names,
            )
        if rows.fts:
            c.executemany(
                "INSERT INTO notes_fts (rowid, title, summary, topics, body)"
                " VALUES (?, ?, ?, ?, ?)",
                rows.fts,
            )

    def _clear_children(self, note_id: int) -> None:
        """Delete a note's child rows; before its ``notes`` row changes (``names`` is found
        by the note's date)."""
        c = self.conn
        c.execute(
            "DELETE FROM names WHERE day = (SELECT coalesce(created_at, ?) FROM notes"
            " WHERE id = ?) AND note_id = ?",
            (NO_DATE, note_id, note_id),
        )
        for (tid,) in c.execute(
            "SELECT topic_id FROM note_topics WHERE note_id = ?", (note_id,)
        ).fetchall():
            self._touched_topics.add(int(tid))
        c.execute("DELETE FROM note_topics WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM headings WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM links WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM aliases WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM notes_fts WHERE rowid = ?", (note_id,))

    def clear(self) -> None:
        """Remove every note (a full rebuild that other processes can watch happen)."""
        c = self.conn
        for table in (
            "note_topics",
            "headings",
            "names",
            "links",
            "aliases",
            "notes_fts",
            "notes",
            "topics",
        ):
            c.execute(f"DELETE FROM {table}")
        self._topic_ids.clear()
        self._touched_topics.clear()
        self._recount = True
        self.changed += 1

    def touch(self, path: str, mtime_ns: int, size: int) -> None:
        """Same content, new mtime/size (e.g. ``touch`` or a checkout): no re-parse."""
        self.conn.execute(
            "UPDATE notes SET mtime_ns = ?, size = ? WHERE path = ?", (mtime_ns, size, path)
        )

    def delete(self, path: str) -> bool:
        row = self.conn.execute("SELECT id FROM notes WHERE path = ?", (path,)).fetchone()
        if row is None:
            return False
        self._delete_ids([int(row[0])])
        return True

    def delete_folder(self, folder: str) -> int:
        lo, hi = folder_range(folder)
        ids = [
            int(r[0])
            for r in self.conn.execute(
                "SELECT id FROM notes WHERE path >= ? AND path < ?", (lo, hi)
            ).fetchall()
        ]
        self._delete_ids(ids)
        return len(ids)

    def delete_paths(self, paths: Iterable[str]) -> int:
        n = 0
        for path in paths:
            n += self.delete(path)
        return n

    def _delete_ids(self, ids: list[int]) -> None:
        for note_id in ids:
            self._clear_children(note_id)
            row = self.conn.execute(
                "DELETE FROM notes WHERE id = ? RETURNING problems IS NOT NULL", (note_id,)
            ).fetchone()
            if row is not None:
                self.notes_delta -= 1
                self.problems_delta -= int(row[0])
        self.changed += len(ids)

    def move(self, old: str, new: str) -> bool:
        """Rename one note's row (the caller decides whether to re-parse)."""
        c = self.conn
        if old == new:
            return c.execute("SELECT 1 FROM notes WHERE path = ?", (old,)).fetchone() is not None
        self.delete(new)
        cur = c.execute("UPDATE notes SET path = ? WHERE path = ?", (new, old))
        self.changed += cur.rowcount
        return cur.rowcount > 0

    def move_folder(self, old: str, new: str) -> list[str]:
        """Rename every row under ``old/`` to ``new/`` without re-parsing; returns new paths."""
        c = self.conn
        lo, hi = folder_range(old)
        nlo, nhi = folder_range(new)
        # Rows already under the destination are replaced by the moved ones.
        moved_names = [
            r[0]
            for r in c.execute(
                "SELECT path FROM notes WHERE path >= ? AND path < ?", (lo, hi)
            ).fetchall()
        ]
        new_paths = [new + "/" + p[len(old) + 1 :] for p in moved_names]
        existing = {
            r[0]
            for r in c.execute(
                "SELECT path FROM notes WHERE path >= ? AND path < ?", (nlo, nhi)
            ).fetchall()
        }
        self.delete_paths(p for p in new_paths if p in existing)
        c.execute(
            "UPDATE notes SET path = ? || substr(path, ?) WHERE path >= ? AND path < ?",
            (new + "/", len(old) + 2, lo, hi),
        )
        self.changed += len(new_paths)
        return new_paths

    # topics -----------------------------------------------------------------------------

    def _topic_id(self, spelling: str) -> int:
        key = spelling.casefold()
        tid = self._topic_ids.get(key)
        if tid is not None:
            return tid
        row = self.conn.execute("SELECT id FROM topics WHERE key = ?", (key,)).fetchone()
        if row is None:
            cur = self.conn.execute(
                "INSERT INTO topics (key, name, notes) VALUES (?, ?, 0)", (key, spelling)
            )
            tid = int(cur.lastrowid or 0)
        else:
            tid = int(row[0])
        self._topic_ids[key] = tid
        return tid

    def refresh_all_topics(self) -> None:
        """Recompute every topic's count and spelling, and the status counters, exactly."""
        self._refresh_all_topics = True
        self._recount = True

    def _refresh_topics(self) -> None:
        c = self.conn
        if self._refresh_all_topics:
            where, params = "", ()
        elif self._touched_topics:
            if self._building():
                # Counted once, exactly, by the transaction that ends the build (it refreshes
                # every topic); recounting here would read every row of a growing table at
                # each commit of a cold build, and nothing serves topics while it builds.
                return
            c.execute("CREATE TEMP TABLE IF NOT EXISTS touched (id INTEGER PRIMARY KEY)")
            c.execute("DELETE FROM temp.touched")
            c.executemany(
                "INSERT INTO temp.touched (id) VALUES (?)", [(t,) for t in self._touched_topics]
            )
            where, params = " WHERE id IN (SELECT id FROM temp.touched)", ()
        else:
            return
        c.execute(
            "UPDATE topics SET"
            " notes = (SELECT count(*) FROM note_topics nt WHERE nt.topic_id = topics.id),"
            " name = coalesce((SELECT spelling FROM note_topics nt WHERE nt.topic_id = topics.id"
            "   GROUP BY spelling ORDER BY count(*) DESC, spelling LIMIT 1), name)" + where,
            params,
        )
        c.execute("DELETE FROM topics WHERE notes = 0")

    def _building(self) -> bool:
        """Whether the index stays in the ``building`` state after this transaction."""
        if self._state is not None:
            return self._state == "building"
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'state'").fetchone()
        return row is not None and row[0] == "building"

    # meta -------------------------------------------------------------------------------

    def set_state(self, state: State) -> None:
        self._state = state

    def set_meta(self, key: str, value: Any) -> None:
        self._meta[key] = value

    def finish(self) -> None:
        c = self.conn
        self._refresh_topics()
        meta = dict(self._meta)
        if self._state is not None:
            meta["state"] = self._state
        if self.changed or self._state is not None or self._meta or self._recount:
            if self._recount:
                notes = c.execute("SELECT count(*) FROM notes").fetchone()[0]
                problems = c.execute(
                    "SELECT count(*) FROM notes WHERE problems IS NOT NULL"
                ).fetchone()[0]
                meta.update(notes=notes, problems=problems)
            else:
                c.execute(
                    "UPDATE meta SET value = value + ? WHERE key = 'notes'", (self.notes_delta,)
                )
                c.execute(
                    "INSERT INTO meta (key, value) VALUES ('problems', ?) ON CONFLICT (key)"
                    " DO UPDATE SET value = value + excluded.value",
                    (self.problems_delta,),
                )
            topics = c.execute("SELECT count(*) FROM topics").fetchone()[0]
            meta.update(topics=topics, updated_at=now_iso())
            c.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
        if meta:
            c.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                list(meta.items()),
            )

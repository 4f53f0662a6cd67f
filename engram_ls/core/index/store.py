"""The index file: opening (with rebuild on damage), status and reads; the write batches are
``rows.py``.

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
from collections.abc import Callable, Hashable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from engram_ls.core.errors import IndexUnavailable
from engram_ls.core.git import SourceRevision
from engram_ls.core.index import db, impacts, topic_sets
from engram_ls.core.index.rows import (
    STATES,
    Batch,
    State,
    folder_range,
    now_iso,
)
from engram_ls.core.index.schema import DDL, SCHEMA_VERSION
from engram_ls.core.index.snapshot_cache import Memo
from engram_ls.core.serialize import NOT_JSON, OMIT_EMPTY

WHERE_SETS_MOST = 256
"""Conditions whose notes are kept for one state: a bitmap is a bit a note id (12.5 KB at
100,000 notes), so at most about 3 MB."""

T = TypeVar("T")
log = logging.getLogger(__name__)
OPEN_CHECK_BYTES = 32 * 1024 * 1024
"""Index files up to this size get a full ``PRAGMA quick_check`` every time they are opened
(about 60 ms at this size: the check reads ~600 MB/s here, warm); larger ones would delay a
warm start by 0.6-0.8 s at 100k notes (482 MB; 2.5 s with a cold cache), past its 1.5 s
target, so the servers check them in the background after opening (``core/check.py``) and
``engram index`` checks before it reconciles."""


@dataclass(frozen=True, slots=True)
class IndexStatus:
    state: State
    generation: int
    updated_at: str | None
    notes: int
    problems: int
    topics: int
    path: str
    fingerprint: str | None = field(default=None, metadata=NOT_JSON)
    moved_aside: dict[str, Any] | None = None
    """The damaged copy kept after the index was last replaced: ``{path, reason, detail,
    at}`` (reason ``corrupt``, ``wal-lost`` or ``version``); None when there is none."""
    source_revision: SourceRevision | None = None
    """The vault's git revision (``core/git.py``), filled in by the service's ``status``."""
    trigram_index: bool | None = None
    """Whether the index keeps the trigram index of note text (config ``trigram_index``, as
    of the last sync); None before a sync recorded it."""
    trigram_bytes: int | None = None
    """Bytes the trigram index took in the index file when the last full build ended (None
    when off or unknown)."""
    semantic: Any = field(default=None, metadata=OMIT_EMPTY)
    """Search by meaning (``core.semantic.engine.SemanticStatus``), filled in by the service."""
    capabilities: dict[str, Any] | None = field(default=None, metadata=OMIT_EMPTY)
    """``{semantic: bool, model, dims}``: what this installation can answer, by the service."""


@dataclass(frozen=True, slots=True)
class Fresh:
    id: int
    mtime_ns: int
    size: int
    hash: bytes


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
        self._inode: db.FileId | None = None
        self.rebuilt_reason: str | None = None
        """Why the last open replaced the file (``corrupt``, ``wal-lost``, ``version``)."""
        self._moved: dict[str, Any] | None = None
        """The copy moved aside by the last replacement, until the new file records it."""
        self._helper: ThreadPoolExecutor | None = None
        """The helper thread (``submit``), from its first use until ``close``."""
        self.postings = impacts.postings_cache(self)
        """Frequent words' and phrases' postings, for exact top-k ranking (``impacts``)."""
        self.topic_notes = topic_sets.topic_cache(self)
        """Large topics' notes as sets (``topic_sets``)."""
        self.topic_names: Memo[str, str] = Memo(self)
        """Topics' canonical names by key, as the pages of hits show them."""
        self.topic_tree: Memo[str, dict[str, tuple[str, int, int]]] = Memo(self)
        """Nested topics' parents with their counts (``_topic_tree``), for one state."""
        self.where_sets: Memo[Hashable, int] = Memo(self, WHERE_SETS_MOST)
        """The notes of ``where`` conditions as bitmaps by note id, for one state of the index
        (``core.search.where_bits``)."""

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
        _keep_out_of_git(self.path.parent)
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
        found = self.file_at_path()
        if found is not None:
            self._inode = found

    def replaced_by_other(self) -> bool:
        """True when the file at our path is no longer the one we opened."""
        now = self.file_at_path()
        return now is None or now != self._inode

    def file_at_path(self) -> db.FileId | None:
        """The file at the index's path now (None: there is none)."""
        return db.file_id(os.fspath(self.path))

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

    def opened_file(self) -> db.FileId | None:
        """The file opened last (it changes with every replacement)."""
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
            conn = self.reader()
            self._local.conn = conn
            self._local.epoch = self._epoch
            # The file and the -wal (if there is one yet) this connection opened: ``wal_lost``.
            self._local.file = self.file_at_path()
            self._local.wal = db.file_id(self._wal_path())
        return conn

    def _wal_path(self) -> str:
        return os.fspath(self.path) + "-wal"

    def wal_lost(self) -> bool:
        """True when the -wal this thread's connection writes to is no longer the one at the
        path (deleted, or deleted and made again by another connection): its writes would go
        where no other connection, and no later process, reads them. SQLite never deletes the
        -wal while a connection of it is open, so this is always damage (``wal-lost``). A
        read-only index is not checked: the writer's -wal goes when the writer closes."""
        if self.read_only or getattr(self._local, "epoch", None) != self._epoch:
            return False  # no connection in this thread yet (or one from before a close)
        if self._local.file != self._inode:
            return False  # opened on a file since replaced: ``replaced_by_other`` answers that
        opened: tuple[int, int] | None = getattr(self._local, "wal", None)
        now = db.file_id(self._wal_path())
        if opened is None:  # made by this connection's first write, or by another's
            self._local.wal = now
            return False
        return now != opened

    def reader(self) -> sqlite3.Connection:
        """A new connection of its own, for a thread that reads apart from the others."""
        return (db.connect_read_only if self.read_only else db.connect)(self.path)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``fn(*args)`` on the index's helper thread, with a connection of its own
        (``conn`` there): the second thread of a symbol scan. One thread, started on first
        use and ended by ``close``, which waits for the work submitted before it."""
        with self._lock:
            if self._helper is None:
                self._helper = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="engram-symbols"
                )
            return self._helper.submit(fn, *args)

    def close(self) -> None:
        """Close this thread's connection (every other thread reopens on its next use) and
        end the helper thread (``submit`` starts another), after the work it was given
        (bounded by that work's deadline): nothing of this index runs after ``close``.

        A connection is only ever closed by the thread that uses it: closing one that
        another thread is using can crash the process. The helper thread's connection
        closes as that thread ends.
        """
        self.postings.clear()
        self.topic_notes.clear()
        self.topic_names.clear()
        self.where_sets.clear()
        self.topic_tree.clear()
        with self._lock:
            self._epoch += 1
            helper, self._helper = self._helper, None
        if helper is not None:
            helper.shutdown(wait=True)
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
        on = meta.get("trigram_index")
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
            trigram_index=None if on is None else bool(on),
            trigram_bytes=int(meta["trigram_bytes"]) if on and "trigram_bytes" in meta else None,
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
    ) -> list[tuple[str, int, int]]:
        """(name, notes, notes with the topics nested under it) of topics whose case-folded
        key starts with ``key_prefix``, the most notes with nested ones first. A parent no note
        names itself (``a`` of ``a/b``) is listed too, with 0 notes of its own."""
        conn = conn or self.conn()
        if key_prefix:
            rows = conn.execute(
                "SELECT key, name, notes FROM topics WHERE key >= ? AND key < ?"
                " ORDER BY notes DESC, key LIMIT ?",
                (key_prefix, key_prefix + "\U0010ffff", limit),
            )
        else:
            rows = conn.execute(
                "SELECT key, name, notes FROM topics ORDER BY notes DESC, key LIMIT ?", (limit,)
            )
        found = {str(k): (str(n), int(c)) for k, n, c in rows}
        tree = self.topic_tree.lookup(conn, ["tree"], _topic_tree).get("tree", {})
        out = []
        for key, (name, own, nested) in tree.items():  # every parent: its count may be higher
            if key.startswith(key_prefix):
                out.append((name, own, nested))
                found.pop(key, None)
        out += [(name, own, own) for name, own in found.values()]
        out.sort(key=lambda t: (-t[2], -t[1], t[0].casefold()))
        return out[:limit]

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


def _topic_tree(
    conn: sqlite3.Connection, _keys: list[str]
) -> dict[str, dict[str, tuple[str, int, int]]]:
    """Every parent of a nested topic (``a`` and ``a/b`` of ``a/b/c``): its name, its own
    notes and the notes that have it or a topic under it (each note once)."""
    under: dict[str, list[int]] = {}
    names: dict[str, str] = {}
    own: dict[str, tuple[int, str, int]] = {}
    for tid, key, name, notes in conn.execute("SELECT id, key, name, notes FROM topics"):
        own[str(key)] = (int(tid), str(name), int(notes))
        parts, spelled = str(key).split("/"), str(name).split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            under.setdefault(parent, []).append(int(tid))
            if len(spelled) == len(parts):
                names.setdefault(parent, "/".join(spelled[:depth]))
    tree: dict[str, tuple[str, int, int]] = {}
    for parent, ids in under.items():
        tid, name, notes = own.get(parent, (0, names.get(parent, parent), 0))
        topics = [*ids, tid] if tid else ids
        marks = ",".join("?" * len(topics))
        (count,) = conn.execute(
            f"SELECT count(DISTINCT note_id) FROM note_topics WHERE topic_id IN ({marks})", topics
        ).fetchone()
        tree[parent] = (name, notes, int(count))
    return {"tree": tree}


GITIGNORE = """\
# Engram's index: a cache of the notes, rebuilt from them at any time. Not for git.
*
!config.yaml
"""
"""The ``.gitignore`` of a ``.engram`` folder: a vault under git does not show the index as
untracked (the vault's ``config.yaml`` beside it still can be committed)."""


def _keep_out_of_git(folder: Path) -> None:
    """Write ``GITIGNORE`` in a ``.engram`` index folder that has no ``.gitignore`` (never
    replacing one: the user's own rules win). A failure to write it is no failure to index."""
    if folder.name != ".engram":
        return
    try:
        fd = os.open(folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW)
    except OSError:
        return  # it exists (or the folder is read-only): leave it
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(GITIGNORE)

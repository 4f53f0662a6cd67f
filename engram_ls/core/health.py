"""The health of one vault's index: opened or not, unavailable, behind, damaged and replaced.

``IndexHealth`` holds that state for the service (``core/service.py``) and is the one place
that decides whether the index may answer: every read goes through :meth:`IndexHealth.reading`
(readable? → one read transaction → the index's state, so the caller knows whether it is
servable → on failure: damage recovered, the caller falls back), every write through
:meth:`IndexHealth.write`. A missing, damaged or locked index never stops an answer: the caller
scans the files or raises ``IndexUnavailable``, as its use case says.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from engram_ls.core.errors import EngramError, IndexUnavailable, NotFound
from engram_ls.core.index import db
from engram_ls.core.index.rows import iso_epoch
from engram_ls.core.index.store import Index, IndexStatus
from engram_ls.core.search import IndexInfo, ServedBy

T = TypeVar("T")
log = logging.getLogger(__name__)
"""Damage itself is logged where the file is replaced (``Index._replace``)."""
SERVABLE_STATES = frozenset({"ready", "stale"})
WAL_LOST = "the write-ahead log was deleted while the index was open"


class Reading:
    """What one :meth:`IndexHealth.reading` found. Inside the ``with`` block, when the index
    is being read (``read``): ``conn``, in a read transaction, and the index's ``status``.
    After the block: ``error`` when reading failed, and what to answer without the index
    (``served("scan")`` or ``unavailable()``)."""

    def __init__(self, health: IndexHealth) -> None:
        self._health = health
        self._conn: sqlite3.Connection | None = None
        self.status: IndexStatus | None = None
        self.error: sqlite3.DatabaseError | None = None
        self._failure: IndexInfo | None = None

    @property
    def read(self) -> bool:
        """Whether the index is being read (``conn`` is there)."""
        return self._conn is not None

    @property
    def servable(self) -> bool:
        """Whether the index can answer (read, and ``ready`` or ``stale``)."""
        return self.read and self.status is not None and self.status.state in SERVABLE_STATES

    @property
    def conn(self) -> sqlite3.Connection:
        """The connection, in its read transaction; only where ``read`` is true."""
        if self._conn is None:
            raise RuntimeError("the index is not being read")
        return self._conn

    def served(self, by: ServedBy) -> IndexInfo:
        """What an answer served ``by`` the index or a scan says about it: its state as read,
        else (not read, or reading failed) as :meth:`IndexHealth.scan_info` gives it."""
        if self._failure is not None:
            return self._failure
        if self.status is not None:
            st = self.status
            return IndexInfo(st.state, by, st.generation, st.updated_at)
        return self._health.scan_info()

    def unavailable(self, need: str = "this needs a built index") -> IndexUnavailable:
        """The error of a use case that only the index can answer, when it could not."""
        if self.error is not None:
            exc = IndexUnavailable(f"the index could not be read: {self.error}")
            exc.__cause__ = self.error
            return exc
        if self.status is not None:
            return IndexUnavailable(f"the index is {self.status.state}; {need}")
        return IndexUnavailable(self._health.unavailable or "the index is not open yet")


class IndexHealth:
    """The state of one index as the service sees it, and the reads and writes that keep it."""

    def __init__(self, index: Index, root: Path) -> None:
        self.index = index
        self.root = root
        self.unavailable: str | None = None
        """Why the index cannot be used right now (None when it can)."""
        self.behind: str | None = None
        """Why the index may be missing changes (a write failed, the file was replaced or
        rebuilt empty, the vault folder went away); None when it is not. The next write is a
        full reconcile instead of just its own batch, so nothing that failed is lost."""
        self.lock = threading.RLock()
        """Held by every write and every change of the state above."""
        self._opened = False
        self.synced_at: float | None = None
        """``time.time()`` when the last write that succeeded here (a reconcile, or a batch of
        changes) started: the index was in line with the files from then on, as far as this
        process knows. None before the first."""

    @property
    def readable(self) -> bool:
        """Whether reads may use the index: it was opened (checked, created or replaced) and
        is usable. Before ``open`` nothing touches the file: a read of a file that is not set
        up yet would look like damage and have it moved aside under the opening thread."""
        return self._opened and self.unavailable is None

    # -- opening ---------------------------------------------------------------------------

    def open(self) -> None:
        """Open (or create, or replace a damaged) index. Never raises: failures mean scan."""
        with self.lock:
            try:
                if not self.root.is_dir():
                    # Creating the index folder would bring a deleted vault folder back.
                    raise IndexUnavailable(f"the vault folder is missing: {self.root}")
                path = self.index.path
                if path.name.endswith(".md") or os.path.realpath(path).endswith(".md"):
                    # A note is never an index: opening it would move the note aside as a
                    # damaged index and put a database in its place.
                    raise IndexUnavailable(f"refusing to use a note as the index file: {path}")
                self.index.open()
                self.unavailable = None
            except IndexUnavailable as exc:
                self.unavailable = exc.message
            finally:
                # Only now may readers use the file: a reader racing the opening thread would
                # see a file without tables, take it for damage and move it aside.
                self._opened = True

    def check_file(self) -> None:
        """Reopen if the index file was deleted or replaced under us (another process moved a
        damaged one aside; the vault folder was deleted and made again): reading the old file
        would answer from notes that are gone."""
        if not self.readable:
            return
        if self.index.replaced_by_other():
            if self.root.is_dir():
                with self.lock:
                    if self.index.replaced_by_other():
                        self.index.close()
                        self.behind = "the index file was replaced"
                        self.open()
        elif self.index.wal_lost():
            self.recover_quietly("wal-lost", WAL_LOST)

    # -- reading ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def reading(
        self,
        *,
        fresh: bool = False,
        cancel: threading.Event | None = None,
        deadline: float | None = None,
        steps: int = db.PROGRESS_STEPS,
    ) -> Iterator[Reading]:
        """The one way to read the index: reopen a replaced file; then, when the index is
        readable (and, with ``fresh``, not behind), one read transaction, interruptible by
        ``cancel`` and ``deadline`` (``db.Interrupted`` passes through). An sqlite error in
        the block ends it: damage is recovered, ``error`` set, and the code after the block
        runs, which answers without the index (a scan) or raises ``Reading.unavailable()``::

            with health.reading() as r:
                if r.servable:
                    return answer_from(r.conn)
            return scan()
        """
        self.check_file()
        r = Reading(self)
        if not self.readable or (fresh and self.behind is not None):
            yield r
            return
        entered = False
        try:
            conn = self.index.conn()
            with db.interruptible(conn, cancel, deadline, steps), db.read_tx(conn):
                r.status = self.index.status(conn)
                r._conn = conn
                entered = True
                yield r
        except sqlite3.DatabaseError as exc:
            r.error = exc
            r._failure = self.index_failure(exc)
        if not entered:  # failed before the block: it runs without the index
            yield r

    def status(self) -> IndexStatus:
        """The index's state; ``stale`` while it is missing changes (a write failed and the
        catch-up has not finished), as searches, which scan meanwhile, report it too."""
        self.check_file()
        if self.readable:
            try:
                st = self.index.status()
                if self.behind is not None and st.state == "ready":
                    st = dataclasses.replace(st, state="stale")
                return st
            except sqlite3.Error as exc:
                reason = db.damage(exc)
                if reason is not None:
                    self.recover_quietly(reason, str(exc))
        return IndexStatus(
            state="failed" if self._opened and not self._no_index_file() else "empty",
            generation=0,
            updated_at=None,
            notes=0,
            problems=0,
            topics=0,
            path=str(self.index.path),
        )

    def sync_age_ms(self, status: IndexStatus) -> float | None:
        """How long ago the index was last known to be in line with the files: since the
        last write that succeeded in this process (``synced_at``) or, when the index is
        ``ready``, its last committed change (``updated_at``, by any process; whole seconds,
        so never younger than it is). None when neither is known."""
        known = [] if self.synced_at is None else [self.synced_at]
        if status.state == "ready" and status.updated_at:
            with contextlib.suppress(ValueError):
                known.append(iso_epoch(status.updated_at))
        if not known:
            return None
        return max(0.0, (time.time() - max(known)) * 1000)

    def scan_info(self) -> IndexInfo:
        """What a scanned answer says about the index: ``stale`` when it is missing changes
        (a write failed: its answer would not mean what the files say), else ``failed``."""
        if self.readable and self.behind is not None:
            with contextlib.suppress(sqlite3.Error):
                st = self.index.status()
                return IndexInfo("stale", "scan", st.generation, st.updated_at)
        return IndexInfo("empty" if self._no_index_file() else "failed", "scan", 0, None)

    def index_failure(self, exc: sqlite3.DatabaseError) -> IndexInfo:
        """The index could not answer: recover if it is damaged; the caller scans."""
        reason = db.damage(exc)
        if reason is not None:
            self.recover_quietly(reason, str(exc))
            return IndexInfo("failed", "scan", 0, None)
        if db.is_busy(exc):  # locked by another process: asking again would wait as long
            return IndexInfo("failed", "scan", 0, None)
        st = None
        with contextlib.suppress(sqlite3.Error):
            st = self.index.status()
        if st is None:
            return IndexInfo("failed", "scan", 0, None)
        return IndexInfo(st.state, "scan", st.generation, st.updated_at)

    def _no_index_file(self) -> bool:
        """Read-only and there is no index file: the index is ``empty``, not ``failed``."""
        return self.index.read_only and not self.index.path.exists()

    # -- damage ----------------------------------------------------------------------------

    def recover_quietly(self, reason: str, detail: str) -> None:
        """Replace a damaged index; searches scan until a write or ``catch_up`` rebuilds it."""
        with self.lock:
            self.behind = "the index was damaged and replaced"
            try:
                self.index.recover(reason, detail)
                self.unavailable = None
            except IndexUnavailable as exc:
                self.unavailable = exc.message

    def verify(self) -> tuple[str, str] | None:
        """Check the whole index file (``PRAGMA quick_check`` on a connection of its own) and
        answer damage as any query finding it would: the file is moved aside, an empty index
        takes its place, the index is marked behind (searches scan until the next write or
        ``catch_up`` rebuilds it). Returns (reason, what was found), or None when the file is
        intact or cannot be checked now (not open, locked in exclusive mode elsewhere).

        Reads every page (0.6-0.8 s at 100k notes): the servers run it in the background
        (``core/check.py``); ``engram index`` before it reconciles.
        """
        if not self.readable:
            return None
        checked = self.index.opened_file()
        try:
            found = self.index.quick_check()
        except sqlite3.Error as exc:
            log.info("the index %s could not be checked: %s", self.index.path, exc)
            return None
        if found is None:
            return None
        with self.lock:
            if self.index.opened_file() != checked or self.index.replaced_by_other():
                return None  # replaced meanwhile (by a query here, or another process)
            self.recover_quietly(*found)
        return found

    # -- writing ---------------------------------------------------------------------------

    def write(self, work: Callable[[], T], reconcile: Callable[[], T], *, whole: bool) -> T:
        """Run one write (``work``; ``whole``: it is a reconcile of the whole vault) under the
        lock, on an index that was checked. While the index is behind, or after it was
        replaced, ``reconcile`` runs instead of a batch, so that nothing that failed is lost.
        Damage found while writing is recovered once; any failure marks the index behind and
        raises an ``EngramError``."""
        if self.index.read_only:
            raise IndexUnavailable("the index was opened read-only")
        with self.lock:
            try:
                return self._write_locked(work, reconcile, whole)
            except EngramError as exc:
                self.behind = exc.message
                raise

    def _write_locked(self, work: Callable[[], T], reconcile: Callable[[], T], whole: bool) -> T:
        if not self.root.is_dir():
            raise NotFound(
                f"vault folder does not exist: {self.root}", data={"path": str(self.root)}
            )
        if self._opened and self.unavailable is None and self.index.replaced_by_other():
            self.index.close()  # deleted or replaced under us: open the file now at the path
            self.unavailable = "the index file was replaced"
            self.behind = self.unavailable
        elif self._opened and self.unavailable is None and self.index.wal_lost():
            self.recover_quietly("wal-lost", WAL_LOST)  # writes to it would be lost
        if not self._opened or self.unavailable is not None:
            self.open()  # never write to an index that was not checked (or replaced)
            if self.unavailable is not None:
                raise IndexUnavailable(self.unavailable)
        if self.behind is not None and not whole:
            work = reconcile
        for attempt in range(2):
            try:
                started = time.time()
                result = work()
                self.behind = None
                self.synced_at = started
                return result
            except sqlite3.DatabaseError as exc:
                reason = db.damage(exc)
                if reason is not None and attempt == 0:
                    self.index.recover(reason, str(exc))
                    if not whole:
                        work = reconcile  # the new index holds nothing yet
                    continue
                if not db.is_busy(exc):  # a lock held elsewhere would block this too
                    self._mark_failed()
                raise IndexUnavailable(f"the index could not be updated: {exc}") from exc
            except OSError as exc:
                self._mark_failed()
                raise IndexUnavailable(f"the index could not be updated: {exc}") from exc
        raise IndexUnavailable("the index could not be rebuilt")

    def _mark_failed(self) -> None:
        try:
            with self.index.batch() as b:
                b.set_state("failed")
        except (sqlite3.Error, OSError):
            pass


__all__ = ["SERVABLE_STATES", "IndexHealth", "Reading"]

"""What a search reads from the index again and again, kept in memory for one state of it.

A :class:`SnapshotCache` keeps a few values read from the index (a frequent word's postings,
a large topic's notes), each with the index generation of the read snapshot it came from. A
search uses a value only when its own snapshot is at that generation, so the answer is the
one the index gives at that moment: any write changes the generation, and the value is then
read again, never patched. A value is read on a background thread of its own (with its own
connection) from the second time a search asks for it, so a one-off search (the CLI's) never
pays for it and a server's searches do not wait for it.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, Protocol, TypeVar

from engram_ls.core.index import db

log = logging.getLogger(__name__)

ASKED_MAX = 1000
"""Keys asked for once that are remembered (for their second time)."""


class Snapshot(Protocol):
    @property
    def generation(self) -> int:
        """The index generation of the snapshot the value was read in."""
        ...

    @property
    def usable(self) -> bool:
        """Whether searches may use it (False: reading it again in the same state would not
        help either)."""
        ...


class Source(Protocol):
    """The index file a cache reads (``store.Index``)."""

    def reader(self) -> sqlite3.Connection:
        """A new connection of its own."""
        ...

    def file_at_path(self) -> db.FileId | None:
        """The (device, inode) of the file at the index's path now."""
        ...

    def opened_file(self) -> db.FileId | None:
        """The (device, inode) of the file the searches read. A value read from another file (the
        file was replaced under the reader) is never used: two files can be at the same
        generation."""
        ...


K = TypeVar("K", bound=Hashable)
V = TypeVar("V", bound=Snapshot)


def generation(conn: sqlite3.Connection) -> int:
    """The index generation of ``conn``'s snapshot (``meta.generation``, raised by every
    write transaction that changes anything)."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


class SnapshotCache(Generic[K, V]):
    """Up to ``capacity`` values (the most recently used), for one index file; safe to share
    between threads."""

    def __init__(
        self,
        name: str,
        source: Source,
        reader: Callable[[sqlite3.Connection, K], V],
        capacity: int,
        prepare: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        """``reader`` reads one value inside a read snapshot of a connection of its own from
        ``source`` (prepared once by ``prepare``)."""
        self.name = name
        self._source = source
        self._reader = reader
        self._prepare = prepare
        self.capacity = capacity
        self._lock = threading.Lock()
        self._kept: OrderedDict[K, tuple[V, db.FileId | None]] = OrderedDict()
        self._asked: set[K] = set()
        self._pending: list[K] = []
        self._reading: threading.Thread | None = None
        self._stop = threading.Event()

    def current(self, conn: sqlite3.Connection, key: K) -> V | None:
        """The value of ``key`` if it was read in the state of ``conn``'s snapshot."""
        with self._lock:
            entry = self._kept.get(key)
            if entry is not None:
                self._kept.move_to_end(key)
        if entry is None:
            return None
        value, file = entry
        if not value.usable or value.generation != generation(conn):
            return None
        return value if file is not None and file == self._source.opened_file() else None

    def want(self, conn: sqlite3.Connection, key: K) -> None:
        """A search could have used the value of ``key``: from the second time on, it is read
        in the background (unless it was read in the state of ``conn``'s snapshot)."""
        gen = generation(conn)
        with self._lock:
            entry = self._kept.get(key)
            if entry is not None and entry[0].generation == gen:
                return
            if key not in self._asked:
                if len(self._asked) >= ASKED_MAX:
                    self._asked.clear()
                self._asked.add(key)
                return
            if key not in self._pending and len(self._pending) < self.capacity:
                self._pending.append(key)
            if self._reading is not None and self._reading.is_alive():
                return
            thread = threading.Thread(target=self._read_pending, name=self.name, daemon=True)
            self._reading = thread
            thread.start()  # under the lock: a clear() now waits for it

    def _read_pending(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    if self._reading is threading.current_thread():
                        self._reading = None
                    return
                key = self._pending.pop(0)
            self.read(key)

    def kept(self) -> list[K]:
        """The keys whose values are kept, least recently used first."""
        with self._lock:
            return list(self._kept)

    def read(self, key: K) -> V | None:
        """Read the value of ``key`` now, on a connection of its own, and keep it; None when
        the index cannot be read or the cache was cleared meanwhile."""
        stop = self._stop
        try:
            conn = self._source.reader()
        except (OSError, sqlite3.Error) as exc:
            log.info("%s: cannot read %r: %s", self.name, key, exc)
            return None
        try:
            if self._prepare is not None:
                self._prepare(conn)
            with db.interruptible(conn, stop, None), db.read_tx(conn):
                kept = self._kept_now(conn, key)
                if kept is not None:  # asked for again while it was read: read once
                    return kept
                value = self._reader(conn, key)
                file = self._source.file_at_path()  # after reading: a file replaced is seen
        except (sqlite3.Error, db.Interrupted) as exc:
            log.info("%s: cannot read %r: %s", self.name, key, exc)
            return None
        finally:
            conn.close()
        with self._lock:
            if stop.is_set():
                return None
            self._kept[key] = (value, file)
            self._kept.move_to_end(key)
            while len(self._kept) > self.capacity:
                self._kept.popitem(last=False)
        return value

    def _kept_now(self, conn: sqlite3.Connection, key: K) -> V | None:
        """The value of ``key`` if it is kept from the file now at the index's path, at the
        generation of ``conn``'s snapshot: a search that asks for a value while it is being
        read queues it again (it cannot know the read's state), and the queue would read it
        twice (a topic of 23,000 notes: 20-40 ms of a background thread, the searches meanwhile
        slower). Not ``current``: that answers for the file the searches opened, and a read is
        of the file at the path (one that replaced it is read anew)."""
        with self._lock:
            entry = self._kept.get(key)
        if entry is None or not entry[0].usable or entry[0].generation != generation(conn):
            return None
        file = self._source.file_at_path()
        return entry[0] if file is not None and file == entry[1] else None

    def clear(self) -> None:
        """Forget every value and stop a reading under way (the index file is being closed
        or replaced): nothing of the cache runs once this returns."""
        with self._lock:
            self._stop.set()
            self._stop = threading.Event()
            self._kept.clear()
            self._asked.clear()
            self._pending.clear()
            reading, self._reading = self._reading, None
        if reading is not None and reading is not threading.current_thread():
            reading.join()


MEMO_MOST = 4096
"""Values a memo keeps for one state; past it, it starts again with those just asked for."""

MK = TypeVar("MK", bound=Hashable)
MV = TypeVar("MV")


class Memo(Generic[MK, MV]):
    """Values looked up in the index by key (a topic's canonical name, the notes of a
    condition), remembered for one state of it: the file searches read and its generation.
    Whoever asks in another state starts a new memo; a value is always one read in the asker's
    own snapshot."""

    def __init__(self, source: Source, most: int = MEMO_MOST) -> None:
        self._source = source
        self._most = most
        self._memo: tuple[tuple[db.FileId | None, int] | None, dict[MK, MV | None]] = (None, {})
        """(state, values), replaced whole: a thread never sees one's state with another's
        values."""

    def lookup(
        self,
        conn: sqlite3.Connection,
        keys: Iterable[MK],
        read: Callable[[sqlite3.Connection, list[MK]], dict[MK, MV]],
    ) -> dict[MK, MV]:
        """The values of ``keys`` found in ``conn``'s snapshot; those not remembered are read
        with ``read`` (which leaves out keys it does not find)."""
        state = (self._source.opened_file(), generation(conn))
        kept, values = self._memo
        if state != kept or state[0] is None:
            values = {}
        wanted = list(keys)
        missing = [k for k in wanted if k not in values]
        if missing:
            found = read(conn, missing)
            if len(values) + len(missing) > self._most:
                values = {k: values[k] for k in wanted if k in values}
            values = {**values, **{k: found.get(k) for k in missing}}
        self._memo = (state, values)
        return {k: v for k in wanted if (v := values[k]) is not None}

    def clear(self) -> None:
        self._memo = (None, {})

"""SQLite connections, pragmas and the one write-transaction helper.

Every write transaction starts with ``BEGIN IMMEDIATE`` so that several processes (language
server, MCP server, CLI) can share one WAL database: a deferred transaction that reads and then
writes fails at once with "database is locked" under contention, whatever the busy timeout.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from engram_ls.core.contained import real_path

BUSY_TIMEOUT_MS = 10_000
"""How long a connection waits for another process's lock; ``$ENGRAM_BUSY_TIMEOUT_MS``
overrides it (the reliability tests hold a lock longer than a short timeout)."""
READ_CACHE_KB = 2_500
"""Page cache of every connection (one per thread): small, so a server's memory stays flat. A
server has a connection in each of its worker threads; at 8 MB each their caches grew by ~48
MiB over a query mix at 100k notes, for no measurable gain in query time (the file's pages are
in the OS page cache either way). 2.5 MB (about 600 pages) holds what one search by meaning
reads at 100k notes, about 500 pages (256 leaves of the vectors and 88 of their table's inner
pages, the chunks and the notes of 50 hits): at 2 MB (about 480) a least-recently-used cache
that a search runs through in a cycle longer than it keeps none of its pages, and every search
read all 500 from the OS again, the inner pages too. The language server gives calls to the
thread idle last (``lsp/executor.py``), so one connection's cache is the warm one."""
BUILD_CACHE_KB = 64_000
"""Page cache of the connection that writes a large batch (measured ~15 % faster builds)."""
SORT_CACHE_KB = 2_000
"""Page cache while ``sorting_on_disk``: the sort's runs are cut to the cache's size, and runs
of 2 MB, sorted within the processor's caches and merged, took 1.5–2.2 s for a cold build's
indexes at 100,000 notes against 1.9–2.6 with 64 MB ones."""
SORT_DIRECTORY_SAFE = (3, 39, 3)
"""From this SQLite on, ``PRAGMA temp_store_directory`` and the making of a temporary file
take one mutex (before, changing it while another thread used SQLite was a race)."""
_SORTING = threading.Lock()
"""One ``sorting_on_disk`` at a time in the process: SQLite's temporary folder is global."""
PROGRESS_STEPS = 2000
"""SQLite virtual machine steps between two checks for cancellation and the deadline, by
default (a search's queries: each check is a Python call)."""

CORRUPTION_MARKERS = (
    "file is not a database",
    "database disk image is malformed",
    "malformed database schema",
    "file is encrypted",
    "no such table",
    "no such column",
    "vtable constructor failed",
    "fts5: corruption",
    "database corruption",
)


FileId = tuple[int, int]
"""(device, inode): which file a path names at a moment."""


def file_id(path: str) -> FileId | None:
    """The ``FileId`` of the file at ``path``; None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def is_corruption(exc: BaseException) -> bool:
    """True when an sqlite error means the file is damaged or not ours (rebuild, don't retry)."""
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.IntegrityError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return True
    text = str(exc).lower()
    return any(marker in text for marker in CORRUPTION_MARKERS)


def damage(exc: BaseException) -> str | None:
    """Why an sqlite error means the index must be replaced, or None when it does not.

    ``corrupt``: the file is damaged or not ours. ``wal-lost``: its write-ahead log was deleted
    or cut while the index was open (a new connection finds the log shorter than the shared
    memory says: ``SQLITE_IOERR_SHORT_READ``); connections opened before keep writing to the
    deleted log, so no connection of this process can be trusted to see what the others do.
    """
    if is_corruption(exc):
        return "corrupt"
    if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_IOERR_SHORT_READ:
        return "wal-lost"
    return None


def quick_check(path: Path) -> tuple[str, str] | None:
    """``PRAGMA quick_check`` of the file on a connection of its own (so that no page cached
    by another connection hides damage on disk): None when intact, else (reason, what SQLite
    reported), the reason as ``damage`` gives it.

    It reads every page: 0.28 s for the 145 MB index of 30,000 notes here, 0.6-0.8 s for the
    482 MB one of 100,000 notes (warm page cache; 2.5 s the first time, partly cold).
    Raises the sqlite error when the file cannot be read for another reason (locked in
    exclusive mode by another process).
    """
    try:
        conn = connect(path)
        try:
            rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        reason = damage(exc)
        if reason is None:
            raise
        return reason, str(exc)
    if rows == ["ok"]:
        return None
    return "corrupt", "; ".join(rows)[:500]


def is_busy(exc: BaseException) -> bool:
    """True when an sqlite error means another connection holds the lock (try again later)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return True
    return "locked" in str(exc).lower()


def busy_timeout_ms() -> int:
    raw = os.environ.get("ENGRAM_BUSY_TIMEOUT_MS", "")
    return int(raw) if raw.isdigit() else BUSY_TIMEOUT_MS


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating if needed) the index file with the pragmas every connection uses."""
    busy = busy_timeout_ms()
    conn = sqlite3.connect(
        os.fspath(path),
        timeout=busy / 1000,
        isolation_level=None,
        check_same_thread=False,
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {busy}")
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        if mode and str(mode[0]).lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute(f"PRAGMA cache_size = -{READ_CACHE_KB}")
        conn.execute("PRAGMA foreign_keys = OFF")
    except BaseException:
        conn.close()
        raise
    return conn


def connect_read_only(path: Path) -> sqlite3.Connection:
    """Open an existing index for reading only: no file is created and nothing is written.

    While a writer has the file open (its ``-wal`` exists) the connection reads through the
    writer's WAL (``mode=ro``). Otherwise every commit is in the main file, and it is opened
    ``immutable`` so that SQLite creates no ``-wal``/``-shm`` beside it (``mode=ro`` would,
    and leave them). An immutable read takes no lock: a writer that starts meanwhile and
    checkpoints into the file under it can make the read fail, which the caller answers like
    any other unreadable index (by scanning); it cannot damage anything.
    """
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, "no index file", os.fspath(path))
    wal = Path(os.fspath(path) + "-wal")
    uri = path.absolute().as_uri() + ("?mode=ro" if wal.exists() else "?immutable=1")
    busy = busy_timeout_ms()
    conn = sqlite3.connect(
        uri, uri=True, timeout=busy / 1000, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {busy}")
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA temp_store = MEMORY")
        conn.execute(f"PRAGMA cache_size = -{READ_CACHE_KB}")
    except BaseException:
        conn.close()
        raise
    return conn


@contextlib.contextmanager
def write_tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One short write transaction: ``BEGIN IMMEDIATE`` … ``COMMIT`` (rollback on error)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@contextlib.contextmanager
def build_cache(conn: sqlite3.Connection) -> Iterator[None]:
    """A larger page cache on this connection for the duration of a large write."""
    conn.execute(f"PRAGMA cache_size = -{BUILD_CACHE_KB}")
    try:
        yield
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute(f"PRAGMA cache_size = -{READ_CACHE_KB}")


@contextlib.contextmanager
def sorting_on_disk(conn: sqlite3.Connection) -> Iterator[None]:
    """The sorts of ``CREATE INDEX`` meanwhile in temporary files of the index's own folder
    (unlinked as soon as made; never the system's temporary folder, nor the vault's other
    folders): SQLite reads such a file's sorted runs mapped in memory, where with
    ``temp_store = MEMORY`` (every connection's) it copies them, so a cold build's indexes made
    at its end (``schema.BUILT_LAST``, 100,000 notes) took 1.5–2.2 s against 2.2–2.7, with one
    core idle meanwhile. In memory, as before, with an older SQLite, an index in memory, a
    folder SQLite cannot use, or one no longer where the index was opened (a folder on its path
    swapped for a symlink since: SQLite names the file by its real path when it opens it); the
    connection as it was afterwards either way."""
    folder = _main_folder(conn) if sqlite3.sqlite_version_info >= SORT_DIRECTORY_SAFE else None
    if folder is None or real_path(folder) != folder:  # None: changed while resolved
        yield
        return
    with _SORTING:
        was = [
            f"{name} = {value}"
            for name, value in (
                ("temp_store", int(conn.execute("PRAGMA temp_store").fetchone()[0])),
                ("temp_store_directory", _literal(_text(conn, "temp_store_directory"))),
                ("cache_size", int(conn.execute("PRAGMA cache_size").fetchone()[0])),
            )
        ]
        try:
            conn.execute(f"PRAGMA temp_store_directory = {_literal(folder)}")
            conn.execute("PRAGMA temp_store = FILE")
            conn.execute(f"PRAGMA cache_size = -{SORT_CACHE_KB}")
        except (sqlite3.Error, UnicodeError):
            pass  # sorted in memory: the pragmas below put back what was set
        try:
            yield
        finally:
            for pragma in was:
                with contextlib.suppress(sqlite3.Error, UnicodeError):
                    conn.execute(f"PRAGMA {pragma}")


def _text(conn: sqlite3.Connection, pragma: str) -> str:
    """A text pragma's value ("" when it has none)."""
    row = conn.execute(f"PRAGMA {pragma}").fetchone()
    return str(row[0] or "") if row else ""


def _literal(text: str) -> str:
    """``text`` as an SQL string literal (a pragma takes no parameter)."""
    return "'" + text.replace("'", "''") + "'"


def _main_folder(conn: sqlite3.Connection) -> str | None:
    """The folder of the file of ``conn``'s main database; None for one in memory."""
    for _, name, file in conn.execute("PRAGMA database_list"):
        if name == "main" and file:
            return os.path.dirname(str(file))
    return None


def release_memory(conn: sqlite3.Connection) -> None:
    """Free this connection's page cache (after reading a whole table once: those pages
    would otherwise stay in the thread's memory until other pages push them out)."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("PRAGMA shrink_memory")


class Interrupted(Exception):
    """A query was stopped: its request was cancelled or ran past its deadline."""


@contextlib.contextmanager
def interruptible(
    conn: sqlite3.Connection,
    cancel: threading.Event | None,
    deadline: float | None,
    steps: int = PROGRESS_STEPS,
) -> Iterator[None]:
    """Stop SQLite work on ``conn`` when ``cancel`` is set or ``time.monotonic()`` passes
    ``deadline`` (checked every ``steps`` virtual machine steps); raises :class:`Interrupted`
    then. The one place a progress handler is set."""
    if cancel is None and deadline is None:
        yield
        return

    def stop() -> int:
        if cancel is not None and cancel.is_set():
            return 1
        return 1 if deadline is not None and time.monotonic() > deadline else 0

    conn.set_progress_handler(stop, steps)
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "interrupt" in str(exc).lower():
            raise Interrupted(str(exc)) from None
        raise
    finally:
        conn.set_progress_handler(None, 0)


@contextlib.contextmanager
def read_tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A read snapshot: every query inside sees the same committed state."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("COMMIT")


def move_aside(path: Path, reason: str) -> Path | None:
    """Rename a damaged index (and its -wal/-shm) out of the way, for inspection; every copy
    moved aside before is deleted, so that repeated damage never fills the disk with
    full-size copies. Returns the moved file (None when there was none, or it could only be
    deleted). Nothing in the vault is touched.

    Connections still open on the moved file keep reading it and, when closed, neither
    checkpoint into it nor delete the new index's -wal/-shm (SQLite checks that the database
    file was not moved before it does either).
    """
    if not path.exists():
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(OSError):
                Path(os.fspath(path) + suffix).unlink()
        return None
    stamp = time.strftime("%Y%m%dT%H%M%S")
    target = path.with_name(f"{path.name}.{reason}-{stamp}-{os.getpid()}")
    try:
        os.replace(path, target)
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        target = path
    for suffix in ("-wal", "-shm"):
        side = Path(os.fspath(path) + suffix)
        with contextlib.suppress(OSError):
            if target != path:
                os.replace(side, Path(os.fspath(target) + suffix))
            else:
                side.unlink()
    for stale in path.parent.glob(f"{path.name}.*-*"):
        if stale.name.endswith(("-wal", "-shm")) or stale == target:
            continue
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                Path(os.fspath(stale) + suffix).unlink()
    return target if target != path else None

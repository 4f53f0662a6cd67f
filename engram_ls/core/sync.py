"""Vault ↔ index: cold build, reconcile, and batches of changes from editors and watchers.

- ``reconcile`` walks the vault, stats every file and re-parses only what changed (mtime/size,
  then content hash), removing rows of deleted files. An empty or interrupted index is built
  (resumed) the same way: rows are committed in chunks, so a killed build keeps its progress.
- ``apply_changes`` takes one batch of created/changed/deleted/renamed files and folders, as the
  language server and MCP server receive them, and applies it in one transaction. A folder
  rename moves rows without re-parsing.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from engram_ls.core import memory
from engram_ls.core.config import EngramConfig
from engram_ls.core.contained import read_born
from engram_ls.core.errors import OutsideVault
from engram_ls.core.index import db, trigram
from engram_ls.core.index.rows import Batch, NoteRows, State, note_rows
from engram_ls.core.index.store import Index, IndexStatus
from engram_ls.core.model import Note
from engram_ls.core.parse import parse_note
from engram_ls.core.serialize import NOT_JSON, rounded
from engram_ls.core.sync_wire import Result, Touched, pack, unpack
from engram_ls.core.vault import FileStat, Vault

if TYPE_CHECKING:
    from concurrent.futures import Executor, Future

log = logging.getLogger(__name__)

PARSE_VERSION = 2
"""Bump when parsing changes what it extracts: indexes built by older code are re-parsed."""

CHUNK = 500
"""Notes parsed per worker task."""
COMMIT_SECONDS = 3.0
"""A build commits what it has parsed about this often: a killed build loses at most about
this much work, and fewer, larger transactions keep the full-text index's segments few and
the WAL checkpoints rare (3 s against 1 s: a 100k build ~7 % faster, alternated runs).
``$ENGRAM_COMMIT_SECONDS`` overrides it (tests kill a build between two commits)."""


def commit_seconds() -> float:
    raw = os.environ.get("ENGRAM_COMMIT_SECONDS", "")
    try:
        value = float(raw)
    except ValueError:
        return COMMIT_SECONDS
    return value if value >= 0 else COMMIT_SECONDS


PARALLEL_MIN = 3000
"""Below this many notes to parse, a process pool does not pay for itself."""
AHEAD = 12
"""The chunks past the one the writer waits for that the parse processes may be given or the
writer may begin (``_shared_parse``)."""
STEAL_NOTES = 50
"""Notes the writer parses between two looks at whether the results it waits for are back."""
POOL_TASKS = 6
"""Chunks the parse processes are given at a time (a commit takes about as long as parsing 4)."""

ProgressFn = Callable[[int, int], None]
"""Called with (done, total) while notes are parsed."""

ChangeKind = Literal["created", "changed", "deleted", "renamed"]


@dataclass(frozen=True, slots=True)
class Change:
    kind: ChangeKind
    path: str
    """Vault-relative or absolute path of a file or folder."""
    new_path: str | None = None
    """For ``renamed``: the destination."""


@dataclass(slots=True)
class SyncReport:
    scanned: int = 0
    parsed: int = 0
    touched: int = 0
    """Files whose stat changed but whose content did not (no re-parse)."""
    removed: int = 0
    moved: int = 0
    unchanged: int = 0
    resumed: bool = False
    full: bool = False
    elapsed_s: float = field(default=0.0, metadata=rounded(4))
    generation: int = 0
    errors: list[str] = field(default_factory=list, metadata=NOT_JSON)


def config_fingerprint(config: EngramConfig) -> str:
    """What parsing depends on; a different fingerprint means every note must be re-parsed."""
    relevant = {
        "parse_version": PARSE_VERSION,
        "include": config.include,
        "exclude": config.exclude,
        "topic_keys": config.topic_keys,
        "date_keys": config.date_keys,
        "date_formats": config.date_formats,
        "summary_keys": config.summary_keys,
        "inline_tags": config.inline_tags,
        "max_note_bytes": config.limits.max_note_bytes,
        "trigram_index": config.trigram_index,
    }
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


def default_workers() -> int:
    """Parse processes for a big build: the main process writes SQLite while they parse."""
    return max(0, min(2, (os.cpu_count() or 1) - 1))


def digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


Parsed = tuple[FileStat, bytes, Note | None, bytes, int]
"""(stat of what was read, content hash, note — None when the hash matched ``known``, the
bytes read, when the file was created: ``contained.born_ns``)."""


def read_note(
    root: str, rel: str, config: EngramConfig, known: bytes | None = None
) -> Parsed | None:
    """Read, hash and parse one file; None when it vanished, cannot be read, is no longer a
    regular file (a FIFO put in its place between the walk and the read must not block), or
    is now reached through a symlinked folder or a symlink leaving the vault (read through
    ``contained.read_born``, which checks that at the moment of the open).

    The stat stored is taken from the open file, so it describes exactly the bytes parsed.
    """
    try:
        data, st, born = read_born(root, rel)
    except (OSError, OutsideVault):
        return None
    fs = FileStat(rel, st.st_mtime_ns, st.st_size)
    h = digest(data)
    if known is not None and h == known:
        return fs, h, None, data, born
    return fs, h, parse_note(rel, data, config), data, born


def read_rows(root: str, rel: str, config: EngramConfig, known: bytes | None) -> Result:
    parsed = read_note(root, rel, config, known)
    if parsed is None:
        return rel, known is None, None
    st, h, note, data, born = parsed
    if note is None:
        return rel, False, Touched(st.mtime_ns, st.size, born)
    text = trigram.note_text(data, config.limits.max_note_bytes) if config.trigram_index else ""
    return rel, known is None, note_rows(note, st.mtime_ns, st.size, h, text, born)


def _worker_start(parent: int) -> None:
    """A parse process's start: it ends when the process that started it ends, even by
    SIGKILL, and collects garbage cycles only between its chunks (``memory.begin_batch``)."""
    _die_with_parent(parent)
    memory.begin_batch()


def _die_with_parent(parent: int) -> None:
    """Parse workers end when the process that started them ends, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the line above ran
        os._exit(0)


def _start_method() -> str:
    """``fork`` only in a single-threaded process (the CLI): forked while another thread holds
    a lock (the language server's stdin reader), a worker can block forever on that lock."""
    return "fork" if threading.active_count() == 1 else "spawn"


def _cold(status: IndexStatus) -> bool:
    """An index that holds no finished build: reconciling it is a (resumed) build."""
    return status.state in ("empty", "building", "failed") or status.notes == 0


def _started() -> None:
    """The first task of an early pool: it only makes the pool start its processes."""


def _read_chunk(
    root: str, items: list[tuple[str, bytes | None]], config: EngramConfig
) -> list[Result]:
    return [read_rows(root, rel, config, known) for rel, known in items]


def _parse_chunk(root: str, items: list[tuple[str, bytes | None]], config: EngramConfig) -> bytes:
    """A chunk parsed in a parse process: its results packed for the writer (``pack``)."""
    memory.collect_batch()  # the previous chunk's garbage: its results were handed on by now
    return pack(_read_chunk(root, items, config))


def _shared_parse(
    pool: Executor, root: str, chunks: list[list[tuple[str, bytes | None]]], config: EngramConfig
) -> Iterator[list[Result]]:
    """The parsed ``chunks``, in their order, parsed by ``pool`` and by this process (the
    writer) together. The pool is given the chunks in order, ``POOL_TASKS`` at a time (enough
    to keep a parse process busy while the writer commits), none beyond ``AHEAD`` chunks past
    the one the writer waits for (what was parsed ahead waits in the writer's memory). While
    the results it waits for are not back, the writer begins the furthest chunk of that window
    the pool was not given, ``STEAL_NOTES`` notes at a time, and gives the pool the rest of it
    once they are. On two cores the writer would otherwise wait for the parse process a
    quarter of a cold build (with typed properties and tasks, parsing a note costs about what
    writing it does). No task is ever cancelled: Python 3.11's pool, broken while it holds a
    cancelled task, leaves the tasks after it without a result. If a parse process dies, the
    writer parses the rest of the build itself."""
    from concurrent.futures.process import BrokenProcessPool  # loaded with the pool already

    given: dict[int, Future[bytes]] = {}
    """By place: the chunks given to the pool (of a chunk the writer began, its rest)."""
    here: dict[int, list[Result]] = {}
    """By place: what the writer parsed of the chunks it began (their first notes)."""
    began: set[int] = set()
    low = 0
    """The chunks below it were given to the pool or begun by the writer."""

    def busy() -> int:
        return sum(1 for f in given.values() if not f.done())

    def feed(at: int) -> None:
        nonlocal low
        while busy() < POOL_TASKS:
            while low in began:
                low += 1
            if low >= min(len(chunks), at + AHEAD):
                return
            given[low] = pool.submit(_parse_chunk, root, chunks[low], config)
            low += 1

    def begin(i: int, awaited: Future[bytes]) -> None:
        began.add(i)
        items = chunks[i]
        done = here[i] = []
        while len(done) < len(items) and not (done and awaited.done()):
            done += _read_chunk(root, items[len(done) : len(done) + STEAL_NOTES], config)
        if len(done) < len(items):
            given[i] = pool.submit(_parse_chunk, root, items[len(done) :], config)

    def results_of(at: int) -> list[Result]:
        feed(at)
        if at not in given and at not in began:  # the pool is busy with later chunks' rests
            began.add(at)
            here[at] = _read_chunk(root, chunks[at], config)
        awaited = given.get(at)
        while awaited is not None and not awaited.done():
            window = range(min(len(chunks), at + AHEAD) - 1, at, -1)
            free = next((i for i in window if i not in given and i not in began), None)
            if free is None:
                break  # the pool has every chunk of the window: wait for this one
            begin(free, awaited)
            feed(at)
        parsed = here.get(at, []) + (unpack(awaited.result()) if awaited is not None else [])
        given.pop(at, None)
        here.pop(at, None)
        return parsed

    broken = False
    for at in range(len(chunks)):
        if not broken:
            try:
                parsed = results_of(at)
            except BrokenProcessPool as exc:
                log.warning("a parse process ended (%s); this process parses the rest", exc)
                broken = True
            else:
                yield parsed
                continue
        done, rest = here.pop(at, []), given.pop(at, None)
        if rest is not None and rest.done() and rest.exception() is None:
            yield done + unpack(rest.result())  # parsed by the pool before it broke
        else:
            yield done + _read_chunk(root, chunks[at][len(done) :], config)


class Syncer:
    """Keeps one index in step with one vault."""

    def __init__(self, vault: Vault, index: Index) -> None:
        self.vault = vault
        self.index = index
        self.config = vault.config
        self.fingerprint = config_fingerprint(vault.config)
        self._early: Executor | None = None
        """Parse processes started ahead of a build (``start_workers``), used by its parse."""

    def start_workers(self, *, full: bool = False, workers: int | None = None) -> None:
        """Start the parse processes now when a build of a large vault is coming, in a
        threaded process (the language server): a spawned worker's interpreter start and
        imports then overlap the walk instead of delaying the first parsed chunk. Nothing is
        started in a single-threaded process (forked workers start at once), for an index that
        is not being built, or for a vault of fewer than ``PARALLEL_MIN`` notes.
        ``stop_workers`` ends what the build did not use."""
        n_workers = workers if workers is not None else default_workers()
        if self._early is not None or n_workers <= 0 or _start_method() == "fork":
            return
        if not (full or _cold(self.index.status()) or self.needs_full_rebuild()):
            return
        if sum(1 for _ in itertools.islice(self.vault.walk(), PARALLEL_MIN)) < PARALLEL_MIN:
            return
        pool = self._new_pool(n_workers)
        pool.submit(_started)  # a process pool starts its processes on the first task
        self._early = pool

    def stop_workers(self) -> None:
        pool, self._early = self._early, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    @staticmethod
    def _new_pool(n_workers: int) -> Executor:
        # imported here: multiprocessing costs every process 60 ms at start-up, and only a
        # build of a large vault uses it
        from concurrent.futures import ProcessPoolExecutor
        from multiprocessing import get_context

        return ProcessPoolExecutor(
            max_workers=n_workers,
            mp_context=get_context(_start_method()),
            initializer=_worker_start,
            initargs=(os.getpid(),),
        )

    # -- reconcile / build -----------------------------------------------------------------

    def needs_full_rebuild(self) -> bool:
        status = self.index.status()
        return status.notes > 0 and status.fingerprint not in (None, self.fingerprint)

    def reconcile(
        self,
        *,
        full: bool = False,
        progress: ProgressFn | None = None,
        workers: int | None = None,
    ) -> SyncReport:
        """Bring the index in line with the vault. Safe to interrupt and run again."""
        t0 = time.perf_counter()
        report = SyncReport()
        status = self.index.status()
        if full or self.needs_full_rebuild():
            report.full = True
            with self.index.batch() as b:
                b.clear()
                b.set_state("building")
                b.set_meta("fingerprint", self.fingerprint)
            status = self.index.status()
        cold = _cold(status)
        report.resumed = status.state == "building" and status.notes > 0 and not report.full

        new, changed_paths, gone = self._diff(report)
        hashes = self.index.hashes(changed_paths)
        todo: list[tuple[str, bytes | None]] = [(p, None) for p in new]
        todo += [(p, hashes.get(p)) for p in changed_paths]
        todo.sort()

        busy_state: State = "building" if cold else "stale"
        changed = bool(todo or gone)
        if not changed and status.state == "ready" and status.fingerprint == self.fingerprint:
            db.release_memory(self.index.conn())
            report.elapsed_s = time.perf_counter() - t0
            report.generation = status.generation
            return report

        # Parsed notes are written as they arrive, in transactions of about ``every`` seconds,
        # so the writer overlaps with the parse process and a killed build keeps its work.
        with contextlib.ExitStack() as big, contextlib.ExitStack() as tx:
            if len(todo) > CHUNK:
                big.enter_context(db.build_cache(self.index.conn()))
                big.enter_context(memory.batch_collections())
            w: Batch | None = tx.enter_context(self.index.batch())
            assert w is not None
            w.set_state(busy_state)
            w.set_meta("fingerprint", self.fingerprint)
            if cold:
                w.defer_indexes()
            report.removed += w.delete_paths(gone)
            if cold or len(todo) > CHUNK:
                tx.close()  # say "building"/"stale" before the long part starts
                w = None
            opened = time.monotonic()
            every = commit_seconds()
            total, done = len(todo), 0
            for results in self._parse_all(todo, workers):
                if w is None:
                    w = tx.enter_context(self.index.batch())
                    opened = time.monotonic()
                self._write(w, results, report)
                done += len(results)
                if progress is not None:
                    progress(done, total)
                if time.monotonic() - opened >= every and done < total:
                    tx.close()
                    w = None
                    memory.collect_batch()
            if w is None:
                w = tx.enter_context(self.index.batch())
            if cold or report.full:
                w.refresh_all_topics()
                size = trigram.size_bytes(w.conn)
                if size is not None:
                    w.set_meta("trigram_bytes", size)
            w.set_state("ready")
            w.set_meta("fingerprint", self.fingerprint)
            w.set_meta("trigram_index", int(self.config.trigram_index))
        db.release_memory(self.index.conn())
        report.generation = self.index.status().generation
        report.elapsed_s = time.perf_counter() - t0
        return report

    def _diff(self, report: SyncReport) -> tuple[list[str], list[str], list[str]]:
        """The vault against the index: (new paths, paths whose mtime/size changed, paths
        gone), counting ``scanned`` and ``unchanged`` in ``report``.

        Both sides come in path order and are merged as they stream (the walk one folder at a
        time, the index through its path index), so only the differences are ever held, not a
        vault's worth of paths and stats. Should the two orders ever disagree, a path would
        show up both as new and as gone: it is then compared by content instead, so the result
        stays exact (only slower).
        """
        new: list[str] = []
        changed: list[str] = []
        gone: list[str] = []
        files = self.vault.walk_sorted()
        rows = self.index.stats_sorted()
        f = next(files, None)
        row = next(rows, None)
        scanned = unchanged = 0
        while f is not None or row is not None:
            if f == row:  # the same path, mtime and size: the common case, in one compare
                unchanged += 1
                scanned += 1
                f = next(files, None)
                row = next(rows, None)
            elif row is None or (f is not None and f.path < row[0]):
                assert f is not None
                new.append(f.path)
                scanned += 1
                f = next(files, None)
            elif f is None or row[0] < f.path:
                gone.append(row[0])
                row = next(rows, None)
            else:
                if row[1] == f.mtime_ns and row[2] == f.size:
                    unchanged += 1
                else:
                    changed.append(f.path)
                scanned += 1
                f = next(files, None)
                row = next(rows, None)
        report.scanned += scanned
        report.unchanged += unchanged
        if new and gone:
            both = set(new).intersection(gone)
            if both:
                new = [p for p in new if p not in both]
                gone = [p for p in gone if p not in both]
                changed += sorted(both)
        return new, changed, gone

    def _parse_all(
        self, todo: list[tuple[str, bytes | None]], workers: int | None
    ) -> Iterator[list[Result]]:
        root = os.fspath(self.vault.root)
        chunks = [todo[i : i + CHUNK] for i in range(0, len(todo), CHUNK)]
        n_workers = workers if workers is not None else default_workers()
        if n_workers <= 0 or len(todo) < PARALLEL_MIN:
            for chunk in chunks:
                memory.collect_batch()  # the previous chunk's garbage: it was written by now
                yield _read_chunk(root, chunk, self.config)
            return
        pool, self._early = self._early or self._new_pool(n_workers), None
        try:
            yield from _shared_parse(pool, root, chunks, self.config)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _write(self, b: Batch, results: list[Result], report: SyncReport) -> None:
        """Write what reading gave: new notes in bulk, changed ones one by one."""
        fresh: list[NoteRows] = []
        for rel, is_new, got in results:
            if got is None:
                report.removed += b.delete(rel)
            elif isinstance(got, Touched):
                b.touch(rel, got.mtime_ns, got.size, got.born_ns)
                report.touched += 1
            elif is_new:
                fresh.append(got)
            else:
                b.upsert(got)
                report.parsed += 1
        b.insert_new(fresh)
        report.parsed += len(fresh)

    # -- change batches --------------------------------------------------------------------

    def apply_changes(self, changes: Sequence[Change]) -> SyncReport:
        """Apply one batch of changes in one transaction (one generation step).

        Created and changed files are synced together (one stat each, one query for what the
        index holds, new notes written in bulk); a folder that a watcher reports as deleted
        and created elsewhere in the same batch is moved without re-parsing.
        """
        t0 = time.perf_counter()
        report = SyncReport()
        changes = self._pair_folder_moves(changes)
        with self.index.batch() as b:
            files: dict[str, None] = {}
            for change in changes:
                if change.kind in ("created", "changed"):
                    # Syncing a file makes its row agree with the disk whenever it runs:
                    # these wait for the next rename (which moves rows) or the end.
                    files[self.vault.rel(change.path)] = None
                    continue
                if change.kind == "renamed" and files:
                    self._sync_files(b, list(files), report)
                    files.clear()
                self._apply_one(b, change, report)
            self._sync_files(b, list(files), report)
        report.generation = self.index.status().generation
        report.elapsed_s = time.perf_counter() - t0
        return report

    def _pair_folder_moves(self, changes: Sequence[Change]) -> Sequence[Change]:
        """A folder moved on disk reaches a watcher as "deleted old" and "created new": such a
        pair becomes one rename (rows move, then the new folder is reconciled), placed first.

        A pair is a deleted path that is gone from disk but holds indexed notes and a created
        folder that holds none yet, where files named as the indexed ones exist; each
        deleted folder pairs with the created folder holding most of a sample of its notes.
        Wrongly paired folders would still end right (the reconcile of the new folder removes
        and parses what differs), only slower. Batches with explicit renames are left alone.
        """
        kinds = {c.kind for c in changes}
        if "deleted" not in kinds or "created" not in kinds or "renamed" in kinds:
            return changes
        vault = self.vault
        gone: list[tuple[str, list[str]]] = []
        for c in changes:
            if c.kind != "deleted":
                continue
            rel = vault.rel(c.path)
            if rel and not os.path.lexists(vault.abs(rel)):
                sample = self.index.sample_folder(rel, 16)
                if sample:
                    gone.append((rel, [p[len(rel) + 1 :] for p in sample]))
        if not gone:
            return changes
        moves: list[Change] = []
        for c in changes:
            if c.kind != "created" or not gone:
                continue
            rel = vault.rel(c.path)
            target = vault.abs(rel)
            if not rel or not target.is_dir() or self.index.has_folder(rel):
                continue
            scores = [sum(os.path.lexists(target / name) for name in names) for _, names in gone]
            best = max(range(len(gone)), key=scores.__getitem__)
            if scores[best]:
                moves.append(Change("renamed", gone.pop(best)[0], rel))
        return [*moves, *changes] if moves else changes

    def _apply_one(self, b: Batch, change: Change, report: SyncReport) -> None:
        vault = self.vault
        path = vault.rel(change.path)
        if change.kind == "renamed":
            if change.new_path is None:
                raise ValueError("a rename needs new_path")
            new = vault.rel(change.new_path)
            if vault.abs(new).is_dir() or self.index.has_folder(path):
                moved = b.move_folder(path, new)
                report.moved += len(moved)
                for p in moved:
                    if not vault.filter.is_note(p):
                        report.removed += b.delete(p)
                self._sync_folder(b, new, report)
            else:
                had_row = b.move(path, new)
                report.moved += had_row
                # The title or date may come from the file name: re-read the one file.
                self._sync_files(b, [new], report, force=True)
            return
        if change.kind == "deleted":
            target = vault.abs(path)
            if target.is_file():  # it came back (editors save by delete + create)
                self._sync_files(b, [path], report)
            elif target.is_dir():
                self._sync_folder(b, path, report)
            else:
                report.removed += b.delete(path)
                report.removed += b.delete_folder(path) if path else 0
            return
        raise ValueError(f"created and changed files go through _sync_files, not {change}")

    def _sync_files(
        self, b: Batch, rels: list[str], report: SyncReport, *, force: bool = False
    ) -> None:
        """Make the rows of these files agree with the disk: one stat each, one query for
        what the index holds, only new or changed files read (all of them with ``force``);
        a folder among them is reconciled, a file gone is deleted."""
        if not rels:
            return
        vault = self.vault
        stats: list[FileStat] = []
        for rel in rels:
            if os.path.isdir(vault.abs(rel)):
                self._sync_folder(b, rel, report)
                continue
            st = vault.stat(rel)
            if st is None:
                report.removed += b.delete(rel)
            else:
                stats.append(st)
        stored = self.index.fresh_many([st.path for st in stats])
        root = os.fspath(vault.root)
        results: list[Result] = []
        for st in stats:
            fresh = stored.get(st.path)
            if (
                fresh is not None
                and not force
                and (fresh.mtime_ns, fresh.size) == (st.mtime_ns, st.size)
            ):
                report.unchanged += 1
                continue
            known = None if force or fresh is None else fresh.hash
            results.append(read_rows(root, st.path, self.config, known))
        self._write(b, results, report)

    def _sync_folder(self, b: Batch, folder: str, report: SyncReport) -> None:
        """Reconcile one folder inside the current transaction (stat-only for unchanged)."""
        stored = self.index.stats(folder)
        seen: set[str] = set()
        changed: list[str] = []
        new: list[str] = []
        for f in self.vault.walk(folder):
            seen.add(f.path)
            had = stored.get(f.path)
            if had == (f.mtime_ns, f.size):
                report.unchanged += 1
            elif had is None:
                new.append(f.path)
            else:
                changed.append(f.path)
        hashes = self.index.hashes(changed)
        root = os.fspath(self.vault.root)
        todo = sorted([(p, None) for p in new] + [(p, hashes.get(p)) for p in changed])
        self._write(b, [read_rows(root, p, self.config, known) for p, known in todo], report)
        for p in stored:
            if p not in seen:
                report.removed += b.delete(p)

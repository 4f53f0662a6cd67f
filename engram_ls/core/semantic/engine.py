"""Search by meaning for one vault: the model, the embedding passes, what status says.

``Semantic`` is owned by the service (``core/service.py``). Its model is loaded on first use
(a failure is kept and reported: state ``failed`` with the reason; the other modes never
depend on it). ``embed_pending`` embeds the notes whose chunks are missing or out of date, a
batch at a time, each batch its own short write transaction under the index's lock: queries
are never held, a killed pass keeps what it committed, and the next pass goes on from there.
Texts whose vectors the index already has (an unchanged section, a renamed folder, a rebuilt
index) are not embedded again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import EngramError, IndexUnavailable, UnsupportedMode
from engram_ls.core.index import db
from engram_ls.core.semantic import store
from engram_ls.core.semantic.model import (
    ModelError,
    ModelFiles,
    StaticModel,
    files_key,
    load_model,
    missing_packages,
    model_files,
    unavailable_error,
)
from engram_ls.core.serialize import rounded

if TYPE_CHECKING:
    from engram_ls.core.health import IndexHealth
    from engram_ls.core.index.snapshot_cache import SnapshotCache
    from engram_ls.core.semantic.days import NoteDays
    from engram_ls.core.semantic.vectors import CodeTable

log = logging.getLogger(__name__)
SemanticState = Literal["off", "unavailable", "pending", "embedding", "ready", "failed"]
BATCH_NOTES = 64
"""Notes read, embedded and written per transaction (about 40 ms of work each)."""
CODES_BATCH = 4096
"""Codes lengthened per transaction (``Semantic._lengthen_codes``)."""
ProgressFn = Callable[[int, int], None]
GIVE_WAY_S = 1.0
"""Longest wait of a pass between two batches while searches are coming."""


@dataclass(frozen=True, slots=True)
class SemanticStatus:
    """``semantic`` of a status answer."""

    state: SemanticState
    """``off`` (config), ``unavailable`` (no extra), ``pending`` (notes wait to be
    embedded), ``embedding`` (a pass is running), ``ready`` (every note embedded), ``failed``
    (the model could not be loaded: ``error``)."""
    available: bool
    model: str | None = None
    dims: int | None = None
    notes: int = 0
    embedded: int = 0
    """Notes whose chunks are of their current content."""
    chunks: int = 0
    error: str | None = None


@dataclass(slots=True)
class EmbedReport:
    notes: int = 0
    """Notes whose chunks were written."""
    chunks: int = 0
    embedded: int = 0
    """Texts the model embedded (the others' vectors were in the index)."""
    reused: int = 0
    collected: int = 0
    elapsed_s: float = field(default=0.0, metadata=rounded(3))
    stopped: bool = False


NoteReader = Callable[[str, str, EngramConfig], "tuple[object, bytes, object, bytes, int] | None"]


class Semantic:
    """The semantic part of one vault's service."""

    def __init__(
        self, root: Path, config: EngramConfig, health: IndexHealth, reader: NoteReader
    ) -> None:
        self.root = root
        self.config = config
        self.health = health
        self.reader = reader
        self._model: StaticModel | None = None
        self._error: str | None = None
        self._lock = threading.Lock()
        self.running = False
        self._table: CodeTable | None = None
        self._pass = threading.Lock()
        self.busy: Callable[[], bool] | None = None
        """True while searches are coming: a pass then waits between batches (the batches'
        Python work would hold the interpreter's lock against them)."""
        self._coverage: tuple[tuple[object, ...], str] | None = None
        self.synced: tuple[object, int] | None = None
        """(index file, generation) at the start of the last pass that embedded everything."""
        self._days: SnapshotCache[int, NoteDays] | None = None

    # -- the model -------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.config.semantic.enabled

    @property
    def available(self) -> bool:
        """Whether semantic and hybrid can be asked for (extra installed, enabled, no failure)."""
        return self.enabled and not missing_packages() and self._error is None

    def model(self) -> StaticModel:
        """The model, loaded once; the error of a search that cannot have it."""
        if not self.enabled:
            raise UnsupportedMode(
                "semantic search is turned off in this vault's configuration"
                " (semantic.enabled: false)",
                data={"config": "semantic.enabled"},
            )
        if missing_packages():
            raise unavailable_error()
        with self._lock:
            if self._model is None and self._error is None:
                try:
                    self._model = load_model(self.config.semantic.model, self.root)
                except ModelError as exc:
                    self._error = exc.message
                    log.warning("semantic search failed: %s", exc.message)
            if self._model is None:
                raise unavailable_error(f"the semantic model could not be loaded: {self._error}")
            return self._model

    @functools.cached_property
    def _files(self) -> ModelFiles | ModelError:
        """Where the configured model's files are (looked up once: every status asks)."""
        try:
            return model_files(self.config.semantic.model, self.root)
        except ModelError as exc:
            return exc

    def _configured_name(self) -> str | ModelError:
        files = self._files
        return files if isinstance(files, ModelError) else files.name

    def _expected_key(self) -> str | None:
        """The key of the configured model (from its files, without loading it); None when
        its files cannot be read."""
        if self._model is not None:
            return self._model.key
        files = self._files
        if isinstance(files, ModelError):
            return None
        try:
            return files_key(files)
        except OSError:
            return None

    def coverage(
        self, conn: sqlite3.Connection, state: tuple[object, ...], model_key: str | None
    ) -> str:
        """``ready`` when every note's chunks are of its content and of this model in the
        snapshot ``conn`` reads (``state``: index file, generation, semantic generation), else
        ``pending``: known from the last pass when it covered this state, else looked up once
        per state (a scan of the notes: 30 ms at 100,000)."""
        cached = self._coverage
        if cached is not None and cached[0] == state:
            return cached[1]
        if model_key != self._expected_key():
            answer = "pending"
        elif self.synced is not None and self.synced == state[:2]:
            answer = "ready"  # a pass that embedded everything started from this generation
        else:
            answer = "pending" if store.pending(conn, 0, 1) else "ready"
        self._coverage = (state, answer)
        return answer

    def fail(self, reason: str) -> None:
        """Turn search by meaning off for this process, with the reason (status ``failed``)."""
        self._error = reason

    def days(self) -> SnapshotCache[int, NoteDays]:
        """Every note's date in memory, per index state (``core/semantic/days.py``)."""
        if self._days is None:
            from engram_ls.core.semantic.days import days_cache

            self._days = days_cache(self.health.index)
        return self._days

    def close(self) -> None:
        """Stop reading in the background (the index is being closed)."""
        if self._days is not None:
            self._days.clear()

    def table(self) -> CodeTable:
        if self._table is None:
            from engram_ls.core.semantic.vectors import CodeTable

            self._table = CodeTable()
        return self._table

    # -- status ----------------------------------------------------------------------------

    def status(self, conn: sqlite3.Connection | None) -> SemanticStatus:
        """What search by meaning can do now; reads counts from ``conn`` (a read transaction)
        when given. The model need not be loaded: the index says which model its chunks are
        of (``meta``), and the configured model's name is known from its files' place."""
        if not self.enabled:
            return SemanticStatus(state="off", available=False)
        if missing_packages():
            return SemanticStatus(
                state="unavailable", available=False, error=str(unavailable_error().message)
            )
        if self._error is not None:
            return SemanticStatus(state="failed", available=False, error=self._error)
        m = self._model
        name = m.name if m else self._configured_name()
        if isinstance(name, ModelError):  # the default model's package is missing
            return SemanticStatus(state="unavailable", available=False, error=name.message)
        base = SemanticStatus(
            state="pending", available=True, model=name, dims=m.dims if m else None
        )
        if conn is None:
            return base
        key = store.model_key(conn)
        current = key is not None and key == self._expected_key()
        notes, done, chunks = store.counts(conn)
        if not current:
            done = chunks = 0
        state: SemanticState = "pending"
        if self.running:
            state = "embedding"
        elif current and done == notes:
            state = "ready"
        dims = m.dims if m else (store.dims(conn) if current else None)
        return dataclasses.replace(
            base, state=state, notes=notes, embedded=done, chunks=chunks, dims=dims
        )

    # -- embedding -------------------------------------------------------------------------

    def embed_pending(
        self,
        *,
        progress: ProgressFn | None = None,
        stop: threading.Event | None = None,
        most: int | None = None,
    ) -> EmbedReport:
        """Embed every note whose chunks are missing or out of date (see the module's doc),
        or the first ``most`` of them. One pass at a time (a second caller waits). Raises
        the model's error (UnsupportedMode) or IndexUnavailable."""
        model = self.model()
        with self._pass:
            return self._pass_locked(model, progress, stop, most)

    def catch_up(self) -> None:
        """Embed a few notes changed since the last pass before a search by meaning reads,
        so that an edit is found at once; left to the background pass when one is running
        or more than a batch is pending."""
        if self.synced is not None and self.synced == self._now():
            return
        if not self._pass.acquire(blocking=False):
            return
        try:
            self._pass_locked(self.model(), None, None, BATCH_NOTES, polite=False)
        except EngramError as exc:
            log.info("embedding before a search failed: %s", exc.message)
        finally:
            self._pass.release()

    def _now(self) -> tuple[object, int] | None:
        st = self.health.status()
        if st.state not in ("ready", "stale"):
            return None
        return (self.health.index.opened_file(), st.generation)

    def _pass_locked(
        self,
        model: StaticModel,
        progress: ProgressFn | None,
        stop: threading.Event | None,
        most: int | None,
        *,
        polite: bool = True,
    ) -> EmbedReport:
        """One pass (the caller holds ``_pass``); ``polite``: give way to searches between
        batches (not when a search itself asked for the pass)."""
        report = EmbedReport()
        t0 = time.perf_counter()
        self.running = True
        total = finished = 0
        start = self._now()
        bulk = contextlib.ExitStack()
        bulky = False
        try:
            conn = self._writer()
            with self.health.lock, db.write_tx(conn):
                store.use_model(conn, model.key, model.dims)
            if progress is not None:
                notes, done, _ = store.counts(conn)
                total = notes - done
                if total > 0:
                    progress(0, total)
            after = 0
            while True:
                if (stop is not None and stop.is_set()) or (most is not None and finished >= most):
                    report.stopped = True
                    break
                if polite:
                    self._give_way(stop)
                rows = store.pending(conn, after, BATCH_NOTES)
                if not rows:
                    break
                after = rows[-1][0]
                if len(rows) == BATCH_NOTES and not bulky:
                    bulk.enter_context(model.bulk())  # many notes to embed: the faster table
                    bulky = True
                self._batch(model, conn, rows, report)
                finished += len(rows)
                if progress is not None:
                    progress(min(finished, total), total)
            if not report.stopped and store.has_orphans(conn):
                with self.health.lock, db.write_tx(conn):
                    report.collected = store.collect(conn)
            if not report.stopped and most is None and not store.codes_long(conn):
                # after the collection: orphans' codes are never read, so never lengthened
                report.stopped = not self._lengthen_codes(conn, stop, polite)
            if not report.stopped:
                self.synced = start
        except sqlite3.DatabaseError as exc:
            reason = db.damage(exc)
            if reason is not None:
                self.health.recover_quietly(reason, str(exc))
            raise IndexUnavailable(f"embedding stopped: {exc}") from exc
        finally:
            bulk.close()
            if bulky:
                from engram_ls.core.memory import give_back

                give_back()  # the float32 table and the batches' garbage
            self.running = False
            if progress is not None and finished < total:
                progress(total, total)  # the pass ended (stopped or failed): no progress left open
        report.elapsed_s = time.perf_counter() - t0
        return report

    def _lengthen_codes(
        self, conn: sqlite3.Connection, stop: threading.Event | None, polite: bool
    ) -> bool:
        """Give the chunks of an index written before the magnitude bits their long codes,
        made from their stored vectors (no note is read or embedded), a batch a transaction;
        False when stopped (the next pass goes on from there). Until then the in-memory table
        makes those bits from the vectors each time it reads the chunks (slower)."""
        from engram_ls.core.semantic.bits import chunk_codes, from_blobs

        after = 0
        while True:
            if stop is not None and stop.is_set():
                return False
            if polite:
                self._give_way(stop)
            rows = store.short_codes(conn, after, CODES_BATCH)
            if not rows:
                break
            codes = chunk_codes(from_blobs([v for _, v in rows]))
            with self.health.lock, db.write_tx(conn):
                store.set_codes(conn, zip([i for i, _ in rows], codes, strict=True))
            after = rows[-1][0]
        with self.health.lock, db.write_tx(conn):
            store.mark_codes_long(conn)
        return True

    def _give_way(self, stop: threading.Event | None) -> None:
        """Wait (up to ``GIVE_WAY_S``) while searches are coming."""
        waited = 0.0
        while self.busy is not None and self.busy() and waited < GIVE_WAY_S:
            if stop is not None and stop.wait(0.02):
                return
            if stop is None:
                time.sleep(0.02)
            waited += 0.02

    def _batch(
        self,
        model: StaticModel,
        conn: sqlite3.Connection,
        rows: list[tuple[int, str]],
        report: EmbedReport,
    ) -> None:
        """Read, chunk and embed one batch of notes and write it in one transaction (the
        vectors of texts the index has are taken from it, not embedded again)."""
        from engram_ls.core.semantic.bits import chunk_codes, from_blobs, to_blob
        from engram_ls.core.semantic.chunks import chunk_key, chunk_note

        root = os.fspath(self.root)
        made: list[tuple[int, str, bytes, list[tuple[int, bytes, str]]]] = []
        texts: dict[bytes, str] = {}
        for note_id, path in rows:
            parsed = self.reader(root, path, self.config)
            if parsed is None:
                continue  # gone or unreadable: the main index deletes its row
            _, digest, note, _, _ = parsed
            chunks = chunk_note(note)  # type: ignore[arg-type]
            keyed = [(chunk_key(model.key, c.text), c) for c in chunks]
            made.append((note_id, path, digest, [(c.line, k, c.snippet) for k, c in keyed]))
            texts.update((k, c.text) for k, c in keyed)
            report.chunks += len(chunks)
        keys = list(texts)
        known = store.known_vectors(conn, keys)
        todo = [k for k in keys if k not in known]
        fresh = dict(zip(todo, to_blob(model.embed([texts[k] for k in todo])), strict=True))
        report.embedded += len(todo)
        report.reused += len(keys) - len(todo)
        blobs = {**known, **fresh}
        order = list(blobs)
        codes = dict(zip(order, chunk_codes(from_blobs([blobs[k] for k in order])), strict=True))
        notes = [
            store.NoteChunks(nid, path, digest, [(ln, k, codes[k], snip) for ln, k, snip in cs])
            for nid, path, digest, cs in made
        ]
        with self.health.lock, db.write_tx(conn):
            report.notes += store.write(conn, notes, blobs)

    def _writer(self) -> sqlite3.Connection:
        if self.health.index.read_only:
            raise IndexUnavailable("the index was opened read-only")
        if not self.health.readable:
            raise IndexUnavailable("the index is not open")
        return self.health.index.conn()


__all__ = ["EmbedReport", "Semantic", "SemanticStatus"]

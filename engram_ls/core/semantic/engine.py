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
from engram_ls.core.errors import EngramError
from engram_ls.core.index import db
from engram_ls.core.semantic import store
from engram_ls.core.semantic.model import (
    ModelError,
    StaticModel,
    load_model,
    missing_packages,
    unavailable_error,
)
from engram_ls.core.serialize import rounded

if TYPE_CHECKING:
    from engram_ls.core.health import IndexHealth
    from engram_ls.core.semantic.vectors import CodeTable

log = logging.getLogger(__name__)
SemanticState = Literal["off", "unavailable", "idle", "embedding", "ready", "failed"]
BATCH_NOTES = 64
"""Notes read, embedded and written per transaction (about 40 ms of work each)."""
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class SemanticStatus:
    """``semantic`` of a status answer."""

    state: SemanticState
    """``off`` (config), ``unavailable`` (no extra), ``idle`` (model not loaded yet),
    ``embedding`` (a pass is running), ``ready`` (every note embedded), ``failed``."""
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


NoteReader = Callable[[str, str, EngramConfig], "tuple[object, bytes, object, bytes] | None"]


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
            raise unavailable_error("semantic search is turned off (config semantic.enabled)")
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

    def table(self) -> CodeTable:
        if self._table is None:
            from engram_ls.core.semantic.vectors import CodeTable

            self._table = CodeTable()
        return self._table

    # -- status ----------------------------------------------------------------------------

    def status(self, conn: sqlite3.Connection | None) -> SemanticStatus:
        if not self.enabled:
            return SemanticStatus(state="off", available=False)
        if missing_packages():
            return SemanticStatus(
                state="unavailable", available=False, error=str(unavailable_error().message)
            )
        m = self._model
        base = SemanticStatus(
            state="idle",
            available=self._error is None,
            model=m.name if m else None,
            dims=m.dims if m else None,
            error=self._error,
        )
        if self._error is not None:
            return _with(base, state="failed")
        if conn is None:
            return base
        notes, done, chunks = store.counts(conn)
        current = m is not None and store.model_key(conn) == m.key
        state: SemanticState = "idle" if m is None else "ready"
        if m is not None and (self.running or not current or done < notes):
            state = "embedding" if self.running else "idle"
        return _with(
            base,
            state=state,
            notes=notes,
            embedded=done if current or m is None else 0,
            chunks=chunks,
        )

    # -- embedding -------------------------------------------------------------------------

    def embed_pending(
        self, *, progress: ProgressFn | None = None, stop: threading.Event | None = None
    ) -> EmbedReport:
        """Embed every note whose chunks are missing or out of date (see the module's doc).
        Raises the model's error (UnsupportedMode) or IndexUnavailable-like EngramErrors."""
        model = self.model()
        report = EmbedReport()
        t0 = time.perf_counter()
        self.running = True
        try:
            conn = self._writer()
            with self.health.lock, db.write_tx(conn):
                store.use_model(conn, model.key)
            notes, done, _ = store.counts(conn)
            total, finished = notes - done, 0
            after = 0
            replaced = False
            while True:
                if stop is not None and stop.is_set():
                    report.stopped = True
                    break
                rows = store.pending(conn, after, BATCH_NOTES)
                if not rows:
                    break
                after = rows[-1][0]
                replaced |= self._batch(model, conn, rows, report)
                finished += len(rows)
                if progress is not None:
                    progress(min(finished, total), total)
            if replaced and not report.stopped:
                with self.health.lock, db.write_tx(conn):
                    report.collected = store.collect(conn)
        except sqlite3.DatabaseError as exc:
            reason = db.damage(exc)
            if reason is not None:
                self.health.recover_quietly(reason, str(exc))
            raise EmbedFailed(f"embedding stopped: {exc}") from exc
        finally:
            self.running = False
        report.elapsed_s = time.perf_counter() - t0
        return report

    def _batch(
        self,
        model: StaticModel,
        conn: sqlite3.Connection,
        rows: list[tuple[int, str]],
        report: EmbedReport,
    ) -> bool:
        """Read, chunk and embed one batch of notes and write it in one transaction; True
        when chunks that had vectors were replaced (vectors may have lost their last use)."""
        from engram_ls.core.semantic.chunks import chunk_key, chunk_note
        from engram_ls.core.semantic.vectors import code_of, from_blobs, to_blob

        root = os.fspath(self.root)
        made: list[tuple[int, str, bytes, list[tuple[int, bytes, str]]]] = []
        texts: dict[bytes, str] = {}
        for note_id, path in rows:
            parsed = self.reader(root, path, self.config)
            if parsed is None:
                continue  # gone or unreadable: the main index deletes its row
            _, digest, note, _ = parsed
            chunks = chunk_note(note)  # type: ignore[arg-type]
            made.append(
                (
                    note_id,
                    path,
                    digest,
                    [(c.line, chunk_key(model.key, c.text), c.snippet) for c in chunks],
                )
            )
            texts.update((chunk_key(model.key, c.text), c.text) for c in chunks)
            report.chunks += len(chunks)
        keys = list(texts)
        known = store.known_vectors(conn, keys)
        todo = [k for k in keys if k not in known]
        fresh = dict(zip(todo, to_blob(model.embed([texts[k] for k in todo])), strict=True))
        report.embedded += len(todo)
        report.reused += len(keys) - len(todo)
        blobs = {**known, **fresh}
        order = list(blobs)
        codes = dict(zip(order, code_of(from_blobs([blobs[k] for k in order])), strict=True))
        notes = [
            store.NoteChunks(nid, path, digest, [(ln, k, codes[k], snip) for ln, k, snip in cs])
            for nid, path, digest, cs in made
        ]
        with self.health.lock, db.write_tx(conn):
            marks = ",".join("?" * len(rows))
            had = conn.execute(
                f"SELECT count(*) FROM embedded WHERE note_id IN ({marks})", [r[0] for r in rows]
            ).fetchone()[0]
            report.notes += store.write(conn, notes, fresh)
        return bool(had)

    def _writer(self) -> sqlite3.Connection:
        if self.health.index.read_only:
            raise EmbedFailed("the index was opened read-only")
        if not self.health.readable:
            raise EmbedFailed("the index is not open")
        return self.health.index.conn()


class EmbedFailed(EngramError):
    code = "ENGRAM_INDEX_UNAVAILABLE"


def _with(s: SemanticStatus, **changes: object) -> SemanticStatus:
    import dataclasses

    return dataclasses.replace(s, **changes)  # type: ignore[arg-type]


__all__ = ["EmbedFailed", "EmbedReport", "Semantic", "SemanticStatus"]

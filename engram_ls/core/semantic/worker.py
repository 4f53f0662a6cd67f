"""The servers' background embedding: ``EmbeddingWorker``, a thread that keeps the vectors
of one vault in line with its index.

It runs a pass (``Engram.embed``) once the index is ready, then whenever the index's generation
moves (a save, a watcher batch, another process's write) or ``kick`` is called, each time at a
quiet moment: a second without changes or searches (at most ten after the change). A pass that
finds nothing to do costs a few counts; one that does reports ``progress(done, total)`` (the
language server turns it into work-done progress). ``stop`` ends a pass between two batches.
A model that cannot be loaded ends the thread (status says ``failed`` with the reason); an
index that cannot be written is tried again at the next change.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from engram_ls.core.background import Background
from engram_ls.core.backoff import Backoff
from engram_ls.core.errors import EngramError, UnsupportedMode
from engram_ls.core.semantic.engine import EmbedReport
from engram_ls.core.service import Engram

log = logging.getLogger(__name__)
TICK_S = 0.25
"""How often the thread looks whether the index moved."""
QUIET_S = 1.0
MAX_WAIT_S = 10.0


class EmbeddingWorker(Background):
    def __init__(
        self,
        engram: Engram,
        *,
        progress: Callable[[int, int], None] | None = None,
        done: Callable[[EmbedReport], None] | None = None,
    ) -> None:
        super().__init__("engram-embed", self._run)
        self.engram = engram
        self.progress = progress
        self.done = done
        self._kick = threading.Event()
        self.passes = 0

    def stop(self) -> None:
        super().stop()
        self._kick.set()

    def kick(self) -> None:
        """Look for work now (after changes were applied)."""
        self._kick.set()

    def _quiet(self, moved: float) -> bool:
        """Whether a pass may start: no change and no search for ``QUIET_S`` (a server's first
        seconds and a burst of edits belong to the editor), or ``MAX_WAIT_S`` since the change."""
        now = time.monotonic()
        if now - moved >= MAX_WAIT_S:
            return True
        return now - moved >= QUIET_S and now - self.engram.last_search >= QUIET_S

    def _generation(self) -> int | None:
        st = self.engram.health.status()
        return st.generation if st.state in ("ready", "stale") else None

    def _run(self) -> None:
        if not self.engram.semantic.enabled:
            return
        seen: int | None = None
        """The generation the last finished pass started from."""
        observed: int | None = None
        moved = time.monotonic()
        """When the index last moved (or a kick came): a pass waits for a quiet moment."""
        due = True
        backoff = Backoff()
        retry_at = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            if self._kick.is_set():
                self._kick.clear()
                moved, due = now, True
            gen = self._generation()
            if gen is not None and gen != observed:
                if observed is not None:
                    moved = now
                observed = gen
            ready = gen is not None and (gen != seen or due) and now >= retry_at
            if ready and self._quiet(moved):
                due = False
                try:
                    report = self.engram.embed(progress=self.progress, stop=self._stop)
                except UnsupportedMode as exc:
                    log.warning("search by meaning is off for %s: %s", self.engram.vault.root, exc)
                    return
                except EngramError as exc:
                    retry_at = time.monotonic() + backoff.failed()
                    log.info(
                        "embedding in %s stopped (tried again later): %s",
                        self.engram.vault.root,
                        exc,
                    )
                except Exception as exc:  # a defect, or a model failing on some text
                    log.exception("embedding in %s failed", self.engram.vault.root)
                    self.engram.semantic.fail(f"embedding failed: {exc!r}")
                    return
                else:
                    backoff.succeeded()
                    seen = gen
                    self.passes += 1
                    self.engram.prepare_semantic()
                    if self.done is not None:
                        self.done(report)
            self._kick.wait(TICK_S)


__all__ = ["EmbeddingWorker"]

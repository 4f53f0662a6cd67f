"""Watching a vault for changes made by anyone (editors, git, scripts, agents).

``VaultWatcher`` runs watchfiles (Rust notify) in a daemon thread and applies each debounced
batch of events with ``Engram.apply_changes``. Used by servers whose clients do not report file
changes themselves.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from engram_ls.core.background import Background
from engram_ls.core.backoff import Backoff
from engram_ls.core.errors import EngramError
from engram_ls.core.service import Engram
from engram_ls.core.sync import Change, ChangeKind

log = logging.getLogger(__name__)
RESTART_S = 0.5
"""How often a watch wakes up without events: to notice a deleted vault folder, to retry."""


def interesting(rel_path: str, is_dir: bool = False) -> bool:
    """Notes, and folders (their renames and deletions move notes); never hidden paths."""
    parts = Path(rel_path).parts
    if not parts or any(p.startswith(".") or p == "node_modules" for p in parts):
        return False
    return is_dir or parts[-1].endswith(".md") or "." not in parts[-1]


class VaultWatcher(Background):
    """Watches one vault; each batch goes to ``on_changes`` (default: apply it at once)."""

    def __init__(
        self,
        engram: Engram,
        debounce_ms: int = 50,
        on_changes: Callable[[list[Change]], object] | None = None,
    ) -> None:
        super().__init__("engram-watch", self._run)
        self.engram = engram
        self.debounce_ms = debounce_ms
        self.on_changes = on_changes

    def _run(self) -> None:
        """Watch until stopped. A vault folder that is deleted ends a watch (the kernel drops
        it), so the loop waits for the folder to come back, watches it again and reports the
        whole folder as changed (a reconcile)."""
        root = str(self.engram.vault.root)
        first = True
        while not self._stop.is_set():
            if not os.path.isdir(root):
                self._stop.wait(RESTART_S)
                continue
            if not first:
                log.info("watching %s again", root)
                self._deliver([Change("changed", root)])
            first = False
            try:
                self._watch(root)
            except Exception:  # the watcher must never take the server down
                log.exception("watching %s failed", root)
                self._stop.wait(RESTART_S)

    def _watch(self, root: str) -> None:
        from watchfiles import Change as WChange
        from watchfiles import watch

        kinds: dict[WChange, ChangeKind] = {
            WChange.added: "created",
            WChange.modified: "changed",
            WChange.deleted: "deleted",
        }

        def keep(change: WChange, path: str) -> bool:
            return interesting(os.path.relpath(path, root), os.path.isdir(path))

        retry_at = 0.0
        backoff = Backoff()
        for batch in watch(
            root,
            watch_filter=keep,
            debounce=self.debounce_ms,
            step=20,
            stop_event=self._stop,
            yield_on_timeout=True,
            rust_timeout=int(RESTART_S * 1000),
        ):
            if batch:
                self._deliver([Change(kinds[c], p) for c, p in sorted(batch)])
            if not os.path.isdir(root):
                return  # deleted: this watch sees nothing more
            if self.on_changes is None and self.engram.behind is not None:
                # An update failed earlier (lock, full disk): reconcile with back-off.
                now = time.monotonic()
                if now >= retry_at:
                    try:
                        self.engram.catch_up()
                        backoff.succeeded()
                    except EngramError as exc:
                        log.info("the index is still behind: %s", exc)
                        backoff.failed()
                    retry_at = now + backoff.delay

    def _deliver(self, changes: list[Change]) -> None:
        if self.on_changes is not None:
            self.on_changes(changes)
            return
        try:
            self.engram.apply_changes(changes)
        except EngramError as exc:
            log.warning("could not apply %d changes: %s", len(changes), exc)

"""Watching a vault for changes made by anyone (editors, git, scripts, agents).

``VaultWatcher`` runs watchfiles (Rust notify) in a daemon thread and applies each debounced
batch of events with ``Engram.apply_changes``. Used by servers whose clients do not report file
changes themselves.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from engram_ls.core.errors import EngramError
from engram_ls.core.service import Engram
from engram_ls.core.sync import Change, ChangeKind

log = logging.getLogger(__name__)


def interesting(rel_path: str, is_dir: bool = False) -> bool:
    """Notes, and folders (their renames and deletions move notes); never hidden paths."""
    parts = Path(rel_path).parts
    if not parts or any(p.startswith(".") or p == "node_modules" for p in parts):
        return False
    return is_dir or parts[-1].endswith(".md") or "." not in parts[-1]


class VaultWatcher:
    """Watches one vault; each batch goes to ``on_changes`` (default: apply it at once)."""

    def __init__(
        self,
        engram: Engram,
        debounce_ms: int = 50,
        on_changes: Callable[[list[Change]], object] | None = None,
    ) -> None:
        self.engram = engram
        self.debounce_ms = debounce_ms
        self.on_changes = on_changes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="engram-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        from watchfiles import Change as WChange
        from watchfiles import watch

        root = str(self.engram.vault.root)
        kinds: dict[WChange, ChangeKind] = {
            WChange.added: "created",
            WChange.modified: "changed",
            WChange.deleted: "deleted",
        }

        def keep(change: WChange, path: str) -> bool:
            return interesting(os.path.relpath(path, root), os.path.isdir(path))

        try:
            for batch in watch(
                root,
                watch_filter=keep,
                debounce=self.debounce_ms,
                step=20,
                stop_event=self._stop,
                yield_on_timeout=False,
            ):
                changes = [Change(kinds[c], p) for c, p in sorted(batch)]
                if self.on_changes is not None:
                    self.on_changes(changes)
                    continue
                try:
                    self.engram.apply_changes(changes)
                except EngramError as exc:
                    log.warning("could not apply %d changes: %s", len(changes), exc)
        except Exception:  # the watcher must never take the server down
            log.exception("watching %s stopped", root)

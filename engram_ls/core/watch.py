"""Watching a vault for changes made by anyone (editors, git, scripts, agents).

``VaultWatcher`` runs watchfiles (Rust notify) in a daemon thread and applies each debounced
batch of events with ``Engram.apply_changes``. Used by servers whose clients do not report file
changes themselves.

Each folder is watched on its own (notify's non-recursive mode), from a list of the vault's
folders (``folders``: one ``scandir`` per folder, no stat of any file). Notify's recursive mode
walks the whole vault itself, stat-ing every file, inside the constructor and holding the GIL
(0.33-0.65 s at 100,000 notes, during which no other thread of the server runs); a watch of
the 290 folders of that vault holds it for about 40 ms. A folder created, deleted or moved
changes the list: a new watch of the new list is set up (before the old one is closed, so no
event falls between them) and each new folder is reported as changed, which reconciles the
files made in it before its watch began.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from engram_ls.core.background import Background
from engram_ls.core.backoff import Backoff
from engram_ls.core.errors import EngramError
from engram_ls.core.service import Engram
from engram_ls.core.sync import Change, ChangeKind

if TYPE_CHECKING:
    from watchfiles._rust_notify import RustNotify

log = logging.getLogger(__name__)
RESTART_S = 0.5
"""How often a watch wakes up without events: to notice a deleted vault folder, to retry."""
STEP_MS = 20
"""Quiet time that ends a batch of events early (before the debounce)."""
_KINDS: dict[int, ChangeKind] = {1: "created", 2: "changed", 3: "deleted"}
"""watchfiles' raw change codes (``watchfiles.Change``: added, modified, deleted)."""


def interesting(rel_path: str, is_dir: bool = False) -> bool:
    """Notes, and folders (their renames and deletions move notes); never hidden paths."""
    parts = Path(rel_path).parts
    if not parts or any(p.startswith(".") or p == "node_modules" for p in parts):
        return False
    return is_dir or parts[-1].endswith(".md") or "." not in parts[-1]


def _skipped(name: str) -> bool:
    return name.startswith(".") or name == "node_modules"


def folders(root: str) -> list[str]:
    """``root`` and every folder under it that the watch covers (not hidden, not
    ``node_modules``), never entering a symlinked folder (the vault's walk does not either).

    A folder whose link count is 2 has no sub-folders (each sub-folder's ``..`` is one link)
    and is not listed: in a vault most folders hold notes only, so the vault's files are not
    read twice at start-up (100,000 notes in 290 folders: 34 folders listed instead of all,
    about 5 ms instead of 80-110 ms). This is trusted only where the root's own link count
    agrees with the sub-folders listed (file systems such as btrfs always count 1), and only
    on the root's device."""
    found = [root]
    try:
        top = os.stat(root)
    except OSError:
        return found
    todo = [root]
    trusted: bool | None = None
    while todo:
        path = todo.pop()
        subdirs: list[tuple[str, os.stat_result | None]] = []
        links = 0
        try:
            with os.scandir(path) as it:
                for entry in it:
                    try:
                        if not entry.is_dir(follow_symlinks=False):
                            continue
                    except OSError:
                        continue
                    links += 1
                    if _skipped(entry.name):
                        continue
                    try:
                        st: os.stat_result | None = entry.stat(follow_symlinks=False)
                    except OSError:
                        st = None
                    subdirs.append((entry.path, st))
        except OSError:  # gone or unreadable meanwhile: not watched (nor walked)
            continue
        if trusted is None:
            trusted = top.st_nlink == 2 + links
        for sub, st in subdirs:
            found.append(sub)
            leaf = trusted and st is not None and st.st_dev == top.st_dev and st.st_nlink == 2
            if not leaf:
                todo.append(sub)
    return found


def _notify(paths: list[str]) -> RustNotify:
    """A watch of each of ``paths`` (not of their sub-folders); a folder that cannot be
    watched (permission denied) is left out instead of failing the whole watch."""
    from watchfiles._rust_notify import RustNotify

    return RustNotify(paths, False, False, 300, False, True)


class VaultWatcher(Background):
    """Watches one vault; each batch goes to ``on_changes`` (default: apply it at once).

    ``established`` is set once the first watch is in place (or could not be set up), so a
    reconcile that starts after it misses nothing: a change before the watch is on disk when
    the reconcile walks, a change after it is an event."""

    def __init__(
        self,
        engram: Engram,
        debounce_ms: int = 50,
        on_changes: Callable[[list[Change]], object] | None = None,
        on_applied: Callable[[list[Change]], object] | None = None,
    ) -> None:
        super().__init__("engram-watch", self._run)
        self.engram = engram
        self.debounce_ms = debounce_ms
        self.on_changes = on_changes
        self.on_applied = on_applied
        """Told each batch after the watcher applied it itself (``on_changes`` None), on the
        watcher's thread: what the MCP server's subscriptions hear."""
        self.established = threading.Event()

    def wait_established(self, timeout: float = 10.0) -> bool:
        """Block until the first watch is in place (or failed); False after ``timeout``."""
        return self.established.wait(timeout)

    def _run(self) -> None:
        """Watch until stopped. A vault folder that is deleted ends a watch (the kernel drops
        it), so the loop waits for the folder to come back, watches it again and reports the
        whole folder as changed (a reconcile)."""
        root = str(self.engram.vault.root)
        first = True
        while not self._stop.is_set():
            if not os.path.isdir(root):
                self.established.set()  # nothing to watch: no one waits for it
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
            finally:
                self.established.set()

    def _watch(self, root: str) -> None:
        watched = folders(root)
        notify = _notify(watched)
        self.established.set()
        retry_at = 0.0
        backoff = Backoff()
        try:
            while True:
                raw = notify.watch(self.debounce_ms, STEP_MS, int(RESTART_S * 1000), self._stop)
                if raw == "stop" or self._stop.is_set():
                    return
                if isinstance(raw, set) and raw:
                    changes, moved = self._changes(root, raw, set(watched))
                    if changes:
                        self._deliver(changes)
                    while moved:  # folders came or went: watch the new list
                        notify, watched, moved = self._rewatch(root, notify, watched)
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
        finally:
            notify.close()

    @staticmethod
    def _changes(
        root: str, raw: set[tuple[int, str]], watched: set[str]
    ) -> tuple[list[Change], bool]:
        """The batch's changes worth applying, and whether a folder came or went."""
        changes: list[Change] = []
        moved = False
        for code, path in sorted(raw):
            kind = _KINDS.get(code)
            if kind is None:
                continue
            is_dir = os.path.isdir(path) and not os.path.islink(path)
            if (kind == "created" and is_dir) or (kind == "deleted" and path in watched):
                moved = True
            if interesting(os.path.relpath(path, root), is_dir):
                changes.append(Change(kind, path))
        return changes, moved

    def _rewatch(
        self, root: str, old: RustNotify, watched: list[str]
    ) -> tuple[RustNotify, list[str], bool]:
        """Watch the folders there are now; the old watch ends only once the new one is in
        place, and what it saw meanwhile is delivered. Folders that are new to the watch are
        reported as changed: files made in them before their watch began are reconciled."""
        now = folders(root)
        notify = _notify(now)
        drained = old.watch(1, 1, 1, None)
        old.close()
        moved = False
        changes: list[Change] = []
        if isinstance(drained, set) and drained:
            changes, moved = self._changes(root, drained, set(watched))
        before = set(watched)
        new = [d for d in now if d not in before]
        fresh = set(new)
        changes += [Change("changed", d) for d in new if os.path.dirname(d) not in fresh]
        if changes:
            self._deliver(changes)
        return notify, now, moved

    def _deliver(self, changes: list[Change]) -> None:
        if self.on_changes is not None:
            self.on_changes(changes)
            return
        try:
            self.engram.apply_changes(changes)
        except EngramError as exc:
            log.warning("could not apply %d changes: %s", len(changes), exc)
        if self.on_applied is not None:
            try:
                self.on_applied(changes)
            except Exception:  # a listener must never stop the watcher
                log.exception("a listener of applied changes failed")

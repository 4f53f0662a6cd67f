"""The vaults of a language server session: one per workspace folder.

Each vault has its own ``Engram`` (index, sync, search). Changes reported by the editor or the
watcher are queued per vault and applied in debounced batches by one task, in order; a search
first waits for the queue to drain (except while the first build runs: then the scan path
answers from the files themselves), so a saved note is visible to the next ``engram/search``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from engram_ls.core.backoff import Backoff
from engram_ls.core.check import IntegrityChecker
from engram_ls.core.config import EngramConfig, load_config
from engram_ls.core.errors import EngramError
from engram_ls.core.semantic.worker import EmbeddingWorker
from engram_ls.core.service import Engram
from engram_ls.core.sync import Change, SyncReport
from engram_ls.core.vault import find_vault_root
from engram_ls.core.watch import VaultWatcher

log = logging.getLogger(__name__)
T = TypeVar("T")
Runner = Callable[..., Awaitable[Any]]

DEBOUNCE_S = 0.05
"""Quiet time before a batch of watcher or file-operation events is applied."""
BATCH_NOW = 100
"""Queued changes applied without the debounce: a batch this large (one client notification,
one watcher batch) is worth applying at once; waiting would only add its latency."""


def vault_root(folder: Path) -> Path:
    """The vault a client's root or workspace folder means: the nearest folder at or above it
    holding ``.engram/`` or ``.obsidian/`` (a folder inside a larger vault is that vault),
    else the folder itself."""
    found = find_vault_root(folder)
    return found if found is not None else folder.resolve()


class VaultSession:
    """One vault and its index, with an ordered, debounced change queue."""

    def __init__(self, root: Path, engram: Engram, run: Runner, warnings: list[str]) -> None:
        self.root = root
        self.client_folder = True
        """Whether the client sent this vault's root as its root or a workspace folder (then
        its file watching, when it watches, covers the vault)."""
        self.engram = engram
        self.warnings = warnings
        self._run = run
        self._pending: list[Change] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self._flusher: asyncio.Task[None] | None = None
        self._retry: asyncio.Task[None] | None = None
        self._checker: IntegrityChecker | None = None
        self.embedder: EmbeddingWorker | None = None
        """Keeps the vault's vectors in line with its index (search by meaning)."""
        self.build: asyncio.Task[SyncReport | None] | None = None
        self.watcher: VaultWatcher | None = None
        """The server's own watcher of this vault (when the client does not watch files); the
        first reconcile starts once its watch is in place, so no change falls between them."""
        self.on_applied: Callable[[VaultSession, SyncReport], None] | None = None

    @property
    def config(self) -> EngramConfig:
        return self.engram.config

    @property
    def building(self) -> bool:
        return self.build is not None and not self.build.done()

    def submit(self, changes: Sequence[Change], *, debounce: float = DEBOUNCE_S) -> None:
        """Queue changes; they are applied in order, batched after ``debounce`` seconds."""
        if not changes:
            return
        self._pending.extend(changes)
        self._idle.clear()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush(debounce))

    async def _flush(self, debounce: float) -> None:
        try:
            if self.build is not None and not self.build.done():
                # Changes during the first build wait for it: it opens (or replaces) the index.
                await asyncio.wait([self.build])
            while self._pending:
                if debounce and len(self._pending) < BATCH_NOW:
                    await asyncio.sleep(debounce)
                batch, self._pending = self._pending, []
                try:
                    report = await self._run(self.engram.apply_changes, batch)
                except EngramError as exc:
                    # Not dropped: the index is marked behind and a retry reconciles it.
                    log.warning("could not apply %d changes in %s: %s", len(batch), self.root, exc)
                    self.retry_later()
                    continue
                if self.on_applied is not None:
                    self.on_applied(self, report)
                if self.embedder is not None:
                    self.embedder.kick()
        finally:
            self._idle.set()

    def retry_later(self) -> None:
        """Bring the index up to date later (with back-off) after an update failed: a lock
        held too long, a full disk, a vault folder that went away and came back."""
        if self._retry is None or self._retry.done():
            self._retry = asyncio.ensure_future(self._catch_up())

    async def _catch_up(self) -> None:
        backoff = Backoff()
        while True:
            await asyncio.sleep(backoff.delay)
            try:
                report = await self._run(self.engram.catch_up)
            except EngramError as exc:
                log.info("the index of %s is still behind: %s", self.root, exc)
                backoff.failed()
                continue
            if report is not None and self.on_applied is not None:
                self.on_applied(self, report)
            return

    def start_checks(self) -> None:
        """Check the index in the background now and every ``limits.check_interval_s``;
        damage found is rebuilt through the retry path (searches scan meanwhile)."""
        if self._checker is not None:
            return
        loop = asyncio.get_running_loop()
        self._checker = IntegrityChecker(
            self.engram, on_damage=lambda: loop.call_soon_threadsafe(self.retry_later)
        )
        self._checker.start()

    def start_embedding(self, progress: Callable[[int, int], None] | None = None) -> None:
        """Embed the notes in the background from now on (``EmbeddingWorker``), with
        ``progress(done, total)`` from its thread while a pass has work."""
        if self.embedder is None and self.engram.semantic.enabled:
            self.embedder = EmbeddingWorker(self.engram, progress=progress)
            self.embedder.start()

    async def settled(self) -> None:
        """Wait until queued changes are in the index (not while the first build runs).

        An index that is behind (another process replaced it, an update failed) is caught up
        in the background meanwhile; searches scan until then."""
        if not self.building:
            await self._idle.wait()
            if self.engram.behind is not None:
                self.retry_later()

    def stop(self) -> None:
        """Stop background work. SQLite connections are left to the threads that own them
        (closing one while a pool thread uses it can crash the process)."""
        if self._flusher is not None:
            self._flusher.cancel()
        if self._retry is not None:
            self._retry.cancel()
        if self._checker is not None:
            self._checker.stop()
        if self.embedder is not None:
            self.embedder.stop()
        if self.build is not None:
            self.build.cancel()


class VaultSessions:
    """Every vault of the session; a path belongs to the deepest vault containing it."""

    def __init__(self, run: Runner) -> None:
        self._run = run
        self._by_root: dict[Path, VaultSession] = {}

    def __iter__(self) -> Any:
        return iter(list(self._by_root.values()))

    def __len__(self) -> int:
        return len(self._by_root)

    def setup(
        self,
        folders: Sequence[Path],
        settings: dict[str, Any] | None = None,
        *,
        client_folders: bool = True,
    ) -> list[VaultSession]:
        """Create the vault each folder means (``vault_root``; existing folders only) unless
        it exists; vaults nested in another are excluded from it. ``client_folders``: the
        folders are the client's root or workspace folders (not a vault found above a note)."""
        given = {f.resolve() for f in folders if f.is_dir()}
        roots = sorted({vault_root(f) for f in given})
        every = {*roots, *self._by_root}
        created = []
        for root in roots:
            if root in self._by_root:
                continue
            config, warnings = self._config(root, settings, every)
            vault = VaultSession(root, Engram(root, config=config), self._run, warnings)
            vault.client_folder = client_folders and root in given
            self._by_root[root] = vault
            created.append(vault)
        return created

    def _config(
        self, root: Path, settings: dict[str, Any] | None, roots: Iterable[Path]
    ) -> tuple[EngramConfig, list[str]]:
        """A vault's configuration: its file, ``settings`` on top, the vaults of ``roots``
        nested in it excluded."""
        config, warnings = load_config(root, settings)
        nested = [
            r.relative_to(root).as_posix() + "/**"
            for r in roots
            if r != root and r.is_relative_to(root)
        ]
        if nested:
            config = config.model_copy(update={"exclude": (*config.exclude, *nested)})
        return config, warnings

    def reconfigure(
        self, settings: dict[str, Any] | None
    ) -> list[tuple[VaultSession, VaultSession]]:
        """Apply new settings: each vault whose configuration they change is stopped and made
        again with it (a new ``Engram``; its index is reconciled by the caller, and re-parsed
        when what parsing depends on changed). The (old, new) pairs; an unchanged vault stays,
        paired with itself when the settings have problems to report (its ``warnings``)."""
        replaced = []
        for root, old in list(self._by_root.items()):
            config, warnings = self._config(root, settings, self._by_root)
            if config == old.config:
                old.warnings = warnings
                if warnings:
                    replaced.append((old, old))
                continue
            old.stop()
            new = VaultSession(root, Engram(root, config=config), self._run, warnings)
            new.on_applied = old.on_applied
            new.client_folder = old.client_folder
            self._by_root[root] = new
            replaced.append((old, new))
        return replaced

    def for_path(
        self, path: Path, resolved: dict[Path, Path] | None = None
    ) -> tuple[VaultSession, str] | None:
        """The deepest vault containing ``path`` and the vault-relative path.

        ``resolved`` remembers resolved parent folders across calls (for a batch of paths,
        mostly in a few folders); pass a new dict per batch."""
        if not path.name:
            path = path.resolve()
        else:
            cache = {} if resolved is None else resolved
            parent = cache.get(path.parent)
            if parent is None:
                parent = cache[path.parent] = path.parent.resolve()
            path = parent / path.name
        best: VaultSession | None = None
        for root, vault in self._by_root.items():
            if (path == root or path.is_relative_to(root)) and (
                best is None or len(root.parts) > len(best.root.parts)
            ):
                best = vault
        if best is None:
            return None
        return best, path.relative_to(best.root).as_posix()

    def stop(self) -> None:
        for vault in list(self._by_root.values()):
            vault.stop()

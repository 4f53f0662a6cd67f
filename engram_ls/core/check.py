"""Background integrity checks of a vault's index, for the servers.

``IntegrityChecker`` runs ``Engram.verify`` (``PRAGMA quick_check`` of the whole file) in a
daemon thread: once soon after it starts (the servers start it once the index is open and up to
date: an index too large to check on every open is checked here), at the first quiet moment (no
search for ``QUIET_S``; ``FIRST_WITHIN_S`` after the start, anyway: the check of a 100,000-note
index reads 800 MB for 3 s, which the first searches of an editor just opened should not share),
then every ``limits.check_interval_s`` seconds at a quiet moment (after a second interval without
one, anyway). Damage found has been answered by ``verify`` (file moved aside,
searches scan); the checker then has the index rebuilt: ``on_damage`` when given (the language
server queues it on its event loop), else ``Engram.catch_up`` in this thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from engram_ls.core.background import Background
from engram_ls.core.errors import EngramError
from engram_ls.core.service import Engram

log = logging.getLogger(__name__)
QUIET_S = 2.0
"""A periodic check waits until no search came for this long (it competes for the disk)."""
TICK_S = 0.5
"""How often the thread looks whether a check is due."""
FIRST_WITHIN_S = 30.0
"""The first check waits for a quiet moment at most this long after the start."""


class IntegrityChecker(Background):
    """Checks one vault's index now and then; ``stop`` ends the thread at its next tick."""

    def __init__(self, engram: Engram, on_damage: Callable[[], object] | None = None) -> None:
        super().__init__("engram-check", self._run)
        self.engram = engram
        self.on_damage = on_damage

    def _run(self) -> None:
        interval = self.engram.config.limits.check_interval_s
        started = time.monotonic()
        due, grace = started, FIRST_WITHIN_S
        while True:
            now = time.monotonic()
            quiet = now - max(self.engram.last_search, started) >= QUIET_S
            if now >= due and (quiet or now >= due + grace):
                self._check()
                if interval <= 0:
                    return
                due, grace = time.monotonic() + interval, interval
            if self._stop.wait(min(TICK_S, interval) if interval > 0 else TICK_S):
                return

    def _check(self) -> None:
        if self.engram.behind is not None:
            return  # being caught up (or rebuilt): checked at the next turn
        try:
            if self.engram.verify() is None:
                return
            if self.on_damage is not None:
                self.on_damage()
            else:
                self.engram.catch_up()
        except EngramError as exc:
            log.warning("the index of %s could not be rebuilt yet: %s", self.engram.vault.root, exc)

"""The one retry back-off: how long to wait before trying a failed update again.

The language server (``lsp/vaults.py``) and the vault watcher (``core/watch.py``) both bring
an index that is behind up to date (``Engram.catch_up``) on this schedule; the embedding worker
(``core/semantic/worker.py``) tries a failed pass again on it.
"""

from __future__ import annotations

FIRST_S = 0.5
"""The first wait (after a success, the wait goes back to it)."""
LONGEST_S = 30.0
"""The longest wait: a failure that lasts (a full disk) is tried twice a minute."""


class Backoff:
    """Waits that double after each failure, from ``first`` up to ``longest``."""

    def __init__(self, first: float = FIRST_S, longest: float = LONGEST_S) -> None:
        self.first = first
        self.longest = longest
        self.delay = first
        """The wait before the next attempt, in seconds."""

    def failed(self) -> float:
        """An attempt failed: the next wait is twice as long (at most ``longest``)."""
        self.delay = min(self.delay * 2, self.longest)
        return self.delay

    def succeeded(self) -> None:
        """An attempt succeeded: the next wait is the first one again."""
        self.delay = self.first


__all__ = ["FIRST_S", "LONGEST_S", "Backoff"]

"""The one shape of a background thread in the core: a daemon thread that runs until stopped.

``VaultWatcher`` (``core/watch.py``) and ``IntegrityChecker`` (``core/check.py``) are such
threads: ``start`` runs their ``_run`` in a daemon thread of their name; ``stop`` sets
``_stop``, which their loop waits on, so the thread ends at its next wake-up.
"""

from __future__ import annotations

import threading


class Background:
    """A daemon thread running ``_run`` (a subclass's loop, waiting on ``_stop``)."""

    thread_name = "engram-background"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end (at its next wake-up; this does not wait for it)."""
        self._stop.set()

    def _run(self) -> None:
        raise NotImplementedError


__all__ = ["Background"]

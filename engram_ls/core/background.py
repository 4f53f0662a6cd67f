"""The one shape of a background thread in the core: a daemon thread that runs until stopped.

``VaultWatcher`` (``core/watch.py``) and ``IntegrityChecker`` (``core/check.py``) are such
threads: each gives its loop and its thread's name; ``start`` runs the loop in a daemon thread;
``stop`` sets ``_stop``, which the loop waits on, so the thread ends at its next wake-up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Background:
    """A daemon thread named ``name`` running ``loop`` (which waits on ``self._stop``)."""

    def __init__(self, name: str, loop: Callable[[], None]) -> None:
        self._name = name
        self._loop = loop
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end (at its next wake-up; this does not wait for it)."""
        self._stop.set()


__all__ = ["Background"]

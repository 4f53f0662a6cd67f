"""The language server's worker threads, the most recently idle one first.

Each worker thread reads the index through its own SQLite connection, whose page cache holds
what that thread read last (``core/index/db.py``: ``READ_CACHE_KB``). ``ThreadPoolExecutor``
hands a call to whichever idle thread has waited longest, so requests that come one at a time
go round every thread the server ever started, and each finds its cache cold: the b-tree pages
of the vectors, chunks and notes a search by meaning reads (about 140 of its 500 pages, the
same for every query) were read from the OS again at each search. Here the thread that became
idle last takes the next call (a stack, as anyio's worker threads do), so a quiet server uses
one thread and one warm cache, and more threads only when calls overlap.
"""

from __future__ import annotations

import contextlib
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
_Call = tuple["Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class _Worker:
    def __init__(self) -> None:
        self.wake = threading.Event()
        self.call: _Call | None = None


class LifoExecutor(Executor):
    """At most ``max_workers`` threads; a call goes to the thread idle since the shortest time,
    else to a new thread, else waits its turn (first come, first served)."""

    def __init__(self, max_workers: int, name: str = "engram-worker") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max = max_workers
        self._name = name
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._waiting: deque[_Call] = deque()
        self._threads: list[threading.Thread] = []
        self._shutdown = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        call: _Call = (future, fn, args, kwargs)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
            if self._idle:
                worker = self._idle.pop()
                worker.call = call
                worker.wake.set()
            elif len(self._threads) < self._max:
                thread = threading.Thread(
                    target=self._work,
                    args=(call,),
                    name=f"{self._name}-{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()
            else:
                self._waiting.append(call)
        return future

    def _work(self, call: _Call | None) -> None:
        me = _Worker()
        while call is not None:
            future, outcome = _run(call)
            call = None  # nothing of a call is kept while the thread waits
            waits = False
            with self._lock:
                if self._waiting:
                    call = self._waiting.popleft()
                elif not self._shutdown:
                    me.call = None
                    me.wake.clear()
                    self._idle.append(me)
                    waits = True
            # The caller learns of its call only now that this thread is idle again (or has
            # its next call): a call it makes at once comes back to this thread.
            _settle(future, outcome)
            del future, outcome
            if call is None and waits:
                me.wake.wait()
                call = me.call  # None: shut down

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while self._waiting:
                    self._waiting.popleft()[0].cancel()
            idle, self._idle = self._idle, []
            threads = list(self._threads)
        for worker in idle:  # no call: the worker ends
            worker.wake.set()
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    with contextlib.suppress(RuntimeError):
                        thread.join()


_Outcome = tuple[bool, Any] | None
"""(True, result) or (False, the exception raised); None for a call cancelled before it ran."""


def _run(call: _Call) -> tuple[Future[Any], _Outcome]:
    future, fn, args, kwargs = call
    if not future.set_running_or_notify_cancel():
        return future, None
    try:
        return future, (True, fn(*args, **kwargs))
    except BaseException as exc:
        return future, (False, exc)


def _settle(future: Future[Any], outcome: _Outcome) -> None:
    if outcome is None:
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


__all__ = ["LifoExecutor"]

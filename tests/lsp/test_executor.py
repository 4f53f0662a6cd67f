"""The language server's worker threads (``lsp/executor.py``): calls one at a time run on one
thread (its SQLite page cache stays warm; ``ThreadPoolExecutor`` gave them to each idle thread
in turn), overlapping calls on more, never more than asked; results, errors, cancellation and
shutdown as ``concurrent.futures`` promises them."""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError

import pytest

from engram_ls.lsp.executor import LifoExecutor


def test_calls_one_at_a_time_run_on_the_thread_idle_last() -> None:
    """Four overlapping calls start four threads; then calls made one after the other, each
    as soon as the last one's result is known, all run on one of them (a thread is idle
    again before its caller learns the result, so the next call finds it)."""
    pool = LifoExecutor(6)
    gate = threading.Barrier(4)
    started = [pool.submit(lambda: (gate.wait(5), threading.get_ident())[1]) for _ in range(4)]
    four = {f.result(5) for f in started}
    assert len(four) == 4
    one_by_one = {pool.submit(threading.get_ident).result(5) for _ in range(2000)}
    assert len(one_by_one) == 1 and one_by_one <= four and len(pool._threads) == 4
    pool.shutdown()


def test_at_most_max_workers_threads_and_the_rest_wait_in_order() -> None:
    pool = LifoExecutor(2)
    release = threading.Event()
    running = [pool.submit(release.wait, 5) for _ in range(2)]
    order: list[int] = []
    queued = [pool.submit(order.append, i) for i in range(5)]
    time.sleep(0.05)
    assert order == [] and len(pool._threads) == 2
    release.set()
    for f in running + queued:
        f.result(5)
    assert order == [0, 1, 2, 3, 4] and len(pool._threads) == 2
    pool.shutdown()


def test_results_errors_cancellation_and_shutdown() -> None:
    pool = LifoExecutor(1)
    assert pool.submit(lambda a, b=0: a + b, 2, b=3).result(5) == 5
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(5)
    release = threading.Event()
    busy = pool.submit(release.wait, 5)
    waiting = pool.submit(time.sleep, 0)
    cancelled = pool.submit(time.sleep, 0)
    assert cancelled.cancel()
    release.set()
    assert busy.result(5) is True and waiting.result(5) is None
    with pytest.raises(CancelledError):
        cancelled.result(5)
    pool.shutdown(wait=True)
    assert not any(t.is_alive() for t in pool._threads)
    with pytest.raises(RuntimeError):
        pool.submit(time.sleep, 0)


def test_shutdown_can_cancel_the_calls_still_waiting() -> None:
    pool = LifoExecutor(1)
    release = threading.Event()
    busy = pool.submit(release.wait, 5)
    waiting = pool.submit(time.sleep, 0)
    threading.Timer(0.05, release.set).start()
    pool.shutdown(wait=True, cancel_futures=True)
    assert busy.result(5) is True and waiting.cancelled()

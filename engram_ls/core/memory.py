"""The process's heap, where it is glibc's: what the servers do to keep their memory low.

glibc gives each thread that allocates while another holds the heap's lock a heap of its own
(an "arena"), and keeps what is freed in it for that heap's next use. A server's threads (the
request workers, the embedding pass, the caches' readers) each end up holding the garbage of
their own work: at 100,000 notes, after the searches by meaning of the benchmark, 11 MiB of the
server's resident memory. Python's threads run one at a time (the GIL), so one heap costs
them nothing measurable (``docs/benchmarks.md``). Elsewhere (another C library) nothing here
does anything.

Python's cycle collector runs after every 700 objects allocated and not yet freed, and each
run looks at every object younger than its generation: a build, which makes a few hundred
objects a note and keeps them until the note is written, paid 2.2 s of the writer's 31 s of CPU
and 1.6 s of the parse process's 30 s for it at 100,000 notes. ``batch_collections`` turns it
off for such a batch and collects at its pauses (a commit, a chunk of notes) instead, once
``YOUNG_MOST`` objects were made since the last collection and kept, looking only at those
(what was there before is frozen meanwhile).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import threading
from collections.abc import Iterator

M_ARENA_MAX = -8
"""glibc's ``mallopt`` parameter: the most heaps the threads may get."""


@functools.cache
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018 (glibc's own functions, or AttributeError)
    except (OSError, AttributeError):
        return None
    return libc


def one_heap() -> bool:
    """Have every thread allocate from the main heap from now on, unless the environment sets
    ``MALLOC_ARENA_MAX`` itself (glibc reads it at start-up); the servers call it first thing,
    before their threads start. Whether it was done."""
    libc = _libc()
    if libc is None or "MALLOC_ARENA_MAX" in os.environ:
        return False
    return bool(libc.mallopt(M_ARENA_MAX, 1))


def give_back() -> None:
    """Return freed heap memory to the system after a whole table was read or a large pass
    ended (glibc keeps the garbage otherwise: ~11 MiB for a table of 260,000 chunks)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


_batch_lock = threading.Lock()
_batches = 0
"""Batches running (``begin_batch`` less ``end_batch``): the collector is off while any is."""
_was_enabled = True


def begin_batch() -> None:
    """Turn automatic cycle collection off (until as many ``end_batch``), the objects alive
    now frozen: never looked at by a collection meanwhile."""
    global _batches, _was_enabled
    with _batch_lock:
        _batches += 1
        if _batches == 1:
            _was_enabled = gc.isenabled()
            gc.disable()
            gc.freeze()


def end_batch() -> None:
    global _batches
    with _batch_lock:
        _batches -= 1
        if _batches == 0:
            gc.unfreeze()
            if _was_enabled:
                gc.enable()


@contextlib.contextmanager
def batch_collections() -> Iterator[None]:
    """Automatic cycle collection off for a batch of work (``begin_batch``); call
    ``collect_batch`` at its pauses. Batches may overlap (two vaults built at once): the
    collector is back when the last ends."""
    begin_batch()
    try:
        yield
    finally:
        end_batch()


YOUNG_MOST = 500_000
"""Objects made since the last collection (less those freed) past which a pause of a batch
collects: what is alive in a build's writer at a commit (the notes parsed ahead of it) is
35,000-200,000 at 100,000 notes, and garbage in cycles (3 objects a build) adds to it."""


def collect_batch() -> None:
    """Inside a batch, once more than ``YOUNG_MOST`` objects were made since the last
    collection and not freed: collect the garbage cycles among them (the two younger
    generations; what survives goes to the oldest, whose collection waits for the end of the
    batch). Every such collection looks at each of those objects, and a build makes almost no
    cycles (3 objects at 100,000 notes): collected at each commit, the writer's live objects
    cost it 0.94 s over a build of 100,000 notes, for nothing found. Outside a batch: nothing
    (the collector runs by itself)."""
    if _batches and gc.get_count()[0] > YOUNG_MOST:
        gc.collect(1)


__all__ = [
    "YOUNG_MOST",
    "batch_collections",
    "begin_batch",
    "collect_batch",
    "end_batch",
    "give_back",
    "one_heap",
]

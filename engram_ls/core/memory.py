"""The process's heap, where it is glibc's: what the servers do to keep their memory low.

glibc gives each thread that allocates while another holds the heap's lock a heap of its own
(an "arena"), and keeps what is freed in it for that heap's next use. A server's threads (the
request workers, the embedding pass, the caches' readers) each end up holding the garbage of
their own work: at 100,000 notes, after the searches by meaning of the benchmark, 11 MiB of the
server's resident memory. Python's threads run one at a time (the GIL), so one heap costs
them nothing measurable (``docs/benchmarks.md``). Elsewhere (another C library) nothing here
does anything.
"""

from __future__ import annotations

import ctypes
import functools
import os

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


__all__ = ["give_back", "one_heap"]

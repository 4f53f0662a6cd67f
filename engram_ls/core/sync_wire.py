"""What a build's parse processes send its writer: each note's rows, a stat-only update, or
nothing (a file that could not be read), packed as bytes (``pack``) and read back
(``unpack``)."""

from __future__ import annotations

import marshal
import pickle
from typing import NamedTuple

from engram_ls.core.index.rows import NoteRows


class Touched(NamedTuple):
    """Same content as indexed, new mtime/size."""

    mtime_ns: int
    size: int
    born_ns: int


Result = tuple[str, bool, NoteRows | Touched | None]
"""(path, whether the index has no row for it yet, what reading it gave: rows to write, a
stat-only update, or None when the file could not be read)."""


_MARSHAL, _PICKLE = b"m", b"p"


def pack(results: list[Result]) -> bytes:
    """``results`` as a parse process sends them to the writer: ``marshal``'s bytes of them as
    plain tuples, made in two thirds of pickle's time and read back in the same (a note's rows
    are some 30 tuples: 18-20 against 28-30 µs a note to make, with the collector off as in a
    build), else, when a value is of a type marshal does not hold (it takes no subclass, so
    nothing comes back of another type), pickle's. ``unpack`` reads either."""
    plain = [
        (rel, new, None if got is None else (isinstance(got, Touched), tuple(got)))
        for rel, new, got in results
    ]
    try:
        return _MARSHAL + marshal.dumps(plain)
    except ValueError:
        return _PICKLE + pickle.dumps(results, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> list[Result]:
    """The results ``pack`` made ``data`` of."""
    body = memoryview(data)[1:]
    if data[:1] == _PICKLE:
        return list(pickle.loads(body))
    return [
        (rel, new, None if got is None else Touched(*got[1]) if got[0] else NoteRows(*got[1]))
        for rel, new, got in marshal.loads(body)
    ]


__all__ = ["Result", "Touched", "pack", "unpack"]

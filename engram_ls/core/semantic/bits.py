"""The bits a chunk's vector is kept as in memory, and the scores read from them.

A chunk's code (``chunks.code``, 64 bytes) is the 256 sign bits of its vector (``code_of``: of
the vector itself for a 256-dimension model, else of its projection on 256 fixed directions)
then 256 magnitude bits (``magnitude_of``: set where a value is far from 0). A query is scored
against many codes a byte at a time, from a table of 32 × 256 sums made from its values
(``byte_sums``, ``scores``): by the signs alone, then by the vector the signs and magnitudes
stand for (``levels``). The vectors themselves are stored as float16 (``to_blob``,
``from_blobs``).

The Hamming distances (``hamming``) and the byte-table sums (``scores``) are the loops a search
runs over many chunks: the compiled module ``_kernels`` (``_kernels.c``, built by setup.py when
a C compiler is at hand) does each in one pass over the chunks it reads; without it numpy does
the same sums, to the same bits, in several passes.
"""

from __future__ import annotations

import hashlib
import importlib
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt


def _compiled() -> ModuleType | None:
    try:
        return importlib.import_module("engram_ls.core.semantic._kernels")
    except ImportError:  # built without a C compiler: numpy does the same sums
        return None


kernels = _compiled()
"""The compiled loops (``_kernels.c``), or None."""

WORDS = 4
"""64-bit words of a code: codes are of the first 256 dimensions (all of the default model's)."""
CODE_BYTES = WORDS * 8
BITS = WORDS * 64


def code_of(vectors: npt.NDArray[np.float32]) -> list[bytes]:
    """Each row's 256 bits, as 32 bytes: the signs of a 256-dimension vector (the default
    model is trained for them), else the signs of its projection on 256 fixed random
    directions (SimHash: the bits of a 64-dimension model's signs alone would tie often)."""
    if not len(vectors):
        return []
    dims = vectors.shape[1]
    signs = vectors if dims == BITS else vectors @ directions(dims)
    return [bytes(row) for row in np.packbits(signs > 0, axis=1)]


def magnitude_of(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.uint8]:
    """(n, ``CODE_BYTES``): each row's 256 magnitude bits, in the space its sign bits are of
    (``code_of``): set where the value is further from 0 than ``BIG`` times the row's root
    mean square (about half the dimensions of a unit vector are)."""
    if not len(vectors):
        return np.zeros((0, CODE_BYTES), dtype=np.uint8)
    signed = vectors if vectors.shape[1] == BITS else vectors @ directions(vectors.shape[1])
    rms = np.sqrt(np.mean(np.square(signed), axis=1, keepdims=True))
    packed: npt.NDArray[np.uint8] = np.packbits(np.abs(signed) > BIG * rms, axis=1)
    return packed


def chunk_codes(vectors: npt.NDArray[np.float32]) -> list[bytes]:
    """What ``chunks.code`` holds for each row: its sign bits (``code_of``), then its magnitude
    bits (``magnitude_of``), 64 bytes."""
    mags = magnitude_of(vectors)
    return [sign + bytes(mag) for sign, mag in zip(code_of(vectors), mags, strict=True)]


BIG = 0.66
"""A magnitude bit is set where a value is further from 0 than this many root mean squares."""
SMALL_LEVEL, BIG_LEVEL = 0.32, 1.26
"""What a dimension is read as holding (in root mean squares, with its sign) when its
magnitude bit is clear or set: the mean magnitude of each side of ``BIG`` in a normal
distribution."""


_DIRECTIONS: dict[int, npt.NDArray[np.float32]] = {}


def directions(dims: int) -> npt.NDArray[np.float32]:
    """(dims, 256) of ±1, the same in every process and version (from a hash, not a random
    generator whose stream could change)."""
    found = _DIRECTIONS.get(dims)
    if found is None:
        rows = [
            np.unpackbits(
                np.frombuffer(
                    hashlib.blake2b(f"{dims}:{i}".encode(), digest_size=32).digest(), dtype=np.uint8
                )
            )
            for i in range(dims)
        ]
        found = _DIRECTIONS[dims] = np.array(rows, dtype=np.float32) * 2 - 1
    return found


def signed_space(q: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``q`` in the space its bits are the signs of (``code_of``)."""
    return q if q.shape[0] == BITS else q @ directions(q.shape[0])


_BYTE_BITS = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).astype(np.float32)
"""(256, 8): the bits of each byte value, first bit first (as ``np.unpackbits`` gives them)."""


def byte_sums(signed: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """(``CODE_BYTES``, 256): for each byte of a code and each value it can have, the sum of
    ``signed`` at the dimensions whose bits the value sets."""
    sums: npt.NDArray[np.float32] = signed.reshape(CODE_BYTES, 8) @ _BYTE_BITS.T
    return sums


def hamming(
    words: npt.NDArray[np.uint64],
    query: npt.NDArray[np.uint64],
    at: npt.NDArray[np.intp] | None = None,
) -> npt.NDArray[np.uint16]:
    """The Hamming distance from ``query`` (``WORDS`` words) to each column of ``words``
    ((``WORDS``, n)), or to the columns ``at``."""
    out = np.empty(words.shape[1] if at is None else len(at), dtype=np.uint16)
    if kernels is not None:
        kernels.hamming(out, _rows(words), _rows(query), None if at is None else _columns(at))
    else:
        hamming_into(out, words if at is None else words[:, at], query)
    return out


def hamming_into(
    out: npt.NDArray[np.uint16], words: npt.NDArray[np.uint64], query: npt.NDArray[np.uint64]
) -> None:
    """``hamming`` by numpy, into ``out`` (``bitwise_count`` gives uint8: the sum, up to 256,
    is kept in 16 bits)."""
    out[:] = np.bitwise_count(np.bitwise_xor(words[0], query[0]))
    for w in range(1, WORDS):
        out += np.bitwise_count(np.bitwise_xor(words[w], query[w]))


def scores(
    words: npt.NDArray[np.uint64],
    signed: npt.NDArray[np.float32],
    table: npt.NDArray[np.float32] | None = None,
    *,
    at: npt.NDArray[np.intp] | None = None,
    mask: npt.NDArray[np.uint64] | None = None,
) -> npt.NDArray[np.float32]:
    """The dot product of ``signed`` with each column's bits (``words``: (``WORDS``, n); the
    columns ``at`` alone, when given; each ANDed with ``mask``'s, when given) read as 0/1 (±1
    gives twice it less the sum of ``signed``: the same order). A column's is the sum, over
    its 32 bytes in order, of what each byte's set bits add up to (``table``:
    ``byte_sums(signed)``, made when not given), in float32. By numpy: the bytes of one place
    laid side by side and looked up a place at a time (three times the speed of the bits
    unpacked as floats and multiplied, and a third faster than one look-up of every byte)."""
    if table is None:
        table = byte_sums(signed)
    if kernels is not None:
        out = np.empty(words.shape[1] if at is None else len(at), dtype=np.float32)
        columns = None if at is None else _columns(at)
        table = np.ascontiguousarray(table, dtype=np.float32)
        kernels.scores(out, _rows(words), table, columns, None if mask is None else _rows(mask))
        return out
    if at is not None:
        words = words[:, at]
        mask = None if mask is None else mask[:, at]
    if mask is not None:
        words = words & mask
    by_place = np.ascontiguousarray(
        np.ascontiguousarray(words, dtype=">u8")
        .view(np.uint8)
        .reshape(WORDS, -1, 8)
        .transpose(0, 2, 1)
    ).reshape(CODE_BYTES, -1)
    score: npt.NDArray[np.float32] = table[0].take(by_place[0])
    for place in range(1, CODE_BYTES):
        score += table[place].take(by_place[place])
    return score


def levels(
    words: npt.NDArray[np.uint64],
    mags: npt.NDArray[np.uint64],
    signed: npt.NDArray[np.float32],
    score: npt.NDArray[np.float32],
    table: npt.NDArray[np.float32],
    *,
    at: npt.NDArray[np.intp] | None = None,
) -> npt.NDArray[np.float64]:
    """The cosine of ``signed`` with the vector each column's sign bits (``words``) and
    magnitude bits (``mags``) stand for (the columns ``at`` alone, when given): ±``SMALL_LEVEL``
    where the magnitude bit is clear, ±``BIG_LEVEL`` where it is set; ``score``:
    ``scores(words, signed, at=at)``. With s the signs (0/1), m the magnitudes, x = ``signed``:
    x·(±1 signs) = 2·x·s − Σx and x·(±1 where m) = 2·x·(s∧m) − x·m, both looked up by
    ``scores``; ``table``: ``byte_sums(signed)``."""
    if kernels is None and at is not None:  # numpy: the columns gathered once, not thrice
        words, mags, at = words[:, at], mags[:, at], None
    plain = 2 * score - float(signed.sum())
    agree = 2 * scores(words, signed, table, at=at, mask=mags) - scores(mags, signed, table, at=at)
    big = hamming(mags, _NO_BITS, at).astype(np.int32)  # the set magnitude bits
    norm = np.sqrt(big * BIG_LEVEL**2 + (BITS - big) * SMALL_LEVEL**2) * float(
        np.sqrt(signed @ signed)
    )
    out: npt.NDArray[np.float64] = (
        SMALL_LEVEL * plain + (BIG_LEVEL - SMALL_LEVEL) * agree
    ) / np.maximum(norm, 1e-12)
    return out


_NO_BITS = np.zeros(WORDS, dtype=np.uint64)


def _columns(at: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
    return np.ascontiguousarray(at, dtype=np.intp)


def _rows(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """``words`` as the compiled loops read it: native uint64, each row's items side by side
    (the table's arrays are; a copy of others)."""
    if words.dtype == np.uint64 and words.strides[-1] == 8:
        return words
    return np.ascontiguousarray(words, dtype=np.uint64)


def to_blob(vectors: npt.NDArray[np.float32]) -> list[bytes]:
    return [row.astype(np.float16).tobytes() for row in vectors]


def from_blobs(blobs: Sequence[bytes]) -> npt.NDArray[np.float32]:
    if not blobs:
        return np.zeros((0, 0), dtype=np.float32)
    joined = np.frombuffer(b"".join(blobs), dtype=np.float16)
    return joined.reshape(len(blobs), -1).astype(np.float32)


__all__ = [
    "BIG",
    "BIG_LEVEL",
    "BITS",
    "CODE_BYTES",
    "SMALL_LEVEL",
    "WORDS",
    "byte_sums",
    "chunk_codes",
    "code_of",
    "directions",
    "from_blobs",
    "hamming",
    "hamming_into",
    "levels",
    "magnitude_of",
    "scores",
    "signed_space",
    "to_blob",
]

"""The compiled loops of a search by meaning (``core/semantic/_kernels.c``) give the same
answers as numpy's, to the bit, and refuse what they cannot read without harm."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from engram_ls.core.semantic import bits
from engram_ls.core.semantic.vectors import Codes, CodeTable

KERNELS = bits.kernels


class _Counted:
    """The compiled module, its calls counted: the compiled way was taken."""

    def __init__(self, module: object) -> None:
        self.module, self.calls = module, 0
        self.HAMMING = getattr(module, "HAMMING", "")

    def hamming(self, *args: object) -> None:
        self.calls += 1
        self.module.hamming(*args)  # type: ignore[attr-defined]

    def scores(self, *args: object) -> None:
        self.calls += 1
        self.module.scores(*args)  # type: ignore[attr-defined]


def _both(fn, *args, **kwargs):  # type: ignore[no-untyped-def]
    """(what the compiled loops give, what numpy gives); the first by the compiled loops."""
    assert KERNELS is not None
    counted = _Counted(KERNELS)
    bits.kernels = counted
    try:
        compiled = fn(*args, **kwargs)
        assert counted.calls, "the compiled loops were not used"
        bits.kernels = None
        plain = fn(*args, **kwargs)
    finally:
        bits.kernels = KERNELS
    return compiled, plain


needs_kernels = pytest.mark.skipif(KERNELS is None, reason="built without a C compiler")


def test_the_compiled_loops_are_built_where_a_compiler_is() -> None:
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if (shutil.which("cc") is None and shutil.which("gcc") is None) or not headers.is_file():
        pytest.skip("no C compiler or no Python headers here: the package is built without it")
    assert KERNELS is not None, "setup.py builds engram_ls.core.semantic._kernels"
    assert KERNELS.HAMMING in {"avx512", "popcnt", "plain"}


def _table(rng: np.random.Generator, n: int, wide: int = 0) -> np.ndarray:
    """(4, n) uint64, a slice of a wider array when ``wide``: rows not side by side."""
    full = rng.integers(0, 2**64, size=(4, n + wide), dtype=np.uint64)
    return full[:, wide // 2 : wide // 2 + n]


def _unpacked(words: np.ndarray) -> np.ndarray:
    """(n, 256) of 0/1: each column's bits, first bit first."""
    rows = np.ascontiguousarray(words.T, dtype=">u8").view(np.uint8)
    return np.unpackbits(rows.reshape(-1, 32), axis=1)


@needs_kernels
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 70_001])
def test_hamming_equals_numpy(n: int) -> None:
    rng = np.random.default_rng(n)
    words = _table(rng, n, wide=5)
    q = rng.integers(0, 2**64, size=4, dtype=np.uint64)
    got, want = _both(bits.hamming, words, q)
    assert got.dtype == np.uint16 and np.array_equal(got, want)
    direct = _unpacked(words)
    mine = np.unpackbits(q.astype(">u8").view(np.uint8))
    assert np.array_equal(got, (direct != mine).sum(axis=1))
    if n:
        at = rng.integers(0, n, size=min(n, 300)).astype(np.intp)  # repeats, any order
        got, want = _both(bits.hamming, words, q, at)
        assert np.array_equal(got, want) and np.array_equal(got, bits.hamming(words, q)[at])
        # a transposed view, big-endian words, positions as int32: copied, same answers
        swapped = np.ascontiguousarray(words.T).T.astype(">u8")
        got, want = _both(bits.hamming, swapped, q, at.astype(np.int32))
        assert np.array_equal(got, want)


@needs_kernels
@pytest.mark.parametrize("n", [1, 33, 5000])
def test_scores_and_levels_equal_numpy_to_the_bit(n: int) -> None:
    rng = np.random.default_rng(100 + n)
    words, mags = _table(rng, n, wide=3), _table(rng, n)
    signed = rng.standard_normal(256).astype(np.float32)
    table = bits.byte_sums(signed)
    for at in (None, rng.integers(0, n, size=2 * n).astype(np.intp)):
        got, want = _both(bits.scores, words, signed, table, at=at)
        assert got.dtype == np.float32 and np.array_equal(got, want)
        got, want = _both(bits.scores, words, signed, table, at=at, mask=mags)
        assert np.array_equal(got, want)
        score = bits.scores(words, signed, table, at=at)
        got, want = _both(bits.levels, words, mags, signed, score, table, at=at)
        assert np.array_equal(got, want)
    # the sums are those of the bits unpacked: by place, in float32
    unpacked = _unpacked(words)
    assert np.allclose(bits.scores(words, signed), unpacked @ signed, atol=1e-3)


@needs_kernels
@pytest.mark.parametrize("seed", range(3))
def test_a_table_ranks_alike_both_ways(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 9000
    vectors = rng.standard_normal((n, 256)).astype(np.float32)
    codes = b"".join(bits.chunk_codes(vectors))
    both = np.frombuffer(codes, dtype=">u8").reshape(n, 2, 4)
    table = CodeTable()
    notes = rng.integers(1, 3000, size=n).astype(np.int32)
    table.codes = Codes(
        np.arange(1, n + 1, dtype=np.int64),
        notes,
        np.ascontiguousarray(both[:, 0].T.astype(np.uint64)),
        mags=np.ascontiguousarray(both[:, 1].T.astype(np.uint64)),
    )
    q = rng.standard_normal(256).astype(np.float32)
    q /= np.linalg.norm(q)
    for among in (None, np.arange(1, 3000, 3), frozenset(range(1, 40))):
        got, want = _both(table.closest, q, 64, depth=2048, among=among)
        assert got[0].tolist() == want[0].tolist() and len(got[0])


@needs_kernels
def test_what_the_loops_cannot_read_is_refused() -> None:
    assert KERNELS is not None
    words = np.zeros((4, 10), dtype=np.uint64)
    q = np.zeros(4, dtype=np.uint64)
    out = np.zeros(10, dtype=np.uint16)
    table = np.zeros((32, 256), dtype=np.float32)
    with pytest.raises(IndexError):
        KERNELS.hamming(out[:2], words, q, np.array([0, 10], dtype=np.intp))
    with pytest.raises(IndexError):
        KERNELS.scores(np.zeros(1, np.float32), words, table, np.array([-1], dtype=np.intp))
    with pytest.raises(ValueError):
        KERNELS.hamming(out[:5], words, q)  # out too short
    with pytest.raises(ValueError):
        KERNELS.hamming(out, np.zeros((3, 10), dtype=np.uint64), q)
    with pytest.raises(ValueError):
        KERNELS.hamming(out, words.T.copy().T, q)  # rows not side by side
    with pytest.raises(ValueError):
        KERNELS.hamming(out, words, np.zeros(3, dtype=np.uint64))
    with pytest.raises(ValueError):
        KERNELS.scores(np.zeros(10, np.float32), words, table[:31])
    with pytest.raises(ValueError):
        KERNELS.scores(np.zeros(10, np.float32), words, table, None, np.zeros((4, 9), np.uint64))
    with pytest.raises(TypeError):
        KERNELS.hamming(out, words, q, "not positions")
    ro = np.zeros(10, dtype=np.uint16)
    ro.flags.writeable = False
    with pytest.raises((TypeError, ValueError, BufferError)):
        KERNELS.hamming(ro, words, q)

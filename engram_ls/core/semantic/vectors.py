"""Nearest chunks by meaning: their codes in memory, the stored vectors to re-rank.

``CodeTable`` keeps, for every chunk of the index, its id, its note's id, the 256 sign bits of
its vector and 256 magnitude bits (76 bytes a chunk: 20 MiB at 268,000 chunks), never the
vectors themselves (a float matrix of the same chunks is 266 MiB as float32). A query's vector
is turned into sign bits the same way; the Hamming distance to every chunk is a few vectorised
passes over four columns of 64-bit words; the nearest are ranked by the query's values against
their signs, then against the vector their signs and magnitudes stand for (``closest``), and
the best chunks (two at most) of each of the first notes are re-ranked by their stored float16
vectors, read by id from the index (``core/search/semantic_path.py``). Both kinds of bits are
read from each chunk's stored code; an older index's codes hold the signs alone, and the
magnitude bits of those are made from the stored vectors as the table reads them.

A narrow filter's chunks are found without a pass over the table: the chunks' positions
sorted by note (made once a table state, 8 bytes a chunk) give a note's chunks by binary search,
and only their distances are computed.

The table follows the index: chunk ids only grow (``AUTOINCREMENT``), so chunks written since
the last load are read by id range; chunks orphaned since (``core/semantic/store.py``) are
marked dead (note 0) and never returned; chunks deleted since are marked dead when a search
finds their vectors gone (``forget``); once a fifth of the table is dead it is read again whole.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

import numpy as np

from engram_ls.core.memory import give_back
from engram_ls.core.semantic import bits, store
from engram_ls.core.semantic.bits import (
    CODE_BYTES,
    WORDS,
    byte_sums,
    code_of,
    hamming,
    hamming_into,
    levels,
    magnitude_of,
    scores,
    signed_space,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    AmongOne: TypeAlias = (
        Sequence[int] | npt.NDArray[np.int64] | npt.NDArray[np.bool_] | frozenset[int]
    )
    Among: TypeAlias = AmongOne | tuple[AmongOne, ...]
    """Notes whose chunks alone are ranked (``CodeTable._narrow``, ``CodeTable._far``)."""

DEAD_SHARE = 0.2
FAR = WORDS * 64 + 1
"""The distance given to chunks a mask leaves out: beyond any real one."""
READ_ROWS = 20_000
MASKS_KEPT = 4
NARROW_NOTES = 4_000
"""A filter of at most this many notes has its chunks found by note (``CodeTable._narrow``);
a broader one is a mask over the whole table (about 1.4 ms at 268,000 chunks, whatever the
notes; the chunks of 4,000 notes are found in about 0.3 ms)."""


def _per_note(notes: npt.NDArray[np.int32], k: int, most: int) -> npt.NDArray[np.intp]:
    """Places in ``notes`` (best first) of the first ``most`` chunks of each of the first ``k``
    notes, in their order."""
    _, first, inverse = np.unique(notes, return_index=True, return_inverse=True)
    by_note = np.argsort(inverse, kind="stable")  # each note's places together, best first
    grouped = inverse[by_note]
    starts = np.searchsorted(grouped, np.arange(len(first)))
    nth = np.empty(len(notes), dtype=np.intp)  # 0 for a note's best chunk, 1 for its next...
    nth[by_note] = np.arange(len(notes)) - starts[grouped]
    taken = np.zeros(len(first), dtype=bool)
    taken[inverse[np.sort(first)[:k]]] = True
    kept: npt.NDArray[np.intp] = np.flatnonzero((nth < most) & taken[inverse])
    return kept


def _far_unless(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.uint16]:
    """0 where ``mask`` is set, else ``FAR``: a distance's floor (every real one is below
    ``FAR``)."""
    far: npt.NDArray[np.uint16] = (~mask).view(np.uint8).astype(np.uint16) * np.uint16(FAR)
    return far


class Codes(NamedTuple):
    """One state of the table: three arrays of the same length, replaced together."""

    ids: npt.NDArray[np.int64]
    notes: npt.NDArray[np.int32]
    words: npt.NDArray[np.uint64]
    """(WORDS, n): each chunk's sign bits as four columns of 64-bit words."""
    dead: int = 0
    """Chunks orphaned since they were read (their note 0 here): never returned."""
    mags: npt.NDArray[np.uint64] | None = None
    """(WORDS, n): each chunk's magnitude bits (``magnitude_of``) as ``words`` holds its
    signs; None: every bit clear (the ranking by the signs alone)."""


_NoteOrder: TypeAlias = "tuple[Codes, npt.NDArray[np.int32], npt.NDArray[np.int32]]"
"""``CodeTable.note_order`` of one ``Codes``, with it."""

_EMPTY = Codes(
    np.zeros(0, dtype=np.int64),
    np.zeros(0, dtype=np.int32),
    np.zeros((WORDS, 0), np.uint64),
    mags=np.zeros((WORDS, 0), np.uint64),
)


def _without(codes: Codes, orphans: Sequence[int]) -> Codes:
    """``codes`` with the chunks ``orphans`` marked dead (note 0), in a copy."""
    if not orphans or not len(codes.ids):
        return codes
    gone = np.isin(codes.ids, np.asarray(orphans, dtype=np.int64)) & (codes.notes != 0)
    if not gone.any():
        return codes
    notes = codes.notes.copy()
    notes[gone] = 0
    return codes._replace(notes=notes, dead=int((notes == 0).sum()))


class CodeTable:
    """The codes of every chunk, in memory, as of one state of the index. A search reads one
    ``Codes`` snapshot; ``refresh`` builds the next aside and swaps it in whole, so a search
    running meanwhile never sees arrays of two states."""

    def __init__(self) -> None:
        self.codes = _EMPTY
        self.last = 0
        """The highest chunk id read."""
        self.state: tuple[Any, ...] | None = None
        """What the table is of: (index file, main generation, model, semantic generation)."""
        self.lock = threading.Lock()
        self._sets: dict[int, _SetMask] = {}
        """Note sets that stay the same objects for a while (a large topic's notes in one
        index state), by the set's id: what ``_far`` and ``_by_note`` make of them."""
        self._sets_lock = threading.Lock()
        self._by_note_order: _NoteOrder | None = None
        """(codes, positions of their chunks sorted by note, those chunks' notes): made once a
        state, for a narrow filter."""

    def __len__(self) -> int:
        return len(self.codes.ids)

    def refresh(self, conn: sqlite3.Connection, state: tuple[Any, ...]) -> None:
        """Bring the table to the index's ``state`` (inside the caller's read transaction)."""
        with self.lock:
            if state == self.state:
                return
            # Another file or another model: read it whole; else only the chunks written since.
            whole = self.state is None or (self.state[0], self.state[2]) != (state[0], state[2])
            codes, last = self._read(
                conn, _EMPTY if whole else self.codes, 0 if whole else self.last
            )
            if not whole:
                codes = _without(codes, store.orphan_ids(conn))
                live = store.live_chunks_after(conn, 0)
                if len(codes.ids) - live > DEAD_SHARE * max(len(codes.ids), 1):
                    codes, last = self._read(conn, _EMPTY, 0)
            self.codes, self.last, self.state = codes, last, state

    @staticmethod
    def _read(conn: sqlite3.Connection, codes: Codes, last: int) -> tuple[Codes, int]:
        """``codes`` with the chunks written after ``last`` appended: counted first, then read
        a slice at a time into arrays of the final size (rows as Python tuples would be ~40 MiB
        at 260,000 chunks, and arrays joined at the end twice the table: memory the process
        would keep)."""
        extra = store.live_chunks_after(conn, last)
        if not extra:
            return codes, last
        n = len(codes.ids)
        ids = np.empty(n + extra, dtype=np.int64)
        notes = np.empty(n + extra, dtype=np.int32)
        words = np.empty((WORDS, n + extra), dtype=np.uint64)
        mags = np.zeros((WORDS, n + extra), dtype=np.uint64)
        ids[:n], notes[:n], words[:, :n] = codes.ids, codes.notes, codes.words
        if codes.mags is not None:
            mags[:, :n] = codes.mags
        at = n
        while at < n + extra:
            rows = store.codes_after(conn, last, min(READ_ROWS, n + extra - at))
            if not rows:
                break
            end = at + len(rows)
            ids[at:end] = [r[0] for r in rows]
            notes[at:end] = [r[1] for r in rows]
            raw = b"".join(r[2].ljust(2 * CODE_BYTES, b"\0")[: 2 * CODE_BYTES] for r in rows)
            both = np.frombuffer(raw, dtype=">u8").reshape(-1, 2, WORDS)
            words[:, at:end] = both[:, 0].T
            mags[:, at:end] = both[:, 1].T
            short = [i for i, r in enumerate(rows) if len(r[2]) < 2 * CODE_BYTES]
            if short:  # written before the magnitude bits: made from the stored vectors
                _magnitudes_into(conn, mags, at, [rows[i][0] for i in short], short)
            at, last = end, int(rows[-1][0])
        joined = Codes(ids[:at], notes[:at], words[:, :at], codes.dead, mags[:, :at])
        if not n:
            give_back()
        return joined, last

    def forget(self, gone: Sequence[int]) -> None:
        """Mark the chunks ``gone`` dead (deleted from the index since they were read: orphaned
        and collected between two refreshes), so that they never stand for their notes."""
        with self.lock:
            self.codes = _without(self.codes, gone)

    def distances(
        self,
        code: bytes,
        codes: Codes | None = None,
        positions: npt.NDArray[np.intp] | None = None,
    ) -> npt.NDArray[np.uint16]:
        """Hamming distance from ``code`` to every chunk (those at ``positions``, when given),
        in table order."""
        words = (codes or self.codes).words
        q = np.frombuffer(code, dtype=">u8").astype(np.uint64)
        n = words.shape[1] if positions is None else len(positions)
        if bits.kernels is not None or positions is not None or n < SPLIT_ROWS:
            return hamming(words, q, positions)
        # numpy alone (no compiled loops): two halves on two threads (numpy lets go of the
        # GIL): the pass is bound by memory, and one core alone does not draw all the
        # bandwidth there is. When the helper has not begun by the time this thread's half is
        # done (its core busy elsewhere, or another search's half before it), this thread does
        # the other half too: never slower than one thread alone by more than the hand-off.
        out = np.empty(n, dtype=np.uint16)
        half = n // 2
        other = _helper().submit(hamming_into, out[half:], words[:, half:], q)
        hamming_into(out[:half], words[:, :half], q)
        if other.cancel():
            hamming_into(out[half:], words[:, half:], q)
        else:
            other.result()
        return out

    def nearest(
        self, code: bytes, k: int, among: Among | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """(chunk ids, note ids) of the ``k`` chunks nearest ``code`` (only chunks of the
        notes ``among``, when given), nearest first (ties in table order)."""
        codes = self.codes
        order = self._hamming(codes, code, k, among, ordered=True)
        return codes.ids[order], codes.notes[order]

    def closest(
        self,
        q: npt.NDArray[np.float32],
        k: int,
        *,
        depth: int,
        among: Among | None = None,
        second: int = 0,
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32]]:
        """(chunk ids, note ids) of the best chunks for the unit vector ``q``, ``PER_NOTE`` a note
        at most (its best), of ``k`` notes at most, best first:

        1. the ``depth`` nearest by Hamming distance of the sign bits (only chunks of the notes
           ``among``, when given);
        2. of those, the ``second`` best (``SECOND`` when not given; four a note, if more) by
           the dot product of ``q`` with their signs as ±1 (the query's own values, not its
           signs);
        3. of those, the best by the cosine of ``q`` with the vector their sign and magnitude
           bits stand for (``SMALL_LEVEL`` or ``BIG_LEVEL`` a dimension, ``levels``).

        On the generated 100,000-note vault, the 64 notes so found hold 75 % of the exact top
        10 when their stored vectors re-rank them; the 256 best chunks by the signs alone held
        68 %."""
        codes = self.codes
        order = self._hamming(codes, code_of(q[None, :])[0], depth, among, ordered=False)
        if len(order) <= 1:
            return codes.ids[order], codes.notes[order]
        signed = signed_space(q)
        table = byte_sums(signed)
        score: npt.NDArray[np.floating[Any]] = scores(codes.words, signed, table, at=order)
        second = max(second or SECOND, 4 * k)
        if len(order) > second:
            kept = np.argpartition(-score, second - 1)[:second]
            kept.sort()  # table order: ties below are broken by it
            order, score = order[kept], score[kept]
        if codes.mags is not None:
            score = levels(codes.words, codes.mags, signed, score, table, at=order)
        ranked = order[np.lexsort((order, -score))]
        best = _per_note(codes.notes[ranked], k, PER_NOTE)
        return codes.ids[ranked[best]], codes.notes[ranked[best]]

    def _hamming(
        self,
        codes: Codes,
        code: bytes,
        k: int,
        among: Among | None,
        *,
        ordered: bool,
    ) -> npt.NDArray[np.intp]:
        """Table positions of the ``k`` chunks nearest ``code`` (dead ones never), ties at the
        last distance taken in table order; ``ordered``: nearest first, else in table order."""
        positions, by_note = (None, None) if among is None else self._narrow(codes, among)
        if positions is not None:  # a narrow filter: the distances of its chunks alone
            d = self.distances(code, codes, positions)
        else:
            d = self.distances(code, codes)
            # A set's mask over the table is kept with it (``_set_mask``): using it is as
            # cheap as taking the nearest (measured: 3-9 % slower that way); others are made
            # anew each search, which the nearest spare.
            if among is not None and not isinstance(among, frozenset):
                if by_note is None:  # made once, for both ways
                    by_note = self._by_note(codes, among)
                found = self._nearest_passing(codes, d, k, by_note, ordered=ordered)
                if found is not None:
                    return found
            if codes.dead:
                np.maximum(d, _far_unless(codes.notes != 0), out=d)
                k = min(k, len(d) - codes.dead)
            if among is not None:
                far, passing = self._far(codes, among, by_note)
                np.maximum(d, far, out=d)  # 10x a boolean assignment's speed
                k = min(k, passing)
        k = min(k, len(d))
        if k <= 0:
            return np.zeros(0, dtype=np.intp)
        taken = self._nearest_of(d, k, ordered=ordered)
        return taken if positions is None else positions[taken]

    def _nearest_passing(
        self,
        codes: Codes,
        d: npt.NDArray[np.uint16],
        k: int,
        by_note: npt.NDArray[np.bool_],
        *,
        ordered: bool,
    ) -> npt.NDArray[np.intp] | None:
        """``_hamming``'s answer for a broad filter, found among the nearest chunks of all
        rather than by a mask over the whole table (a look-up per chunk, ~0.4 ms at 268,000
        chunks): enough of the nearest are taken for ``k`` of them to pass, by the share of
        notes that pass (with a margin), and only theirs are checked. Every chunk within the
        distance of the last taken is taken, so when ``k`` of them pass, they are the ``k``
        that the mask would give, ties included; else None (too few passed: the mask's way).
        ``by_note``: the filter's notes, by note id (``_by_note``)."""
        passing = int(np.count_nonzero(by_note))
        if not passing or not k:
            return None
        taken = int(k * NEAREST_MARGIN * len(by_note) / passing) + 64
        if taken > len(d) // 3:  # a mask is about as cheap
            return None
        near = _within(d, taken)
        notes = codes.notes[near]
        keep = by_note[notes]  # as long as the table's highest note id + 1 (``_by_note``)
        if codes.dead:
            keep &= notes != 0
        if int(np.count_nonzero(keep)) < k:
            return None
        near = near[keep]
        found: npt.NDArray[np.intp] = near[self._nearest_of(d[near], k, ordered=ordered)]
        return found

    @staticmethod
    def _nearest_of(d: npt.NDArray[np.uint16], k: int, *, ordered: bool) -> npt.NDArray[np.intp]:
        """Places in ``d`` of its ``k`` smallest (ties: first places first), see ``_hamming``."""
        # The chunks within the distance of the k-th nearest, found from a histogram of the
        # distances (there are only 257): three times faster than np.argpartition here.
        near = _within(d, k)
        nd = d[near]
        if ordered:
            order: npt.NDArray[np.intp] = near[np.argsort(nd, kind="stable")][:k]
            return order
        within = _kth_distance(nd, k)
        # those nearer, and as many ties at the last distance as fit, first in table order
        nearer, tied = nd < within, nd == within
        fit = k - int(np.count_nonzero(nearer))
        kept: npt.NDArray[np.intp] = near[nearer | (tied & (np.cumsum(tied) <= fit))]
        return kept

    def _narrow(
        self, codes: Codes, among: Among
    ) -> tuple[npt.NDArray[np.intp] | None, npt.NDArray[np.bool_] | None]:
        """(table positions, in table order, of the chunks of the notes ``among`` when they
        are at most ``NARROW_NOTES``, else None: a mask over the table is then cheaper; the
        notes ``among`` by note id when that had to be made to count them, for the mask)."""
        if isinstance(among, frozenset):
            if len(among) > NARROW_NOTES:
                return None, None
            wanted = np.fromiter(among, dtype=np.int64, count=len(among))
        else:
            listed = among if isinstance(among, tuple) else np.asarray(among)
            if isinstance(listed, tuple) or listed.dtype == np.bool_:
                if not len(codes.ids):
                    return np.zeros(0, dtype=np.intp), None
                by_note = self._by_note(codes, listed)
                if np.count_nonzero(by_note) > NARROW_NOTES:
                    return None, by_note
                wanted = np.flatnonzero(by_note)
            else:
                if len(listed) > NARROW_NOTES:
                    return None, None
                wanted = listed.astype(np.int64, copy=False)
        return self._chunks_of(codes, wanted), None

    def _chunks_of(self, codes: Codes, wanted: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """Table positions, in table order, of the chunks of the notes ``wanted``."""
        order, notes = self.note_order(codes)
        wanted = np.unique(wanted[wanted > 0])  # note 0: the dead chunks'; each note once
        lo = np.searchsorted(notes, wanted, side="left")
        counts = np.searchsorted(notes, wanted, side="right") - lo
        total = int(counts.sum())
        if not total:
            return np.zeros(0, dtype=np.intp)
        # each note's run of chunks: lo, lo + 1, ... (the runs laid end to end)
        starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
        found = order[starts + np.arange(total)].astype(np.intp)
        found.sort()
        return found

    def note_order(self, codes: Codes) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        """(positions of the chunks of ``codes`` sorted by note, their notes in that order):
        made once for a state of the table (1.3 ms at 268,000 chunks, mostly in note order
        already: written a note at a time)."""
        kept = self._by_note_order
        if kept is not None and kept[0] is codes:
            return kept[1], kept[2]
        order = np.argsort(codes.notes, kind="stable").astype(np.int32)
        made = (codes, order, codes.notes[order])
        self._by_note_order = made
        return made[1], made[2]

    def _far(
        self, codes: Codes, among: Among, by_note: npt.NDArray[np.bool_] | None = None
    ) -> tuple[npt.NDArray[np.uint16], int]:
        """``FAR`` for the chunks of ``codes`` not of the notes ``among`` (0 for the others),
        and how many are; a frozenset's remembered while it and the table stay the same.
        ``among``: ids; a frozenset; a boolean array by note id; or a tuple of these, all of
        which a note must be in (``by_note``: ``_by_note`` of it, when made already)."""
        if isinstance(among, frozenset):
            kept = self._set_mask(codes, among)
            return kept.far, kept.passing
        if not len(codes.ids):
            return np.zeros(0, dtype=np.uint16), 0
        if by_note is None:
            by_note = self._by_note(codes, among)
        mask = by_note[codes.notes]
        return _far_unless(mask), int(np.count_nonzero(mask))

    def _by_note(self, codes: Codes, among: Among) -> npt.NDArray[np.bool_]:
        """By note id, up to the table's highest: whether the note is one of ``among`` (a
        tuple's parts combined note by note, then looked up once per chunk: a 100,000-note
        array against 260,000 chunks); a frozenset's remembered as ``_far`` is."""
        top = int(codes.notes.max()) + 1
        if isinstance(among, tuple):
            both: npt.NDArray[np.bool_] = np.logical_and.reduce(
                [self._by_note(codes, part) for part in among]
            )
            return both
        if isinstance(among, frozenset):
            return self._set_mask(codes, among).by_note
        wanted = np.asarray(among)
        if wanted.dtype != np.bool_:
            return _lut(top, wanted.astype(np.int64))
        if len(wanted) < top:  # notes written since the array was made: not in it
            return np.concatenate([wanted, np.zeros(top - len(wanted), dtype=bool)])
        return wanted[:top]

    def _set_mask(self, codes: Codes, among: frozenset[int]) -> _SetMask:
        """``among`` by note id and as ``_far`` gives it, for ``codes``: made once while the
        set and the table stay the same objects (``MASKS_KEPT`` sets at a time)."""
        kept = self._sets.get(id(among))
        if kept is not None and kept.among is among and kept.codes is codes:
            return kept
        top = int(codes.notes.max()) + 1 if len(codes.ids) else 1
        by_note = _lut(top, np.fromiter(among, dtype=np.int64, count=len(among)))
        mask = by_note[codes.notes]
        made = _SetMask(among, codes, by_note, _far_unless(mask), int(np.count_nonzero(mask)))
        with self._sets_lock:  # searches run on several threads
            if len(self._sets) >= MASKS_KEPT:
                self._sets.pop(next(iter(self._sets)), None)
            self._sets[id(among)] = made
        return made


class _SetMask(NamedTuple):
    among: frozenset[int]
    codes: Codes
    by_note: npt.NDArray[np.bool_]
    far: npt.NDArray[np.uint16]
    passing: int
    """Chunks of the set's notes."""


PER_NOTE = 2
"""Chunks ``CodeTable.closest`` gives of one note at most (its best by their bits): its best
by the stored vector may be its second by the bits (on the real vault, with four chunks a
note, the first 10 notes are the exact cosine's, in order, for 34 of the 76 labelled queries
with one chunk a note, 66 with two, 71 with three; the old 256 chunks gave 64)."""
SECOND = 1024
"""``CodeTable.closest`` ranks this many chunks (at least four per note asked for) by their
sign and magnitude bits, the best of those ranked by their signs alone."""
NEAREST_MARGIN = 1.5
"""``CodeTable._nearest_passing`` takes this many times the nearest chunks that the share of
notes passing a filter says hold ``k`` of theirs."""
SAMPLE_STEP = 8
"""``_within`` reads one distance in this many to guess a bound."""


SPLIT_ROWS = 65_536
"""A Hamming pass over at least this many chunks is shared with a helper thread."""
_HELPER: list[ThreadPoolExecutor] = []
_HELPER_LOCK = threading.Lock()


def _helper() -> ThreadPoolExecutor:
    """The one thread that takes half of a long Hamming pass (made when first needed)."""
    with _HELPER_LOCK:
        if not _HELPER:
            _HELPER.append(ThreadPoolExecutor(1, thread_name_prefix="engram-hamming"))
        return _HELPER[0]


def _magnitudes_into(
    conn: sqlite3.Connection,
    mags: npt.NDArray[np.uint64],
    at: int,
    chunk_ids: list[int],
    places: list[int],
) -> None:
    """``mags[:, at + place]`` = the magnitude bits of the stored vector of the chunk of each
    of ``chunk_ids`` (a chunk without a vector keeps 0)."""
    found, vecs = store.vectors_in(conn, chunk_ids)
    if not found:
        return
    place_of = dict(zip(chunk_ids, places, strict=True))
    columns = at + np.asarray([place_of[c] for c in found], dtype=np.intp)
    mags[:, columns] = magnitude_of(vecs).view(">u8").reshape(-1, WORDS).T


def _within(d: npt.NDArray[np.uint16], k: int) -> npt.NDArray[np.intp]:
    """Table positions (in table order) of every chunk whose distance is at most that of the
    ``k``-th nearest, and maybe a few more. A bound is guessed from a histogram of one
    distance in ``SAMPLE_STEP`` (with a margin): when it holds ``k`` chunks it holds every
    chunk within the ``k``-th's distance; else the histogram of all of them gives it."""
    # a sample worth guessing from: the bound holds a quarter of the table at most, and the
    # sample has 256 distances at least
    if len(d) > 4 * k and len(d) > SAMPLE_STEP * 256:
        near = np.flatnonzero(d <= _kth_distance(d[::SAMPLE_STEP], (k * 5 // 4) // SAMPLE_STEP + 8))
        if len(near) >= k:
            return near
    return np.flatnonzero(d <= _kth_distance(d, k))


def _kth_distance(d: npt.NDArray[np.uint16], k: int) -> int:
    """The distance of the ``k``-th nearest in ``d``, from its histogram (there are only
    ``FAR + 1`` distances)."""
    return int(np.searchsorted(np.cumsum(np.bincount(d, minlength=FAR + 1)), k))


def _lut(top: int, wanted: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """By note id below ``top``: whether it is one of ``wanted`` (ids above have no chunk)."""
    lut = np.zeros(top, dtype=bool)
    lut[wanted[wanted < top]] = True
    return lut


__all__ = ["CodeTable", "Codes"]

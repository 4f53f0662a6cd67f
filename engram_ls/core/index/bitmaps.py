"""Sets of note ids as bitmaps: a Python ``int`` with bit *i* set for note *i*.

At 100,000 notes a bitmap is 12.5 KB whatever it holds, and ``&``, ``|``, ``& ~`` and
``bit_count`` over two of them take microseconds, where Python sets of tens of thousands of ids
take milliseconds to build and to combine. ``member`` gives the bytes in which a note's bit
is one lookup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_GROW = 4096


def bitmap(ids: Iterable[int]) -> int:
    """The bitmap of these note ids."""
    bits = bytearray()
    for i in ids:
        at = i >> 3
        if at >= len(bits):
            bits.extend(bytes(at + 1 - len(bits) + _GROW))
        bits[at] |= 1 << (i & 7)
    return int.from_bytes(bits, "little")


def member(bits: int) -> bytes:
    """Byte *i >> 3*, bit *i & 7*: whether note *i* is in ``bits``."""
    return bits.to_bytes((bits.bit_length() + 7) // 8, "little")


def has(members: bytes, i: int) -> bool:
    at = i >> 3
    return at < len(members) and bool(members[at] >> (i & 7) & 1)


def ids_of(members: bytes) -> list[int]:
    """The note ids of a ``member`` form, ascending. A sparse set's ids are the places of the
    ``1`` digits of its binary form, found by the regular expression engine (0.35 ms for 2,300
    notes among 100,000, against 1.8 a byte at a time); a dense one's, a byte at a time from a
    table of each byte's bits (6 ms for 23,000)."""
    bits = int.from_bytes(members, "little")
    if bits.bit_count() * 4 < len(members) * 8:
        return [m.start() for m in _ONE.finditer(f"{bits:b}"[::-1])]
    out: list[int] = []
    extend = out.extend
    for at, byte in enumerate(members):
        if byte:
            base = at << 3
            extend([base + k for k in _BITS[byte]])
    return out


_ONE = re.compile("1")
_BITS = [tuple(k for k in range(8) if b >> k & 1) for b in range(256)]
"""The bits set in each byte value, lowest first."""


__all__ = ["bitmap", "has", "ids_of", "member"]

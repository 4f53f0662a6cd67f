"""A literal's matching lines in a note's bytes, counted here exactly as ``rg --fixed-strings``
counts them, for the few notes the trigram index names: no process to start (two rg runs cost
about 18 ms; reading a hundred small notes here costs a few).

Where this code cannot be sure to agree with ripgrep it says so (``UNDECIDED``) and the caller
asks rg for that note:

- a NUL byte (rg's binary handling) or a byte-order mark (rg decodes UTF-16 and drops a BOM);
- a case-insensitive pattern that is not ASCII (rg folds Unicode case, per character);
- a case-insensitive pattern with ``k`` or ``s`` in a text holding the Kelvin sign (U+212A) or
  the long s (U+017F), the only non-ASCII characters that Unicode simple case folding (rg's)
  makes equal to ASCII letters;
- a first matching line of ``MAX_LINE_CHARS`` bytes or more (rg prints a preview of it).

Otherwise bytes are compared as rg compares them: the pattern's UTF-8 bytes, ASCII letters
folded when the search ignores case (``bytes.lower`` folds ASCII only); a line ends at
``\\n``; a line counts once however many matches it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from engram_ls.core.ripgrep import MAX_LINE_CHARS, FirstMatch

UNDECIDED: Final = "undecided"
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
_FOLDS_TO_ASCII = (b"\xe2\x84\xaa", b"\xc5\xbf")  # KELVIN SIGN (k), LATIN SMALL LONG S (s)


@dataclass(frozen=True, slots=True)
class Literal:
    """One literal query, ready to count in many notes (``None`` from ``of`` when it never can
    be counted here)."""

    needle: bytes
    fold: bool
    """Fold ASCII case (the search ignores case)."""
    fragile: bool
    """The needle holds ``k`` or ``s``: texts with a character folding to them go to rg."""

    @staticmethod
    def of(pattern: str, case_sensitive: bool) -> Literal | None:
        if not pattern or "\n" in pattern or (not case_sensitive and not pattern.isascii()):
            return None
        if case_sensitive:
            return Literal(pattern.encode("utf-8"), fold=False, fragile=False)
        needle = pattern.lower().encode("ascii")
        return Literal(needle, fold=True, fragile=b"k" in needle or b"s" in needle)

    def lines(self, data: bytes) -> tuple[int, FirstMatch] | str | None:
        """(matching lines, the first of them) in ``data``; None when nothing matches;
        ``UNDECIDED`` when only rg can say."""
        if b"\x00" in data or data.startswith(_BOMS):
            return UNDECIDED
        hay = data
        if self.fold:
            if self.fragile and any(c in data for c in _FOLDS_TO_ASCII):
                return UNDECIDED
            hay = data.lower()
        pos = hay.find(self.needle)
        if pos == -1:
            return None
        start = hay.rfind(b"\n", 0, pos) + 1
        end = hay.find(b"\n", pos)
        first_end = len(hay) if end == -1 else end
        if first_end - start >= MAX_LINE_CHARS:
            return UNDECIDED
        text = data[start:first_end].decode("utf-8", "replace").rstrip("\r")
        first = FirstMatch(data.count(b"\n", 0, start) + 1, text)
        count = 1
        while end != -1:
            pos = hay.find(self.needle, end + 1)
            if pos == -1:
                break
            count += 1
            end = hay.find(b"\n", pos)
        return count, first

"""Inline syntax shared by the note parser (``core.parse``) and the task grammar
(``core.tasks.grammar``): ``#tags`` and ``YYYY-MM-DD`` days."""

from __future__ import annotations

import datetime as dt
import re

_ISO_DAY_RE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
TAG_RE = re.compile(r"#(?<![^\s(]#)(?<!\]\(#)([\w/-]+)")
"""An inline ``#tag`` (group 1: its text): not after a word character or ``](``."""
_HAS_LETTER_RE = re.compile(r"[^\W\d]")
_HEX_COLOUR_RE = re.compile(r"[0-9A-Fa-f]{3,4}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{8}")


def parse_iso_day(text: str) -> dt.date | None:
    """``YYYY-MM-DD`` exactly (ASCII digits, no spaces, a real calendar day), else None."""
    match = _ISO_DAY_RE.fullmatch(text)
    if match is None:
        return None
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None


def is_tag_text(tag: str) -> bool:
    """Whether a cleaned ``#tag`` text counts as a topic: it has a letter (or ``_``) and does
    not read as a hex colour."""
    return bool(_HAS_LETTER_RE.search(tag)) and not _HEX_COLOUR_RE.fullmatch(tag)


__all__ = ["TAG_RE", "is_tag_text", "parse_iso_day"]

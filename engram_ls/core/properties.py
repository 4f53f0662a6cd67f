"""A note's frontmatter as typed properties: what ``where`` conditions compare.

One function, ``note_properties``, turns a loaded frontmatter mapping into the rows that both
the index (table ``props``) and the scan path (``core.search.where``) compare, so that the two
can never disagree on what a value is.

The rules, in one place:

* **Names.** A property's name is its key, case-folded (``Status`` and ``status`` are one
  property, as in Obsidian). A nested mapping is flattened with dots: ``review: {next: ...}``
  is ``review.next``. A key that is not a string (``1: x``) is its YAML text.
* **Kinds.** Every value has one of five kinds: ``text``, ``number`` (YAML ints and floats;
  ``.nan`` is the text ``.nan``), ``bool``, ``date`` (YAML dates and timestamps, and text in
  ISO form: ``2024-03-05``, ``2024-03-05T10:00``, ``2024-03-05 10:00:00Z``) and ``null`` (an
  empty value, or an empty list). A date with a time of day is stored as
  ``YYYY-MM-DDTHH:MM:SS`` (UTC when it had an offset), so that it sorts after its day.
* **Lists.** Each item of a list is a value of the property (``item`` true); a list of
  mappings gives the items' flattened keys. Lists inside lists are flattened.
* **Limits.** A text value is kept to its first ``MAX_TEXT`` characters and a note to its
  first ``MAX_ROWS`` values; nesting deeper than ``MAX_DEPTH`` is not read.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import sys
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

Kind = Literal["text", "number", "bool", "date", "null"]
KINDS: tuple[Kind, ...] = ("text", "number", "bool", "date", "null")
CODES: dict[Kind, str] = {"text": "t", "number": "n", "bool": "b", "date": "d", "null": "z"}
"""How each kind is stored in ``props.kind`` (one letter: it is in every row and key)."""

MAX_TEXT = 2000
MAX_ROWS = 1000
MAX_DEPTH = 8
MAX_NAME = 200
_INT_MAX = 2**63 - 1

_ISO_DATE_RE = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?"
)


class Prop(NamedTuple):
    """One value of one property of a note."""

    name: str
    """Case-folded, nested keys joined by ``.``."""
    kind: Kind
    value: str | int | float
    """Text and dates as text (ISO), numbers as numbers, bools as 0/1, null as ``""``."""
    item: bool = False
    """Whether the value is an item of a list."""


def _prop(fields: tuple[str, Kind, str | int | float, bool]) -> Prop:
    """A ``Prop`` of its four fields, without the Python-level ``__new__`` a NamedTuple's
    call runs (the most values of a note are made here)."""
    return tuple.__new__(Prop, fields)


def typed(value: object) -> tuple[Kind, str | int | float] | None:
    """The kind and stored form of one scalar value; None for a list or a mapping."""
    if isinstance(value, str):  # the most common first: parsing a note pays for each value
        day = iso_date(value) if value[:1].isdigit() else None
        return ("date", day) if day is not None else ("text", value[:MAX_TEXT])
    if value is None:
        return "null", ""
    if isinstance(value, bool):
        return "bool", int(value)
    if isinstance(value, int):
        if -_INT_MAX <= value <= _INT_MAX:
            return "number", value
        try:
            return "number", float(value)
        except OverflowError:
            return "text", ".inf" if value > 0 else "-.inf"
    if isinstance(value, float):
        return ("text", ".nan") if math.isnan(value) else ("number", value)
    if isinstance(value, dt.datetime):
        return "date", _stamp(value)
    if isinstance(value, dt.date):
        return "date", value.isoformat()
    if isinstance(value, list | tuple | Mapping):
        return None
    return "text", str(value)[:MAX_TEXT]


def iso_date(text: str) -> str | None:
    """The stored form of text written as an ISO date or date and time, else None."""
    text = text.strip()
    if len(text) < 10 or len(text) > 40 or text[4:5] != "-" or not _ISO_DATE_RE.fullmatch(text):
        return None
    try:
        if len(text) == 10:
            return dt.date.fromisoformat(text).isoformat()
        return _stamp(dt.datetime.fromisoformat(text.replace("Z", "+00:00")))
    except ValueError:
        return None


def _stamp(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.isoformat(timespec="seconds" if not value.microsecond else "microseconds")


def note_properties(meta: Mapping[Any, Any]) -> tuple[Prop, ...]:
    """Every value of every property of a frontmatter mapping, in the order written."""
    out: list[Prop] = []
    _add(out, meta, "", 0, False)
    return tuple(out[:MAX_ROWS])


def _add(out: list[Prop], meta: Mapping[Any, Any], prefix: str, depth: int, item: bool) -> None:
    for key, value in meta.items():
        name = prefix + (key if isinstance(key, str) else scalar_text(key) or "null").casefold()
        if len(name) <= MAX_NAME:
            # one string of each name: a parse process's chunk of notes pickles it once
            name = sys.intern(name)
            kind = type(value)
            if kind is str and depth <= MAX_DEPTH:  # most values: _value without its calls
                out.append(_text(name, value, item))
            elif kind in _PLAIN_SCALARS and depth <= MAX_DEPTH:
                found = typed(value)
                if found is not None:
                    out.append(_prop((name, found[0], found[1], item)))
            else:
                _value(out, name, value, depth, item)
        if len(out) >= MAX_ROWS:
            return


def _value(out: list[Prop], name: str, value: Any, depth: int, item: bool) -> None:
    if depth > MAX_DEPTH or len(out) >= MAX_ROWS:
        return
    # YAML's scalars and lists first: ``isinstance(x, Mapping)`` of one is an ABC's slow check
    if type(value) is not list and not isinstance(value, _SCALARS) and isinstance(value, Mapping):
        if value:
            _add(out, value, name + ".", depth + 1, item)
        else:
            out.append(Prop(name, "null", "", item))
    elif isinstance(value, list | tuple):
        if not value:
            out.append(Prop(name, "null", "", True))
        for part in value:
            if type(part) is str and depth < MAX_DEPTH and len(out) < MAX_ROWS:
                out.append(_text(name, part, True))
            else:
                _value(out, name, part, depth + 1, True)
    else:
        found = typed(value)
        if found is not None:
            out.append(Prop(name, found[0], found[1], item))


_SCALARS = (str, int, float, dt.date, type(None))
"""The types of YAML's scalars (``bool`` is an ``int``, ``datetime`` a ``date``)."""
_PLAIN_SCALARS = frozenset({int, float, bool, dt.date, dt.datetime, type(None)})
"""The exact types of YAML's scalars but text: ``typed`` as they are, without ``_value``."""


def _text(name: str, value: str, item: bool) -> Prop:
    """``typed`` of a ``str`` value, as a ``Prop``."""
    day = iso_date(value) if value[:1].isdigit() else None
    if day is None:
        return _prop((name, "text", value[:MAX_TEXT], item))
    return _prop((name, "date", day, item))


def scalar_text(value: object) -> str | None:
    """A scalar as text (bool as ``true``/``false``, dates in ISO), or None for the rest."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        try:
            return str(value)
        except ValueError:  # an int too long to print
            return None
    if isinstance(value, dt.date):
        return value.isoformat()
    return None


__all__ = [
    "CODES",
    "KINDS",
    "Kind",
    "Prop",
    "iso_date",
    "note_properties",
    "scalar_text",
    "typed",
]

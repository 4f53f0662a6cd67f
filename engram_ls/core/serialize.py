"""The one way a core result becomes JSON (CLI ``--json``, MCP structured content, LSP results).

A dataclass becomes an object of its fields in the order they are declared; tuples and lists
become arrays, mappings objects, nested dataclasses objects. A field can stay out of the JSON
(``field(metadata=NOT_JSON)``: internal state such as a fingerprint), stay out when it is
empty (``field(metadata=OMIT_EMPTY)``: None, an empty tuple or list) or be rounded
(``field(metadata=rounded(3))``: timings). Anything else that is not a JSON value is a
programming error (TypeError), never silently turned into text.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

_SKIP = "engram.json.skip"
_ROUND = "engram.json.round"
_OMIT = "engram.json.omit-empty"
NOT_JSON: Mapping[str, Any] = {_SKIP: True}
"""Field metadata: the field is not part of the JSON form."""
OMIT_EMPTY: Mapping[str, Any] = {_OMIT: True}
"""Field metadata: the field is left out of the JSON form when it is None or empty."""


def rounded(digits: int) -> Mapping[str, Any]:
    """Field metadata: the (float) field is rounded to ``digits`` decimals in the JSON form."""
    return {_ROUND: digits}


_SCALARS = frozenset({str, int, float, bool, type(None)})
_Form = tuple[tuple[str, ...], Callable[[Any], Any], tuple[tuple[str, int], ...], tuple[str, ...]]
_FORMS: dict[type, _Form | None] = {}
"""Per type: None when it is not a dataclass, else the names of its fields that are part of
its JSON, a getter of their values, the fields to round and those left out when empty.
Reading the values with one ``attrgetter`` keeps a page of 50 hits well under a millisecond."""


def _form(kind: type) -> _Form | None:
    if kind in _FORMS:
        return _FORMS[kind]
    form: _Form | None = None
    if dataclasses.is_dataclass(kind):
        fields = [f for f in dataclasses.fields(kind) if not f.metadata.get(_SKIP)]
        names = tuple(f.name for f in fields)
        get = attrgetter(*names) if len(names) > 1 else (lambda obj: (getattr(obj, names[0]),))
        rounds = tuple((f.name, f.metadata[_ROUND]) for f in fields if _ROUND in f.metadata)
        omits = tuple(f.name for f in fields if f.metadata.get(_OMIT))
        form = (names, get, rounds, omits)
    _FORMS[kind] = form
    return form


def json_value(value: Any) -> Any:
    """``value`` as plain JSON data (dicts, lists, str, int, float, bool, None)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS else json_value(v) for v in value]
    form = _form(kind)
    if form is not None:
        names, get, rounds, omits = form
        out = dict(zip(names, get(value), strict=True))
        for name in omits:
            if out[name] is None or out[name] == () or out[name] == []:
                del out[name]
        for name, item in out.items():
            if type(item) not in _SCALARS:
                out[name] = json_value(item)
        for name, digits in rounds:
            out[name] = round(out[name], digits)
        return out
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, str | int | float):  # a subclass (an enum of strings, ...)
        return value
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    raise TypeError(f"{kind.__name__} has no JSON form")


json_text: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False).encode
"""Plain JSON data as one line of text, its non-ASCII characters kept: what the index stores (a
note's topics, a task's details), a topic written in double quotes, a log line. As
``json.dumps(value, ensure_ascii=False)``, without the new encoder that makes at each call
(0.7 µs: a build makes one a note and one a task); an encoder keeps no state between calls."""

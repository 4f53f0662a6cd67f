"""Evaluating Bases expressions over one note's values: the types, operators and functions.

A value is text (``str``), a number (``int``/``float``), a bool, null (``None``), a date
(``datetime.date``, or ``datetime.datetime`` with a time of day), a duration (``Duration``)
or a list. The rules (docs/queries.md, "Obsidian Bases"):

* ``==`` and ``!=`` compare values of one type (a date and a date with a time of day are one
  type, the date at midnight); values of two types are not equal. ``<``, ``<=``, ``>``,
  ``>=`` order numbers, text (by code point) and dates; anything else is false.
* ``+`` adds numbers, joins text (when either side is text and the other not a date) and adds a
  duration to a date (``due + "7d"``, ``now() - duration("1 week")``); ``-`` of two dates is
  their distance in milliseconds. Arithmetic on a null or a mismatched type is null.
* A method a value's type does not have gives null (a cell is empty, a filter false), as a
  property that is a number in one note and text in another must never stop a query.
* Truthiness: null, false, 0, ``""`` and ``[]`` are false.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engram_ls.core.bases.expr import (
    BaseError,
    Binary,
    Call,
    Expr,
    Field,
    Index,
    Lit,
    Method,
    Prop,
    Unary,
)
from engram_ls.core.links import link_key
from engram_ls.core.properties import iso_date

MAX_LIST = 10_000
MAX_TEXT = 100_000
MAX_FORMULA_DEPTH = 32


@dataclass(frozen=True, slots=True)
class Duration:
    months: int = 0
    delta: dt.timedelta = dt.timedelta()


_UNITS = {
    "y": ("months", 12), "year": ("months", 12), "years": ("months", 12),
    "M": ("months", 1), "month": ("months", 1), "months": ("months", 1),
    "w": ("days", 7), "week": ("days", 7), "weeks": ("days", 7),
    "d": ("days", 1), "day": ("days", 1), "days": ("days", 1),
    "h": ("seconds", 3600), "hour": ("seconds", 3600), "hours": ("seconds", 3600),
    "m": ("seconds", 60), "minute": ("seconds", 60), "minutes": ("seconds", 60),
    "s": ("seconds", 1), "second": ("seconds", 1), "seconds": ("seconds", 1),
}  # fmt: skip
_DURATION_RE = re.compile(r"\s*([+-]?[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*")


def parse_duration(text: str) -> Duration | None:
    """``"7d"``, ``"1 week"``, ``"2h 30m"``, ``"-1y"``; None when it is not one."""
    months, seconds, pos = 0, 0.0, 0
    text = text.strip()
    if not text:
        return None
    while pos < len(text):
        m = _DURATION_RE.match(text, pos)
        if m is None:
            return None
        unit = _UNITS.get(m[2]) or _UNITS.get(m[2].lower())
        if unit is None:
            return None
        amount = float(m[1])
        if unit[0] == "months":
            months += int(amount * unit[1])
        else:
            seconds += amount * unit[1] * (86400 if unit[0] == "days" else 1)
        pos = m.end()
    return Duration(months, dt.timedelta(seconds=seconds))


def as_date(value: Any) -> dt.date | None:
    """A date from a date, or from text in ISO form; None otherwise."""
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        iso = iso_date(value)
        if iso is not None:
            return dt.datetime.fromisoformat(iso) if "T" in iso else dt.date.fromisoformat(iso)
    return None


def moment(value: dt.date) -> dt.datetime:
    return value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())


def _add_months(day: dt.date, months: int) -> dt.date:
    total = day.year * 12 + day.month - 1 + months
    year, month = divmod(total, 12)
    if not 1 <= year <= 9999:
        raise OverflowError
    last = [31, 29 if year % 4 == 0 and (year % 100 or year % 400 == 0) else 28, 31, 30, 31,
            30, 31, 31, 30, 31, 30, 31][month]  # fmt: skip
    return day.replace(year=year, month=month + 1, day=min(day.day, last))


def shift(day: dt.date, d: Duration, sign: int) -> dt.date | None:
    try:
        out = _add_months(day, sign * d.months) if d.months else day
        if d.delta:
            if isinstance(out, dt.datetime) or d.delta % dt.timedelta(days=1):
                out = moment(out) + sign * d.delta
            else:
                out = out + sign * d.delta
        return out
    except OverflowError:
        return None


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, Duration):
        return "duration"
    if isinstance(value, list):
        return "list"
    return "object"


def truthy(value: Any) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    if isinstance(value, Duration):
        return bool(value.months or value.delta)
    return bool(value)


def _dates(a: Any, b: Any) -> tuple[Any, Any]:
    """A date and text in ISO form compare as two dates (``due == "2024-03-05"``)."""
    if isinstance(a, dt.date) and isinstance(b, str):
        return a, as_date(b) if as_date(b) is not None else b
    if isinstance(b, dt.date) and isinstance(a, str):
        return as_date(a) if as_date(a) is not None else a, b
    return a, b


def equal(a: Any, b: Any) -> bool:
    a, b = _dates(a, b)
    ta, tb = type_name(a), type_name(b)
    if ta != tb:
        return False
    if ta == "date":
        return moment(a) == moment(b)
    return bool(a == b)


def _order(op: str, a: Any, b: Any) -> bool:
    a, b = _dates(a, b)
    ta, tb = type_name(a), type_name(b)
    if ta != tb or ta not in ("number", "string", "date"):
        return False
    if ta == "date":
        a, b = moment(a), moment(b)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def to_text(value: Any) -> str:
    """How a value shows as text (a cell, ``toString()``, joining with ``+``)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Duration):
        days = value.delta.total_seconds() / 86400
        return (f"{value.months} months " if value.months else "") + f"{days:g} days"
    if isinstance(value, list):
        return ", ".join(to_text(v) for v in value)
    return str(value)


def _arith(op: str, a: Any, b: Any) -> Any:
    if op == "+" or op == "-":
        if isinstance(a, dt.date):
            if isinstance(b, str):
                b = parse_duration(b)
            if isinstance(b, Duration):
                return shift(a, b, 1 if op == "+" else -1)
            if op == "-" and isinstance(b, dt.date):
                return (moment(a) - moment(b)).total_seconds() * 1000
            if isinstance(b, int | float) and not isinstance(b, bool):
                return shift(a, Duration(0, dt.timedelta(milliseconds=b)), 1 if op == "+" else -1)
            return None
        if op == "+" and (isinstance(a, str) or isinstance(b, str)):
            if a is None or b is None:
                return None
            return (to_text(a) + to_text(b))[:MAX_TEXT]
        if isinstance(a, Duration) and isinstance(b, Duration):
            sign = 1 if op == "+" else -1
            return Duration(a.months + sign * b.months, a.delta + sign * b.delta)
    if isinstance(a, Duration) and _number(b) and op in ("*", "/"):
        if op == "/" and b == 0:
            return None
        factor = b if op == "*" else 1 / b
        return Duration(int(a.months * factor), a.delta * factor)
    if not (_number(a) and _number(b)):
        return None
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            return None
        return a / b if op == "/" else math.fmod(a, b)
    except OverflowError:
        return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class Row:
    """One note as an expression sees it: its properties, its file properties and the
    base's formulas (each computed once, a formula that refers to itself is an error)."""

    def __init__(
        self,
        values: dict[str, Any],
        files: dict[str, Any],
        formulas: dict[str, Expr],
        now: dt.datetime,
    ) -> None:
        self.values = values
        self.files = files
        self.formulas = formulas
        self.now = now
        self._computed: dict[str, Any] = {}
        self._computing: set[str] = set()

    def get(self, name: str) -> Any:
        if name.startswith("formula."):
            return self.formula(name[8:])
        if name.startswith("file."):
            return self.files.get(name)
        return self.values.get(name)

    def formula(self, name: str) -> Any:
        if name in self._computed:
            return self._computed[name]
        if name in self._computing:
            raise BaseError(f"the formula {name!r} refers to itself", construct=f"formula.{name}")
        expr = self.formulas.get(name)
        if expr is None:
            raise BaseError(f"unknown formula {name!r}", construct=f"formula.{name}")
        if len(self._computing) >= MAX_FORMULA_DEPTH:
            raise BaseError(f"formulas refer to formulas more than {MAX_FORMULA_DEPTH} deep")
        self._computing.add(name)
        try:
            value = evaluate(expr, self)
        finally:
            self._computing.discard(name)
        self._computed[name] = value
        return value


def evaluate(expr: Expr, row: Row) -> Any:
    """The value of ``expr`` for ``row``."""
    if isinstance(expr, Lit):
        return expr.value
    if isinstance(expr, Prop):
        return row.get(expr.name)
    if isinstance(expr, Binary):
        if expr.op == "&&":
            return truthy(evaluate(expr.left, row)) and truthy(evaluate(expr.right, row))
        if expr.op == "||":
            return truthy(evaluate(expr.left, row)) or truthy(evaluate(expr.right, row))
        a, b = evaluate(expr.left, row), evaluate(expr.right, row)
        if expr.op == "==":
            return equal(a, b)
        if expr.op == "!=":
            return not equal(a, b)
        if expr.op in ("<", "<=", ">", ">="):
            return _order(expr.op, a, b)
        return _arith(expr.op, a, b)
    if isinstance(expr, Unary):
        value = evaluate(expr.operand, row)
        if expr.op == "!":
            return not truthy(value)
        return -value if _number(value) else None
    if isinstance(expr, Call):
        return _call(expr, row)
    if isinstance(expr, Method):
        target = evaluate(expr.target, row)
        args = [evaluate(a, row) for a in expr.args]
        return _method(expr, target, args)
    if isinstance(expr, Field):
        return _field(expr, evaluate(expr.target, row))
    target = evaluate(expr.target, row)
    key = evaluate(expr.key, row)
    if isinstance(target, list) and _number(key) and -len(target) <= int(key) < len(target):
        return target[int(key)]
    return None


def _call(expr: Call, row: Row) -> Any:
    name = expr.name
    if name == "if":
        _arity(expr, 2, 3)
        if truthy(evaluate(expr.args[0], row)):
            return evaluate(expr.args[1], row)
        return evaluate(expr.args[2], row) if len(expr.args) == 3 else None
    args = [evaluate(a, row) for a in expr.args]
    if name.startswith("file."):
        return _file_function(expr, args, row)
    fn, low, high = GLOBAL_FUNCTIONS[name]
    _arity(expr, low, high)
    if name == "now":
        return row.now
    if name == "today":
        return row.now.date()
    return fn(*args)


def _arity(expr: Call | Method, low: int, high: int | None) -> None:
    n = len(expr.args)
    if n < low or (high is not None and n > high):
        want = f"{low}" if low == high else f"{low} to {high}" if high else f"at least {low}"
        raise BaseError(f"{expr.name}() takes {want} arguments, not {n}", offset=expr.at)


def tag_matches(tags: Sequence[str], wanted: str) -> bool:
    """Whether a note with these (case-folded) topics has ``wanted`` or a topic under it."""
    key = wanted.strip().lstrip("#").strip().casefold()
    return any(t == key or t.startswith(key + "/") for t in tags)


def folder_matches(folder: str, wanted: str) -> bool:
    key = wanted.strip().strip("/")
    return not key or folder == key or folder.startswith(key + "/")


def _file_function(expr: Call, args: list[Any], row: Row) -> Any:
    name = expr.name[5:]
    if name == "hasTag":
        _arity(expr, 1, None)
        tags = row.files.get("file.tags") or []
        return any(isinstance(a, str) and tag_matches(tags, a) for a in args)
    _arity(expr, 1, 1)
    (arg,) = args
    if not isinstance(arg, str):
        return False
    if name == "inFolder":
        return folder_matches(row.files.get("file.folder") or "", arg)
    if name == "hasLink":
        return link_key(arg) in (row.files.get("file.links") or [])
    return arg.strip().casefold() in row.values  # hasProperty


def _date(value: Any) -> Any:
    return as_date(value)


def _duration(value: Any) -> Any:
    return parse_duration(value) if isinstance(value, str) else None


def _number_of(value: Any) -> Any:
    if _number(value):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            return None
    if isinstance(value, dt.date):
        return moment(value).timestamp() * 1000
    return None


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def fn(*values: Any) -> Any:
        numbers = [v for v in values if _number(v)]
        return pick(numbers) if numbers else None

    return fn


GLOBAL_FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "date": (_date, 1, 1),
    "duration": (_duration, 1, 1),
    "now": (lambda: None, 0, 0),
    "today": (lambda: None, 0, 0),
    "if": (lambda: None, 2, 3),
    "min": (_extreme(min), 1, None),
    "max": (_extreme(max), 1, None),
    "number": (_number_of, 1, 1),
    "list": (lambda v: v if isinstance(v, list) else [v], 1, 1),
    "list.of": (lambda *v: list(v), 0, None),
}


def _field(expr: Field, value: Any) -> Any:
    name = expr.name
    if name == "length" and isinstance(value, str | list):
        return len(value)
    if isinstance(value, dt.date):
        if name in ("year", "month", "day"):
            return getattr(value, name)
        if name in ("hour", "minute", "second"):
            return getattr(value, name) if isinstance(value, dt.datetime) else 0
    if name not in FIELDS:
        raise BaseError(f"unknown field .{name}", offset=expr.at, construct=f".{name}")
    return None


FIELDS = frozenset({"length", "year", "month", "day", "hour", "minute", "second"})

_MOMENT_RE = re.compile(r"YYYY|YY|MM|M|DD|D|HH|H|mm|ss|\[[^\]]*\]")


def _format(value: dt.date, fmt: str) -> str:
    at = moment(value)
    parts = {
        "YYYY": f"{at.year:04d}", "YY": f"{at.year % 100:02d}",
        "MM": f"{at.month:02d}", "M": str(at.month),
        "DD": f"{at.day:02d}", "D": str(at.day),
        "HH": f"{at.hour:02d}", "H": str(at.hour),
        "mm": f"{at.minute:02d}", "ss": f"{at.second:02d}",
    }  # fmt: skip
    return _MOMENT_RE.sub(lambda m: m[0][1:-1] if m[0][0] == "[" else parts[m[0]], fmt)


def _round(value: Any, digits: Any = 0) -> Any:
    if not _number(digits):
        return None
    out = round(value, int(digits))
    return out if digits else int(out) if math.isfinite(out) else out


def _slice(value: Any, start: Any = 0, end: Any = None) -> Any:
    if not _number(start) or not (end is None or _number(end)):
        return None
    return value[int(start) : None if end is None else int(end)]


def _contains_all(value: Any, *items: Any) -> bool:
    return all(_has(value, item) for item in items)


def _contains_any(value: Any, *items: Any) -> bool:
    return any(_has(value, item) for item in items)


def _has(value: Any, item: Any) -> bool:
    if isinstance(value, str):
        return isinstance(item, str) and item in value
    return any(equal(v, item) for v in value)


def _flat(value: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in value:
        out.extend(_flat(v) if isinstance(v, list) else [v])
    return out[:MAX_LIST]


def _sorted(value: list[Any]) -> list[Any]:
    return sorted(value, key=lambda v: (type_name(v), to_text(v) if not _number(v) else v))


_TEXT: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "contains": (_has, 1, 1),
    "containsAll": (_contains_all, 1, None),
    "containsAny": (_contains_any, 1, None),
    "startsWith": (lambda s, p: isinstance(p, str) and s.startswith(p), 1, 1),
    "endsWith": (lambda s, p: isinstance(p, str) and s.endswith(p), 1, 1),
    "lower": (str.lower, 0, 0),
    "upper": (str.upper, 0, 0),
    "title": (str.title, 0, 0),
    "trim": (str.strip, 0, 0),
    "replace": (
        lambda s, a, b: s.replace(a, b)[:MAX_TEXT] if isinstance(a, str) and a else s,
        2,
        2,
    ),
    "split": (
        lambda s, sep: s.split(sep)[:MAX_LIST] if isinstance(sep, str) and sep else [s],
        1,
        1,
    ),
    "slice": (_slice, 1, 2),
    "reverse": (lambda s: s[::-1], 0, 0),
    "repeat": (lambda s, n: s * max(0, min(int(n), MAX_TEXT // max(1, len(s)))), 1, 1),
}
_NUMBER: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "abs": (abs, 0, 0),
    "ceil": (lambda v: math.ceil(v) if math.isfinite(v) else v, 0, 0),
    "floor": (lambda v: math.floor(v) if math.isfinite(v) else v, 0, 0),
    "round": (_round, 0, 1),
    "toFixed": (lambda v, n: f"{v:.{max(0, min(int(n), 20))}f}" if _number(n) else None, 1, 1),
}
_LIST: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "contains": (_has, 1, 1),
    "containsAll": (_contains_all, 1, None),
    "containsAny": (_contains_any, 1, None),
    "join": (
        lambda v, sep: sep.join(to_text(x) for x in v) if isinstance(sep, str) else None,
        1,
        1,
    ),
    "sort": (_sorted, 0, 0),
    "unique": (lambda v: [x for i, x in enumerate(v) if not any(equal(x, y) for y in v[:i])], 0, 0),
    "reverse": (lambda v: v[::-1], 0, 0),
    "flat": (_flat, 0, 0),
    "slice": (_slice, 1, 2),
}
_DATE: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "format": (lambda d, f: _format(d, f) if isinstance(f, str) else None, 1, 1),
    "date": (lambda d: d.date() if isinstance(d, dt.datetime) else d, 0, 0),
}
_ANY: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "isTruthy": (truthy, 0, 0),
    "isEmpty": (lambda v: v is None or v == "" or v == [], 0, 0),
    "toString": (to_text, 0, 0),
    "isType": (lambda v, t: isinstance(t, str) and type_name(v) == t.lower(), 1, 1),
}
_BY_TYPE = {"string": _TEXT, "number": _NUMBER, "list": _LIST, "date": _DATE}
METHODS = frozenset(k for table in (*_BY_TYPE.values(), _ANY) for k in table)
METHOD_TYPES: dict[str, tuple[str, ...]] = {
    name: tuple(t for t, table in _BY_TYPE.items() if name in table) or ("any",)
    for name in sorted(METHODS)
}
"""Each method and the types of value it applies to (``any`` for every type)."""


def _method(expr: Method, target: Any, args: list[Any]) -> Any:
    table = _BY_TYPE.get(type_name(target), {})
    found = table.get(expr.name) or _ANY.get(expr.name)
    if found is None:
        if expr.name not in METHODS:
            raise BaseError(
                f"unknown method .{expr.name}()", offset=expr.at, construct=f".{expr.name}()"
            )
        return None
    fn, low, high = found
    _arity(expr, low, high)
    try:
        return fn(target, *args)
    except (TypeError, ValueError, OverflowError):
        return None


def check(expr: Expr) -> None:
    """BaseError for what would fail on every note: an unknown method, field or function
    arity, found before any note is read."""
    if isinstance(expr, Method):
        if expr.name not in METHODS:
            raise BaseError(
                f"unknown method .{expr.name}()", offset=expr.at, construct=f".{expr.name}()"
            )
        check(expr.target)
        for a in expr.args:
            check(a)
    elif isinstance(expr, Field):
        if expr.name not in FIELDS:
            raise BaseError(
                f"unknown field .{expr.name}", offset=expr.at, construct=f".{expr.name}"
            )
        check(expr.target)
    elif isinstance(expr, Call):
        if expr.name.startswith("file."):
            _arity(expr, 1, None if expr.name == "file.hasTag" else 1)
        else:
            _, low, high = GLOBAL_FUNCTIONS[expr.name]
            _arity(expr, low, high)
        for a in expr.args:
            check(a)
    elif isinstance(expr, Index):
        check(expr.target)
        check(expr.key)
    elif isinstance(expr, Unary):
        check(expr.operand)
    elif isinstance(expr, Binary):
        check(expr.left)
        check(expr.right)


__all__ = [
    "Duration",
    "Row",
    "as_date",
    "check",
    "equal",
    "evaluate",
    "folder_matches",
    "moment",
    "parse_duration",
    "tag_matches",
    "to_text",
    "truthy",
    "type_name",
]

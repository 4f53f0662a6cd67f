"""A base's filters as a ``where`` tree the index answers, and what is left to evaluate.

Each filter that means exactly what one or more ``where`` conditions mean becomes them:
``status == "done"`` (a single value, never a list's item: ``Cond.single``),
``priority >= 2``, ``due < today() + "7d"`` (the constant side computed once),
``tags.contains("x")``, ``file.hasTag("a")`` (``a`` and the topics under it),
``file.inFolder("f")``, ``file.hasLink("n")``, ``file.hasProperty("p")``, ``file.size > 10``,
and ``&&``, ``||``, ``!`` and the ``and``/``or``/``not`` groups of those. The index answers
them with bitmaps (``where_bits``). Any other filter (a formula, arithmetic on a property,
a truthiness test) is evaluated, by ``values.evaluate``, over the values the index holds
for the notes the translated filters left: never over the files.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from engram_ls.core.bases.expr import Binary, Call, Expr, Method, Prop, Unary, references
from engram_ls.core.bases.spec import Filter, Group, Where
from engram_ls.core.bases.values import Row, evaluate, truthy
from engram_ls.core.properties import iso_date
from engram_ls.core.search.where import (
    FILE_PROPS,
    FOLDED,
    All,
    AnyOf,
    Node,
    Not,
    WhereError,
    condition,
)

_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_OPS = {"==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_FILE_SCALARS = frozenset(FILE_PROPS) - FOLDED
_NONE = object()


@dataclass(frozen=True, slots=True)
class Compiled:
    where: Node | None
    """What the index answers exactly (None: every note)."""
    rest: tuple[Filter, ...]
    """Filters evaluated over the values of the notes ``where`` passes."""


def compile_filters(filters: list[Filter | None], now: dt.datetime) -> Compiled:
    """The base's and the view's filters (all must pass), split as ``Compiled`` says."""
    exact: list[Node] = []
    rest: list[Filter] = []
    for f in _conjuncts([f for f in filters if f is not None]):
        node = _filter_where(f, now)
        if node is None:
            rest.append(f)
        else:
            exact.append(node)
    where = None if not exact else exact[0] if len(exact) == 1 else All(tuple(exact))
    return Compiled(where, tuple(rest))


def _conjuncts(filters: list[Filter]) -> list[Filter]:
    out: list[Filter] = []
    for f in filters:
        if isinstance(f, Group) and f.op == "and":
            out.extend(_conjuncts(list(f.items)))
        elif isinstance(f, Where) and isinstance(f.expr, Binary) and f.expr.op == "&&":
            out.extend(_conjuncts([Where(f.expr.left, f.at), Where(f.expr.right, f.at)]))
        else:
            out.append(f)
    return out


def passes(f: Filter, row: Row) -> bool:
    """Whether a note passes one filter."""
    if isinstance(f, Where):
        return truthy(evaluate(f.expr, row))
    if f.op == "and":
        return all(passes(i, row) for i in f.items)
    if f.op == "or":
        return any(passes(i, row) for i in f.items)
    return not any(passes(i, row) for i in f.items)


def filter_names(f: Filter) -> set[str]:
    """The properties a filter reads."""
    if isinstance(f, Where):
        return {p.name for p in references(f.expr)}
    return {n for item in f.items for n in filter_names(item)}


def _filter_where(f: Filter, now: dt.datetime) -> Node | None:
    if isinstance(f, Where):
        return _where(f.expr, now)
    items = [_filter_where(i, now) for i in f.items]
    if any(i is None for i in items) or not items:
        return None
    nodes = tuple(i for i in items if i is not None)
    if f.op == "and":
        return All(nodes)
    if f.op == "or":
        return AnyOf(nodes)
    return Not(AnyOf(nodes))


def _where(e: Expr, now: dt.datetime) -> Node | None:
    try:
        return _translate(e, now)
    except WhereError:
        return None  # a value where cannot take (too long, NaN): evaluated instead


def _translate(e: Expr, now: dt.datetime) -> Node | None:
    if isinstance(e, Binary) and e.op in ("&&", "||"):
        left, right = _translate(e.left, now), _translate(e.right, now)
        if left is None or right is None:
            return None
        return All((left, right)) if e.op == "&&" else AnyOf((left, right))
    if isinstance(e, Unary) and e.op == "!":
        inner = _translate(e.operand, now)
        return None if inner is None else Not(inner)
    if isinstance(e, Binary) and e.op in _OPS:
        return _comparison(e, now)
    if isinstance(e, Call) and e.name.startswith("file."):
        return _file_call(e, now)
    if isinstance(e, Method) and isinstance(e.target, Prop) and _note_prop(e.target.name):
        return _method(e, now)
    return None


def _note_prop(name: str) -> bool:
    return not name.startswith(("file.", "formula."))


def _comparison(e: Binary, now: dt.datetime) -> Node | None:
    op = e.op
    other: Expr
    if isinstance(e.right, Prop) and not isinstance(e.left, Prop):
        prop, other, op = e.right, e.left, _FLIP[op]
    elif isinstance(e.left, Prop):
        prop, other = e.left, e.right
    else:
        return None
    if not (_note_prop(prop.name) or prop.name in _FILE_SCALARS):
        return None
    value = _constant(other, now)
    if value is _NONE or value is None:
        return None
    if isinstance(value, list | bool) and op not in ("==", "!="):
        return None
    if not isinstance(value, str | int | float | bool):
        return None
    return condition(prop.name, _OPS[op], value, single=_note_prop(prop.name))  # type: ignore[arg-type]


def _constant(e: Expr, now: dt.datetime) -> Any:
    """The value of an expression that reads no property (``today() + "7d"``), as a where
    value: dates as ISO text; ``_NONE`` when it reads one or is not a plain value."""
    if references(e):
        return _NONE
    value = evaluate(e, Row({}, {}, {}, now))
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return _NONE


def _texts(args: tuple[Expr, ...], now: dt.datetime) -> list[str] | None:
    out = []
    for a in args:
        value = _constant(a, now)
        if not isinstance(value, str):
            return None
        out.append(value)
    return out


def _file_call(e: Call, now: dt.datetime) -> Node | None:
    args = _texts(e.args, now)
    if args is None or not args:
        return None
    name = e.name[5:]
    if name == "hasTag":
        keys = [a.strip().lstrip("#").strip() for a in args]
        if not all(keys):
            return None
        return AnyOf(
            tuple(
                c
                for k in keys
                for c in (
                    condition("file.tags", "=", k),
                    condition("file.tags", "starts_with", f"{k}/"),
                )
            )
        )
    (arg,) = args
    if name == "inFolder":
        key = arg.strip().strip("/")
        if not key:
            return condition("file.path", "exists")
        return AnyOf(
            (condition("file.folder", "=", key), condition("file.folder", "starts_with", f"{key}/"))
        )
    if name == "hasLink":
        return condition("file.links", "=", arg) if arg.strip() else None
    return condition(arg, "exists") if arg.strip() else None  # hasProperty


def _method(e: Method, now: dt.datetime) -> Node | None:
    assert isinstance(e.target, Prop)
    if e.name not in ("contains", "containsAny", "containsAll") or not e.args:
        return None
    items = []
    for a in e.args:
        value = _constant(a, now)
        if value is _NONE or value is None or isinstance(value, list):
            return None
        if not isinstance(value, str) or iso_date(value) is not None:
            # where's contains of a number is also a single value equal to it, and text in
            # date form is a date to where: neither is a Bases contains
            return None
        items.append(condition(e.target.name, "contains", value))
    if len(items) == 1:
        return items[0]
    return All(tuple(items)) if e.name == "containsAll" else AnyOf(tuple(items))


__all__ = ["Compiled", "compile_filters", "filter_names", "passes"]

"""``where``: conditions on any property of a note, as the search request takes them.

A condition is ``{property, op, value}``; a list of them, or an ``{"and": [...]}``,
``{"or": [...]}``, ``{"not": ...}`` tree of them, is the ``where`` of a request. The CLI writes
one as text: ``status = done``, ``priority >= 2``, ``aliases exists``. ``parse_where`` reads
every form into one tree (``Cond``, ``All``, ``AnyOf``, ``Not``); the index answers it in SQL
(``where_sql``) and the scan path with ``matches`` over a note's values (``note_facts``), by the
same rules (docs/queries.md):

* A property is a frontmatter key (case-folded, nested keys joined by ``.``; ``note.status`` is
  ``status``) or a file property (``FILE_PROPS``). An unknown one has no values: it matches
  nothing (but ``missing``, ``!=`` and ``not``).
* A value has a kind (``core.properties``). A condition's value is typed as YAML types a
  frontmatter value: ``2`` a number, ``true`` a bool, ``2024-03-05`` a date, ``done`` or
  ``"2"`` text. It compares only with values of its kind: ``priority >= 2`` never matches
  ``priority: high``; text compares by code point, case-sensitive; a date is before its own
  times of day.
* A list property matches when one of its items does (``=``, ``<``…, ``starts_with``);
  ``contains`` is an item equal to the value, or, for a single text value, a substring of it.
* ``!=`` is ``not =``: a note without the property matches it, as in Obsidian and Dataview.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from engram_ls.core.frontmatter import scalar_value
from engram_ls.core.links import link_key
from engram_ls.core.model import Note
from engram_ls.core.properties import MAX_NAME, Kind, scalar_text, typed

Op = Literal["=", "!=", "<", "<=", ">", ">=", "contains", "starts_with", "exists", "missing"]
OPS: tuple[Op, ...] = get_args(Op)
ORDER_OPS = frozenset({"<", "<=", ">", ">="})
NO_VALUE = frozenset({"exists", "missing"})
MAX_CONDITIONS = 64
MAX_DEPTH = 16
MAX_VALUE_CHARS = 1000

FILE_PROPS: dict[str, Kind] = {
    "file.path": "text",
    "file.name": "text",
    "file.basename": "text",
    "file.ext": "text",
    "file.folder": "text",
    "file.size": "number",
    "file.mtime": "date",
    "file.ctime": "date",
    "file.tags": "text",
    "file.links": "text",
}
"""The file properties, and the kind of their values. ``file.tags`` (the note's topics,
frontmatter and inline, case-insensitive) and ``file.links`` (the lookup keys of its links'
targets: the case-folded name without ``.md``) are lists."""
FOLDED = frozenset({"file.tags", "file.links"})
"""File properties whose values, and a condition's value, are compared case-folded."""


@dataclass(frozen=True, slots=True)
class Cond:
    prop: str
    op: Op
    kind: Kind | None = None
    """The kind of ``value`` (None for ``exists`` and ``missing``)."""
    value: str | int | float = ""
    text: str = ""
    """The value as text: what ``starts_with`` and a substring ``contains`` look for."""
    single: bool = False
    """Only a single value, never a list's items, passes (how a Bases comparison reads a
    list: ``status == "done"`` is false for ``status: [done]``)."""


@dataclass(frozen=True, slots=True)
class All:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class AnyOf:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Not:
    item: Node


Node = Cond | All | AnyOf | Not


class WhereError(ValueError):
    """A malformed ``where``; the message names the offending part."""


def parse_where(raw: Any) -> Node | None:
    """The tree of a ``where`` in any of its forms; None for none. WhereError names what is
    wrong (``where[1].op: ...``)."""
    if raw is None or raw == [] or raw == "":
        return None
    return _node(raw, "where", 0, [0])


def _node(raw: Any, at: str, depth: int, count: list[int]) -> Node:
    if depth > MAX_DEPTH:
        raise WhereError(f"{at}: nested deeper than {MAX_DEPTH} levels")
    if isinstance(raw, str):
        return _leaf(parse_condition_text(raw, at), at, count)
    if isinstance(raw, list):
        if not raw:
            raise WhereError(f"{at}: an empty list of conditions")
        items = tuple(_node(item, f"{at}[{i}]", depth + 1, count) for i, item in enumerate(raw))
        return items[0] if len(items) == 1 else All(items)
    if not isinstance(raw, Mapping):
        raise WhereError(f"{at}: a condition is an object or text, not {_type_name(raw)}")
    groups = [k for k in ("and", "or", "not") if k in raw]
    if groups:
        if len(raw) != 1:
            raise WhereError(f"{at}: {groups[0]!r} must be the only key of its object")
        key = groups[0]
        inner = raw[key]
        if key == "not":
            return Not(_node(inner, f"{at}.not", depth + 1, count))
        if not isinstance(inner, list) or not inner:
            raise WhereError(f"{at}.{key}: a non-empty list of conditions is needed")
        items = tuple(
            _node(item, f"{at}.{key}[{i}]", depth + 1, count) for i, item in enumerate(inner)
        )
        return All(items) if key == "and" else AnyOf(items)
    return _leaf(dict(raw), at, count)


def _leaf(raw: dict[str, Any], at: str, count: list[int]) -> Cond:
    count[0] += 1
    if count[0] > MAX_CONDITIONS:
        raise WhereError(f"{at}: more than {MAX_CONDITIONS} conditions")
    extra = sorted(set(raw) - {"property", "op", "value"})
    if extra:
        raise WhereError(f"{at}: unknown key {extra[0]!r} (a condition has property, op, value)")
    prop = raw.get("property")
    if not isinstance(prop, str) or not prop.strip():
        raise WhereError(f"{at}.property: a property name is needed")
    _check_text(prop, f"{at}.property")
    name = prop.strip().casefold()
    name = name.removeprefix("note.") if name.startswith("note.") else name
    if len(name) > MAX_NAME:
        raise WhereError(f"{at}.property: longer than {MAX_NAME} characters")
    op = raw.get("op")
    if op not in OPS:
        raise WhereError(f"{at}.op: {op!r} is not one of {', '.join(OPS)}")
    if op in NO_VALUE:
        if raw.get("value") is not None:
            raise WhereError(f"{at}.value: {op} takes no value")
        return Cond(name, op)
    if "value" not in raw:
        raise WhereError(f"{at}.value: {op} needs a value")
    value = raw["value"]
    if isinstance(value, list | tuple | Mapping):
        raise WhereError(f"{at}.value: a single value is needed, not {_type_name(value)}")
    if isinstance(value, float) and value != value:
        raise WhereError(f"{at}.value: NaN compares with nothing")
    text = scalar_text(value) or ""
    _check_text(text, f"{at}.value")
    if len(text) > MAX_VALUE_CHARS:
        raise WhereError(f"{at}.value: longer than {MAX_VALUE_CHARS} characters")
    found = typed(value)
    assert found is not None
    kind, stored = found
    if kind == "null" and op not in ("=", "!="):
        raise WhereError(f"{at}.value: {op} needs a value that is not null")
    if op == "starts_with" and not text:
        raise WhereError(f"{at}.value: starts_with needs some text")
    if name in FOLDED:
        text = _folded_value(name, text)
        kind, stored = ("text", text) if kind != "null" else (kind, stored)
    return Cond(name, op, kind, stored, text)


def condition(prop: str, op: Op, value: Any = None, *, single: bool = False) -> Cond:
    """One condition, checked and typed as ``where`` takes it (WhereError when malformed)."""
    raw: dict[str, Any] = {"property": prop, "op": op}
    if op not in NO_VALUE:
        raw["value"] = value
    c = _leaf(raw, "where", [0])
    return dataclasses.replace(c, single=True) if single else c


def parse_condition_text(text: str, at: str = "where") -> dict[str, Any]:
    """``status = done``, ``priority >= 2``, ``title contains "a b"``, ``due missing`` as a
    condition object; the value is read as a YAML scalar (quote it to keep it text)."""
    body = text.strip()
    words = body.rsplit(None, 1)
    if len(words) == 2 and words[1] in NO_VALUE:
        return {"property": words[0], "op": words[1]}
    match = _WORD_OP_RE.search(body)
    symbol = _SYMBOL_OP_RE.search(body)
    if match is not None and (symbol is None or match.start() < symbol.start()):
        prop, op, rest = body[: match.start()], match[1], body[match.end() :]
    elif symbol is not None:
        prop, op, rest = body[: symbol.start()], symbol[0], body[symbol.end() :]
    else:
        raise WhereError(
            f"{at}: {text[:80]!r} is not 'PROPERTY OP VALUE' (OP one of {', '.join(OPS)})"
        )
    if not prop.strip():
        raise WhereError(f"{at}: {text[:80]!r} names no property before {op!r}")
    value = scalar_value(rest)
    if isinstance(value, dt.datetime | dt.date):
        value = value.isoformat()
    return {"property": prop.strip(), "op": op, "value": value}


_WORD_OP_RE = re.compile(r"\s(contains|starts_with)(?:\s|$)")
_SYMBOL_OP_RE = re.compile(r"!=|<=|>=|=|<|>")


def _folded_value(name: str, text: str) -> str:
    if name == "file.links":
        return link_key(text)
    return text.strip().lstrip("#").strip().casefold()


def _check_text(text: str, at: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise WhereError(f"{at}: not valid text (a lone surrogate)") from None


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a {type(value).__name__}"


def conditions(node: Node) -> list[Cond]:
    """Every condition of a tree, in order."""
    if isinstance(node, Cond):
        return [node]
    if isinstance(node, Not):
        return conditions(node.item)
    return [c for item in node.items for c in conditions(item)]


# -- the scan path's evaluation -----------------------------------------------------------

Facts = Mapping[str, Sequence[tuple[Kind, str | int | float, bool]]]
"""A note's values by property name: (kind, stored value, whether a list item)."""


def file_value(
    name: str, path: str, size: int, mtime_ns: int, born_ns: int = 0
) -> str | int | float | None:
    """The value of a single-valued file property of the note at ``path`` (the index's SQL
    function ``engram_file`` calls it too)."""
    folder, _, file_name = path.rpartition("/")
    if name == "file.path":
        return path
    if name == "file.name":
        return file_name
    if name == "file.basename":
        return file_name.rpartition(".")[0] if "." in file_name else file_name
    if name == "file.ext":
        return file_name.rpartition(".")[2] if "." in file_name else ""
    if name == "file.folder":
        return folder or "/"
    if name == "file.size":
        return size
    if name in ("file.mtime", "file.ctime"):
        ns = mtime_ns if name == "file.mtime" else born_ns
        stamp = dt.datetime.fromtimestamp(ns // 1_000_000_000, dt.UTC).replace(tzinfo=None)
        return stamp.isoformat(timespec="seconds")
    return None


def note_facts(note: Note, size: int, mtime_ns: int, born_ns: int = 0) -> dict[str, list[Any]]:
    """Every value of every property of a parsed note, file properties included."""
    facts: dict[str, list[Any]] = {}
    for prop in note.properties:
        facts.setdefault(prop.name, []).append((prop.kind, prop.value, prop.item))
    for name, kind in FILE_PROPS.items():
        if name in FOLDED:
            continue
        value = file_value(name, note.path, size, mtime_ns, born_ns)
        facts[name] = [(kind, value, False)]
    facts["file.tags"] = [("text", t.casefold(), True) for t in dict.fromkeys(note.topics)]
    facts["file.links"] = [("text", link_key(link.target), True) for link in note.links]
    return facts


def matches(node: Node, facts: Facts) -> bool:
    """Whether a note with these values passes the tree (the index's SQL means the same)."""
    if isinstance(node, All):
        return all(matches(item, facts) for item in node.items)
    if isinstance(node, AnyOf):
        return any(matches(item, facts) for item in node.items)
    if isinstance(node, Not):
        return not matches(node.item, facts)
    values = facts.get(node.prop, ())
    if node.op == "exists":
        return bool(values)
    if node.op == "missing":
        return not values
    if node.op == "!=":
        return not any(_equal(node, v) for v in values)
    return any(_one(node, v) for v in values)


def _equal(c: Cond, v: tuple[Kind, Any, bool]) -> bool:
    return v[0] == c.kind and v[1] == c.value and not (c.single and v[2])


def _one(c: Cond, v: tuple[Kind, Any, bool]) -> bool:
    kind, value, item = v
    if item and c.single:
        return False
    if c.op == "=":
        return kind == c.kind and value == c.value
    if c.op == "contains":
        if c.kind == "text" and kind == "text" and not item:
            return c.text in value
        return kind == c.kind and value == c.value
    if c.op == "starts_with":
        return kind in ("text", "date") and str(value).startswith(c.text)
    if kind != c.kind:
        return False
    if c.op == "<":
        return bool(value < c.value)
    if c.op == "<=":
        return bool(value <= c.value)
    if c.op == ">":
        return bool(value > c.value)
    return bool(value >= c.value)


__all__ = [
    "FILE_PROPS",
    "OPS",
    "All",
    "AnyOf",
    "Cond",
    "Node",
    "Not",
    "Op",
    "WhereError",
    "condition",
    "conditions",
    "file_value",
    "matches",
    "note_facts",
    "parse_condition_text",
    "parse_where",
]

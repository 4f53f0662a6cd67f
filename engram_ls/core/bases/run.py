"""Running one view of a base over the index: its notes, in its order, with its columns.

1. The filters the index answers exactly (``plan.compile_filters``) give a bitmap of notes
   (``where_bits.evaluate``, each condition read once per index state).
2. The other filters are evaluated over those notes' values, read from the index (``props``,
   ``notes``, ``note_topics``, ``links``): only the properties the filters name.
3. The notes are ordered by the view's ``groupBy`` and ``sort`` keys (by path without any).
   With one key on a frontmatter property (or none) and a ``limit``, and nothing left to
   evaluate, the order comes from the index: the ``props`` key range read in value order
   (``key, kind, value``), each note checked against the bitmap, stopping after ``limit``
   notes and their ties; otherwise every passing note's sort values are read and sorted.
4. The columns (``order``: properties, file properties, formulas) are computed for the page.

Order between values (docs/queries.md): by type first (booleans, dates, numbers, text, in
that order; an empty value or a missing property always last), then by value; a list sorts
by its least item (its greatest, descending); ties by path.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import statistics
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engram_ls.core.bases.expr import BaseError, Expr, references
from engram_ls.core.bases.plan import compile_filters, filter_names, passes
from engram_ls.core.bases.spec import Base, View
from engram_ls.core.bases.values import Duration, Row, moment, to_text, type_name
from engram_ls.core.index.schema import PROP_BITS, PROP_NOTE
from engram_ls.core.index.snapshot_cache import Memo
from engram_ls.core.properties import CODES
from engram_ls.core.search.where import FOLDED, condition, file_value
from engram_ls.core.search.where_bits import NoteBits
from engram_ls.core.search.where_bits import evaluate as where_notes
from engram_ls.core.search.where_sql import register as register_where

MAX_ROWS = 10_000
"""Most notes a view returns (its ``limit``, or this)."""
_CHUNK = 5000
_SMALL = 2000
"""Notes passing a view up to which they are sorted here rather than read in index order."""
_CHECK_EVERY = 2048
_KIND_RANK = {"bool": 0, "date": 1, "number": 2, "string": 3}
_KINDS = {code: kind for kind, code in CODES.items()}


@dataclass(slots=True)
class ViewResult:
    view: str
    views: list[str]
    columns: list[dict[str, str]]
    rows: list[dict[str, Any]]
    total: int
    groups: list[dict[str, Any]] | None = None
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    served_by: str = "index"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "view": self.view,
            "views": self.views,
            "columns": self.columns,
            "rows": self.rows,
            "total": self.total,
            "truncated": self.total > len(self.rows),
        }
        if self.groups is not None:
            out["groups"] = self.groups
        if self.summaries:
            out["summaries"] = self.summaries
        return out


def pick_view(base: Base, name: str | None) -> View:
    if name is None:
        return base.views[0]
    for view in base.views:
        if view.name == name:
            return view
    names = ", ".join(repr(v.name) for v in base.views)
    raise BaseError(f"no view named {name!r} (the views: {names})", construct=name)


def run_view(
    conn: sqlite3.Connection,
    base: Base,
    view: View,
    *,
    memo: Memo[Hashable, int] | None,
    now: dt.datetime,
    check: Callable[[], None] = lambda: None,
) -> ViewResult:
    """The view's rows over the index in ``conn`` (in one read transaction)."""
    register_where(conn)
    compiled = compile_filters([base.filters, view.filters], now)
    notes = where_notes(conn, compiled.where or condition("file.path", "exists"), memo)
    keys = [*([view.group_by] if view.group_by else []), *view.sort]
    limit = min(view.limit if view.limit is not None else MAX_ROWS, MAX_ROWS)
    reader = _Reader(conn, base.formulas, now, check)
    columns = list(view.order) or ["file.name"]
    wanted = set(columns) | {k for k, _ in keys} | {"file.path"}
    ids: list[int]
    fast = None if compiled.rest else _streamed(conn, notes, keys, limit, check)
    if fast is not None:
        total, ids = notes.count, fast
        page = reader.rows(ids, wanted)
    else:
        ids = notes.ids()
        if compiled.rest:
            names = set().union(*(filter_names(f) for f in compiled.rest))
            rows = reader.rows(ids, names, paths=False)
            ids = [i for i, r in rows.items() if all(passes(f, r) for f in compiled.rest)]
        total = len(ids)
        # Sorted here: the sort values of every passing note, then the columns of the page
        # (read with them when every passing note is on it).
        whole = len(ids) <= limit
        rows = reader.rows(ids, wanted if whole else {k for k, _ in keys} | {"file.path"})
        ids = _ordered(ids, keys, rows)[:limit]
        page = rows if whole else reader.rows(ids, wanted)
    out_rows = []
    for i in ids:
        row = page[i]
        values = {c: _json(row.get(c)) for c in columns}
        entry: dict[str, Any] = {"path": row.files["file.path"], "values": values}
        if view.group_by:
            entry["group"] = _json(row.get(view.group_by[0]))
        out_rows.append(entry)
    result = ViewResult(
        view=view.name,
        views=[v.name for v in base.views],
        columns=[{"property": c, "name": base.display.get(c, c)} for c in columns],
        rows=out_rows,
        total=total,
    )
    if view.group_by:
        result.groups = _groups(out_rows)
    for col, fn in view.summaries.items():
        result.summaries[col] = {
            "summary": fn,
            "value": _json(summary(fn, [page[i].get(col) for i in ids])),
        }
    return result


class _Reader:
    """Notes' values from the index, as ``Row``s."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        formulas: dict[str, Expr],
        now: dt.datetime,
        check: Callable[[], None],
    ) -> None:
        self.conn = conn
        self.formulas = formulas
        self.now = now
        self.check = check

    def rows(
        self, ids: Sequence[int], names: Iterable[str], *, paths: bool = True
    ) -> dict[int, Row]:
        """A row of each note with the properties ``names`` (and those their formulas read);
        its file properties (its path at least) only with ``paths`` or when ``names`` has one."""
        props, files = self._needed(set(names))
        out: dict[int, Row] = {}
        for start in range(0, len(ids), _CHUNK):
            self.check()
            part = ids[start : start + _CHUNK]
            chunk = json.dumps(list(part))
            if not paths and not files:
                out.update((i, Row({}, {}, self.formulas, self.now)) for i in part)
            for i, path, size, mtime, born in (
                ()
                if not paths and not files
                else self.conn.execute(
                    "SELECT n.id, n.path, n.size, n.mtime_ns, n.born_ns FROM json_each(?) j"
                    " CROSS JOIN notes n ON n.id = j.value",
                    (chunk,),
                )
            ):
                info: dict[str, Any] = {}
                for name in files - FOLDED:
                    value = file_value(name, path, size, mtime, born)
                    dated = name in ("file.mtime", "file.ctime")
                    info[name] = dt.datetime.fromisoformat(value) if dated else value  # type: ignore[arg-type]
                info["file.path"] = path
                out[i] = Row({}, info, self.formulas, self.now)
            if props:
                self._props(chunk, sorted(props), out)
            if "file.tags" in files:
                for i, key in self.conn.execute(
                    "SELECT nt.note_id, t.key FROM json_each(?) j CROSS JOIN note_topics nt"
                    " ON nt.note_id = j.value JOIN topics t ON t.id = nt.topic_id",
                    (chunk,),
                ):
                    out[i].files.setdefault("file.tags", []).append(key)
            if "file.links" in files:
                for i, key in self.conn.execute(
                    "SELECT l.note_id, l.key FROM json_each(?) j CROSS"
                    " JOIN links l ON l.note_id = j.value",
                    (chunk,),
                ):
                    out[i].files.setdefault("file.links", []).append(key)
        for row in out.values():
            for name in ("file.tags", "file.links"):
                if name in files:
                    row.files.setdefault(name, [])
        return out

    def _needed(self, names: set[str]) -> tuple[set[str], set[str]]:
        seen: set[str] = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            if name.startswith("formula.") and name[8:] in self.formulas:
                todo.extend(p.name for p in references(self.formulas[name[8:]]))
        props = {n for n in seen if not n.startswith(("file.", "formula."))}
        files = {n for n in seen if n.startswith("file.")}
        return props, files

    def _props(self, chunk: str, names: list[str], out: dict[int, Row]) -> None:
        found: dict[tuple[int, str], list[tuple[Any, int]]] = {}
        for i, key, kind, value, item in self.conn.execute(
            f"SELECT p.{PROP_NOTE}, p.key, p.kind, p.value, p.item FROM json_each(?) j CROSS"
            f" JOIN props p ON p.id BETWEEN j.value << {PROP_BITS}"
            f" AND (j.value << {PROP_BITS}) + {(1 << PROP_BITS) - 1}"
            f" WHERE +p.key IN ({','.join('?' * len(names))})",  # the range, not the index
            (chunk, *names),
        ):
            found.setdefault((i, key), []).append((_value(_KINDS[kind], value), int(item)))
        for (i, key), values in found.items():
            values.sort(key=lambda v: v[1])  # a list in its order
            if len(values) == 1 and not values[0][1]:
                out[i].values[key] = values[0][0]
            else:
                out[i].values[key] = (
                    [v for v, _ in values] if any(it for _, it in values) else values[0][0]
                )


def _ordered(ids: list[int], keys: Sequence[tuple[str, bool]], rows: dict[int, Row]) -> list[int]:
    """``ids`` in the order of ``keys`` (by path without any; ties by path)."""
    order = sorted(ids, key=lambda i: rows[i].files["file.path"])
    for name, desc in reversed(keys):
        order.sort(key=lambda i: _sort_key(rows[i].get(name), desc))
    return order


def _value(kind: str, value: Any) -> Any:
    if kind == "date":
        return dt.datetime.fromisoformat(value) if "T" in value else dt.date.fromisoformat(value)
    if kind == "bool":
        return bool(value)
    if kind == "null":
        return None
    return value


def _sort_key(value: Any, desc: bool) -> tuple[int, Any]:
    """Missing and empty values last in both directions; otherwise by type, then value
    (reversed for descending: numbers negated, others by a reversed key)."""
    if isinstance(value, list):
        items = [v for v in value if v is not None and v != ""]
        value = (max if desc else min)(items, key=lambda v: _sort_key(v, False)) if items else None
    if value is None or value == "" or isinstance(value, Duration):
        return (9, 0)
    rank = _KIND_RANK.get(type_name(value), 8)
    if isinstance(value, dt.date):
        value = moment(value)
    if isinstance(value, bool):
        value = int(value)
    if not desc:
        return (rank, value)
    return (8 - rank, _Reversed(value))


class _Reversed:
    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v

    def __lt__(self, other: _Reversed) -> bool:
        return bool(self.v > other.v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and bool(self.v == other.v)


def _streamed(
    conn: sqlite3.Connection,
    notes: NoteBits,
    keys: Sequence[tuple[str, bool]],
    limit: int,
    check: Callable[[], None],
) -> list[int] | None:
    """The first ``limit`` notes in ``keys`` order read in index order, when that order is
    one frontmatter property (or the path); None when it must be sorted here."""
    if len(keys) > 1 or notes.count <= _SMALL:
        return None  # a few notes: their values are read and sorted
    if not keys:
        return _first_by_path(conn, notes, limit, check, set())
    name, desc = keys[0]
    if name.startswith(("file.", "formula.")):
        return None
    ranks = sorted(CODES[k] for k in ("bool", "date", "number", "text"))  # b d n t
    direction = "DESC" if desc else "ASC"
    rows = conn.execute(  # the key's index alone: a note's path only once it passes
        f"SELECT {PROP_NOTE}, kind, value FROM props"
        f" WHERE key = ? AND kind IN ({','.join('?' * len(ranks))})"
        f" ORDER BY kind {direction}, value {direction}",
        (name, *ranks),
    )
    picked: list[tuple[int, int]] = []
    """(the value's place in the order, note id) of the notes passing, up to the value that
    reaches ``limit``."""
    taken: set[int] = set()
    last: Any = None
    group = -1
    member, size, text = notes.member, len(notes.member), CODES["text"]  # the loop's hot path
    for n, (i, kind, value) in enumerate(rows):
        if not n % _CHECK_EVERY:
            check()
        at = i >> 3  # bitmaps.has, inline
        if at >= size or not member[at] >> (i & 7) & 1 or i in taken:
            continue
        if kind == text and value == "":
            continue
        if (kind, value) != last:
            if len(picked) >= limit:
                break
            last, group = (kind, value), group + 1
        taken.add(i)
        picked.append((group, i))
    paths = dict(
        conn.execute(
            "SELECT n.id, n.path FROM json_each(?) j CROSS JOIN notes n ON n.id = j.value",
            (json.dumps([i for _, i in picked]),),
        )
    )
    out = [i for _, i in sorted(picked, key=lambda gi: (gi[0], paths.get(gi[1], "")))]
    if len(out) >= limit:
        return out[:limit]
    return out + _first_by_path(conn, notes, limit - len(out), check, taken)


def _first_by_path(
    conn: sqlite3.Connection, notes: NoteBits, limit: int, check: Callable[[], None], skip: set[int]
) -> list[int]:
    out: list[int] = []
    if limit <= 0:
        return out
    for n, (i,) in enumerate(conn.execute("SELECT id FROM notes ORDER BY path")):
        if not n % _CHECK_EVERY:
            check()
        if i in notes and i not in skip:
            out.append(i)
            if len(out) >= limit:
                break
    return out


def _groups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in rows:
        if out and out[-1]["value"] == row["group"]:
            out[-1]["rows"] += 1
        else:
            out.append({"value": row["group"], "rows": 1})
    return out


def summary(name: str, values: list[Any]) -> Any:
    """A built-in summary of a column's values in the rows shown."""
    filled = [v for v in values if v is not None and v != "" and v != []]
    numbers = [v for v in filled if type_name(v) == "number"]
    dates = [moment(v) for v in filled if type_name(v) == "date"]
    if name == "Empty":
        return len(values) - len(filled)
    if name == "Filled":
        return len(filled)
    if name == "Unique":
        return len({to_text(v) for v in filled})
    if name == "Checked":
        return sum(1 for v in values if v is True)
    if name == "Unchecked":
        return sum(1 for v in values if v is False)
    if name in ("Earliest", "Latest"):
        return (min if name == "Earliest" else max)(dates) if dates else None
    if not numbers:
        return None
    if name == "Average":
        return statistics.fmean(numbers)
    if name == "Sum":
        return sum(numbers)
    if name == "Min":
        return min(numbers)
    if name == "Max":
        return max(numbers)
    if name == "Range":
        return max(numbers) - min(numbers)
    if name == "Median":
        return statistics.median(numbers)
    return statistics.pstdev(numbers)  # Stddev


def _json(value: Any) -> Any:
    """A value as JSON: dates in ISO form, durations as text."""
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, Duration):
        return to_text(value)
    if isinstance(value, list):
        return [_json(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


__all__ = ["MAX_ROWS", "ViewResult", "pick_view", "run_view", "summary"]

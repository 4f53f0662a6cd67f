"""Listing tasks: ``engram tasks``, ``engram/tasks`` and ``list_tasks``.

A request (``request.TasksRequest``) is resolved once against the day it is answered
(``Wanted``), then answered from the index (``from_index``: one SQL statement over ``tasks``
and ``notes``, through the indexes by due day, by priority, of the notes' paths and of the
tags) or, while the index cannot serve, by reading the notes (``from_files``). ``passes``
and ``sort_key`` are what a task must satisfy and how tasks are ordered, in Python: the scan
uses them, and the differential test holds the SQL to them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import InvalidRequest, LimitExceeded
from engram_ls.core.index import db
from engram_ls.core.index.rows import folder_range
from engram_ls.core.index.schema import TASK_BITS
from engram_ls.core.index.symbol_match import SymbolHit
from engram_ls.core.model import Task
from engram_ls.core.search.filters import path_condition, register_glob
from engram_ls.core.search.plan import in_scope, path_scope
from engram_ls.core.tasks.request import TasksRequest, parse_tasks_request, resolve_day
from engram_ls.core.tasks.store import COLUMNS, RANK, from_row, is_open, task_json

if TYPE_CHECKING:
    from engram_ls.core.service import Engram
    from engram_ls.core.vault import Vault

STATUS_SQL: dict[str, tuple[str, list[Any]]] = {
    "open": ("t.open = 1", []),
    "done": ("t.status IN ('x', 'X')", []),
    "cancelled": ("t.status = '-'", []),
    "todo": ("t.status = ' '", []),
    "in_progress": ("t.status = '/'", []),
}


@dataclass(frozen=True, slots=True)
class Wanted:
    """A request resolved for one day: what a task must satisfy, the order, the page."""

    status: str
    due_after: str | None
    due_before: str | None
    scheduled_after: str | None
    scheduled_before: str | None
    ranks: frozenset[int]
    tags: tuple[str, ...]
    """Case-folded, without ``#``."""
    note_tags: tuple[str, ...]
    path: str | None
    path_kind: str | None
    words: tuple[str, ...]
    """Case-folded."""
    sort: str
    limit: int
    offset: int
    today: str


@dataclass(frozen=True, slots=True)
class Found:
    """One task of the answer, with its note."""

    path: str
    task: Task
    title: str
    created_at: str | None
    topics: tuple[str, ...]


def wanted(request: TasksRequest, vault: Vault, config: EngramConfig, today: dt.date) -> Wanted:
    """The request resolved (relative days against ``today``, the path checked to stay in
    the vault, the page against the configured limits)."""

    def day(value: str | None) -> str | None:
        if value is None:
            return None
        try:
            return resolve_day(value, today)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None

    limit = request.limit if request.limit is not None else config.limits.default_limit
    if limit > config.limits.max_results:
        raise LimitExceeded(
            f"limit {limit} is over limits.max_results ({config.limits.max_results})",
            data={"limit": config.limits.max_results},
        )
    path, kind = path_scope(request.path, vault)
    return Wanted(
        status=request.status,
        due_after=day(request.due_after),
        due_before=day(request.due_before),
        scheduled_after=day(request.scheduled_after),
        scheduled_before=day(request.scheduled_before),
        ranks=frozenset(RANK[p] for p in request.priority),
        tags=_keys(request.tags),
        note_tags=_keys(request.note_tags),
        path=path,
        path_kind=kind,
        words=tuple(dict.fromkeys((request.text or "").casefold().split())),
        sort=request.sort,
        limit=limit,
        offset=request.offset,
        today=today.isoformat(),
    )


def _keys(tags: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(k for t in tags if (k := t.strip().lstrip("#").casefold())))


# -- the meaning, in Python -------------------------------------------------------------------


def passes(w: Wanted, task: Task, path: str, topics: Sequence[str]) -> bool:
    """Whether a task of the note at ``path`` (with ``topics``) is one the request asks for."""
    if not _status_ok(w.status, task.status):
        return False
    if not _between(task.due, w.due_after, w.due_before):
        return False
    if not _between(task.scheduled, w.scheduled_after, w.scheduled_before):
        return False
    if w.ranks and RANK[task.priority] not in w.ranks:
        return False
    if w.tags and not _any_tag(task.tags, w.tags):
        return False
    if w.note_tags and not _any_tag(topics, w.note_tags):
        return False
    if not in_scope(path, w.path, w.path_kind):
        return False
    if w.words:
        folded = task.text.casefold()
        if not all(word in folded for word in w.words):
            return False
    return True


def _status_ok(wanted_status: str, status: str) -> bool:
    if wanted_status == "all":
        return True
    if wanted_status == "open":
        return is_open(status)
    if wanted_status == "done":
        return status in ("x", "X")
    if wanted_status in STATUS_SQL:
        return status == {"cancelled": "-", "todo": " ", "in_progress": "/"}[wanted_status]
    return status == wanted_status


def _between(value: str | None, after: str | None, before: str | None) -> bool:
    if after is None and before is None:
        return True
    if value is None:
        return False
    return (after is None or value > after) and (before is None or value < before)


def _any_tag(tags: Sequence[str], keys: Sequence[str]) -> bool:
    """Whether one of ``tags`` is one of ``keys`` or nested under one (case-insensitive)."""
    for tag in tags:
        folded = tag.casefold()
        if any(folded == key or folded.startswith(key + "/") for key in keys):
            return True
    return False


def sort_key(w: Wanted, f: Found) -> tuple[Any, ...]:
    """How the answer is ordered (the SQL's ORDER BY, in Python)."""
    rank = -RANK[f.task.priority]
    due = (f.task.due is None, f.task.due or "")
    if w.sort == "due":
        return (*due, rank, f.path, f.task.line)
    if w.sort == "priority":
        return (rank, *due, f.path, f.task.line)
    return (f.path, f.task.line)


# -- from the index ---------------------------------------------------------------------------

DUE = "ifnull(t.due, '~')"
"""A task's due day as the indexes order it: undated ones ('~') after every day."""
_ORDER = {
    # t.id orders a note's tasks as their lines do (a task's place in its note)
    "path": "n.path, t.id",
    "due": f"{DUE}, t.priority DESC, n.path, t.id",
    "priority": f"t.priority DESC, {DUE}, n.path, t.id",
}


def register(conn: sqlite3.Connection) -> None:
    """The SQL function the text condition calls (``str.casefold``, as ``passes`` folds)."""
    conn.create_function("engram_fold", 1, _fold, deterministic=True)
    register_glob(conn)


def _fold(text: Any) -> str:
    return str(text).casefold() if text is not None else ""


_COLUMNS = ", ".join(f"t.{c.strip()}" for c in COLUMNS.split(","))
"""``COLUMNS`` of the tasks table ``t``."""


def from_index(conn: sqlite3.Connection, w: Wanted) -> tuple[list[Found], int]:
    """The page of tasks the request asks for, and how many there are, from the index.

    A folder scope reads its notes first (one range of the paths' index, each note's tasks a
    range of task ids, already in the order of a listing by path); any other request reads the
    tasks first (by due day or by priority, through their indexes) and each one's note by its
    id. The count reads ``tasks`` alone when no condition is on the note."""
    where, params = _conditions(w)
    bits, top = TASK_BITS, (1 << TASK_BITS) - 1
    ids = f"t.id BETWEEN (n.id << {bits}) AND (n.id << {bits}) + {top}"
    if w.path is not None and w.path_kind == "folder":
        joined = f" FROM notes n CROSS JOIN tasks t ON {ids}"
    else:
        joined = f" FROM tasks t JOIN notes n ON n.id = (t.id >> {bits}) AND {ids}"
    condition = " WHERE " + " AND ".join(where) if where else ""
    rows = conn.execute(
        f"SELECT {_COLUMNS}, n.path, n.title, n.created_at, n.topics{joined}{condition}"
        f" ORDER BY {_ORDER[w.sort]} LIMIT ? OFFSET ?",
        [*params, w.limit, w.offset],
    ).fetchall()
    found = [_found(r) for r in rows]
    if w.offset == 0 and len(found) < w.limit:
        total = len(found)
    else:
        total = _count(conn, w, joined, condition, params)
    return found, int(total)


def _found(row: Sequence[Any]) -> Found:
    """A row of ``COLUMNS`` then the note's path, title, date and topics."""
    return Found(
        str(row[13]), from_row(row[:13]), str(row[14]), row[15], tuple(json.loads(row[16]))
    )


def done_between(engram: Engram, first: dt.date, last: dt.date, limit: int) -> dict[str, Any]:
    """The tasks done (status x, with a done day) from ``first`` to ``last`` inclusive, the
    last done first, at most ``limit``, and how many there are: what a request cannot ask
    (it filters on due and scheduled days). From the index only (``tasks`` has no index by
    done day: one pass over it, 20 ms at 100,000 notes); IndexUnavailable while it cannot
    serve."""
    bits = TASK_BITS
    where = f" WHERE {STATUS_SQL['done'][0]} AND t.done BETWEEN ? AND ?"
    days = (first.isoformat(), last.isoformat())
    with engram.health.reading(fresh=True) as r:
        if r.servable:
            rows = r.conn.execute(
                f"SELECT {_COLUMNS}, n.path, n.title, n.created_at, n.topics FROM tasks t"
                f" JOIN notes n ON n.id = (t.id >> {bits}){where}"
                " ORDER BY t.done DESC, n.path, t.id LIMIT ?",
                (*days, limit),
            ).fetchall()
            total = len(rows)
            if total == limit:
                (total,) = r.conn.execute(f"SELECT count(*) FROM tasks t{where}", days).fetchone()
            today = last.isoformat()
            return {"tasks": [found_json(_found(row), today) for row in rows], "total": total}
    raise r.unavailable("tasks done on given days need a built index")


def found_json(f: Found, today: str) -> dict[str, Any]:
    """A task of an answer as every front end gives it: ``task_json`` and its note."""
    return {
        **task_json(f.task, path=f.path, today=today),
        "note": {"title": f.title, "created_at": f.created_at, "topics": list(f.topics)},
    }


def _count(
    conn: sqlite3.Connection, w: Wanted, joined: str, condition: str, params: list[Any]
) -> int:
    """How many tasks pass: from ``task_tags`` alone for tags and a status of ``open`` or
    ``all`` (its index by tag and open state), from ``tasks`` alone when nothing is asked of
    the note, else through the join."""
    others = all(getattr(w, name) == value for name, value in _UNFILTERED.items())
    if w.tags and w.status in ("open", "all") and others:
        opened = " AND open = 1" if w.status == "open" else ""
        if len(w.tags) == 1:
            key = w.tags[0]
            lo, hi = folder_range(key)
            nested = conn.execute(
                "SELECT 1 FROM task_tags WHERE tag >= ? AND tag < ? LIMIT 1", (lo, hi)
            ).fetchone()
            if nested is None:  # one tag, none under it: a task counts once (a range count)
                (n,) = conn.execute(
                    f"SELECT count(*) FROM task_tags WHERE tag = ?{opened}", (key,)
                ).fetchone()
                return int(n)
        sql, more = _nested("tag", w.tags)
        (n,) = conn.execute(
            f"SELECT count(DISTINCT task) FROM task_tags WHERE ({sql}){opened}", more
        ).fetchone()
        return int(n)
    source = joined if w.path is not None or w.note_tags else " FROM tasks t"
    (n,) = conn.execute(f"SELECT count(*){source}{condition}", params).fetchone()
    return int(n)


_UNFILTERED: dict[str, Any] = {
    "due_after": None,
    "due_before": None,
    "scheduled_after": None,
    "scheduled_before": None,
    "ranks": frozenset(),
    "note_tags": (),
    "path": None,
    "path_kind": None,
    "words": (),
}
"""A request's filters other than status and tags, as when none is given."""


def _conditions(w: Wanted) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if w.status != "all":
        sql, more = STATUS_SQL.get(w.status, ("t.status = ?", [w.status]))
        where.append(sql)
        params += more
    if w.due_after is not None:  # in the terms of the index: an undated task is '~'
        where.append(f"{DUE} > ? AND t.due IS NOT NULL")
        params.append(w.due_after)
    if w.due_before is not None:
        where.append(f"{DUE} < ?")
        params.append(w.due_before)
    if w.scheduled_after is not None:
        where.append("t.scheduled > ?")
        params.append(w.scheduled_after)
    if w.scheduled_before is not None:
        where.append("t.scheduled < ?")
        params.append(w.scheduled_before)
    if w.ranks:
        where.append(f"t.priority IN ({','.join('?' * len(w.ranks))})")
        params += sorted(w.ranks)
    if w.tags:
        sql, more = _nested("tag", w.tags)
        # probed per task (a primary key lookup) as tasks are read in order, never listed whole
        where.append(f"EXISTS (SELECT 1 FROM task_tags x WHERE x.task = t.id AND ({sql}))")
        params += more
    if w.note_tags:
        sql, more = _nested("key", w.note_tags)
        where.append(
            "n.id IN (SELECT note_id FROM note_topics WHERE topic_id IN"
            f" (SELECT id FROM topics WHERE {sql}))"
        )
        params += more
    if w.path is not None:
        sql, more = path_condition("n.path", w.path, w.path_kind)
        where.append(sql)
        params += more
    for word in w.words:
        where.append("instr(engram_fold(t.text), ?) > 0")
        params.append(word)
    return where, params


def _nested(column: str, keys: Sequence[str]) -> tuple[str, list[Any]]:
    """SQL of ``_any_tag``: ``column`` (case-folded) is one of ``keys`` or under one."""
    parts, params = [], []
    for key in keys:
        lo, hi = folder_range(key)
        parts.append(f"{column} = ? OR ({column} >= ? AND {column} < ?)")
        params += [key, lo, hi]
    return " OR ".join(parts), params


TASK_SYMBOLS = 20
"""Open tasks a ``workspace/symbol`` answer holds, at most."""
TASK_TIER = 2
"""A task holding the query ranks with names matched at a word start: after exact and prefix
matches, before loose subsequences (``symbol_match`` tiers 0-3)."""
MIN_SYMBOL_CHARS = 3


def task_symbols(conn: sqlite3.Connection, query: str) -> list[SymbolHit]:
    """Open tasks whose text holds ``query`` (ASCII letters in any case: SQLite's LIKE), at
    most ``TASK_SYMBOLS``, for ``workspace/symbol``; none for a query under three characters
    (every task would match). The scan stops at the cap: a common word costs little, a word
    no task has reads every open task's text (a few ms at 100,000 notes)."""
    q = query.strip()
    if len(q) < MIN_SYMBOL_CHARS:
        return []
    pattern = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = conn.execute(
        f"SELECT t.line, t.text, t.data, t.due, n.path, n.title FROM tasks t"
        f" JOIN notes n ON n.id = (t.id >> {TASK_BITS})"
        " WHERE t.open = 1 AND t.text LIKE ? ESCAPE '\\' LIMIT ?",
        (pattern, TASK_SYMBOLS),
    )
    return [
        SymbolHit(
            kind="task",
            name=json.loads(data).get("description") or text,
            path=str(path),
            line=int(line),
            container=str(title),
            tier=TASK_TIER,
            day=due,
        )
        for line, text, data, due, path, title in rows
    ]


# -- from the files ---------------------------------------------------------------------------


def from_files(engram: Engram, w: Wanted) -> tuple[list[Found], int]:
    """The same answer by reading every note in scope (while the index cannot serve)."""
    found: list[Found] = []
    under = w.path if w.path is not None and w.path_kind == "folder" else ""
    if under and engram.vault.abs(under).is_file():
        paths = [under]
    else:
        paths = sorted(f.path for f in engram.vault.walk(under))
    for path in paths:
        if not in_scope(path, w.path, w.path_kind):
            continue
        note = engram.read_note(path)
        if note is None:
            continue
        for task in note.tasks:
            if passes(w, task, path, note.topics):
                found.append(Found(path, task, note.title, note.created_at, note.topics))
    found.sort(key=lambda f: sort_key(w, f))
    return found[w.offset : w.offset + w.limit], len(found)


# -- the request ------------------------------------------------------------------------------

QUERY_SECONDS = 10.0


def query_tasks(
    engram: Engram,
    request: TasksRequest | Mapping[str, Any],
    *,
    today: dt.date | None = None,
) -> dict[str, Any]:
    """The tasks a request asks for, as every front end gives them (docs/tasks.md)."""
    t0 = time.perf_counter()
    req = parse_tasks_request(request)
    w = wanted(req, engram.vault, engram.config, today or dt.date.today())
    engram._vault_present()
    found: list[Found] | None = None
    total = 0
    deadline = time.monotonic() + QUERY_SECONDS
    try:
        with engram.health.reading(fresh=True, deadline=deadline) as r:
            if r.servable:
                register(r.conn)
                found, total = from_index(r.conn, w)
                served = r.served("index")
    except db.Interrupted:
        from engram_ls.core.errors import SearchTimeout

        raise SearchTimeout("listing the tasks ran past its deadline") from None
    if found is None:
        served = r.served("scan")
        found, total = from_files(engram, w)
    return {
        "tasks": [found_json(f, w.today) for f in found],
        "total": total,
        "truncated": total > w.offset + len(found),
        "today": w.today,
        "index": dataclasses.asdict(
            dataclasses.replace(served, source_revision=engram.revision.current())
        ),
        "elapsed_ms": (time.perf_counter() - t0) * 1000,
    }


__all__ = [
    "Found",
    "Wanted",
    "done_between",
    "found_json",
    "from_files",
    "from_index",
    "passes",
    "query_tasks",
    "sort_key",
]

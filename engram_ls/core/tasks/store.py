"""Tasks as the index keeps them (tables ``tasks`` and ``task_tags``, ``core/index/schema.py``)
and as every front end gives them (``task_json``).

A task's dates, status, open state and priority rank are columns (what queries filter and sort
on); the rest (description, recurrence, ids, tags, Dataview fields, heading, parent) is one
JSON text. The rows are made where the note is parsed (``rows.note_rows``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engram_ls.core.model import PRIORITIES, Task, task_state
from engram_ls.core.serialize import json_text

TaskRow = tuple[int, str, int, int, Any, Any, Any, Any, Any, Any, str, str]
"""(line, status, open, priority rank, due, scheduled, start, created, done, cancelled, text,
data) of a ``tasks`` row, without its id."""
DATES = ("due", "scheduled", "start", "created", "done", "cancelled")
COLUMNS = (
    "id, line, status, open, priority, due, scheduled, start, created, done, cancelled, text, data"
)
"""The ``tasks`` columns ``from_row`` reads, in its order."""
RANK = {name: rank for rank, name in enumerate(PRIORITIES)}


def is_open(status: str) -> bool:
    """Neither done nor cancelled (todo, in progress, and any status Obsidian does not know)."""
    return task_state(status) not in ("done", "cancelled")


def task_rows(
    tasks: Sequence[Task],
) -> tuple[tuple[TaskRow, ...], tuple[tuple[int, str, int], ...]]:
    """The ``tasks`` rows of a note's tasks, and its ``task_tags`` rows (the task's place in
    the note, the tag case-folded, whether the task is open)."""
    rows: list[TaskRow] = []
    tags: list[tuple[int, str, int]] = []
    for place, t in enumerate(tasks):
        # the details a task has, in this order (an empty one is left out)
        data: dict[str, Any] = {}
        if t.description:
            data["description"] = t.description
        if t.recurrence:
            data["recurrence"] = t.recurrence
        if t.id:
            data["id"] = t.id
        if t.depends_on:
            data["depends_on"] = list(t.depends_on)
        if t.tags:
            data["tags"] = list(t.tags)
        if t.fields:
            data["fields"] = [list(f) for f in t.fields]
        if t.heading:
            data["heading"] = t.heading
        if t.parent:
            data["parent"] = t.parent
        opened = int(is_open(t.status))
        rows.append(
            (
                t.line,
                t.status,
                opened,
                RANK[t.priority],
                t.due,
                t.scheduled,
                t.start,
                t.created,
                t.done,
                t.cancelled,
                t.text,
                json_text(data),
            )
        )
        if t.tags:
            tags.extend(
                (place, key, opened) for key in dict.fromkeys(tag.casefold() for tag in t.tags)
            )
    return tuple(rows), tuple(tags)


def from_row(row: Sequence[Any]) -> Task:
    """The ``Task`` of a row of ``COLUMNS`` (its id first)."""
    _id, line, status, _open, rank, due, scheduled, start, created, done, cancelled = row[:11]
    text, data = row[11], row[12]
    rest = json.loads(data)
    return Task(
        line=int(line),
        status=str(status),
        text=str(text),
        description=rest.get("description", ""),
        priority=PRIORITIES[int(rank)],
        due=due,
        scheduled=scheduled,
        start=start,
        created=created,
        done=done,
        cancelled=cancelled,
        recurrence=rest.get("recurrence"),
        id=rest.get("id"),
        depends_on=tuple(rest.get("depends_on", ())),
        tags=tuple(rest.get("tags", ())),
        fields=tuple((str(k), str(v)) for k, v in rest.get("fields", ())),
        heading=rest.get("heading"),
        parent=rest.get("parent"),
    )


def task_json(task: Task, *, path: str, today: str) -> dict[str, Any]:
    """A task as every front end gives it (docs/tasks.md): ``line`` from 1, ``overdue`` when
    it is open and its due day is before ``today``."""
    fields: dict[str, str] = {}
    for key, value in task.fields:
        fields.setdefault(key, value)
    return {
        "path": path,
        "line": task.line,
        "status": task.status,
        "state": task.state,
        "text": task.text,
        "description": task.description,
        "priority": task.priority,
        **{name: getattr(task, name) for name in DATES},
        "recurrence": task.recurrence,
        "id": task.id,
        "depends_on": list(task.depends_on),
        "tags": list(task.tags),
        "fields": fields,
        "heading": task.heading,
        "parent": task.parent,
        "overdue": bool(is_open(task.status) and task.due is not None and task.due < today),
    }


__all__ = ["COLUMNS", "DATES", "RANK", "TaskRow", "from_row", "is_open", "task_json", "task_rows"]

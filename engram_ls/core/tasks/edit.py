"""Completing a task, as Obsidian Tasks does, changing only its line.

``toggled`` is the edit of one line (pure; the language server applies it to an editor's
buffer): done sets the status to ``x`` and appends ``✅ YYYY-MM-DD`` (``[completion:: …]`` for
a task written with Dataview fields and no emoji), before a trailing block id (``^abc``);
undone sets it to a space and removes that date. Completing a recurring task also gives the
next occurrence, a line to insert above it: the same task, open, its due, scheduled and start
days moved by the rule (``every day``, ``every 3 weeks``, ``every month``, ``every 2 years``,
with ``when done`` counting from the day it was done), its done and cancelled days dropped. A
rule it cannot follow (``every week on Monday``, a task with no day to move) is said in
``recurrence`` and no line is added.

``toggle_task`` does it on disk: the note is read through the vault's reader, the task found
where the caller said (``PATH:LINE``, and, when given, the line's text the caller saw, else
refused), the file rewritten atomically only if it still holds the bytes read, and the note
indexed again before it returns. Every other byte of the file is kept, its line endings too.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engram_ls.core.edits import NoteChanged, read_for_edit, replace_if_unchanged, undecodable
from engram_ls.core.errors import InvalidRequest
from engram_ls.core.model import Task
from engram_ls.core.parse import parse_note
from engram_ls.core.tasks.grammar import DONE_MARK, MARKS

if TYPE_CHECKING:
    from engram_ls.core.service import Engram

_BOX_RE = re.compile(r"^([ \t]*(?:[-*+]|[0-9]{1,9}[.)])[ \t]+\[)([^\]\n])(\])")
_TAIL_RE = re.compile(r"([ \t]+\^[A-Za-z0-9-]+)?[ \t]*$")
"""The end of a line: a block id (``^abc``) and spaces, which a new field goes before."""
_DONE_RE = re.compile(rf"[ \t]*{DONE_MARK}\ufe0f?[ \t]*[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}")
_COMPLETION_RE = re.compile(r"[ \t]*\[completion::[^\]\n]*\]", re.IGNORECASE)
_CANCELLED_RE = re.compile(r"[ \t]*\u274c\ufe0f?[ \t]*[0-9]{4}-[0-9]{2}-[0-9]{2}")
_RULE_RE = re.compile(
    r"^every(?:\s+(?P<n>[0-9]{1,4}))?\s+(?P<unit>day|week|month|year)s?(?P<when>\s+when\s+done)?$",
    re.IGNORECASE,
)
_DATE_FIELDS = {
    "due": ("\U0001f4c5\U0001f4c6\U0001f5d3", "due"),
    "scheduled": ("\u23f3\u231b", "scheduled"),
    "start": ("\U0001f6eb", "start"),
}


@dataclass(frozen=True, slots=True)
class Toggled:
    """The edit of one task's line."""

    after: str
    """The task's line after the edit (without its line ending)."""
    inserted: str | None = None
    """The next occurrence of a recurring task, to insert above it; None when there is none."""
    recurrence: str | None = None
    """``added``, or why no occurrence was added (None for a task that does not recur)."""


def toggled(line: str, task: Task, *, done: bool, today: dt.date) -> Toggled:
    """``line`` (the task's line as written, without its ending) marked done or not done."""
    box = _BOX_RE.match(line)
    if box is None:
        raise InvalidRequest(f"not a task line: {line[:80]!r}")
    rest = line[box.end() :]
    if not done:
        rest = _COMPLETION_RE.sub("", _DONE_RE.sub("", rest))
        return Toggled(box.group(1) + " " + box.group(3) + rest)
    stamp = today.isoformat()
    if task.done is None:
        dataview = bool(task.fields) and not any(ch in MARKS for ch in task.text)
        field = f"[completion:: {stamp}]" if dataview else f"{DONE_MARK} {stamp}"
        tail = _TAIL_RE.search(rest)
        at = tail.start() if tail is not None else len(rest)
        rest = f"{rest[:at]} {field}{rest[at:]}" if rest[:at].strip() else f" {field}{rest[at:]}"
    after = box.group(1) + "x" + box.group(3) + rest
    if task.recurrence is None:
        return Toggled(after)
    nxt, why = _next_occurrence(box.group(1) + " " + box.group(3), line[box.end() :], task, today)
    return Toggled(after, nxt, why)


def _next_occurrence(head: str, rest: str, task: Task, today: dt.date) -> tuple[str | None, str]:
    """(the next occurrence's line: ``head``, the open checkbox, then ``rest`` with its days
    moved, ``added``) or (None, why not)."""
    rule = _RULE_RE.match((task.recurrence or "").strip())
    if rule is None:
        return (
            None,
            "not added: Engram follows 'every N days/weeks/months/years' rules, not"
            f" {task.recurrence!r}",
        )
    dates = {name: getattr(task, name) for name in _DATE_FIELDS if getattr(task, name)}
    if not dates:
        return None, "not added: the task has no due, scheduled or start day to move"
    n = int(rule["n"] or 1)
    unit = rule["unit"].lower()
    reference = dt.date.fromisoformat(dates.get("due") or dates.get("scheduled") or dates["start"])
    base = today if rule["when"] else reference
    moved = _shift(base, n, unit)
    delta = moved - reference
    new = _CANCELLED_RE.sub("", _COMPLETION_RE.sub("", _DONE_RE.sub("", rest)))
    for name, old in dates.items():
        marks, _ = _DATE_FIELDS[name]
        day = (dt.date.fromisoformat(old) + delta).isoformat()
        pattern = rf"([{marks}]\ufe0f?[ \t]*|\[{name}::[ \t]*){old}"
        new = re.sub(pattern, rf"\g<1>{day}", new, count=1, flags=re.IGNORECASE)
    return head + new, "added"


def _shift(day: dt.date, n: int, unit: str) -> dt.date:
    if unit == "day":
        return day + dt.timedelta(days=n)
    if unit == "week":
        return day + dt.timedelta(weeks=n)
    months = n * (12 if unit == "year" else 1)
    month0 = day.month - 1 + months
    year, month = day.year + month0 // 12, month0 % 12 + 1
    return day.replace(
        year=year, month=month, day=min(day.day, calendar.monthrange(year, month)[1])
    )


def toggle_task(
    engram: Engram,
    path: str,
    line: int,
    *,
    expect: str | None = None,
    done: bool | None = None,
    today: dt.date | None = None,
) -> dict[str, Any]:
    """Mark the task at ``path:line`` (line from 1) done, not done (``done``), or the other
    of the two (``done`` None); see the module's doc. Returns what changed and how the index
    took it."""
    vault = engram.vault
    rel = vault.rel(path)
    if not rel or not vault.filter.is_note(rel):
        raise InvalidRequest(f"not a note path of this vault (a .md file, not hidden): {path}")
    if line < 1:
        raise InvalidRequest("line counts from 1")
    data, st = read_for_edit(vault, rel)
    reason = undecodable(data)
    if reason is not None:
        raise InvalidRequest(f"{rel}: {reason[1]}", data={"path": rel})
    task = next((t for t in parse_note(rel, data, engram.config).tasks if t.line == line), None)
    text = data.decode("utf-8")
    lines = text.split("\n")
    current = lines[line - 1].removesuffix("\r") if line <= len(lines) else ""
    bom = "\ufeff" if line == 1 and current.startswith("\ufeff") else ""
    current = current[len(bom) :]
    if expect is not None and expect.removesuffix("\r") != current:
        raise NoteChanged(
            f"{rel}:{line} no longer holds the task you saw (it reads {current[:120]!r});"
            " nothing was written",
            data={"path": rel, "line": line, "found": current},
        )
    if task is None:
        raise InvalidRequest(
            f"{rel}:{line} is not a task (a '- [ ]' list item outside code and comments)",
            data={"path": rel, "line": line},
        )
    target = task.state != "done" if done is None else done
    edit = toggled(current, task, done=target, today=today or dt.date.today())
    ending = "\r" if lines[line - 1].endswith("\r") else ""
    lines[line - 1] = bom + edit.after + ending
    if edit.inserted is not None:
        lines.insert(line - 1, edit.inserted + ending)
    replace_if_unchanged(vault, rel, data, st, "\n".join(lines).encode("utf-8"))
    indexed = engram._index_written(rel)
    return {
        "path": rel,
        "line": line + (edit.inserted is not None),
        "before": current,
        "after": edit.after,
        "done": target,
        "inserted": edit.inserted,
        "inserted_line": line if edit.inserted is not None else None,
        "recurrence": edit.recurrence,
        "indexed": indexed.indexed,
        "generation": indexed.generation,
        "warning": indexed.warning,
    }


__all__ = ["Toggled", "toggle_task", "toggled"]

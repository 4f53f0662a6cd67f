"""A note's tasks: checkbox list items, with the fields of Obsidian Tasks and Dataview.

``note_tasks`` reads them from a note's body (after the frontmatter) and the body with its code
blanked (``parse.mask_code``, the same text the headings and links are read from). The rules,
in one place:

* **A task** is a list item (``-``, ``*``, ``+`` or ``1.``/``1)``, at any indentation, so nested
  ones count) whose text starts with a checkbox: ``[`` one character ``]``, then a space or the
  end of the line (``- [ ]``, ``* [x] text``). Lines in fenced code, in HTML comments
  (``<!-- -->``) and in the frontmatter are never tasks. ``\\r\\n`` was already made ``\\n``.
* **The status** is the character in the brackets, kept as written: `` `` todo, ``x``/``X``
  done, ``/`` in progress, ``-`` cancelled, any other character "other" (open, as Obsidian
  Tasks treats a status it does not know).
* **Fields** (Obsidian Tasks' emoji format), anywhere after the checkbox: 📅 (also 📆 🗓) due,
  ⏳ (also ⌛) scheduled, 🛫 start, ➕ created, ✅ done, ❌ cancelled, each followed by a
  ``YYYY-MM-DD`` day (a day that does not exist is no field: it stays in the description);
  the priorities 🔺 highest, ⏫ high, 🔼 medium, 🔽 low, ⏬ lowest; 🔁 a recurrence (its text
  up to the next field, kept as written); 🆔 an id; ⛔ the ids it depends on (comma-separated);
  🏁 what to do on completion. Any emoji may carry the variation selector U+FE0F. The first
  of each field counts.
* **Dataview inline fields** ``[key:: value]`` and ``(key:: value)`` are all kept in
  ``fields``; the keys ``due``, ``scheduled``, ``start``, ``created``, ``completion``,
  ``cancelled``, ``priority``, ``repeat``, ``id`` and ``dependsOn`` (any case) also fill the
  task's fields when its emoji did not.
* **Tags** are the ``#tags`` of the task's text, read as the note's inline tags are.
* Nothing inside an inline code span counts as a field or a tag.
* **Nesting**: a task's parent is the nearest task above it in the same list with less
  indentation (tabs count 4 columns); a non-blank line at column 0 that is not a list item
  ends the list. Its heading is the nearest heading above it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from engram_ls.core.inline import TAG_RE, is_tag_text, parse_iso_day
from engram_ls.core.model import Heading, Task

MAX_TASKS = 4096
"""Tasks read of one note (the rest are not indexed)."""

_TASK_RE = re.compile(
    r"^([ \t]*)(?:[-*+]|[0-9]{1,9}[.)])[ \t]+\[([^\]\n])\](?:[ \t]+([^\n]*))?$", re.MULTILINE
)
"""A task line: indentation, the status character, the text."""
_BOX_RE = re.compile(r"\[[^\]\n]\]")
"""A checkbox anywhere: where a task line can be."""
_ITEM_RE = re.compile(r"[ \t]*(?:[-*+]|[0-9]{1,9}[.)])(?:[ \t]|$)")
_COMMENT_RE = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_NOT_NEWLINE_RE = re.compile(r"[^\n]+")

_VS = "\ufe0f?"
_DATE_MARKS = {
    "\U0001f4c5": "due",  # 📅
    "\U0001f4c6": "due",  # 📆
    "\U0001f5d3": "due",  # 🗓
    "\u23f3": "scheduled",  # ⏳
    "\u231b": "scheduled",  # ⌛
    "\U0001f6eb": "start",  # 🛫
    "\u2795": "created",  # ➕
    "\u2705": "done",  # ✅
    "\u274c": "cancelled",  # ❌
}
PRIORITY_MARKS = {
    "\U0001f53a": "highest",  # 🔺
    "\u23eb": "high",  # ⏫
    "\U0001f53c": "medium",  # 🔼
    "\U0001f53d": "low",  # 🔽
    "\u23ec": "lowest",  # ⏬
}
RECURRENCE = "\U0001f501"  # 🔁
ID = "\U0001f194"  # 🆔
DEPENDS = "\u26d4"  # ⛔
ON_COMPLETION = "\U0001f3c1"  # 🏁
DONE_MARK = "\u2705"
MARKS = "".join([*_DATE_MARKS, *PRIORITY_MARKS, RECURRENCE, ID, DEPENDS, ON_COMPLETION])
"""Every character that starts an Obsidian Tasks field."""

_FIELD_RE = re.compile(
    rf"(?P<date>[{''.join(_DATE_MARKS)}]){_VS}[ \t]*(?P<day>[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})"
    rf"|(?P<prio>[{''.join(PRIORITY_MARKS)}]){_VS}"
    rf"|{RECURRENCE}{_VS}[ \t]*(?P<rec>[^{MARKS}#\[\]()\n]*)"
    rf"|{ID}{_VS}[ \t]*(?P<id>[A-Za-z0-9_-]+)"
    rf"|{DEPENDS}{_VS}[ \t]*(?P<deps>[A-Za-z0-9_-]+(?:[ \t]*,[ \t]*[A-Za-z0-9_-]+)*)"
    rf"|{ON_COMPLETION}{_VS}[ \t]*(?P<fin>[A-Za-z]+)"
    r"|(?P<open>[\[(])(?P<key>[^\[\]()\n:]+?)::[ \t]*(?P<value>[^\[\]()\n]*?)[ \t]*(?P<close>[\])])"
)
_FIELD_START_RE = re.compile(rf"[{MARKS}\[(]")
"""The first character of every field of ``_FIELD_RE``: where one can start."""


def _fields(masked: str) -> list[re.Match[str]]:
    """``_FIELD_RE``'s matches in ``masked``, as ``finditer`` gives them, tried only where a
    field can start (twice the speed: the pattern's branches begin with groups, which the
    regex engine cannot skip ahead to)."""
    found: list[re.Match[str]] = []
    at = _FIELD_START_RE.search(masked)
    while at is not None:
        m = _FIELD_RE.match(masked, at.start())
        if m is None:
            at = _FIELD_START_RE.search(masked, at.start() + 1)
        else:
            found.append(m)
            at = _FIELD_START_RE.search(masked, m.end())
    return found


_DATAVIEW_DATES = {
    "due": "due",
    "scheduled": "scheduled",
    "start": "start",
    "created": "created",
    "completion": "done",
    "cancelled": "cancelled",
}
_SPACES_RE = re.compile(r"[ \t]+")


def note_tasks(
    body: str, masked: str, body_line: int, headings: Sequence[Heading] = ()
) -> tuple[Task, ...]:
    """The tasks of a note's body (see the module's doc); ``masked`` is the body with its code
    blanked, ``body_line`` the file's line the body starts on."""
    if "[" not in masked:
        return ()
    if "<!--" in masked:
        masked = _COMMENT_RE.sub(_blank, masked)
    found = _task_lines(masked)
    if not found:
        return ()
    parents = _parents(masked, found) if len(found) > 1 else {}
    heading_lines = [h.line for h in headings]
    out: list[Task] = []
    line, counted = body_line, 0
    for m in found:
        start = m.start()
        line += masked.count("\n", counted, start)
        counted = start
        text_start = m.start(3) if m.group(3) is not None else m.end()
        at = bisect.bisect_left(heading_lines, line)
        parent = parents.get(start)
        out.append(
            read_task(
                body[text_start : m.end()],
                masked[text_start : m.end()],
                line=line,
                status=m.group(2),
                heading=headings[at - 1].text if at else None,
                parent=None if parent is None else parent + body_line,
            )
        )
    return tuple(out)


def _task_lines(masked: str) -> list[re.Match[str]]:
    """The task lines of a body (at most ``MAX_TASKS``), found from their checkboxes: only the
    lines holding a ``[c]`` are tried, where a scan of every line start costs a note without
    tasks as much as the rest of its parse."""
    found: list[re.Match[str]] = []
    tried = -1
    for box in _BOX_RE.finditer(masked):
        start = masked.rfind("\n", 0, box.start()) + 1
        if start == tried:
            continue  # another box on a line already tried
        tried = start
        m = _TASK_RE.match(masked, start)
        if m is not None:
            found.append(m)
            if len(found) == MAX_TASKS:
                break
    return found


def read_task(
    text: str,
    masked: str,
    *,
    line: int,
    status: str,
    heading: str | None = None,
    parent: int | None = None,
) -> Task:
    """One task from its text after the checkbox (``masked``: the same with code blanked)."""
    values: dict[str, str] = {}
    priority: str | None = None
    depends: tuple[str, ...] = ()
    fields: list[tuple[str, str]] = []
    cut: list[tuple[int, int]] = []
    for m in _fields(masked):
        kind = m.lastgroup  # the last group of the field's branch: which field it is
        if kind == "day":
            day = m.group("day")
            if parse_iso_day(day) is None:
                continue  # no such day: it stays text
            values.setdefault(_DATE_MARKS[m.group("date")], day)
        elif kind == "prio":
            priority = priority or PRIORITY_MARKS[m.group("prio")]
        elif kind == "rec":
            rec = text[m.start("rec") : m.end("rec")].strip()
            if rec:
                values.setdefault("recurrence", rec)
        elif kind == "id":
            values.setdefault("id", m.group("id"))
        elif kind == "deps":
            depends = depends or tuple(d.strip() for d in m.group("deps").split(","))
        elif kind == "fin":
            pass  # 🏁 delete/keep: read (out of the description), not kept
        else:  # a Dataview field (its closing bracket is the branch's last group)
            if (m.group("open"), m.group("close")) not in (("[", "]"), ("(", ")")):
                continue
            key = text[m.start("key") : m.end("key")].strip()
            value = text[m.start("value") : m.end("value")].strip()
            fields.append((key, value))
            _dataview(key, value, values)
            if m.group("open") == "[" and key.casefold() == "priority":
                priority = priority or _priority_name(value)
        cut.append(m.span())
    description = text
    for s, e in reversed(cut):
        description = description[:s] + " " + description[e:]
    if "  " in description or "\t" in description:
        description = _SPACES_RE.sub(" ", description)
    if priority is None and "priority" in values:
        priority = _priority_name(values["priority"])
    return Task(
        line=line,
        status=status,
        text=text,
        description=description.strip(),
        priority=priority or "normal",
        due=values.get("due"),
        scheduled=values.get("scheduled"),
        start=values.get("start"),
        created=values.get("created"),
        done=values.get("done"),
        cancelled=values.get("cancelled"),
        recurrence=values.get("recurrence"),
        id=values.get("id"),
        depends_on=depends or (_split_ids(values["depends"]) if "depends" in values else ()),
        tags=_tags(masked, text),
        fields=tuple(fields),
        heading=heading,
        parent=parent,
    )


def _dataview(key: str, value: str, values: dict[str, str]) -> None:
    folded = key.casefold()
    field = _DATAVIEW_DATES.get(folded)
    if field is not None:
        if parse_iso_day(value) is not None:
            values.setdefault(field, value)
    elif folded == "repeat" and value:
        values.setdefault("recurrence", value)
    elif folded == "id" and value:
        values.setdefault("id", value)
    elif folded in ("dependson", "depends-on", "depends_on") and value:
        values.setdefault("depends", value)
    elif folded == "priority" and value:
        values.setdefault("priority", value)


def _priority_name(value: str) -> str | None:
    folded = value.strip().casefold()
    return folded if folded in ("highest", "high", "medium", "low", "lowest", "normal") else None


def _split_ids(value: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in value.split(",") if p.strip())


def _tags(masked: str, text: str) -> tuple[str, ...]:
    if "#" not in masked:
        return ()
    seen: dict[str, str] = {}
    for m in TAG_RE.finditer(masked):
        tag = text[m.start(1) : m.end(1)].rstrip("/-").lstrip("/")
        if is_tag_text(tag):
            seen.setdefault(tag.casefold(), tag)
    return tuple(seen.values())


def _parents(masked: str, found: Sequence[re.Match[str]]) -> dict[int, int]:
    """For each task (by its offset in the body), the body line (from 0) of its parent task.
    The lines from the first task to the last are read: a list item above the first task is
    no task, so it is no parent, and it never hides one (items leave the stack by their own
    indentation)."""
    task_starts = {m.start() for m in found}
    first, last = found[0].start(), found[-1].end()
    out: dict[int, int] = {}
    stack: list[tuple[int, int | None]] = []
    """(indentation, the line of the item when it is a task) of the open list items."""
    offset = first
    for index, text in enumerate(masked[first:last].split("\n"), masked.count("\n", 0, first)):
        start = offset
        offset += len(text) + 1
        item = _ITEM_RE.match(text)
        if item is None:
            if text.strip() and not text[:1].isspace():
                stack.clear()  # a paragraph at column 0 ends the list
            continue
        indent = len(text[: len(text) - len(text.lstrip(" \t"))].expandtabs(4))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        task = start in task_starts
        if task:
            parent = next((ln for _i, ln in reversed(stack) if ln is not None), None)
            if parent is not None:
                out[start] = parent
        stack.append((indent, index if task else None))
    return out


def _blank(match: re.Match[str]) -> str:
    return _NOT_NEWLINE_RE.sub(lambda m: " " * len(m.group()), match.group())


__all__ = ["DONE_MARK", "MARKS", "MAX_TASKS", "PRIORITY_MARKS", "note_tasks", "read_task"]

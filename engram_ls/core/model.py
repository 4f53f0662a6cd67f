"""Immutable domain objects shared by every layer.

Line numbers in the core are 1-based (as ripgrep and people count); the LSP adapter converts
them to 0-based positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from engram_ls.core.properties import Prop

LinkKind = Literal["wiki", "markdown"]


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Link:
    target: str
    kind: LinkKind
    line: int
    anchor: str | None = None
    label: str | None = None


TaskState = Literal["todo", "in_progress", "done", "cancelled", "other"]
PRIORITIES: tuple[str, ...] = ("lowest", "low", "normal", "medium", "high", "highest")
"""Task priorities, least urgent first: a priority's rank is its place here (Obsidian Tasks'
order; ``normal`` is a task without one)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One checkbox list item of a note (``core.tasks.grammar``)."""

    line: int
    """1-based line of the file."""
    status: str
    """The character between the brackets, as written (`` ``, ``x``, ``/``, ``-``, …)."""
    text: str
    """The item's text after the checkbox, as written (fields, tags and all)."""
    description: str
    """``text`` without its Obsidian Tasks and Dataview fields (tags kept), spaces collapsed."""
    priority: str = "normal"
    """One of ``PRIORITIES``."""
    due: str | None = None
    scheduled: str | None = None
    start: str | None = None
    created: str | None = None
    done: str | None = None
    cancelled: str | None = None
    """Dates as ``YYYY-MM-DD``: 📅 ⏳ 🛫 ➕ ✅ ❌ or the Dataview fields ``due``, ``scheduled``,
    ``start``, ``created``, ``completion``, ``cancelled``."""
    recurrence: str | None = None
    """🔁 or ``repeat::`` as written (``every week on Monday``)."""
    id: str | None = None
    depends_on: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    """The ``#tags`` written in the task, without ``#``, first spelling kept."""
    fields: tuple[tuple[str, str], ...] = ()
    """Every Dataview inline field of the task (``[key:: value]``, ``(key:: value)``): its key
    as written and its value, stripped."""
    heading: str | None = None
    """The nearest heading above the task."""
    parent: int | None = None
    """The line of the task this one is nested under."""

    @property
    def state(self) -> TaskState:
        return task_state(self.status)


def task_state(status: str) -> TaskState:
    """What a status character means (Obsidian Tasks' default statuses)."""
    if status == " ":
        return "todo"
    if status in ("x", "X"):
        return "done"
    if status == "/":
        return "in_progress"
    if status == "-":
        return "cancelled"
    return "other"


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with a note that did not stop it from being indexed.

    ``code`` is one of: ``yaml`` (malformed frontmatter), ``frontmatter-type`` (frontmatter is not
    a mapping), ``date`` (a date key whose value does not parse), ``encoding`` (bytes that are not
    UTF-8), ``binary`` (NUL bytes), ``too-large`` (body cut at the configured cap),
    ``unclosed-frontmatter`` (an opening ``---`` with no closing line).
    """

    code: str
    message: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Note:
    """Everything the index keeps about one Markdown file."""

    path: str
    """Vault-relative POSIX path, e.g. ``area/2024/note.md``."""
    title: str
    topics: tuple[str, ...] = ()
    """Frontmatter topics then inline tags, deduplicated case-insensitively, first spelling kept."""
    created_at: str | None = None
    """``YYYY-MM-DD`` or None when the note has no parseable date."""
    created_ts: str | None = None
    """Full ISO timestamp when the source gave a time of day."""
    summary: str | None = None
    aliases: tuple[str, ...] = ()
    """Other names of the note (frontmatter ``aliases``/``alias``), for wiki-links."""
    headings: tuple[Heading, ...] = ()
    links: tuple[Link, ...] = ()
    body: str = ""
    """Text after the frontmatter (cut at the configured cap)."""
    body_line: int = 1
    """1-based line of the file on which ``body`` starts."""
    title_line: int = 1
    """1-based line of the file where the title is written: the frontmatter's ``title:`` line
    when the title comes from there, the level-1 heading it comes from, else 1 (the title is
    the file name)."""
    problems: tuple[Problem, ...] = field(default=())
    properties: tuple[Prop, ...] = ()
    """Every frontmatter value, typed (``core.properties``): what ``where`` compares."""
    tasks: tuple[Task, ...] = ()
    """The note's checkbox items (``core.tasks.grammar``), in line order."""

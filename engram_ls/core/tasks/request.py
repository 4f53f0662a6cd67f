"""The tasks request: one model for ``engram tasks``, ``engram/tasks`` and ``list_tasks``.

As the search request does, it gives the CLI its options and the MCP tool its parameters
(``search.request.request_fields(front_end, TasksRequest)``), so a field is written here once.
Days are ``YYYY-MM-DD`` or words relative to the day the request is answered: ``today``,
``tomorrow``, ``yesterday``, ``+3d``, ``-1w`` (days or weeks from today).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from engram_ls.core.model import PRIORITIES
from engram_ls.core.search.request import (
    DEFAULT_LIMIT,
    LIMIT_CAP,
    MAX_OFFSET,
    MAX_PATH_CHARS,
    Offer,
    require_text,
    validated,
)

STATUSES = ("open", "done", "cancelled", "todo", "in_progress", "all")
"""What ``status`` may name (or one status character): ``open`` is neither done nor
cancelled."""
MAX_TEXT_CHARS = 1000
_RELATIVE = re.compile(r"^([+-])([0-9]{1,4})([dw])$")
_DAY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
DAY_HELP = "YYYY-MM-DD, today, tomorrow, yesterday, or +N/-N days or weeks (+7d, -2w)"


def _listed(value: Any) -> Any:
    """A list: a string is split on commas and spaces; null is none."""
    if value is None:
        return []
    if isinstance(value, str):
        return [t for t in re.split(r"[,\s]+", value) if t]
    return value


class TasksRequest(BaseModel):
    """Which tasks to list, and in what order (docs/tasks.md)."""

    model_config = ConfigDict(extra="forbid")

    status: Annotated[str, Offer(metavar="STATUS")] = Field(
        default="all",
        description="open (neither done nor cancelled), done, cancelled, todo, in_progress, "
        "all, or one status character (the one between the brackets)",
    )
    due_before: Annotated[str | None, Offer(metavar="DAY")] = Field(
        default=None, description=f"Only tasks due before this day (not on it): {DAY_HELP}"
    )
    due_after: Annotated[str | None, Offer(metavar="DAY")] = Field(
        default=None, description=f"Only tasks due after this day (not on it): {DAY_HELP}"
    )
    scheduled_before: Annotated[str | None, Offer(metavar="DAY")] = Field(
        default=None, description=f"Only tasks scheduled before this day: {DAY_HELP}"
    )
    scheduled_after: Annotated[str | None, Offer(metavar="DAY")] = Field(
        default=None, description=f"Only tasks scheduled after this day: {DAY_HELP}"
    )
    priority: Annotated[
        list[str], BeforeValidator(_listed), Offer(flag="--priority", metavar="PRIORITY")
    ] = Field(
        default=[],
        description=f"Only tasks of these priorities: {', '.join(reversed(PRIORITIES))}",
    )
    tags: Annotated[
        list[str], BeforeValidator(_listed), Offer(flag="--tag", short="-t", metavar="TAG")
    ] = Field(
        default=[],
        description="Only tasks with one of these #tags written in the task (case-insensitive, "
        "with the tags nested under it: work finds #work/urgent)",
    )
    note_tags: Annotated[
        list[str], BeforeValidator(_listed), Offer(flag="--note-tag", metavar="TOPIC")
    ] = Field(
        default=[],
        description="Only tasks of notes with one of these topics (frontmatter tags or #tags "
        "anywhere in the note; case-insensitive, with the topics nested under it)",
    )
    path: Annotated[str | None, Offer(metavar="FOLDER_OR_GLOB")] = Field(
        default=None,
        description="Only tasks of notes under this vault-relative folder, this note, or notes "
        f"matching this glob (at most {MAX_PATH_CHARS} characters)",
    )
    text: Annotated[str | None, Offer(metavar="WORDS")] = Field(
        default=None,
        description="Only tasks whose text holds every one of these words (case-insensitive "
        "substrings)",
    )
    sort: Literal["path", "due", "priority"] = Field(
        default="path",
        description="path (by note, then line), due (soonest first, undated last), or "
        "priority (most urgent first, then by due day)",
    )
    limit: Annotated[int | None, Offer(metavar="N", unset=f"{DEFAULT_LIMIT}")] = Field(
        default=None, ge=1, json_schema_extra={"maximum": LIMIT_CAP}, description="Tasks per page"
    )
    offset: Annotated[int, Offer(metavar="N")] = Field(
        default=0, ge=0, json_schema_extra={"maximum": MAX_OFFSET}, description="Tasks to skip"
    )

    @field_validator("status")
    @classmethod
    def _status(cls, value: str) -> str:
        if value in STATUSES or (len(value) == 1 and value not in "]\n"):
            return value
        raise ValueError(f"'{value}' is not one of {', '.join(STATUSES)} nor one character")

    @field_validator("due_before", "due_after", "scheduled_before", "scheduled_after")
    @classmethod
    def _day(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        value = value.strip()
        resolve_day(value, dt.date(2000, 1, 1))  # checks it (the day is resolved later)
        return value

    @field_validator("priority")
    @classmethod
    def _priorities(cls, value: list[str]) -> list[str]:
        out = []
        for name in value:
            folded = name.strip().casefold()
            if folded not in PRIORITIES:
                raise ValueError(f"'{name}' is not a priority ({', '.join(reversed(PRIORITIES))})")
            out.append(folded)
        return out

    @field_validator("tags", "note_tags", "path", "text")
    @classmethod
    def _text_ok(cls, value: Any) -> Any:
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                require_text(item)
                if len(item) > MAX_TEXT_CHARS:
                    raise ValueError(f"longer than {MAX_TEXT_CHARS} characters")
        return value


def resolve_day(value: str, today: dt.date) -> str:
    """A request's day as ``YYYY-MM-DD`` (relative words from ``today``); ValueError naming the
    forms when it is none of them."""
    word = value.strip().casefold()
    if word in ("today", "tomorrow", "yesterday"):
        shift = {"today": 0, "tomorrow": 1, "yesterday": -1}[word]
        return (today + dt.timedelta(days=shift)).isoformat()
    relative = _RELATIVE.match(word)
    if relative is not None:
        n = int(relative[2]) * (7 if relative[3] == "w" else 1)
        return (today + dt.timedelta(days=n if relative[1] == "+" else -n)).isoformat()
    if _DAY.match(word):
        try:
            return dt.date.fromisoformat(word).isoformat()
        except ValueError:
            raise ValueError(f"'{value}' is not a valid calendar date") from None
    raise ValueError(f"'{value}' is not a day ({DAY_HELP})")


def parse_tasks_request(data: TasksRequest | Mapping[str, Any]) -> TasksRequest:
    """Validate a tasks request from any front end; problems become InvalidRequest."""
    return validated(TasksRequest, data, "tasks")


__all__ = ["STATUSES", "TasksRequest", "parse_tasks_request", "resolve_day"]

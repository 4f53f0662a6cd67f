"""The search request: the one model of DESIGN §4 that every front end takes.

The language server validates ``engram/search`` params with it; the MCP tool's parameters and
the CLI's options are derived from its fields (``request_fields``), so a field, a default or a
limit is written here once.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engram_ls.core.errors import InvalidRequest

Mode = Literal["text", "literal", "regex", "semantic"]
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_TAGS = 50
MAX_TAG_CHARS = 200
MAX_OFFSET = 100_000
MAX_QUERY_TERMS = 32
"""Distinct words and phrases in a text query (a repeated one counts once: ``a a a`` means
``a``). Each costs a pass over its matches when ranking: 32 words found in nearly every note
took 0.15 s over 4,000 notes, 128 took 1.7 s (and ``"a " * 500`` 6 s over 885)."""
MAX_PATH_CHARS = 1024
"""Longest ``path`` scope (a folder or glob); far above any real one (PATH_MAX is 4096 bytes,
but a glob of a real vault is a few segments)."""


class SearchRequest(BaseModel):
    """DESIGN §4: the same request in the language server, the MCP server and the CLI."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(default="", description="Text to find; may be empty when a filter is given.")
    mode: Mode = Field(
        default="text",
        description='text (words, "phrases", prefix*; ranked), literal (substring), '
        "regex (linear-time), semantic (not available).",
    )
    tags: list[str] = Field(
        default_factory=list,
        description="Topics to filter by; a leading '-' excludes that topic.",
    )
    tags_mode: Literal["any", "all"] = Field(
        default="any", description="Whether a note needs any or all of the tags."
    )
    date_from: str | None = Field(default=None, description="YYYY-MM-DD, inclusive.")
    date_to: str | None = Field(default=None, description="YYYY-MM-DD, inclusive.")
    path: str | None = Field(
        default=None,
        description="Vault-relative folder, note or glob that scopes the search "
        f"(at most {MAX_PATH_CHARS} characters).",
    )
    limit: int | None = Field(default=None, ge=1, description="Page size (default 50, cap 1000).")
    offset: int = Field(default=0, ge=0, description="Results to skip (paging).")
    case_sensitive: bool = Field(default=False, description="For literal and regex modes.")
    raw_fts: bool = Field(
        default=False, description="Pass the query to SQLite FTS5 unchanged (text mode, opt-in)."
    )

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_from_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [t for t in re.split(r"[,\s]+", value) if t]
        return value

    @field_validator("query", "path", "date_from", "date_to")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None:
            require_text(value)
        return value

    @field_validator("tags")
    @classmethod
    def _tag_text(cls, value: list[str]) -> list[str]:
        for tag in value:
            require_text(tag)
        return value

    @field_validator("date_from", "date_to")
    @classmethod
    def _day(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        value = value.strip()
        if not _DAY.match(value):
            raise ValueError(f"'{value}' is not a date in the form YYYY-MM-DD")
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"'{value}' is not a valid calendar date") from None
        return value


def require_text(value: str) -> str:
    """``value`` if it is text that can be stored and passed on (UTF-8); else ValueError.

    A lone surrogate (``"\\ud800"`` in JSON) or bytes that are not UTF-8 (command-line arguments
    arrive with them as ``\\udcXX``) can be neither bound to SQLite nor given to ripgrep."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start : exc.end]
        raise ValueError(
            f"{bad!r} at position {exc.start} is not valid text (a lone surrogate, or bytes"
            " that are not UTF-8)"
        ) from None
    return value


def parse_request(data: SearchRequest | Mapping[str, Any]) -> SearchRequest:
    """Validate a request from any front end; problems become InvalidRequest."""
    if isinstance(data, SearchRequest):
        return data
    try:
        return SearchRequest.model_validate(dict(data))
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ())) or "request"
            parts.append(f"{where}: {err.get('msg')}")
        raise InvalidRequest(
            "invalid search request: " + "; ".join(parts), data={"errors": parts}
        ) from None

"""The search request model and the one search service behind every front end.

A request is answered from the index when it can serve (state ``ready`` or ``stale``); otherwise
(missing, damaged, being built) by scanning the files with the same meaning: the same filters,
the same notion of a word, ripgrep for literal and regex. The answer says which (``served_by``).
Filters are never dropped.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engram_ls.core import ripgrep
from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import (
    InvalidRequest,
    LimitExceeded,
    OutsideVault,
    SearchTimeout,
    UnsupportedMode,
)
from engram_ls.core.globs import compile_glob, is_glob
from engram_ls.core.index import fts
from engram_ls.core.vault import Vault

Mode = Literal["text", "literal", "regex", "semantic"]
ServedBy = Literal["index", "scan"]
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


@dataclass(frozen=True, slots=True)
class SearchHit:
    path: str
    uri: str
    title: str
    created_at: str | None
    topics: tuple[str, ...]
    score: float
    snippet: str
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "uri": self.uri,
            "title": self.title,
            "created_at": self.created_at,
            "topics": list(self.topics),
            "score": self.score,
            "snippet": self.snippet,
            "line": self.line,
        }


@dataclass(frozen=True, slots=True)
class IndexInfo:
    state: str
    served_by: ServedBy
    generation: int
    updated_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "served_by": self.served_by,
            "generation": self.generation,
            "updated_at": self.updated_at,
        }


@dataclass(slots=True)
class SearchResponse:
    results: list[SearchHit]
    total: int
    truncated: bool
    index: IndexInfo
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "results": [hit.to_dict() for hit in self.results],
            "total": self.total,
            "truncated": self.truncated,
            "index": self.index.to_dict(),
            "elapsed_ms": round(self.elapsed_ms, 3),
        }


# -- the normalized plan ------------------------------------------------------------------


@dataclass(slots=True)
class Plan:
    """A validated request reduced to what the two search paths need."""

    mode: Mode
    query: str
    terms: list[fts.Term]
    fts_query: str
    include: list[str]
    """Case-folded topic keys a note must have (any or all)."""
    exclude: list[str]
    tags_all: bool
    date_from: str | None
    date_to: str | None
    path: str | None
    path_kind: Literal["folder", "glob"] | None
    limit: int
    offset: int
    case_sensitive: bool
    raw_fts: bool
    deadline: float
    cancel: threading.Event | None = None

    @property
    def has_filters(self) -> bool:
        return bool(self.include or self.exclude or self.date_from or self.date_to or self.path)

    @property
    def listing(self) -> bool:
        return not self.query

    def grep(self, root: Path) -> ripgrep.Grep:
        """The ripgrep search for a literal or regex plan."""
        return ripgrep.Grep(
            root,
            self.query,
            regex=self.mode == "regex",
            case_sensitive=self.case_sensitive,
            deadline=self.deadline,
            cancel=self.cancel,
        )

    def check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise SearchTimeout("the search was cancelled")
        if time.monotonic() > self.deadline:
            raise SearchTimeout("the search ran past its deadline")

    def date_ok(self, created_at: str | None) -> bool:
        if self.date_from is None and self.date_to is None:
            return True
        if not created_at:
            return False
        if self.date_from is not None and created_at < self.date_from:
            return False
        return not (self.date_to is not None and created_at > self.date_to)

    def path_ok(self, path: str) -> bool:
        if self.path is None:
            return True
        if self.path_kind == "glob":
            return compile_glob(self.path).match(path)
        return path == self.path or path.startswith(self.path + "/")

    def topics_ok(self, topics: Iterable[str]) -> bool:
        keys = {t.casefold() for t in topics}
        if self.exclude and keys.intersection(self.exclude):
            return False
        if not self.include:
            return True
        if self.tags_all:
            return all(k in keys for k in self.include)
        return bool(keys.intersection(self.include))


def make_plan(
    request: SearchRequest,
    vault: Vault,
    config: EngramConfig,
    cancel: threading.Event | None = None,
) -> Plan:
    limits = config.limits
    if request.mode == "semantic":
        raise UnsupportedMode(
            "semantic search is not available in this installation; use mode text, literal "
            "or regex",
            data={"mode": "semantic"},
        )
    query = request.query
    if len(query) > limits.query_max_chars:
        raise LimitExceeded(
            f"query is {len(query)} characters; the limit is {limits.query_max_chars}",
            data={"limit": limits.query_max_chars},
        )
    if "\x00" in query:
        raise InvalidRequest("query contains a NUL character")
    limit = request.limit if request.limit is not None else limits.default_limit
    if limit > limits.max_results:
        raise LimitExceeded(
            f"limit {limit} is above the cap of {limits.max_results} results per page",
            data={"limit": limits.max_results},
        )
    if request.offset > MAX_OFFSET:
        raise LimitExceeded(f"offset {request.offset} is above the cap of {MAX_OFFSET}")
    if len(request.tags) > MAX_TAGS:
        raise LimitExceeded(f"{len(request.tags)} tags given; the limit is {MAX_TAGS}")
    include: list[str] = []
    exclude: list[str] = []
    for raw in request.tags:
        tag = raw.strip()
        negate = tag.startswith("-")
        tag = tag.lstrip("-").strip().lstrip("#").strip()
        if not tag:
            raise InvalidRequest(f"empty tag in the tag filter: {raw!r}")
        if len(tag) > MAX_TAG_CHARS:
            raise LimitExceeded(f"a tag is longer than {MAX_TAG_CHARS} characters")
        (exclude if negate else include).append(tag.casefold())
    if request.date_from and request.date_to and request.date_from > request.date_to:
        raise InvalidRequest(
            f"date_from {request.date_from} is after date_to {request.date_to}",
        )
    if request.path is not None and len(request.path) > MAX_PATH_CHARS:
        raise LimitExceeded(
            f"path is {len(request.path)} characters; the limit is {MAX_PATH_CHARS}",
            data={"limit": MAX_PATH_CHARS},
        )
    path, path_kind = _scope(request.path, vault)

    terms: list[fts.Term] = []
    fts_query = ""
    stripped = query.strip()
    if request.mode == "text" and stripped:
        if request.raw_fts:
            fts.check_raw(stripped)
            fts_query = stripped
        else:
            terms = list(dict.fromkeys(fts.parse_query(stripped)))
            if len(terms) > MAX_QUERY_TERMS:
                raise LimitExceeded(
                    f"the query has {len(terms)} different words or phrases; the limit is "
                    f"{MAX_QUERY_TERMS}",
                    data={"limit": MAX_QUERY_TERMS},
                )
            if not terms:
                raise InvalidRequest(
                    f"the query {query[:80]!r} has no searchable words (letters or digits); "
                    "use mode 'literal' or 'regex' to find punctuation",
                )
            fts_query = fts.to_fts(terms)
    elif request.mode in ("literal", "regex"):
        stripped = query  # literal and regex keep spaces as given
    plan = Plan(
        mode=request.mode,
        query=stripped,
        terms=terms,
        fts_query=fts_query,
        include=include,
        exclude=exclude,
        tags_all=request.tags_mode == "all",
        date_from=request.date_from,
        date_to=request.date_to,
        path=path,
        path_kind=path_kind,
        limit=limit,
        offset=request.offset,
        case_sensitive=request.case_sensitive,
        raw_fts=request.raw_fts,
        deadline=time.monotonic() + limits.deadline_ms / 1000,
        cancel=cancel,
    )
    if plan.listing and not plan.has_filters:
        raise InvalidRequest(
            "give a query, or at least one filter (tags, date_from, date_to, path)"
        )
    return plan


def _scope(raw: str | None, vault: Vault) -> tuple[str | None, Literal["folder", "glob"] | None]:
    if raw is None or not raw.strip() or raw.strip() in (".", "./", "/"):
        return None, None
    text = raw.strip()
    if "\x00" in text:
        raise OutsideVault("path contains a NUL byte")
    if is_glob(text):
        parts = text.replace("\\", "/").split("/")
        if text.startswith("/") or any(p == ".." for p in parts):
            raise OutsideVault(f"path scope leaves the vault: {raw}", data={"path": raw})
        return text.lstrip("./") if text.startswith("./") else text, "glob"
    rel = vault.rel(text.rstrip("/"))
    vault.resolve_inside(rel)
    return (rel or None), ("folder" if rel else None)


# -- shared helpers -------------------------------------------------------------------------


def make_snippet(text: str, limit: int, plan: Plan | None = None) -> str:
    """One line of context, at most ``limit`` characters, centred on the first match."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    start = 0
    if plan is not None and plan.query:
        needle = _first_needle(plan)
        if needle:
            pos = line.casefold().find(needle.casefold())
            if pos > limit // 3:
                start = pos - limit // 3
    cut = line[start : start + limit - 2]
    return ("…" if start else "") + cut + "…"


def _first_needle(plan: Plan) -> str:
    if plan.mode == "literal":
        return plan.query
    if plan.terms:
        return plan.terms[0].tokens[0]
    return ""


def snippet_line(body: str, body_line: int, summary: str | None, plan: Plan) -> tuple[int, str]:
    """(file line, text) to show for a note: the first body line matching the text query,
    else the summary (line 1), else the first line of prose."""
    found = fts.find_matching_line(plan.terms, body)
    if found is not None:
        return body_line + found[0], found[1]
    if summary:
        return 1, summary
    for i, text in enumerate(body.split("\n")):
        stripped = text.strip()
        if stripped and not stripped.startswith("#"):
            return body_line + i, stripped
    return 1, ""


def newest_first(items: list[Any], day: Any, score: Any = None) -> None:
    """Sort in place: higher ``score`` first (when given), then newest first, undated last,
    then by path; ``day(item)`` gives ``YYYY-MM-DD`` or None and items have a ``path``."""
    items.sort(key=lambda it: it.path)
    if score is None:
        items.sort(key=lambda it: day(it) or "", reverse=True)
    else:
        items.sort(key=lambda it: (score(it), day(it) or ""), reverse=True)


def build_hit(
    vault: Vault,
    plan: Plan,
    config: EngramConfig,
    *,
    path: str,
    title: str,
    created_at: str | None,
    topics: tuple[str, ...],
    score: float,
    line: int,
    text: str,
) -> SearchHit:
    return SearchHit(
        path=path,
        uri=vault.uri(path),
        title=title,
        created_at=created_at,
        topics=topics,
        score=score,
        snippet=make_snippet(text, config.limits.snippet_chars, plan),
        line=line,
    )

"""The search request model and the one search service behind every front end.

A request is answered from the index when it can serve (state ``ready`` or ``stale``); otherwise
(missing, damaged, being built) by scanning the files with the same meaning: the same filters,
the same notion of a word, ripgrep for literal and regex. The answer says which (``served_by``).
Filters are never dropped.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
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
from engram_ls.core.index import fts
from engram_ls.core.index.store import folder_range
from engram_ls.core.model import Note
from engram_ls.core.vault import Vault, compile_glob, is_glob

Mode = Literal["text", "literal", "regex", "semantic"]
ServedBy = Literal["index", "scan"]
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_TAGS = 50
MAX_TAG_CHARS = 200
MAX_OFFSET = 100_000
RG_FILE_LIST_MAX = 20_000
"""Above this many candidate files, ripgrep scans the vault and results are intersected."""
BM25_WEIGHTS = (10.0, 5.0, 5.0, 1.0)
"""Column weights for title, summary, topics, body."""


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
        default=None, description="Vault-relative folder, note or glob that scopes the search."
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
            return compile_glob(self.path).match(path) is not None
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
    path, path_kind = _scope(request.path, vault)

    terms: list[fts.Term] = []
    fts_query = ""
    stripped = query.strip()
    if request.mode == "text" and stripped:
        if request.raw_fts:
            fts_query = stripped
        else:
            terms = fts.parse_query(stripped)
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


def find_line(body: str, body_line: int, plan: Plan) -> tuple[int, str] | None:
    """The first body line matching the text query, as (file line, text)."""
    if not plan.terms:
        return None
    for i, text in enumerate(body.split("\n")):
        if text.strip() and fts.line_matches(plan.terms, text):
            return body_line + i, text
    return None


def lead_line(body: str, body_line: int, summary: str | None) -> tuple[int, str]:
    """What to show when nothing in the body matched: the summary, else the first prose line."""
    if summary:
        return 1, summary
    for i, text in enumerate(body.split("\n")):
        stripped = text.strip()
        if stripped and not stripped.startswith("#"):
            return body_line + i, stripped
    return 1, ""


def _uri(vault: Vault, path: str) -> str:
    return vault.abs(path).as_uri()


# -- index path ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Row:
    id: int
    path: str
    title: str
    created_at: str | None
    topics_json: str
    summary: str | None
    body_line: int
    score: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class IndexSearcher:
    """Answers a plan from the index, inside one read snapshot."""

    def __init__(self, conn: sqlite3.Connection, vault: Vault, config: EngramConfig) -> None:
        self.conn = conn
        self.vault = vault
        self.config = config
        conn.create_function("engram_glob", 2, _glob_match, deterministic=True)

    def run(self, plan: Plan) -> tuple[list[SearchHit], int]:
        include_ids, exclude_ids, impossible = self._topic_ids(plan)
        if impossible:
            return [], 0
        where, params = self._filters(plan, include_ids, exclude_ids)
        if plan.mode == "text" and plan.query:
            return self._text(plan, where, params)
        if plan.mode in ("literal", "regex") and plan.query:
            return self._grep(plan, where, params)
        return self._listing(plan, where, params)

    def _topic_ids(self, plan: Plan) -> tuple[list[int], list[int], bool]:
        def ids(keys: list[str]) -> dict[str, int]:
            if not keys:
                return {}
            marks = ",".join("?" * len(keys))
            rows = self.conn.execute(
                f"SELECT key, id FROM topics WHERE key IN ({marks})", keys
            ).fetchall()
            return {str(k): int(i) for k, i in rows}

        inc = ids(plan.include)
        exc = ids(plan.exclude)
        if plan.include:
            if plan.tags_all and len(inc) < len(set(plan.include)):
                return [], [], True
            if not inc:
                return [], [], True
        return list(inc.values()), list(exc.values()), False

    def _filters(
        self, plan: Plan, include_ids: list[int], exclude_ids: list[int]
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if plan.date_from is not None or plan.date_to is not None:
            where.append("n.created_at >= ? AND n.created_at <= ?")
            params += [plan.date_from or "0000-01-01", plan.date_to or "9999-12-31"]
        if plan.path is not None:
            if plan.path_kind == "glob":
                where.append("engram_glob(?, n.path)")
                params.append(plan.path)
            else:
                lo, hi = folder_range(plan.path)
                where.append("(n.path = ? OR (n.path >= ? AND n.path < ?))")
                params += [plan.path, lo, hi]
        if include_ids:
            if plan.tags_all:
                for tid in include_ids:
                    where.append("n.id IN (SELECT note_id FROM note_topics WHERE topic_id = ?)")
                    params.append(tid)
            else:
                marks = ",".join("?" * len(include_ids))
                where.append(
                    f"n.id IN (SELECT note_id FROM note_topics WHERE topic_id IN ({marks}))"
                )
                params += include_ids
        if exclude_ids:
            marks = ",".join("?" * len(exclude_ids))
            where.append(
                f"n.id NOT IN (SELECT note_id FROM note_topics WHERE topic_id IN ({marks}))"
            )
            params += exclude_ids
        return where, params

    _COLS = "n.id, n.path, n.title, n.created_at, n.topics, n.summary, n.body_line"

    def _listing(
        self, plan: Plan, where: list[str], params: list[Any]
    ) -> tuple[list[SearchHit], int]:
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        total = self.conn.execute(f"SELECT count(*) FROM notes n{clause}", params).fetchone()[0]
        rows = self.conn.execute(
            f"SELECT {self._COLS} FROM notes n{clause}"
            " ORDER BY n.created_at DESC, n.path DESC LIMIT ? OFFSET ?",
            [*params, plan.limit, plan.offset],
        ).fetchall()
        found = [_Row(*r) for r in rows]
        return self._hits(plan, found, score=lambda r: 0.0), int(total)

    def _text(self, plan: Plan, where: list[str], params: list[Any]) -> tuple[list[SearchHit], int]:
        clause = "".join(" AND " + w for w in where)
        w = ", ".join(str(x) for x in BM25_WEIGHTS)
        base = (
            " FROM notes_fts JOIN notes n ON n.id = notes_fts.rowid"
            f" WHERE notes_fts MATCH ?{clause}"
        )
        args = [plan.fts_query, *params]
        try:
            total = self.conn.execute(f"SELECT count(*){base}", args).fetchone()[0]
            rows = self.conn.execute(
                f"SELECT {self._COLS}, bm25(notes_fts, {w}) AS rank{base}"
                " ORDER BY rank, n.path LIMIT ? OFFSET ?",
                [*args, plan.limit, plan.offset],
            ).fetchall()
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if plan.raw_fts and ("fts5" in text or "syntax" in text or "no such column" in text):
                raise InvalidRequest(f"FTS5 query error: {text}") from None
            raise
        found = []
        for r in rows:
            row = _Row(*r[:7])
            row.score = round(-float(r[7]), 4)
            found.append(row)
        return self._hits(plan, found, score=lambda r: r.score), int(total)

    def _grep(self, plan: Plan, where: list[str], params: list[Any]) -> tuple[list[SearchHit], int]:
        files: list[str] | None = None
        if where:
            clause = " WHERE " + " AND ".join(where)
            files = [
                r[0]
                for r in self.conn.execute(
                    f"SELECT n.path FROM notes n{clause} LIMIT {RG_FILE_LIST_MAX + 1}", params
                )
            ]
            if len(files) > RG_FILE_LIST_MAX:
                files = None
            elif not files:
                return [], 0
        counts = ripgrep.count_matches(
            self.vault.root,
            plan.query,
            regex=plan.mode == "regex",
            case_sensitive=plan.case_sensitive,
            files=files,
            deadline=plan.deadline,
            cancel=plan.cancel,
        )
        plan.check()
        rows: list[_Row] = []
        paths = list(counts)
        clause = "".join(" AND " + w for w in where)
        for i in range(0, len(paths), 500):
            part = paths[i : i + 500]
            marks = ",".join("?" * len(part))
            for r in self.conn.execute(
                f"SELECT {self._COLS} FROM notes n WHERE n.path IN ({marks}){clause}",
                [*part, *params],
            ):
                row = _Row(*r)
                row.score = float(counts[row.path])
                rows.append(row)
        rows.sort(key=lambda r: (-r.score, _neg_day(r.created_at), _neg_str(r.path)))
        page = rows[plan.offset : plan.offset + plan.limit]
        firsts = ripgrep.first_matches(
            self.vault.root,
            plan.query,
            regex=plan.mode == "regex",
            case_sensitive=plan.case_sensitive,
            files=[r.path for r in page],
            deadline=plan.deadline,
            cancel=plan.cancel,
        )
        for r in page:
            m = firsts.get(r.path)
            if m is not None:
                r.extra["line"] = (m.line, m.text)
        return self._hits(plan, page, score=lambda r: r.score), len(rows)

    def _hits(self, plan: Plan, rows: list[_Row], score: Any) -> list[SearchHit]:
        if not rows:
            return []
        names = self._canonical_names(rows)
        bodies: dict[int, str] = {}
        need_body = [r.id for r in rows if "line" not in r.extra]
        if need_body:
            marks = ",".join("?" * len(need_body))
            bodies = {
                int(i): str(b)
                for i, b in self.conn.execute(
                    f"SELECT rowid, body FROM notes_fts WHERE rowid IN ({marks})", need_body
                )
            }
        hits: list[SearchHit] = []
        snippet_chars = self.config.limits.snippet_chars
        for r in rows:
            if not self.vault.contains(r.path):
                continue
            spellings = json.loads(r.topics_json)
            topics = tuple(names.get(t.casefold(), t) for t in spellings)
            if "line" in r.extra:
                line, text = r.extra["line"]
            else:
                body = bodies.get(r.id, "")
                found = find_line(body, r.body_line, plan)
                line, text = found if found else lead_line(body, r.body_line, r.summary)
            hits.append(
                SearchHit(
                    path=r.path,
                    uri=_uri(self.vault, r.path),
                    title=r.title,
                    created_at=r.created_at,
                    topics=topics,
                    score=score(r),
                    snippet=make_snippet(text, snippet_chars, plan),
                    line=line,
                )
            )
        return hits

    def _canonical_names(self, rows: list[_Row]) -> dict[str, str]:
        keys = sorted({t.casefold() for r in rows for t in json.loads(r.topics_json)})
        if not keys:
            return {}
        out: dict[str, str] = {}
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            marks = ",".join("?" * len(part))
            for k, name in self.conn.execute(
                f"SELECT key, name FROM topics WHERE key IN ({marks})", part
            ):
                out[str(k)] = str(name)
        return out


def _glob_match(pattern: str, path: str) -> int:
    return 1 if compile_glob(pattern).match(path) else 0


def _neg_day(day: str | None) -> tuple[int, str]:
    """Sort key for newest first, undated last (used with ascending sorts)."""
    if not day:
        return (1, "")
    return (0, "".join(chr(0x10FFFF - ord(c)) for c in day))


def _neg_str(text: str) -> str:
    return "".join(chr(0x10FFFF - min(ord(c), 0x10FFFE)) for c in text)


# -- scan path ---------------------------------------------------------------------------------


ReadNote = Any
"""Callable (rel_path) -> Note | None, provided by the service (reads and parses one file)."""


class ScanSearcher:
    """Answers a plan by reading the files, for when the index cannot serve."""

    def __init__(self, vault: Vault, config: EngramConfig, read: ReadNote) -> None:
        self.vault = vault
        self.config = config
        self.read = read

    def _candidates(self, plan: Plan) -> Iterable[str]:
        under = ""
        if plan.path is not None and plan.path_kind == "folder":
            if self.vault.abs(plan.path).is_file():
                return [plan.path] if self.vault.filter.is_note(plan.path) else []
            under = plan.path
        return sorted(f.path for f in self.vault.walk(under))

    def _meta_ok(self, plan: Plan, note: Note) -> bool:
        return (
            plan.path_ok(note.path)
            and plan.date_ok(note.created_at)
            and plan.topics_ok(note.topics)
        )

    def run(self, plan: Plan) -> tuple[list[SearchHit], int]:
        matched: list[tuple[float, Note, tuple[int, str] | None]] = []
        if plan.mode in ("literal", "regex") and plan.query:
            scope = list(self._candidates(plan))
            counts = ripgrep.count_matches(
                self.vault.root,
                plan.query,
                regex=plan.mode == "regex",
                case_sensitive=plan.case_sensitive,
                files=scope,
                deadline=plan.deadline,
                cancel=plan.cancel,
            )
            for path in sorted(counts):
                plan.check()
                note = self.read(path)
                if note is not None and self._meta_ok(plan, note):
                    matched.append((float(counts[path]), note, None))
        else:
            for path in self._candidates(plan):
                plan.check()
                note = self.read(path)
                if note is None or not self._meta_ok(plan, note):
                    continue
                if plan.mode == "text" and plan.query:
                    if plan.raw_fts:
                        raise UnsupportedMode(
                            "raw FTS5 queries need the index, which is not available right now"
                        )
                    fields = [note.title, note.summary or "", " ".join(note.topics), note.body]
                    tokenized = [fts.tokenize(f) for f in fields]
                    if not all(
                        any(fts.matches([term], toks) for toks in tokenized) for term in plan.terms
                    ):
                        continue
                    score = float(sum(fts.count_hits(plan.terms, toks) for toks in tokenized))
                    matched.append((score, note, None))
                else:
                    matched.append((0.0, note, None))
        if plan.mode == "text" and plan.query:
            matched.sort(key=lambda m: (-m[0], m[1].path))
        else:
            matched.sort(key=lambda m: (-m[0], _neg_day(m[1].created_at), _neg_str(m[1].path)))
        total = len(matched)
        page = matched[plan.offset : plan.offset + plan.limit]
        firsts: dict[str, ripgrep.FirstMatch] = {}
        if plan.mode in ("literal", "regex") and plan.query:
            firsts = ripgrep.first_matches(
                self.vault.root,
                plan.query,
                regex=plan.mode == "regex",
                case_sensitive=plan.case_sensitive,
                files=[n.path for _, n, _ in page],
                deadline=plan.deadline,
                cancel=plan.cancel,
            )
        hits: list[SearchHit] = []
        snippet_chars = self.config.limits.snippet_chars
        for score, note, _ in page:
            if not self.vault.contains(note.path):
                continue
            m = firsts.get(note.path)
            if m is not None:
                line, text = m.line, m.text
            else:
                found = find_line(note.body, note.body_line, plan)
                line, text = found if found else lead_line(note.body, note.body_line, note.summary)
            hits.append(
                SearchHit(
                    path=note.path,
                    uri=_uri(self.vault, note.path),
                    title=note.title,
                    created_at=note.created_at,
                    topics=note.topics,
                    score=score,
                    snippet=make_snippet(text, snippet_chars, plan),
                    line=line,
                )
            )
        return hits, total

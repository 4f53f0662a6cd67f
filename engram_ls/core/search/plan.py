"""A validated request reduced to what the two search paths need (``Plan``), with the caps
of the request checked on the way (``make_plan``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

from engram_ls.core import ripgrep
from engram_ls.core.config import EngramConfig, Limits
from engram_ls.core.errors import (
    InvalidRequest,
    LimitExceeded,
    OutsideVault,
    SearchTimeout,
)
from engram_ls.core.globs import compile_glob, is_glob
from engram_ls.core.index import fts
from engram_ls.core.search.request import (
    MAX_OFFSET,
    MAX_PATH_CHARS,
    MAX_QUERY_TERMS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    Mode,
    SearchRequest,
)
from engram_ls.core.search.where import Facts, Node, matches
from engram_ls.core.vault import Vault


class TopicKey(NamedTuple):
    """A topic of the tag filter: its case-folded key and whether only that topic counts
    (``=topic``) or also the topics nested under it (``topic/sub``, as Obsidian nests tags)."""

    key: str
    exact: bool = False

    def matches(self, keys: Iterable[str]) -> bool:
        """Whether a note with these case-folded topic keys has this topic."""
        under = self.key + "/"
        return any(k == self.key or (not self.exact and k.startswith(under)) for k in keys)


@dataclass(slots=True)
class Plan:
    """A validated request reduced to what the two search paths need."""

    mode: Mode
    query: str
    terms: list[fts.Term]
    fts_query: str
    include: list[TopicKey]
    """Topics a note must have (any or all)."""
    exclude: list[TopicKey]
    tags_all: bool
    date_from: str | None
    date_to: str | None
    path: str | None
    path_kind: Literal["folder", "glob"] | None
    where: Node | None
    """Conditions on properties (``core.search.where``)."""
    limit: int
    offset: int
    case_sensitive: bool
    raw_fts: bool
    deadline: float
    cancel: threading.Event | None = None

    @property
    def has_filters(self) -> bool:
        return bool(
            self.include
            or self.exclude
            or self.date_from
            or self.date_to
            or self.path
            or self.where is not None
        )

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
        return in_scope(path, self.path, self.path_kind)

    def where_ok(self, facts: Facts) -> bool:
        return self.where is None or matches(self.where, facts)

    def topics_ok(self, topics: Iterable[str]) -> bool:
        keys = {t.casefold() for t in topics}
        if any(t.matches(keys) for t in self.exclude):
            return False
        if not self.include:
            return True
        if self.tags_all:
            return all(t.matches(keys) for t in self.include)
        return any(t.matches(keys) for t in self.include)


def make_plan(
    request: SearchRequest,
    vault: Vault,
    config: EngramConfig,
    cancel: threading.Event | None = None,
) -> Plan:
    """The plan of a validated request; a request over a cap raises LimitExceeded, one that
    cannot mean anything InvalidRequest (the first problem found, in the order below)."""
    limits = config.limits
    limit = _page_size(request, limits)
    include, exclude = _topic_keys(request.tags)
    if request.date_from and request.date_to and request.date_from > request.date_to:
        raise InvalidRequest(
            f"date_from {request.date_from} is after date_to {request.date_to}",
        )
    if request.path is not None and len(request.path) > MAX_PATH_CHARS:
        raise LimitExceeded(
            f"path is {len(request.path)} characters; the limit is {MAX_PATH_CHARS}",
            data={"limit": MAX_PATH_CHARS},
        )
    path, path_kind = path_scope(request.path, vault)
    query, terms, fts_query = _text_query(request)
    plan = Plan(
        mode=request.mode,
        query=query,
        terms=terms,
        fts_query=fts_query,
        include=include,
        exclude=exclude,
        tags_all=request.tags_mode == "all",
        date_from=request.date_from,
        date_to=request.date_to,
        path=path,
        path_kind=path_kind,
        where=request.where,
        limit=limit,
        offset=request.offset,
        case_sensitive=request.case_sensitive,
        raw_fts=request.raw_fts,
        deadline=time.monotonic() + limits.deadline_ms / 1000,
        cancel=cancel,
    )
    if plan.listing and not plan.has_filters:
        raise InvalidRequest(
            "give a query, or at least one filter (tags, date_from, date_to, path, where)"
        )
    return plan


def _page_size(request: SearchRequest, limits: Limits) -> int:
    """The page size, once the mode, the query, the page and the tag count are within bounds."""
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
    return limit


def _topic_keys(tags: list[str]) -> tuple[list[TopicKey], list[TopicKey]]:
    """(topics a note must have, topics it must not have); ``-topic`` excludes, ``=topic``
    is that topic alone, without the topics nested under it (``-=topic`` excludes it alone)."""
    include: list[TopicKey] = []
    exclude: list[TopicKey] = []
    for raw in tags:
        tag = raw.strip()
        negate = tag.startswith("-")
        tag = tag.lstrip("-").strip()
        exact = tag.startswith("=")
        tag = tag.lstrip("=").strip().lstrip("#").strip().rstrip("/")
        if not tag:
            raise InvalidRequest(f"empty tag in the tag filter: {raw!r}")
        if len(tag) > MAX_TAG_CHARS:
            raise LimitExceeded(f"a tag is longer than {MAX_TAG_CHARS} characters")
        (exclude if negate else include).append(TopicKey(tag.casefold(), exact))
    return include, exclude


def _text_query(request: SearchRequest) -> tuple[str, list[fts.Term], str]:
    """(the query as the paths use it, its terms, its FTS5 form): text mode parses words and
    phrases (or checks a raw FTS5 query); literal and regex keep the query as given."""
    query = request.query
    terms: list[fts.Term] = []
    fts_query = ""
    stripped = query.strip()
    if request.mode == "hybrid" and stripped:
        # The text side of a hybrid search: its words, if it has any (none: meaning alone).
        terms = _terms(stripped)
        fts_query = fts.to_fts(terms) if terms else ""
    elif request.mode == "text" and stripped:
        if request.raw_fts:
            fts.check_raw(stripped)
            fts_query = stripped
        else:
            terms = _terms(stripped)
            if not terms:
                raise InvalidRequest(
                    f"the query {query[:80]!r} has no searchable words (letters or digits); "
                    "use mode 'literal' or 'regex' to find punctuation",
                )
            fts_query = fts.to_fts(terms)
    elif request.mode in ("literal", "regex"):
        stripped = query  # literal and regex keep spaces as given
    return stripped, terms, fts_query


def _terms(query: str) -> list[fts.Term]:
    """The distinct words and phrases of a text query, at most ``MAX_QUERY_TERMS``."""
    terms = list(dict.fromkeys(fts.parse_query(query)))
    if len(terms) > MAX_QUERY_TERMS:
        raise LimitExceeded(
            f"the query has {len(terms)} different words or phrases; the limit is "
            f"{MAX_QUERY_TERMS}",
            data={"limit": MAX_QUERY_TERMS},
        )
    return terms


def in_scope(path: str, scope: str | None, kind: str | None) -> bool:
    """Whether a vault path is in a ``path_scope``: the folder (or the note) or the glob."""
    if scope is None:
        return True
    if kind == "glob":
        return compile_glob(scope).match(path)
    return path == scope or path.startswith(scope + "/")


def path_scope(
    raw: str | None, vault: Vault
) -> tuple[str | None, Literal["folder", "glob"] | None]:
    """A request's ``path`` as (a vault-relative folder or note, or a glob; its kind), checked
    to stay in the vault; (None, None) for the whole vault."""
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

"""The search result: hits, the index's part, the response; and the helpers that both search
paths use to place a snippet, order the notes and build a hit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from engram_ls.core.config import EngramConfig
from engram_ls.core.git import SourceRevision
from engram_ls.core.search.plan import Plan
from engram_ls.core.search.snippet import (
    Matcher,
    best_matching_line,
    clean_markup,
    cut_around,
    first_prose_line,
)
from engram_ls.core.serialize import OMIT_EMPTY, rounded
from engram_ls.core.vault import Vault

ServedBy = Literal["index", "scan"]


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


@dataclass(frozen=True, slots=True)
class IndexInfo:
    state: str
    served_by: ServedBy
    generation: int
    updated_at: str | None
    source_revision: SourceRevision | None = None
    """The vault's git ``HEAD`` and whether its files differ from it (``core/git.py``); None
    when the vault is in no git work tree."""
    semantic: str | None = field(default=None, metadata=OMIT_EMPTY)
    """Semantic and hybrid searches only: ``ready`` when every note was embedded (by this
    model) as of the snapshot read, ``pending`` when some are not yet (they cannot be found by
    meaning until they are)."""


@dataclass(slots=True)
class SearchResponse:
    results: list[SearchHit]
    total: int
    truncated: bool
    index: IndexInfo
    elapsed_ms: float = field(default=0.0, metadata=rounded(3))


def make_snippet(text: str, limit: int, plan: Plan | None = None) -> str:
    """One line of context, at most ``limit`` characters, cut around the first match: its
    markup taken away, except for a literal or regex search, whose match may be the markup
    (``snippet.clean_markup``)."""
    line = " ".join(text.split())
    if plan is None or plan.mode not in ("literal", "regex"):
        line = clean_markup(line)
    at = None
    if plan is not None and plan.query and len(line) > limit:  # else shown whole: no cut
        first = matcher(plan).spans(line, first=True)
        at = first[0][0] if first else None
    return cut_around(line, limit, at)[0]


def matcher(plan: Plan) -> Matcher:
    """Where the plan's query matches in a text (``snippet.Matcher``)."""
    return Matcher(plan.mode, plan.query, plan.case_sensitive, tuple(plan.terms))


def snippet_line(body: str, body_line: int, summary: str | None, plan: Plan) -> tuple[int, str]:
    """(file line, text) to show for a note: the first body line matching the text query
    that is prose (else a heading, else any: ``snippet.best_matching_line``), else the summary
    (line 1), else the first line of prose outside code blocks."""
    found = best_matching_line(plan.terms, body)
    if found is not None:
        return body_line + found[0], found[1]
    if summary:
        return 1, summary
    prose = first_prose_line(body)
    if prose is not None:
        return body_line + prose[0], prose[1]
    return 1, ""


K = TypeVar("K", int, str)


def fuse_ranks(rankings: Sequence[Sequence[K]], k: int) -> list[tuple[K, float]]:
    """Reciprocal rank fusion, the one of ``hybrid`` and of related notes: an item scores
    ``1/(k + rank)`` from each ranking it is in (at its first place there), divided by the best
    possible (``len(rankings)/(k + 1)``, first everywhere), so scores are in [0, 1]; best
    first, ties by the item."""
    score: dict[K, float] = {}
    for ranking in rankings:
        seen: set[K] = set()
        for item in ranking:
            if item in seen:
                continue
            seen.add(item)
            score[item] = score.get(item, 0.0) + 1 / (k + len(seen))
    top = max(len(rankings), 1) / (k + 1)
    fused = sorted(score.items(), key=lambda it: (-it[1], it[0]))
    return [(item, min(1.0, s / top)) for item, s in fused]


def newest_first(items: list[Any], day: Any, score: Any = None) -> None:
    """Sort in place: higher ``score`` first (when given), then newest first, undated last,
    then by path; ``day(item)`` gives ``YYYY-MM-DD`` or None and items have a ``path``."""
    items.sort(key=lambda it: it.path)
    if score is None:
        items.sort(key=lambda it: day(it) or "", reverse=True)
    else:
        items.sort(key=lambda it: (score(it), day(it) or ""), reverse=True)


class _OnPage(Protocol):
    @property
    def path(self) -> str: ...


P = TypeVar("P", bound=_OnPage)


@dataclass(frozen=True, slots=True)
class Found:
    """A note on the page of results as a search path found it, before its snippet is cut."""

    path: str
    title: str
    created_at: str | None
    topics: tuple[str, ...]
    score: float
    line: int
    text: str
    """The line of text the snippet is cut from."""


def page_hits(
    vault: Vault, plan: Plan, config: EngramConfig, page: Sequence[P], found: Callable[[P], Found]
) -> list[SearchHit]:
    """The hits of one page, in its order: each note whose path resolves inside the vault
    (checked once for the whole page), described by ``found``, with its snippet."""
    inside = vault.inside(item.path for item in page)
    hits: list[SearchHit] = []
    for item in page:
        if item.path not in inside:
            continue
        note = found(item)
        hits.append(
            SearchHit(
                path=note.path,
                uri=vault.uri(note.path),
                title=note.title,
                created_at=note.created_at,
                topics=note.topics,
                score=note.score,
                snippet=make_snippet(note.text, config.limits.snippet_chars, plan),
                line=note.line,
            )
        )
    return hits

"""Answering a search plan from the index: the SQL of the ``index`` path.

Strategies, chosen so that no query touches more rows than it must at 100,000 notes:

- A topic filter is driven from ``note_topics``, whose key (topic, date, note) serves a tag
  plus a date range ordered by date as one index range scan; with several topics and
  ``all``, the rarest drives and the others are probed per row.
- Without a topic filter, dates and ordering come from the ``notes_by_date`` index.
- Text: the FTS5 match is counted first (cheap). With filters, a match set that is small is
  checked row by row against the filters; a large one is intersected with the filtered ids
  (``+rowid IN``: the ``+`` keeps SQLite from turning the list into one FTS5 seek per id, which
  is orders of magnitude slower).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from engram_ls.core.config import EngramConfig
from engram_ls.core.index import impacts, topic_sets, trigram
from engram_ls.core.index.snapshot_cache import Memo, SnapshotCache
from engram_ls.core.ripgrep import FirstMatch, Grep
from engram_ls.core.search import where_bits
from engram_ls.core.search.filters import Filters, register_glob, resolve
from engram_ls.core.search.hits import (
    Found,
    SearchHit,
    ServedBy,
    newest_first,
    page_hits,
    snippet_line,
)
from engram_ls.core.search.literal import UNDECIDED, Literal
from engram_ls.core.search.plan import Plan
from engram_ls.core.search.trigram_query import trigram_query
from engram_ls.core.search.where_sql import register as register_where
from engram_ls.core.vault import Vault

BM25_WEIGHTS = (10.0, 5.0, 5.0, 1.0)
"""Column weights for title, summary, topics, body."""
ALLOWED_MAX = 60_000
"""Filtered notes up to this many are ranked from a frequent word's postings (``impacts``);
more are left to FTS5, which then ranks no more rows than fetching them would cost."""
PROBE_MAX = 3000
"""Text matches up to this many are checked row by row against the filters."""
RG_FILE_SHARE = 0.6
"""Above this share of all notes, ripgrep scans the whole vault and results are intersected
with the filters instead of being given the candidate files."""
RG_LIST_MAX = 15_000
"""Trigram candidates up to this many are given to rg by name; more are found by its walk of
the vault (a scan: the index narrowed too little)."""
ONE_RUN_BYTES = 4 << 20
"""Notes to search this small in total (by their indexed size) are searched by one rg run
printing every matching line (counts and first lines at once) instead of two (``--count``,
then the first line of each note on the page): one process start less, about 8 ms."""


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


_COLS = "n.id, n.path, n.title, n.created_at, n.topics, n.summary, n.body_line"


class _Match(NamedTuple):
    """A note whose file matched a literal or regex, as ranking needs it."""

    id: int
    path: str
    created_at: str | None
    score: float


class IndexSearcher:
    """Answers a plan from the index, inside the caller's read snapshot."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        vault: Vault,
        config: EngramConfig,
        *,
        postings: SnapshotCache[impacts.Key, impacts.Postings] | None = None,
        topic_notes: SnapshotCache[int, topic_sets.TopicNotes] | None = None,
        topic_names: Memo[str, str] | None = None,
        where_sets: Memo[Hashable, int] | None = None,
    ) -> None:
        self.conn = conn
        self.vault = vault
        self.config = config
        self.postings = postings
        """Frequent words' postings, for exact top-k ranking without FTS5 ranking every row."""
        self.topic_notes = topic_notes
        """Large topics' notes as sets, for filters of topics only."""
        self.topic_names = topic_names
        """Topics' canonical names, remembered for this index state (else read each page)."""
        self.where_sets = where_sets
        """The notes of ``where`` conditions, remembered for this index state (else read by
        each search)."""
        self._where = b""
        """The bitmap of the notes passing the last plan's ``where`` (``engram_where``)."""
        self.served_by: ServedBy = "index"
        """Which path answered the last ``run``: ``scan`` when ripgrep read every file."""
        register_glob(conn)
        register_where(conn)
        conn.create_function("engram_where", 1, self._passes_where, deterministic=True)
        self._ranking: list[int] | None = None
        """While ``text_ranking`` runs: where the ranked note ids go instead of hits."""

    def run(self, plan: Plan) -> tuple[list[SearchHit], int]:
        self.served_by = "index"
        filters = self._filters(plan)
        if filters is None:
            return [], 0
        if plan.mode == "text" and plan.query:
            return self._text(plan, filters)
        if plan.mode in ("literal", "regex") and plan.query:
            return self._grep(plan, filters)
        return self._listing(plan, filters)

    def filters(self, plan: Plan) -> Filters | None:
        """The plan's filters as SQL pieces; None when they can match nothing."""
        return self._filters(plan)

    def text(self, plan: Plan, f: Filters) -> tuple[list[SearchHit], int]:
        """The text path's answer to ``plan`` (a text query) within ``f``."""
        return self._text(plan, f)

    def topic_set(self, f: Filters) -> frozenset[int] | None:
        """The notes passing a filter of large topics alone, from memory (else None)."""
        return self._topic_set(f)

    def text_ranking(self, plan: Plan, f: Filters) -> list[int]:
        """The notes the text path ranks first for ``plan`` (its page), best first: its
        ranking alone, without the hits' snippets (which read every body)."""
        self._ranking = []
        try:
            self._text(plan, f)
            return self._ranking
        finally:
            self._ranking = None

    def page(
        self, plan: Plan, ranked: Sequence[tuple[int, float, int | None, str | None]]
    ) -> list[SearchHit]:
        """The hits of (note id, score, line, text of the snippet), in that order; a line of
        None: the snippet is found in the note's body by the plan's words, as in text mode."""
        rows = self._rows([r[0] for r in ranked])
        by_id = {r[0]: r for r in ranked}
        for row in rows:
            _, row.score, line, text = by_id[row.id]
            if line is not None:
                row.extra["line"] = (line, text or "")
        return self._hits(plan, rows)

    def _filters(self, plan: Plan) -> Filters | None:
        f = resolve(self.conn, plan, self.where_sets)
        self._where = f.where.member if f is not None and f.where is not None else b""
        return f

    def _passes_where(self, note_id: int) -> int:
        at = note_id >> 3
        return 1 if at < len(self._where) and self._where[at] >> (note_id & 7) & 1 else 0

    # -- listing ---------------------------------------------------------------------------

    def _listing(self, plan: Plan, f: Filters) -> tuple[list[SearchHit], int]:
        if f.where is not None and f.only_where:
            ids = where_bits.page(
                self.conn, f.where, plan.offset, plan.limit, self._note_count(), plan.check
            )
            return self._hits(plan, self._rows(ids)), f.where.count
        passing = self._topic_set(f)
        if passing is not None:
            total = len(passing)
        else:
            sql, params = f.ids_query(ordered=False)
            total = self.conn.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]
        sql, params = f.ids_query(ordered=True)
        ids = [
            int(r[0])
            for r in self.conn.execute(
                f"{sql} LIMIT ? OFFSET ?", [*params, plan.limit, plan.offset]
            )
        ]
        rows = self._rows(ids)
        return self._hits(plan, rows), int(total)

    def _topic_set(self, f: Filters) -> frozenset[int] | None:
        """The notes passing a filter of topics alone (no dates, no path) with a large topic
        in it, from the topics' sets of this index state; None otherwise (and a large topic's
        set is wanted for next time)."""
        first = [f.driver] if f.driver is not None else list(f.any_ids)
        groups = [first, *f.all_others] if first else []
        include = [t for g in groups for t in g]
        if (
            self.topic_notes is None
            or not include
            or f.date_lo is not None
            or f.path is not None
            or f.where is not None
            or max(f.sizes.get(t, 0) for t in include) < topic_sets.MIN_NOTES
        ):
            return None
        kept: dict[int, frozenset[int]] = {}
        for t in [*include, *f.exclude]:
            notes = self.topic_notes.current(self.conn, t)
            if notes is None:
                self.topic_notes.want(self.conn, t)
            else:
                kept[t] = notes.ids
        if len(kept) < len({*include, *f.exclude}):
            return None
        # A note needs a topic of each group: the union of a group (one topic: its set as it
        # is, union() would copy it), then the intersection of the groups.
        sets = sorted(
            (
                kept[g[0]] if len(g) == 1 else kept[g[0]].union(*(kept[t] for t in g[1:]))
                for g in groups
            ),
            key=len,
        )
        passing = sets[0]
        if len(sets) > 1:
            passing = passing.intersection(*sets[1:])
        if f.exclude:
            passing = passing.difference(*(kept[t] for t in f.exclude))
        return passing

    def _rows(self, ids: list[int]) -> list[_Row]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        found = {
            int(r[0]): _Row(*r)
            for r in self.conn.execute(f"SELECT {_COLS} FROM notes n WHERE n.id IN ({marks})", ids)
        }
        return [found[i] for i in ids if i in found]

    # -- text ------------------------------------------------------------------------------

    def _text(self, plan: Plan, f: Filters) -> tuple[list[SearchHit], int]:
        from_postings = self._from_postings(plan, f)
        if from_postings is not None:
            return from_postings
        t0 = time.monotonic()
        hits, total, matched = self._ranked(plan, f)
        self._ranked_by_fts5(plan, matched, time.monotonic() - t0)
        return hits, total

    def _ranked(self, plan: Plan, f: Filters) -> tuple[list[SearchHit], int, int]:
        """FTS5's ranking: (hits, total, how many notes match the text)."""
        w = ", ".join(str(x) for x in BM25_WEIGHTS)
        rank = f"bm25(notes_fts, {w})"
        if f.empty and _positional(plan):
            # Matching a phrase checks positions, and bm25 matches it once more for its idf:
            # counting in the same pass saves a third evaluation.
            rows = self.conn.execute(
                f"SELECT id, r, count(*) OVER () FROM (SELECT rowid AS id, {rank} AS r"
                " FROM notes_fts WHERE notes_fts MATCH ?) ORDER BY r, id LIMIT ? OFFSET ?",
                (plan.fts_query, plan.limit, plan.offset),
            ).fetchall()
            if not rows and plan.offset:
                count = self._fts_count(plan)
                return [], count, count
            ranked = [(i, r) for i, r, _ in rows]
            count = int(rows[0][2]) if rows else 0
            return self._ranked_hits(plan, ranked), count, count
        matched = self._fts_count(plan)
        if matched == 0:
            return [], 0, 0
        if f.empty:
            total = matched
            ranked = self.conn.execute(
                f"SELECT rowid, {rank} AS r FROM notes_fts WHERE notes_fts MATCH ?"
                " ORDER BY r, rowid LIMIT ? OFFSET ?",
                (plan.fts_query, plan.limit, plan.offset),
            ).fetchall()
        else:
            if matched <= PROBE_MAX:
                where, params = f.topic_conditions("n")
                inner = (
                    f"SELECT notes_fts.rowid AS id, {rank} AS r FROM notes_fts"
                    " JOIN notes n ON n.id = notes_fts.rowid"
                    " WHERE notes_fts MATCH ? AND " + " AND ".join(where)
                )
            else:
                ids_sql, params = f.ids_query(ordered=False)
                inner = (
                    f"SELECT rowid AS id, {rank} AS r FROM notes_fts WHERE notes_fts MATCH ?"
                    f" AND +rowid IN (SELECT id FROM ({ids_sql}))"
                )
            # One pass ranks the filtered matches and counts them (window over all rows).
            rows = self.conn.execute(
                f"SELECT id, r, count(*) OVER () FROM ({inner}) ORDER BY r, id LIMIT ? OFFSET ?",
                [plan.fts_query, *params, plan.limit, plan.offset],
            ).fetchall()
            if rows:
                total = int(rows[0][2])
            elif plan.offset:
                total = self.conn.execute(
                    f"SELECT count(*) FROM ({inner})", [plan.fts_query, *params]
                ).fetchone()[0]
            else:
                total = 0
            ranked = [(i, r) for i, r, _ in rows]
        return self._ranked_hits(plan, ranked), int(total), matched

    def _from_postings(self, plan: Plan, f: Filters) -> tuple[list[SearchHit], int] | None:
        """A query of one word or phrase ranked from its postings: the same hits, scores,
        order and total as FTS5's ranking; None when there are none for this snapshot."""
        tokens = _one_term(plan)
        if self.postings is None or tokens is None:
            return None
        postings = self.postings.current(self.conn, (tokens, BM25_WEIGHTS))
        if postings is None:
            return None
        sizes = impacts.totals(self.conn)
        if sizes is None:
            return None
        allowed: Collection[int] | None = None
        total = postings.count
        if f.where is not None and f.only_where:
            allowed = f.where
            total = (postings.bits & f.where.bits).bit_count()
        elif not f.empty:
            passing: frozenset[int] | set[int] | None = self._topic_set(f)
            if passing is None:
                ids_sql, params = f.ids_query(ordered=False)
                sql = f"SELECT id FROM ({ids_sql}) LIMIT ?"  # one column: half the time
                passing = {i for (i,) in self.conn.execute(sql, [*params, ALLOWED_MAX + 1])}
                if len(passing) > ALLOWED_MAX:
                    return None
            total = len(postings.ids & passing)
            allowed = passing
        best = impacts.top(postings, *sizes, plan.offset + plan.limit, allowed)
        return self._ranked_hits(plan, best[plan.offset :]), total

    def _ranked_by_fts5(self, plan: Plan, matched: int, seconds: float) -> None:
        """FTS5 ranked ``matched`` notes in ``seconds``: a word or phrase in many notes, or a
        phrase whose words are (its positions are then compared in all of them), gets
        postings (``want``)."""
        tokens = _one_term(plan)
        if self.postings is None or not tokens or not matched:
            return
        if matched >= impacts.MIN_MATCHES or seconds >= impacts.SLOW_S:
            self.postings.want(self.conn, (tokens, BM25_WEIGHTS))

    def _fts_count(self, plan: Plan) -> int:
        return int(
            self.conn.execute(
                "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?", (plan.fts_query,)
            ).fetchone()[0]
        )

    def _ranked_hits(self, plan: Plan, ranked: list[tuple[Any, Any]]) -> list[SearchHit]:
        if self._ranking is not None:  # text_ranking: the order is all that is wanted
            self._ranking.extend(int(i) for i, _ in ranked)
            return []
        scores = {int(i): round(-float(r), 4) for i, r in ranked}
        rows = self._rows([int(i) for i, _ in ranked])
        for row in rows:
            row.score = scores[row.id]
        return self._hits(plan, rows)

    # -- literal / regex -------------------------------------------------------------------

    def _grep(self, plan: Plan, f: Filters) -> tuple[list[SearchHit], int]:
        files: dict[str, int] | None = None
        """The notes to search (path → size), when the index narrowed the query."""
        candidates = self._trigram_candidates(plan, f)
        if candidates is not None:
            if not candidates:
                return [], 0
            # Listed to rg, so many paths take one run per 200 KB of names, one after the
            # other (55,000 notes: 15 runs, 1.9 s); a walk of the vault takes one (0.9 s).
            files = candidates if len(candidates) <= RG_LIST_MAX else None
        elif not f.empty:
            ids_sql, params = f.ids_query(ordered=False)
            cap = int(self._note_count() * RG_FILE_SHARE) + 1
            files = {
                str(r[0]): int(r[1])
                for r in self.conn.execute(
                    f"SELECT n.path, n.size FROM notes n WHERE n.id IN (SELECT id FROM"
                    f" ({ids_sql})) LIMIT ?",
                    [*params, cap],
                )
            }
            if len(files) >= cap:
                files = None
            elif not files:
                return [], 0
        if files is None:
            self.served_by = "scan"  # the index narrowed nothing: ripgrep reads every file
        else:  # named to rg (or read here): a FIFO would hold rg, a symlink out would be read
            named = self.vault.inside(files, regular=True)
            files = {path: size for path, size in files.items() if path in named}
        grep = plan.grep(self.vault.root)
        firsts: dict[str, FirstMatch] | None = None
        lines = None
        if files is not None and sum(files.values()) <= ONE_RUN_BYTES:
            lines = self._lines_of(plan, grep, list(files))
        if lines is not None:
            counts = {path: n for path, (n, _) in lines.items()}
            firsts = {path: first for path, (_, first) in lines.items()}
        else:
            counts = grep.count(None if files is None else list(files))
        plan.check()
        ranked = self._matching_notes(counts, f)
        newest_first(ranked, day=lambda r: r.created_at, score=lambda r: r.score)
        on_page = ranked[plan.offset : plan.offset + plan.limit]
        scores = {m.id: m.score for m in on_page}
        page = self._rows(list(scores))  # the same read transaction: every one is there
        if firsts is None:
            firsts = grep.first([row.path for row in page])
        for row in page:
            row.score = scores[row.id]
            first = firsts.get(row.path)
            if first is not None:
                row.extra["line"] = (first.line, first.text)
        return self._hits(plan, page), len(ranked)

    def _matching_notes(self, counts: dict[str, int], f: Filters) -> list[_Match]:
        """The notes of the files that matched (score: matching lines) that pass the filters:
        only what ranking them needs. A quarter of the notes or more (a word in half of them
        matches 55,000 files) are read in one pass over the table, fewer by path, 500 at a
        time."""
        where, params = f.topic_conditions("n")
        select = "SELECT n.id, n.path, n.created_at FROM notes n"
        paths = list(counts)
        if len(paths) > 2000 and len(paths) * 4 > self._note_count():
            queries = [(" AND ".join(where), params)]
        else:
            queries = [
                (
                    " AND ".join([f"n.path IN ({','.join('?' * len(part))})", *where]),
                    [*part, *params],
                )
                for part in (paths[i : i + 500] for i in range(0, len(paths), 500))
            ]
        found: list[_Match] = []
        for cond, args in queries:
            for i, p, c in self.conn.execute(f"{select} WHERE {cond}" if cond else select, args):
                n = counts.get(p)
                if n is not None:
                    found.append(_Match(int(i), str(p), c, float(n)))
        return found

    def _lines_of(
        self, plan: Plan, grep: Grep, files: list[str]
    ) -> dict[str, tuple[int, FirstMatch]] | None:
        """Matching lines and the first of them, in a few notes: a literal counted here
        (``literal.py``), what only rg can say and a regex from one rg run printing every
        matching line; None when rg must count (a binary file among them)."""
        found: dict[str, tuple[int, FirstMatch]] = {}
        needle = Literal.of(plan.query, plan.case_sensitive) if plan.mode == "literal" else None
        if needle is not None:
            undecided: list[str] = []
            for path in files:
                plan.check()
                data = self.vault.read_or_none(path)
                if data is None:
                    continue  # gone, or not a regular file inside the vault: no match
                got = needle.lines(data)
                if got == UNDECIDED:
                    undecided.append(path)
                elif isinstance(got, tuple):
                    found[path] = got
            files = undecided
        if files:
            more = grep.lines(files)  # one rg run: every matching line of a few notes
            if more is None:
                return None
            found.update(more)
        return found

    def _trigram_candidates(self, plan: Plan, f: Filters) -> dict[str, int] | None:
        """The notes that can hold a match and pass the filters (path → size), from the
        trigram index; None when it cannot narrow the query (off, no trigram, a regex that
        requires none)."""
        if not self.config.trigram_index:
            return None
        if plan.mode == "literal":
            grams = trigram.query_trigrams(plan.query, plan.case_sensitive)
            expression = trigram.match_expression(grams) if grams else None
        else:  # regex: the trigrams every match must hold, from the parsed pattern
            expression = trigram_query(plan.query, case_sensitive=plan.case_sensitive).fts5()
        if expression is None:
            return None
        where, params = f.topic_conditions("n")
        clause = "".join(" AND " + c for c in where)
        return {
            str(r[0]): int(r[1])
            for r in self.conn.execute(
                f"SELECT n.path, n.size FROM notes n WHERE n.id IN ({trigram.CANDIDATES_SQL})"
                f"{clause}",
                [expression, *params],
            )
        }

    def _note_count(self) -> int:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'notes'").fetchone()
        return int(row[0]) if row else 0

    # -- results ---------------------------------------------------------------------------

    def _hits(self, plan: Plan, rows: list[_Row]) -> list[SearchHit]:
        if not rows:
            return []
        listed = {r.id: json.loads(r.topics_json) for r in rows}
        names = self._canonical_names(listed.values())
        need_body = [  # a listing shows the summary when there is one: no body to read
            r.id for r in rows if "line" not in r.extra and (plan.terms or not r.summary)
        ]
        bodies: dict[int, str] = {}
        if need_body:
            marks = ",".join("?" * len(need_body))
            bodies = {
                int(i): str(b)
                for i, b in self.conn.execute(
                    f"SELECT rowid, body FROM notes_fts WHERE rowid IN ({marks})", need_body
                )
            }

        def found(r: _Row) -> Found:
            plan.check()  # placing a snippet reads the note's body (up to 50 MB)
            topics = tuple(names.get(t.casefold(), t) for t in listed[r.id])
            if "line" in r.extra:
                line, text = r.extra["line"]
            else:
                line, text = snippet_line(bodies.get(r.id, ""), r.body_line, r.summary, plan)
            return Found(r.path, r.title, r.created_at or None, topics, r.score, line, text)

        return page_hits(self.vault, plan, self.config, rows, found)

    def _canonical_names(self, listed: Iterable[list[str]]) -> dict[str, str]:
        keys = sorted({t.casefold() for topics in listed for t in topics})
        if self.topic_names is not None:
            return self.topic_names.lookup(self.conn, keys, topic_sets.canonical_names)
        return topic_sets.canonical_names(self.conn, keys)


def _one_term(plan: Plan) -> tuple[str, ...] | None:
    """The tokens of a query of one word or one phrase (no prefix, no raw FTS5 syntax)."""
    if plan.raw_fts or len(plan.terms) != 1 or plan.terms[0].prefix:
        return None
    return plan.terms[0].tokens


def _positional(plan: Plan) -> bool:
    """Whether the query holds a phrase: matching it reads word positions, which makes a
    separate count as dear as the ranking itself (raw FTS5 syntax keeps the two passes)."""
    return any(len(t.tokens) > 1 for t in plan.terms)

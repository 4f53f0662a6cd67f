"""Answering ``semantic`` and ``hybrid`` plans from the index.

``semantic``: the query's vector against every chunk's (``core/semantic/vectors.py``): the best
chunks (two at most) of each of the ``CANDIDATES`` notes nearest by the chunks' sign and
magnitude bits, re-ranked by the cosine of their stored vectors; a note's score is that of its
best chunk, whose line and snippet the hit shows. Filters are exact: the notes passing a filter
are found first when they can be (from memory: a large topic's set, the notes' dates, the
bitmap of ``where`` conditions, every note but a topic's left out, the bitmap of a folder's or
a glob's notes; else listed in SQL, up to ``LIST_MOST``) and only their chunks are ranked; for
a broader filter the nearest chunks are taken and their notes checked against it in SQL until
enough pass. ``total`` counts the notes the candidates gave (the ranking is of the nearest
chunks, not of every note).

``hybrid``: reciprocal rank fusion of a text ranking (BM25 over any of the query's
informative words, ``core/search/any_word.py``: its first ``HYBRID_DEPTH`` notes, same
filters) and the semantic one: a note scores ``1/(RRF_K + rank)`` from each ranking it is in,
scaled by the best possible score so that scores are in [0, 1]. A query with no informative
word has no text side.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from engram_ls.core.errors import UnsupportedMode
from engram_ls.core.index import topic_sets
from engram_ls.core.index.bitmaps import bitmap, member
from engram_ls.core.search.any_word import any_word_plan
from engram_ls.core.search.filters import Filters, path_condition
from engram_ls.core.search.hits import SearchHit, fuse_ranks
from engram_ls.core.search.index_path import IndexSearcher
from engram_ls.core.search.plan import Plan, make_plan
from engram_ls.core.search.request import parse_request
from engram_ls.core.semantic import store

if TYPE_CHECKING:
    from engram_ls.core.semantic.engine import Semantic
    from engram_ls.core.semantic.vectors import CodeTable
    from engram_ls.core.service import Engram

CANDIDATES = 64
"""Notes whose best chunks (by their bits, ``CodeTable.closest``: two at most) are re-ranked by
their stored vectors, at least (``NEED_MARGIN`` more than the notes asked for, if more)."""
NEED_MARGIN = 16
FORGET_ROUNDS = 3
"""Times the candidates are taken again when some of their chunks are gone from the index."""
DEPTH = 4096
"""Chunks taken by Hamming distance, at least (eight per note re-ranked, if more), to be
re-scored by the query's values against their bits before the stored vectors are read."""
LIST_MOST = 20_000
"""A filter passing at most this many notes is listed first, and only its notes' chunks are
ranked; the chunks of a broader one are ranked first and their notes checked."""
CHECK_MARGIN = 1.5
"""The checked way reads the best chunks of this many times the notes that, at the share of
notes passing its filter, should hold the notes asked for."""
HYBRID_DEPTH = 100
RRF_K = 10
"""Reciprocal rank fusion's constant: small, so that the first notes of each ranking count
most (on the labelled query set, hybrid's recall@10 is 0.831 with 10, 0.779 with 60)."""
Ranked = list[tuple[int, float, int, str]]
"""(note id, score, line, snippet text), best first."""
Near = list[tuple[int, float, int]]
"""(note id, score, id of its best chunk), best first."""


class SemanticSearcher:
    """Answers a semantic or hybrid plan inside the caller's read snapshot."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        searcher: IndexSearcher,
        semantic: Semantic,
        state: tuple[object, ...],
        notes: int,
    ) -> None:
        self.conn = conn
        self.searcher = searcher
        self.semantic = semantic
        self.state = state
        """What the index is now (file, generation): the code table follows it."""
        self.notes = notes
        self.model_key, self.generation = store.state(conn)
        """The model of the chunks and their generation, in this snapshot."""

    def run(self, plan: Plan) -> tuple[list[SearchHit], int]:
        if not plan.query.strip():
            return self.searcher.run(dataclasses.replace(plan, mode="text"))
        f = self.searcher.filters(plan)
        if f is None:
            return [], 0
        need = plan.offset + plan.limit
        # hybrid fuses the first HYBRID_DEPTH notes by meaning: the same ranking as a search
        # by meaning of that many (the chunks re-ranked grow with the notes asked for)
        near = self.nearest(plan, f, need if plan.mode == "semantic" else max(need, HYBRID_DEPTH))
        if plan.mode == "semantic":
            return self.searcher.page(plan, self.placed(near[plan.offset : need])), len(near)
        return self._hybrid(plan, f, near)

    def placed(self, near: Near) -> Ranked:
        """The hits' (note, score, line, snippet) of nearest notes: their best chunk's place."""
        places = store.chunk_places(self.conn, [chunk for _, _, chunk in near])
        return [(n, score, *places.get(chunk, (1, ""))) for n, score, chunk in near]

    def refresh(self) -> None:
        """Bring the in-memory code table in line with this snapshot."""
        self.semantic.table().refresh(self.conn, (*self.state, self.model_key, self.generation))

    def prepare(self) -> None:
        """The code table (and its chunks by note, for narrow filters), the notes' dates, and
        the large topics' sets that searches used (the ones kept, in an earlier state), each
        unless it is of this state already (read on a connection of its own, in its own
        snapshot)."""
        self.refresh()
        table = self.semantic.table()
        table.note_order(table.codes)
        days = self.semantic.days()
        if days.current(self.conn, 0) is None:
            days.read(0)
        topics = self.searcher.topic_notes
        if topics is not None:
            for topic in topics.kept():
                if topics.current(self.conn, topic) is None:
                    topics.read(topic)

    def coverage(self) -> str:
        """``ready`` or ``pending``: whether every note was embedded, in this snapshot."""
        return self.semantic.coverage(self.conn, (*self.state, self.generation), self.model_key)

    def nearest(self, plan: Plan, filters: Filters, need: int) -> Near:
        """The notes nearest the plan's query, best first (see the module's doc)."""
        model = self.semantic.model()
        q = model.embed([plan.query])[0]
        return self.nearest_to(q, filters, need, plan=plan)

    def similar(self, note_id: int, need: int) -> Near:
        """The notes nearest one note (the mean of its chunks' vectors), itself left out."""
        self.semantic.model()
        found, vectors = store.vectors_in(self.conn, store.note_chunk_ids(self.conn, note_id))
        if not found:
            return []
        q = vectors.mean(axis=0)
        norm = float((q @ q) ** 0.5)
        if not norm:
            return []
        return self.nearest_to(q / norm, None, need, exclude=note_id)

    def nearest_to(
        self,
        q: Any,
        filters: Filters | None,
        need: int,
        *,
        plan: Plan | None = None,
        exclude: int | None = None,
    ) -> Near:
        """The notes nearest the unit vector ``q`` within ``filters``, best first."""
        import numpy as np

        model = self.semantic.model()
        table = self.semantic.table()
        self.refresh()
        if self.model_key != model.key or not len(table) or not q.any():
            return []  # nothing embedded by this model yet; a query of no known word
        k = max(CANDIDATES, need + NEED_MARGIN) + (1 if exclude is not None else 0)
        depth = max(DEPTH, 8 * k)
        for _ in range(FORGET_ROUNDS):
            ids, notes = self._candidates(table, q, filters, k, depth)
            if plan is not None:
                plan.check()
            found, vectors = store.vectors_in(self.conn, ids.tolist())
            if len(found) == len(ids):
                break
            # Chunks deleted since the table read them (a note's old chunks, collected
            # before the table saw them orphaned) stood for their notes: never again.
            table.forget(sorted(set(ids.tolist()) - set(found)))
        if not found:
            return []
        note_of = dict(zip(ids.tolist(), notes.tolist(), strict=True))
        chunk = np.asarray(found, dtype=np.int64)
        owner = np.fromiter((note_of[c] for c in found), dtype=np.int64, count=len(found))
        cos = vectors @ q
        if exclude is not None:
            cos[owner == exclude] = -np.inf
        # Best chunk first (ties: lower chunk id), then each note's first place is its best.
        order = np.lexsort((chunk, -cos))
        _, first = np.unique(owner[order], return_index=True)
        best = order[first]
        best = best[np.isfinite(cos[best])]
        best = best[np.lexsort((owner[best], -cos[best]))]
        return [
            (n, min(1.0, max(0.0, c)), ch)
            for n, c, ch in zip(
                owner[best].tolist(), cos[best].tolist(), chunk[best].tolist(), strict=True
            )
        ]

    def _candidates(
        self, table: CodeTable, q: Any, filters: Filters | None, k: int, depth: int
    ) -> Any:
        """(chunk ids, note ids) of the best chunks of each of the ``k`` notes nearest ``q``
        (by the chunks' bits, ``CodeTable.closest``) that pass ``filters``."""
        if filters is None or filters.empty:
            return table.closest(q, k, depth=depth)
        masks, rest = self._masks(filters)
        listed = None if rest.empty else self._listed(rest)
        if rest.empty or listed is not None:  # the filter's notes: only their chunks ranked
            among = _all_of(masks if listed is None else [*masks, listed])
            return table.closest(q, k, depth=depth, among=among)
        # a broad rest: the best chunks of the masks' notes, checked until k pass
        return self._checked(table, q, k, depth, rest, _all_of(masks))

    def _masks(self, f: Filters) -> tuple[list[Any], Filters]:
        """(by note id, whether a note passes each part of ``f`` whose notes are a mask at once;
        the rest of ``f``). The parts: ``where`` conditions (the bitmap made to resolve them:
        listing their notes and joining them in SQL took ~25 ms for 22,000 notes at 100,000),
        topics left out (``_without``) and a folder, note or glob (``_in_path``)."""
        masks: list[Any] = []
        if f.where is not None:
            masks.append(_by_note(f.where.member))
            f = dataclasses.replace(f, where=None)
        if f.exclude:
            masks.append(self._without(f))
            f = dataclasses.replace(f, exclude=[])
        if f.path is not None:
            masks.append(self._in_path(f))
            f = dataclasses.replace(f, path=None, path_kind=None)
        return masks, f

    def _listed(self, f: Filters) -> Any:
        """The notes passing ``f`` (topics and dates: the rest of ``_masks``), from memory when
        it can (a filter of large topics alone: their set; of dates, and maybe large topics:
        ``_dated``), else their ids listed by the text path's SQL when they are at most
        ``LIST_MOST``; None for a broader filter."""
        import numpy as np

        in_memory = self.searcher.topic_set(f)
        if in_memory is not None:  # any size: the table keeps its chunks' mask for a while
            return in_memory
        dated = self._dated(f)
        if dated is not None:
            return dated
        known = _known_passing(f)
        if known is not None and known > LIST_MOST:
            return None  # broad, as its topic's size says: not listed to be found so
        sql, params = f.ids_query(ordered=False)
        (listed,) = self.conn.execute(
            f"SELECT group_concat(id) FROM (SELECT id FROM ({sql}) LIMIT ?)",
            [*params, LIST_MOST + 1],
        ).fetchone()
        if listed is None:
            return np.zeros(0, dtype=np.int64)
        ids = np.array(str(listed).split(","), dtype=np.int64)
        return ids if len(ids) <= LIST_MOST else None

    def _in_path(self, f: Filters) -> Any:
        """By note id, whether a note is in the filter's folder, note or glob: its notes read
        once an index state (in the memo of ``where`` conditions' notes). A glob tests every
        path (64 ms at 100,000 notes), and a folder listed in SQL with a topic took 28 ms; as
        a mask, either is combined with what the rest of the filter gives from memory."""
        key = ("path", f.path_kind, f.path)
        memo = self.searcher.where_sets
        if memo is not None:
            found = memo.lookup(self.conn, [key], _path_notes)
        else:
            found = _path_notes(self.conn, [key])
        return _by_note(member(found[key]))

    def _without(self, f: Filters) -> Any:
        """By note id, every note's: whether it has none of the topics ``f`` leaves out. Their
        notes come from the topics' sets in memory, else ``topic_sets.read_topic``: a topic left out
        passes most notes, which the checked way then ranked all of and checked in SQL (22-25
        ms at 100,000 notes, against ~6-9)."""
        import numpy as np

        (top,) = self.conn.execute("SELECT ifnull(max(id), 0) + 1 FROM notes").fetchone()
        keep = np.ones(int(top), dtype=np.bool_)
        topics = self.searcher.topic_notes
        for t in f.exclude:
            kept = topics.current(self.conn, t) if topics is not None else None
            if kept is None:
                if topics is not None and f.sizes.get(t, 0) >= topic_sets.MIN_NOTES:
                    topics.want(self.conn, t)  # for the next search
                kept = topic_sets.read_topic(self.conn, t)
            ids = np.fromiter(kept.ids, dtype=np.int64, count=len(kept.ids))
            keep[ids[ids < len(keep)]] = False
        return keep

    def _dated(self, f: Filters) -> Any:
        """For a date filter (of topics and dates only: the rest of ``_masks``): by note id,
        whether a note is within the dates (and with topics, their set too), from memory; None
        when not in memory (the notes' dates are read in the background for the next search)."""
        if f.date_lo is None or f.date_hi is None:
            return None
        cache = self.semantic.days()
        days = cache.current(self.conn, 0)
        if days is None:
            cache.want(self.conn, 0)
            return None
        within = days.within(f.date_lo, f.date_hi)
        if f.driver is None and not f.any_ids and not f.exclude:
            return within
        topics = self.searcher.topic_set(dataclasses.replace(f, date_lo=None, date_hi=None))
        return None if topics is None else (topics, within)

    def _checked(self, table: CodeTable, q: Any, k: int, depth: int, f: Filters, among: Any) -> Any:
        """(chunk ids, note ids) of the best chunks of the ``k`` best notes that pass the broad
        filter ``f`` (more than ``LIST_MOST`` notes pass it) and are ``among`` (the masks of the
        filter's other parts, None without). The candidates are taken as the filter's own notes
        would be (``CodeTable.closest`` with ``among`` them), scaled by the share of notes that
        pass (``_count``): ``depth`` and ``SECOND`` chunks of theirs are, at that share,
        ``depth``/share and ``SECOND``/share of all; the notes of the best chunks of
        ``CHECK_MARGIN`` times k/share notes are checked against ``f`` in one statement, and
        taken again twice as deep while fewer than ``k`` pass. (Taken at the depth of an
        unfiltered search, as before, they held 80 % of the exact top 10 for a topic on 23 % of
        100,000 notes, where its notes' own mask holds 94 %.)"""
        import numpy as np

        from engram_ls.core.semantic.vectors import SECOND

        passing = self._count(f)
        if not passing:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32)
        scale = max(1.0, self.notes / passing)
        while True:
            wanted = math.ceil(k * scale * CHECK_MARGIN)
            ids, notes = table.closest(
                q,
                wanted,
                depth=math.ceil(depth * scale),
                among=among,
                second=math.ceil(SECOND * scale),
            )
            candidates = np.unique(notes)
            passed = self._passing(f, candidates.tolist())
            if len(passed) >= k or len(candidates) < wanted:  # enough, or every note taken
                break
            scale *= 2
        keep = np.isin(notes, np.fromiter(passed, dtype=np.int64, count=len(passed)))
        order = np.flatnonzero(keep)  # best first
        _, first = np.unique(notes[order], return_index=True)
        order = order[np.isin(notes[order], notes[order][np.sort(first)[:k]])]
        return ids[order], notes[order]

    def _count(self, f: Filters) -> int:
        """How many notes pass ``f`` (a topic alone: its size)."""
        known = _known_passing(f)
        if known is not None:
            return known
        sql, params = f.ids_query(ordered=False)
        return int(self.conn.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0])

    def _passing(self, f: Filters, note_ids: list[int]) -> set[int]:
        """Those of ``note_ids`` that pass the filters (one statement: the ids as JSON)."""
        where, params = f.topic_conditions("n")
        sql = "SELECT n.id FROM json_each(?) j CROSS JOIN notes n ON n.id = j.value"
        if where:
            sql += " WHERE " + " AND ".join(where)
        return {int(r[0]) for r in self.conn.execute(sql, [json.dumps(note_ids), *params])}

    def _hybrid(self, plan: Plan, f: Filters, near: Near) -> tuple[list[SearchHit], int]:
        text_plan = any_word_plan(plan, self.conn, self.state, self.notes, HYBRID_DEPTH)
        by_words = self.searcher.text_ranking(text_plan, f) if text_plan is not None else []
        chunk_of = {note_id: chunk for note_id, _, chunk in near[:HYBRID_DEPTH]}
        fused = fuse_ranks([list(chunk_of), by_words], RRF_K)
        window = fused[plan.offset : plan.offset + plan.limit]
        # A note its words found shows the line they are on (found in its body, as text mode
        # does); one found by meaning alone, its nearest chunk.
        found_by_words = set(by_words)
        places = store.chunk_places(
            self.conn, [chunk_of[n] for n, _ in window if n not in found_by_words]
        )
        page: list[tuple[int, float, int | None, str | None]] = []
        for n, score in window:
            line, text = (None, None) if n in found_by_words else places.get(chunk_of[n], (1, ""))
            page.append((n, score, line, text))
        return self.searcher.page(text_plan or plan, page), len(fused)


def _path_notes(conn: sqlite3.Connection, keys: list[Hashable]) -> dict[Hashable, int]:
    """The bitmap of the notes in each ``("path", kind, scope)`` of ``keys``."""
    out: dict[Hashable, int] = {}
    for key in keys:
        assert isinstance(key, tuple)
        _, kind, scope = key
        sql, params = path_condition("path", scope, kind)
        out[key] = bitmap(
            int(r[0]) for r in conn.execute(f"SELECT id FROM notes WHERE {sql}", params)
        )
    return out


def _known_passing(f: Filters) -> int | None:
    """How many notes pass ``f`` when its topics' sizes say (one topic and nothing else), else
    None."""
    alone = dataclasses.replace(f, driver=None).empty and not f.all_others
    return f.sizes.get(f.driver) if f.driver is not None and alone else None


def _all_of(parts: list[Any]) -> Any:
    """What ``CodeTable.closest`` takes as ``among`` for notes that are in every one of
    ``parts``: one part as it is, several as a tuple; None for no part."""
    return None if not parts else parts[0] if len(parts) == 1 else tuple(parts)


def _by_note(members: bytes) -> Any:
    """A bitmap's ``member`` bytes as a boolean array by note id."""
    import numpy as np

    return np.unpackbits(np.frombuffer(members, dtype=np.uint8), bitorder="little").view(np.bool_)


def similar_notes(engram: Engram, rel: str, limit: int) -> list[dict[str, Any]]:
    """The notes nearest ``rel`` by meaning; none where search by meaning cannot answer
    (no extra, turned off, a model that does not load, an index not built)."""
    try:
        engram.semantic.model()
    except UnsupportedMode:
        return []
    with engram.health.reading() as r:
        if not r.servable:
            return []
        row = r.conn.execute("SELECT id, title FROM notes WHERE path = ?", (rel,)).fetchone()
        if row is None:
            return []
        searcher = IndexSearcher(r.conn, engram.vault, engram.config)
        semantic = engram._by_meaning(r, searcher)
        ranked = semantic.placed(semantic.similar(int(row[0]), limit)[:limit])
        plan = make_plan(
            parse_request({"query": str(row[1]) or rel, "mode": "semantic", "limit": limit}),
            engram.vault,
            engram.config,
        )
        hits = searcher.page(plan, ranked[:limit])
    return [
        {
            "path": h.path,
            "title": h.title,
            "score": h.score,
            "line": h.line,
            "snippet": h.snippet,
        }
        for h in hits
    ]


__all__ = ["CANDIDATES", "HYBRID_DEPTH", "RRF_K", "SemanticSearcher", "similar_notes"]

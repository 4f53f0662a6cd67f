"""Answering ``semantic`` and ``hybrid`` plans from the index.

``semantic``: the query's vector against every chunk's (``core/semantic/vectors.py``): the
nearest ``CANDIDATES`` chunks by Hamming distance of their sign bits, re-ranked by the cosine
of their stored vectors; a note's score is that of its best chunk, whose line and snippet the
hit shows. Filters are exact: with filters, the nearest chunks are looked up four times as deep
and their notes checked against the filters in SQL; when too few pass (a narrow filter), the
filter's notes are listed first and only their chunks are ranked. ``total`` counts the notes
the candidates gave (the ranking is of the nearest chunks, not of every note).

``hybrid``: reciprocal rank fusion of a text ranking (BM25 over any of the query's
informative words, ``core/search/any_word.py``: its first ``HYBRID_DEPTH`` notes, same
filters) and the semantic one: a note scores ``1/(RRF_K + rank)`` from each ranking it is in,
scaled by the best possible score so that scores are in [0, 1]. A query with no informative
word has no text side.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import TYPE_CHECKING, Any

from engram_ls.core.search.any_word import any_word_plan
from engram_ls.core.search.hits import SearchHit, fuse_ranks
from engram_ls.core.search.index_path import IndexSearcher, _Filters
from engram_ls.core.search.plan import Plan
from engram_ls.core.semantic import store

if TYPE_CHECKING:
    from engram_ls.core.semantic.engine import Semantic

CANDIDATES = 512
"""Chunks re-ranked by their stored vectors, at least (three per note asked for, if more)."""
FILTER_DEPTH = 4
"""With filters, how many times deeper the nearest chunks are looked up before the filter."""
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
        near = self.nearest(plan, f, need)
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

    def coverage(self) -> str:
        """``ready`` or ``pending``: whether every note was embedded, in this snapshot."""
        return self.semantic.coverage(self.conn, (*self.state, self.generation), self.model_key)

    def nearest(self, plan: Plan, filters: _Filters, need: int) -> Near:
        """The notes nearest the plan's query, best first (see the module's doc)."""
        model = self.semantic.model()
        q = model.embed([plan.query])[0]
        return self.nearest_to(q, filters, need, plan=plan)

    def similar(self, note_id: int, need: int) -> Near:
        """The notes nearest one note (the mean of its chunks' vectors), itself left out."""
        from engram_ls.core.semantic.vectors import from_blobs

        self.semantic.model()
        blobs = store.vectors_of(self.conn, store.note_chunk_ids(self.conn, note_id))
        if not blobs:
            return []
        q = from_blobs(list(blobs.values())).mean(axis=0)
        norm = float((q @ q) ** 0.5)
        if not norm:
            return []
        return self.nearest_to(q / norm, None, need, exclude=note_id)

    def nearest_to(
        self,
        q: Any,
        filters: _Filters | None,
        need: int,
        *,
        plan: Plan | None = None,
        exclude: int | None = None,
    ) -> Near:
        """The notes nearest the unit vector ``q`` within ``filters``, best first."""
        import numpy as np

        from engram_ls.core.semantic.vectors import code_of, from_blobs

        model = self.semantic.model()
        table = self.semantic.table()
        self.refresh()
        if self.model_key != model.key or not len(table) or not q.any():
            return []  # nothing embedded by this model yet; a query of no known word
        code = code_of(q[None, :])[0]
        k = max(CANDIDATES, 3 * need)
        if filters is None or filters.empty:
            ids, notes = table.nearest(code, k + (64 if exclude is not None else 0))
        else:
            ids, notes = table.nearest(code, FILTER_DEPTH * k)
            passing = self._passing(filters, sorted(set(notes.tolist())))
            keep = np.isin(notes, np.fromiter(passing, dtype=np.int32, count=len(passing)))
            if len(passing) >= need or len(ids) < FILTER_DEPTH * k:
                ids, notes = ids[keep][:k], notes[keep][:k]
            else:  # a narrow filter: rank only its notes' chunks
                sql, params = filters.ids_query(ordered=False)
                allowed = [int(r[0]) for r in self.conn.execute(sql, params)]
                ids, notes = table.nearest(code, k, among=allowed)
        if plan is not None:
            plan.check()
        blobs = store.vectors_of(self.conn, ids.tolist())
        found = [(c, n) for c, n in zip(ids.tolist(), notes.tolist(), strict=True) if c in blobs]
        if not found:
            return []
        cos = from_blobs([blobs[c] for c, _ in found]) @ q
        best: dict[int, tuple[float, int]] = {}
        for (chunk, note_id), c in zip(found, cos.tolist(), strict=True):
            if note_id != exclude and (note_id not in best or c > best[note_id][0]):
                best[note_id] = (c, chunk)
        ranked = sorted(best.items(), key=lambda it: (-it[1][0], it[0]))
        return [(n, min(1.0, max(0.0, c)), chunk) for n, (c, chunk) in ranked]

    def _passing(self, f: _Filters, note_ids: list[int]) -> set[int]:
        """Those of ``note_ids`` that pass the filters: from the large topics' sets in memory
        for a filter of topics alone, else the SQL of the text path's probes."""
        in_memory = self.searcher.topic_set(f)
        if in_memory is not None:
            return {n for n in note_ids if n in in_memory}
        where, params = f.topic_conditions("n")
        out: set[int] = set()
        for i in range(0, len(note_ids), 500):
            part = note_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            sql = f"SELECT n.id FROM notes n WHERE n.id IN ({marks})"
            if where:
                sql += " AND " + " AND ".join(where)
            out.update(int(r[0]) for r in self.conn.execute(sql, [*part, *params]))
        return out

    def _hybrid(self, plan: Plan, f: _Filters, near: Near) -> tuple[list[SearchHit], int]:
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


__all__ = ["CANDIDATES", "HYBRID_DEPTH", "RRF_K", "SemanticSearcher"]

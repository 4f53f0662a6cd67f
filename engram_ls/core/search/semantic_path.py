"""Answering ``semantic`` and ``hybrid`` plans from the index.

``semantic``: the query's vector against every chunk's (``core/semantic/vectors.py``): the
nearest ``CANDIDATES`` chunks by Hamming distance of their sign bits, re-ranked by the cosine
of their stored vectors; a note's score is that of its best chunk, whose line and snippet the
hit shows. Filters are exact: with filters, the nearest chunks are looked up four times as deep
and their notes checked against the filters in SQL; when too few pass (a narrow filter), the
filter's notes are listed first and only their chunks are ranked. ``total`` counts the notes
the candidates gave (the ranking is of the nearest chunks, not of every note).

``hybrid``: reciprocal rank fusion of the text path's ranking (BM25, its first
``HYBRID_DEPTH`` notes, same filters) and the semantic one: a note scores
``1/(RRF_K + rank)`` from each ranking it is in, scaled by the best possible score so that
scores are in [0, 1]. A query with no searchable word has no text side.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from typing import TYPE_CHECKING

from engram_ls.core.search.hits import SearchHit
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
RRF_K = 60
Ranked = list[tuple[int, float, int, str]]
"""(note id, score, line, snippet text), best first."""


class SemanticSearcher:
    """Answers a semantic or hybrid plan inside the caller's read snapshot."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        searcher: IndexSearcher,
        semantic: Semantic,
        state: tuple[object, ...],
    ) -> None:
        self.conn = conn
        self.searcher = searcher
        self.semantic = semantic
        self.state = state
        """What the index is now (file, generation): the code table follows it."""

    def run(self, plan: Plan) -> tuple[list[SearchHit], int]:
        if not plan.query.strip():
            return self.searcher.run(dataclasses.replace(plan, mode="text"))
        f = self.searcher.filters(plan)
        if f is None:
            return [], 0
        need = plan.offset + plan.limit
        near = self.nearest(plan, f, need)
        if plan.mode == "semantic":
            page = near[plan.offset : need]
            return self.searcher.page(plan, page), len(near)
        return self._hybrid(plan, f, near)

    def nearest(self, plan: Plan, filters: _Filters, need: int) -> Ranked:
        """The notes nearest the plan's query, best first (see the module's doc)."""
        import numpy as np

        from engram_ls.core.semantic.vectors import code_of, from_blobs

        model = self.semantic.model()
        table = self.semantic.table()
        table.refresh(
            self.conn, (*self.state, store.model_key(self.conn), store.generation(self.conn))
        )
        if store.model_key(self.conn) != model.key or not len(table):
            return []
        q = model.embed([plan.query])[0]
        if not q.any():
            return []  # no word the model knows (emoji, symbols)
        code = code_of(q[None, :])[0]
        k = max(CANDIDATES, 3 * need)
        if filters.empty:
            ids, notes = table.nearest(code, k)
        else:
            ids, notes = table.nearest(code, FILTER_DEPTH * k)
            passing = self._passing(filters, sorted(set(notes.tolist())))
            keep = np.isin(notes, np.fromiter(passing, dtype=np.int32, count=len(passing)))
            if len(passing) >= need or len(ids) < FILTER_DEPTH * k:
                ids = ids[keep][:k]
            else:  # a narrow filter: rank only its notes' chunks
                sql, params = filters.ids_query(ordered=False)
                allowed = [int(r[0]) for r in self.conn.execute(sql, params)]
                ids, _ = table.nearest(code, k, table.mask_of(allowed))
        plan.check()
        rows = store.chunk_vectors(self.conn, ids.tolist())
        if not rows:
            return []
        cos = from_blobs([r[4] for r in rows]) @ q
        best: dict[int, tuple[float, int, str]] = {}
        for (_, note_id, line, snippet, _), c in zip(rows, cos.tolist(), strict=True):
            if note_id not in best or c > best[note_id][0]:
                best[note_id] = (c, line, snippet)
        ranked = sorted(best.items(), key=lambda it: (-it[1][0], it[0]))
        return [(n, min(1.0, max(0.0, c)), line, snip) for n, (c, line, snip) in ranked]

    def _passing(self, f: _Filters, note_ids: list[int]) -> set[int]:
        """Those of ``note_ids`` that pass the filters (the SQL of the text path's probes)."""
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

    def _hybrid(self, plan: Plan, f: _Filters, near: Ranked) -> tuple[list[SearchHit], int]:
        text_hits: list[SearchHit] = []
        if plan.fts_query:
            text_plan = dataclasses.replace(plan, mode="text", limit=HYBRID_DEPTH, offset=0)
            text_hits, _ = self.searcher.text(text_plan, f)
        ids = self._ids([h.path for h in text_hits])
        score: dict[int, float] = {}
        shown: dict[int, tuple[int, str]] = {}
        for rank, (note_id, _, line, snippet) in enumerate(near[:HYBRID_DEPTH], 1):
            score[note_id] = 1 / (RRF_K + rank)
            shown[note_id] = (line, snippet)
        for rank, hit in enumerate(text_hits, 1):
            if hit.path not in ids:
                continue
            note_id = ids[hit.path]
            score[note_id] = score.get(note_id, 0.0) + 1 / (RRF_K + rank)
            shown.setdefault(note_id, (hit.line, hit.snippet))
        top = 2 / (RRF_K + 1)
        fused = sorted(score.items(), key=lambda it: (-it[1], it[0]))
        page = [
            (n, min(1.0, s / top), *shown[n])
            for n, s in fused[plan.offset : plan.offset + plan.limit]
        ]
        return self.searcher.page(plan, page), len(fused)

    def _ids(self, paths: list[str]) -> dict[str, int]:
        if not paths:
            return {}
        marks = ",".join("?" * len(paths))
        return {
            str(p): int(i)
            for i, p in self.conn.execute(
                f"SELECT id, path FROM notes WHERE path IN ({marks})", paths
            )
        }


__all__ = ["CANDIDATES", "HYBRID_DEPTH", "RRF_K", "SemanticSearcher"]

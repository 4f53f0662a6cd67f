"""The text side of a ``hybrid`` search: BM25 over any of the query's informative words.

A ``text`` search needs every word in a note, which a question or a sentence almost never
has (on the labelled query set of docs/semantic.md, 75 of 76 queries match no note); the
text side of ``hybrid`` matches any of them instead (FTS5 ``a OR b OR c``), which finds far
more (recall@10 0.770 against 0.000). Its words are chosen so that ranking stays cheap: no
stop word (``how``, ``the``, ``do``, …), and the rarer words first for as long as the notes
holding them number at most ``ROWS_BUDGET`` (or ``NOTES_SHARE`` of the notes, if more) in
all: BM25 costs about 0.7 µs a matching note, and a word in half of 100,000 notes would cost
35 ms while telling little (its IDF is near 0). How many notes hold a word is counted from
FTS5 once per word and state of the index.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading

from engram_ls.core.index import fts
from engram_ls.core.search.plan import Plan

ROWS_BUDGET = 3000
NOTES_SHARE = 0.05
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    get got make makes made way ways thing things use using used""".split()  # noqa: SIM905
)
_VOCAB = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.engram_vocab USING fts5vocab(main, 'notes_fts', 'row')"
)
_lock = threading.Lock()
_counts: dict[object, dict[str, int]] = {}
"""Notes per word for one state of one index: {state: {word: notes}} (the newest state only)."""


def _notes_with(conn: sqlite3.Connection, state: object, words: list[str]) -> dict[str, int]:
    with _lock:
        known = _counts.get(state)
        if known is None:
            _counts.clear()
            known = _counts[state] = {}
        missing = [w for w in words if w not in known]
    if missing:
        # One count of the word's matches each (FTS5 reads its doclist; a read-only
        # connection cannot create the fts5vocab table that would say the same).
        found = {
            w: int(
                conn.execute(
                    "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH ?", (fts.quoted(w),)
                ).fetchone()[0]
            )
            for w in missing
        }
        with _lock:
            known.update(found)
    return {w: known.get(w, 0) for w in words}


def any_word_plan(
    plan: Plan, conn: sqlite3.Connection, state: object, notes: int, depth: int
) -> Plan | None:
    """The text plan of the hybrid side (its first ``depth`` notes), or None when the query
    has no informative word that notes hold within the budget."""
    single = [t for t in plan.terms if len(t.tokens) == 1 and not t.prefix]
    others = [t for t in plan.terms if t not in single]  # phrases and prefixes: kept as given
    words = [t for t in single if t.tokens[0] not in STOP_WORDS]
    counts = _notes_with(conn, state, [t.tokens[0] for t in words])
    budget = max(ROWS_BUDGET, int(NOTES_SHARE * notes))
    kept: list[fts.Term] = []
    rows = 0
    for t in sorted(words, key=lambda t: counts[t.tokens[0]]):
        n = counts[t.tokens[0]]
        if n == 0:
            continue
        if rows + n > budget:
            break
        kept.append(t)
        rows += n
    kept += others
    if not kept:
        return None
    query = " OR ".join(fts.to_fts([t]) for t in kept)
    return dataclasses.replace(
        plan, mode="text", terms=kept, fts_query=query, limit=depth, offset=0
    )


__all__ = ["NOTES_SHARE", "ROWS_BUDGET", "STOP_WORDS", "any_word_plan"]

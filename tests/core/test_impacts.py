"""Exact top-k ranking of a frequent word from its postings (``core/index/impacts.py``): the
same hits, scores, order and total as FTS5's ``bm25()`` ranking of every matching row.

The postings path answers words in 5,000 notes or more; here the threshold is lowered so that
every word of small vaults (a generated one, the fixture vaults with their Unicode and messy
notes) takes it, and each answer is compared with FTS5's, query by query."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_ls.core.index import db, impacts, topic_sets
from engram_ls.core.index.fts import quoted, tokenize
from engram_ls.core.index.snapshot_cache import SnapshotCache
from engram_ls.core.search.index_path import BM25_WEIGHTS, IndexSearcher
from engram_ls.core.search.plan import make_plan
from engram_ls.core.search.request import parse_request
from engram_ls.core.service import Engram
from tests.conftest import DATA, EXAMPLE, copy_tree

WEIGHTS = tuple(BM25_WEIGHTS)
MIN_MATCHES = impacts.MIN_MATCHES


@contextlib.contextmanager
def _synced(root: Path) -> Iterator[Engram]:
    """An Engram over ``root``, its index brought up to date; closed at the end."""
    e = Engram(root)
    e.open()
    try:
        e.sync()
        yield e
    finally:
        e.close()


@pytest.fixture(scope="module")
def low_threshold() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(impacts, "MIN_MATCHES", 1)
        mp.setattr(topic_sets, "MIN_NOTES", 1)
        yield


@pytest.fixture(scope="module")
def vaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Engram]]:
    import generate_vault

    base = tmp_path_factory.mktemp("impacts")
    roots = {"generated": base / "generated"}
    generate_vault.generate(roots["generated"], 1200, 3)
    for src in [EXAMPLE, *sorted(p for p in DATA.iterdir() if p.is_dir())]:
        roots[src.name] = copy_tree(src, base / src.name)
    opened = {}
    for name, root in roots.items():
        e = Engram(root)
        e.open()
        e.sync()
        opened[name] = e
    yield opened
    for e in opened.values():
        e.close()


def _words(e: Engram) -> list[tuple[str, int]]:
    conn = e.index.conn()
    impacts.vocabulary(conn)
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.test_rows USING fts5vocab(main, notes_fts, row)"
    )
    return [(str(t), int(n)) for t, n in conn.execute("SELECT term, doc FROM temp.test_rows")]


def _phrases(e: Engram, rng: random.Random, n: int) -> list[tuple[str, ...]]:
    """Runs of two or three consecutive words of the notes' text (phrases that occur)."""
    bodies = [str(b) for (b,) in e.index.conn().execute("SELECT body FROM notes_fts")]
    out: list[tuple[str, ...]] = []
    for _ in range(n):
        tokens = tokenize(rng.choice(bodies)) if bodies else []
        if len(tokens) >= 3:
            i = rng.randrange(len(tokens) - 2)
            out.append(tuple(tokens[i : i + rng.choice((2, 2, 3))]))
    return out


def _fts5_ranking(conn: Any, tokens: tuple[str, ...]) -> list[tuple[int, float]]:
    w = ", ".join(str(x) for x in WEIGHTS)
    return [
        (int(i), float(r))
        for i, r in conn.execute(
            f"SELECT rowid, bm25(notes_fts, {w}) AS r FROM notes_fts WHERE notes_fts MATCH ?"
            " ORDER BY r, rowid",
            (quoted(" ".join(tokens)),),
        )
    ]


def test_scores_are_fts5s_bit_for_bit_for_every_note_of_every_word(
    vaults: dict[str, Engram],
) -> None:
    checked = 0
    for name, e in vaults.items():
        conn = e.index.conn()
        impacts.vocabulary(conn)
        words = _words(e)
        rng = random.Random(name)
        sample = [(w,) for w, _ in (words if len(words) <= 300 else rng.sample(words, 300))]
        sample += _phrases(e, rng, 100)
        with db.read_tx(conn):
            rows, tokens = impacts.totals(conn) or (0, 0)
            for term in sample:
                postings = impacts.read_postings(conn, term, WEIGHTS)
                want = _fts5_ranking(conn, term)
                assert postings.usable, (name, term)
                assert postings.count == len(want), (name, term)
                assert impacts.top(postings, rows, tokens, len(want)) == want, (name, term)
                for k in (1, 3, 50):
                    assert impacts.top(postings, rows, tokens, k) == want[:k], (name, term, k)
                checked += 1
    assert checked > 1200


Caches = tuple[
    SnapshotCache[impacts.Key, impacts.Postings], SnapshotCache[int, topic_sets.TopicNotes]
]


def _answer(e: Engram, request: dict[str, Any], caches: Caches | None) -> Any:
    plan = make_plan(parse_request(request), e.vault, e.config, None)
    conn = e.index.conn()
    with db.read_tx(conn):
        if caches is None:
            searcher = IndexSearcher(conn, e.vault, e.config)
        else:
            searcher = IndexSearcher(
                conn, e.vault, e.config, postings=caches[0], topic_notes=caches[1]
            )
        hits, total = searcher.run(plan)
    return [(h.path, h.score, h.line, h.snippet) for h in hits], total


def _caches(e: Engram, request: dict[str, Any]) -> Caches:
    """Caches holding everything ``request`` can use: its term's postings, its topics' notes."""
    postings = impacts.postings_cache(e.index)
    topics = topic_sets.topic_cache(e.index)
    topics.capacity = 100
    if request.get("query"):
        term = tuple(tokenize(request["query"]))
        found = postings.read((term, WEIGHTS))
        assert found is not None and found.usable
        assert postings.kept() == [(term, WEIGHTS)]
    conn = e.index.conn()
    for tag in request.get("tags", []):
        row = conn.execute(
            "SELECT id FROM topics WHERE key = ?", (tag.lstrip("-").casefold(),)
        ).fetchone()
        if row is not None:
            assert topics.read(int(row[0])) is not None
    return postings, topics


@st.composite
def requests(draw: st.DrawFn, terms: list[tuple[str, ...]], topics: list[str]) -> dict[str, Any]:
    term = draw(st.sampled_from(terms))
    request: dict[str, Any] = {}
    if draw(st.integers(0, 5)):  # else a listing: topic filters alone
        request["query"] = term[0] if len(term) == 1 else '"' + " ".join(term) + '"'
    elif topics:
        request["tags"] = draw(st.lists(st.sampled_from(topics), min_size=1, max_size=3))
    if topics and draw(st.booleans()):
        tags = draw(st.lists(st.sampled_from(topics), min_size=1, max_size=3, unique=True))
        if draw(st.booleans()):
            tags[-1] = "-" + tags[-1]
        request["tags"] = tags
        request["tags_mode"] = draw(st.sampled_from(["any", "all"]))
    if draw(st.booleans()):
        year = draw(st.integers(2017, 2026))
        request["date_from"] = f"{year}-01-01"
        if draw(st.booleans()):
            request["date_to"] = f"{year + draw(st.integers(0, 3))}-06-30"
    if draw(st.integers(0, 4)) == 0:
        request["path"] = draw(st.sampled_from(["area-00", "area-01/2019", "*.md", "**/b*"]))
    request["limit"] = draw(st.sampled_from([1, 5, 20, 50, 100]))
    request["offset"] = draw(st.sampled_from([0, 0, 0, 1, 7, 60]))
    return request


@functools.cache
def _vocabulary(e: Engram, name: str) -> tuple[list[tuple[str, ...]], list[str]]:
    """A vault's words and some of its phrases, and its most used topics."""
    terms: list[tuple[str, ...]] = [(w,) for w, _ in _words(e) if w.isalnum()]
    terms += _phrases(e, random.Random(name), 50)
    return terms, [t.name for t in e.topics(limit=50)]


def _differential(vaults: dict[str, Engram], data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(vaults)))
    e = vaults[name]
    terms, topics = _vocabulary(e, name)
    request = data.draw(requests(terms, topics))
    caches = _caches(e, request)
    assert _answer(e, request, caches) == _answer(e, request, None), (name, request)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_postings_answer_as_fts5_ranks(
    low_threshold: None, vaults: dict[str, Engram], data: st.DataObject
) -> None:
    _differential(vaults, data)


@pytest.mark.slow
@settings(max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_postings_answer_as_fts5_ranks_many(
    low_threshold: None, vaults: dict[str, Engram], data: st.DataObject
) -> None:
    _differential(vaults, data)


def _wait_for(cache: SnapshotCache[Any, Any], key: Any) -> None:
    deadline = time.monotonic() + 30
    while key not in cache.kept():
        assert time.monotonic() < deadline, "the postings were never read"
        time.sleep(0.02)


def test_a_word_searched_twice_is_answered_from_postings_until_the_index_changes(
    low_threshold: None, generated: Any
) -> None:
    root = generated(300, 5)
    with _synced(root) as e:
        cache = e.index.postings
        first = e.search({"query": "index"})
        assert cache.kept() == []  # one search reads nothing
        second = e.search({"query": "index"})
        _wait_for(cache, (("index",), WEIGHTS))
        third = e.search({"query": "index"})
        assert first.total > 50
        assert [(h.path, h.score) for h in first.results] == [
            (h.path, h.score) for h in second.results
        ]
        assert [(h.path, h.score) for h in third.results] == [
            (h.path, h.score) for h in first.results
        ]
        assert third.total == first.total

        # A new note that holds the word many times in its title: the postings read before
        # the change no longer answer, and the answer has the new note first.
        note = root / "new-note.md"
        note.write_text("---\ntitle: index index index\n---\nindex index\n", encoding="utf-8")
        e.sync()
        changed = e.search({"query": "index"})
        assert changed.total == first.total + 1
        assert changed.results[0].path == "new-note.md"
        assert _same(changed, e.search({"query": "index"}))
    assert e.index.postings.kept() == []  # closing the index forgets them


def _same(a: Any, b: Any) -> bool:
    def key(r: Any) -> Any:
        return json.dumps([(h.path, h.score) for h in r.results]), r.total

    return bool(key(a) == key(b))


def test_a_search_never_reads_postings_for_rare_words(
    generated: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(impacts, "MIN_MATCHES", MIN_MATCHES)  # whatever ran before
    monkeypatch.setattr(impacts, "SLOW_S", float("inf"))  # however loaded the machine is
    root = generated(200, 2)
    with _synced(root) as e:
        for _ in range(3):
            e.search({"query": "index"})
        time.sleep(0.2)
        assert e.index.postings.kept() == []  # 200 notes: far below MIN_MATCHES


def test_a_large_topic_filter_searched_twice_counts_from_sets_until_the_index_changes(
    low_threshold: None, generated: Any
) -> None:
    root = generated(300, 6)
    with _synced(root) as e:
        request = {"tags": ["python", "memory"], "tags_mode": "all"}
        first = e.search(request)
        assert e.index.topic_notes.kept() == []  # one search reads nothing
        e.search(request)
        python, memory = (
            int(e.index.conn().execute("SELECT id FROM topics WHERE key = ?", (k,)).fetchone()[0])
            for k in ("python", "memory")
        )
        _wait_for(e.index.topic_notes, python)
        _wait_for(e.index.topic_notes, memory)
        third = e.search(request)
        assert first.total > 0
        assert _same(first, third)

        note = root / "both.md"
        note.write_text("---\ntags: [python, memory]\ndate: 2030-01-01\n---\nx\n", "utf-8")
        e.sync()
        changed = e.search(request)
        assert changed.total == first.total + 1
        assert changed.results[0].path == "both.md"
    assert e.index.topic_notes.kept() == []


def test_a_value_read_from_a_file_that_replaced_the_index_is_never_used(
    low_threshold: None, generated: Any
) -> None:
    """Another process may replace the index file (same generation, other notes): what the
    caches read from it never answers a search that reads the file it opened."""
    root = generated(120, 7)
    with _synced(root) as e:
        key = (("index",), WEIGHTS)
        cache = impacts.postings_cache(e.index)
        assert cache.read(key) is not None
        conn = e.index.conn()
        assert cache.current(conn, key) is not None
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        copy = e.index.path.with_name("copy.sqlite")
        shutil.copyfile(e.index.path, copy)
        os.replace(copy, e.index.path)  # the same bytes and generation, another file
        assert e.index.file_at_path() != e.index.opened_file()
        assert cache.read(key) is not None
        assert cache.current(conn, key) is None


def test_a_topic_asked_for_while_it_is_read_is_read_once(generated: Any) -> None:
    """Searches that ask for a large topic's notes while the background thread reads them
    queue it again (they cannot know the read's state): the queued ask finds it read at that
    generation and reads nothing (before, the topic was read twice, the searches slower
    meanwhile); after a write, asked for again, it is read again."""
    import threading

    root = generated(200, 3)
    with _synced(root) as e:
        conn = e.index.conn()
        (topic,) = conn.execute(
            "SELECT topic_id FROM note_topics GROUP BY topic_id ORDER BY count(*) DESC LIMIT 1"
        ).fetchone()
        reads: list[int] = []
        gate = threading.Event()

        def reader(c: Any, key: int) -> topic_sets.TopicNotes:
            reads.append(key)
            assert gate.wait(30)
            return topic_sets.read_topic(c, key)

        cache = SnapshotCache("engram-topics-test", e.index, reader, 4)

        def asked_twice() -> None:
            with db.read_tx(conn):
                cache.want(conn, topic)
                cache.want(conn, topic)  # the second time: read in the background

        asked_twice()
        deadline = time.monotonic() + 30
        while not reads:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        asked_twice()  # while it is read
        gate.set()
        _wait_for(cache, topic)
        while cache._reading is not None and cache._reading.is_alive():
            time.sleep(0.01)
        assert reads == [topic]
        with db.read_tx(conn):
            assert cache.current(conn, topic) is not None
        note = next(root.rglob("*.md"))
        note.write_text(note.read_text(encoding="utf-8") + "\nmore\n", encoding="utf-8")
        e.sync()
        asked_twice()
        _wait_for(cache, topic)
        deadline = time.monotonic() + 30
        while len(reads) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert reads == [topic, topic]

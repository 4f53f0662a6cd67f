"""The quality acceptance of search by meaning (issue 16), on the labelled query set of the real
vault (tests/data/semantic_queries.json, see semantic_queries.md): hybrid finds more of the
relevant notes in its first 10 than text does, and text answers exactly as a plain text search
of an index without vectors (embedding does not make text worse).

The real shipped model and real indexes; the measures are those of benchmarks/bench_quality.py,
which reports the figures (docs/semantic.md, Quality)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import bench_quality as bq
import pytest

from engram_ls.core.config import EngramConfig, Semantic
from engram_ls.core.semantic.model import missing_packages
from engram_ls.core.service import Engram
from tests.conftest import REAL_VAULT, copy_tree

QUERIES: list[dict[str, Any]] = json.loads(bq.DEFAULT_QUERIES.read_text(encoding="utf-8"))[
    "queries"
]

pytestmark = [
    pytest.mark.skipif(not REAL_VAULT.is_dir(), reason="the shared real vault is not present"),
    pytest.mark.skipif(bool(missing_packages()), reason="the semantic extra is not installed"),
]


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engram, Engram]]:
    """(a service whose index has every note embedded, one with search by meaning off), both
    over the same copy of the real vault, each with its own index."""
    tmp = tmp_path_factory.mktemp("quality")
    vault = copy_tree(REAL_VAULT, tmp / "vault")
    embedded = bq.embedded(vault, tmp / "embedded.sqlite", None)
    plain = Engram(
        vault,
        config=EngramConfig(semantic=Semantic(enabled=False)),
        index_path=tmp / "plain.sqlite",
    )
    plain.open()
    plain.sync()
    try:
        yield embedded, plain
    finally:
        embedded.close()
        plain.close()


def recall(rankings: list[bq.Ranking]) -> float:
    rows = [bq.judge(r, q["relevant"]) for r, q in zip(rankings, QUERIES, strict=True)]
    return float(bq.aggregate(rows, [q["kind"] for q in QUERIES])["all"]["recall@10"])


def test_the_query_set_is_the_issues(services: tuple[Engram, Engram]) -> None:
    """At least 60 queries, each of a known kind, whose relevant notes are all in the index."""
    embedded, _ = services
    assert len(QUERIES) >= 60
    assert len({q["id"] for q in QUERIES}) == len(QUERIES)
    assert {q["kind"] for q in QUERIES} == {"paraphrase", "synonym", "question"}
    known = set(bq.note_ids(embedded.index.path))
    assert all(p in known for q in QUERIES for p in q["relevant"])


def test_hybrid_beats_text_and_text_is_unchanged(services: tuple[Engram, Engram]) -> None:
    embedded, plain = services
    text = [bq.paths(embedded, {"query": q["query"], "mode": "text", "limit": 10}) for q in QUERIES]
    hybrid = [
        bq.paths(embedded, {"query": q["query"], "mode": "hybrid", "limit": 10}) for q in QUERIES
    ]
    before = [bq.paths(plain, {"query": q["query"], "limit": 10}) for q in QUERIES]
    assert text == before
    assert recall(hybrid) > recall(text)
    assert recall(text) == recall(before)


def test_text_rankings_are_those_of_an_index_without_vectors(
    services: tuple[Engram, Engram],
) -> None:
    """Every word of a query must occur in text mode, which few of these queries allow: the
    same with any word (FTS5 ``OR``), 76 real BM25 rankings, deep, are the same with and
    without the vectors in the index."""
    embedded, plain = services
    for q in QUERIES:
        ored = bq.or_query(q["query"])
        assert ored is not None
        req = {"query": ored, "raw_fts": True, "limit": 100}
        got = embedded.search(req)
        want = plain.search(req)
        assert [(h.path, h.score) for h in got.results] == [
            (h.path, h.score) for h in want.results
        ], q["id"]
        assert got.total == want.total > 0


@pytest.mark.parametrize(
    ("ranking", "relevant", "want"),
    [
        pytest.param(["a", "b"], ["a"], (1.0, 1.0, 1), id="first"),
        pytest.param(["x", "a", "b"], ["b", "a"], (1.0, 0.5, 2), id="both-rank-2"),
        pytest.param(["x", "y", "a"], ["a", "z"], (0.5, 1 / 3, 3), id="one-of-two"),
        pytest.param([*"xxxxxxxxxx", "a"], ["a"], (0.0, 0.0, None), id="rank-11-counts-0"),
        pytest.param([], ["a"], (0.0, 0.0, None), id="no-hits"),
    ],
)
def test_the_measures(ranking: list[str], relevant: list[str], want: tuple[Any, ...]) -> None:
    got = bq.judge(ranking, relevant)
    assert (got["recall"], got["rr"], got["first"]) == pytest.approx(want)

"""Nested tags, as Obsidian nests them: ``engineering`` also matches ``engineering/frontend``
and ``engineering/frontend/css``; ``=engineering`` is that topic alone; the word-boundary rule
stays (``engineering`` never matches ``engineering-x`` nor ``engineering team``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.index import topic_sets
from engram_ls.core.service import Engram

NOTES = {
    "a.md": "tags: [engineering]\ndate: 2024-01-01",
    "b.md": "tags: [engineering/frontend]\ndate: 2024-02-01",
    "c.md": "tags: [Engineering/Frontend/CSS, design]\ndate: 2024-03-01",
    "d.md": "tags: [engineering-x]\ndate: 2024-04-01",
    "e.md": "tags: [engineering team]\ndate: 2024-05-01",
    "f.md": "tags: [design]\ndate: 2024-06-01",
    "g.md": "tags: [engineering/backend, design]\ndate: 2025-01-01",
}


@pytest.fixture
def nested(tmp_path: Path) -> Engram:
    root = tmp_path / "v"
    root.mkdir()
    for name, front in NOTES.items():
        (root / name).write_text(f"---\n{front}\n---\nbody {name[0]}\n", "utf-8")
    engram = Engram(root, index_path=tmp_path / "i.sqlite")
    engram.open()
    engram.sync()
    yield engram  # type: ignore[misc]
    engram.close()


CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"tags": ["engineering"]}, ["a", "b", "c", "g"]),
    ({"tags": ["#Engineering/"]}, ["a", "b", "c", "g"]),
    ({"tags": ["engineering/frontend"]}, ["b", "c"]),
    ({"tags": ["=engineering"]}, ["a"]),
    ({"tags": ["=engineering/frontend"]}, ["b"]),
    ({"tags": ["engineering/front"]}, []),  # a whole level, never a prefix of one
    ({"tags": ["engineering", "-engineering/frontend"]}, ["a", "g"]),
    ({"tags": ["engineering", "-=engineering/frontend"]}, ["a", "c", "g"]),
    ({"tags": ["engineering", "design"], "tags_mode": "all"}, ["c", "g"]),
    ({"tags": ["engineering/frontend", "design"], "tags_mode": "all"}, ["c"]),
    ({"tags": ["=engineering", "design"], "tags_mode": "all"}, []),
    ({"tags": ["engineering/backend", "engineering/frontend/css"]}, ["c", "g"]),
    ({"tags": ["engineering"], "date_from": "2024-02-15"}, ["c", "g"]),
    ({"tags": ["engineering"], "query": "body"}, ["a", "b", "c", "g"]),
    ({"tags": ["engineering"], "query": "body", "mode": "literal"}, ["a", "b", "c", "g"]),
    ({"tags": ["engineering"], "where": "file.name != a.md"}, ["b", "c", "g"]),
]


def names(engram: Engram, request: dict[str, Any]) -> list[str]:
    res = engram.search({"limit": 100, **request})
    assert res.total == len(res.results)
    return sorted(h.path[0] for h in res.results)


@pytest.mark.parametrize(("request_", "expected"), CASES)
def test_a_tag_filter_matches_the_topics_nested_under_it(
    nested: Engram, request_: dict[str, Any], expected: list[str]
) -> None:
    assert names(nested, request_) == expected


@pytest.mark.parametrize(("request_", "expected"), CASES)
def test_the_scan_path_nests_tags_the_same_way(
    nested: Engram, tmp_path: Path, request_: dict[str, Any], expected: list[str]
) -> None:
    with Engram(nested.vault.root, index_path=tmp_path / "no.sqlite", read_only=True) as scan:
        res = scan.search({"limit": 100, **request_})
        assert res.index.served_by == "scan"
        assert sorted(h.path[0] for h in res.results) == expected


@pytest.mark.parametrize(("request_", "expected"), CASES[:12])
def test_topic_sets_in_memory_nest_tags_the_same_way(
    nested: Engram, monkeypatch: pytest.MonkeyPatch, request_: dict[str, Any], expected: list[str]
) -> None:
    """With every topic's set in memory (as large topics' are at 100,000 notes)."""
    monkeypatch.setattr(topic_sets, "MIN_NOTES", 1)
    cache = nested.index.topic_notes
    monkeypatch.setattr(cache, "capacity", 100)  # every topic's set kept, not the 4 most used
    topics = [int(t) for (t,) in nested.index.reader().execute("SELECT id FROM topics")]
    for tid in topics:
        assert cache.read(tid) is not None
    assert sorted(cache.kept()) == sorted(topics)
    assert names(nested, request_) == expected


def test_topics_list_the_tree_with_counts_with_and_without_nested_ones(
    nested: Engram, tmp_path: Path
) -> None:
    want = {
        "engineering": (1, 4),
        "engineering/frontend": (1, 2),
        "Engineering/Frontend/CSS": (1, 1),
        "design": (3, 3),
    }
    got = {t.name: (t.notes, t.nested) for t in nested.topics(limit=100)}
    assert {k: got[k] for k in want} == want
    assert [t.name for t in nested.topics("engineering/", 10)] == [
        "engineering/frontend",
        "engineering/backend",
        "Engineering/Frontend/CSS",
    ]
    with Engram(nested.vault.root, index_path=tmp_path / "no.sqlite", read_only=True) as scan:
        assert {t.name: (t.notes, t.nested) for t in scan.topics(limit=100)} == got


def test_a_parent_no_note_names_is_listed_with_its_nested_notes(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text("---\ntags: [Area/One, area/two]\n---\n", "utf-8")
    (root / "b.md").write_text("---\ntags: [area/two/deep]\n---\n", "utf-8")
    with Engram(root, index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        got = [(t.name, t.notes, t.nested) for t in engram.topics(limit=10)]
        assert got[:2] == [("area/two", 1, 2), ("Area", 0, 2)]  # ties: own notes first
        assert [h.path for h in engram.search({"tags": ["area"]}).results] == ["b.md", "a.md"]

"""Why a search found nothing (``core/hints.py``), from the index and from the files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engram_ls.core.hints import closest_topics, date_span, knows_topic, why_empty
from engram_ls.core.service import Engram

NOTES = {
    "a.md": "---\ntags: [engineering, Engineering/frontend]\ndate: 2023-10-02\n---\nalpha\n",
    "b.md": "---\ntags: [engine, sqlite]\ndate: 2026-02-14\n---\nbeta\n",
    "c.md": "---\ntags: [cooking]\n---\nundated\n",
}


@pytest.fixture(params=["index", "scan"])
def engram(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engram]:
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text, encoding="utf-8")
    service = Engram(root)
    service.open()
    if request.param == "index":
        service.sync()
    else:
        with service.index.batch() as b:
            b.set_state("building")
    yield service
    service.close()


def test_closest_topics(engram: Engram) -> None:
    assert closest_topics(engram, "enginering") == ["engineering", "engine"]
    assert closest_topics(engram, "SQLLite") == ["sqlite"]
    assert closest_topics(engram, "zzz") == []


def test_knows_topic_counts_a_parent_of_nested_topics(engram: Engram) -> None:
    assert knows_topic(engram, "Engineering") and knows_topic(engram, "engineering/frontend")
    assert not knows_topic(engram, "enginering") and not knows_topic(engram, "front")


def test_date_span(engram: Engram, tmp_path: Path) -> None:
    assert date_span(engram) == ("2023-10-02", "2026-02-14")


def test_why_empty(engram: Engram) -> None:
    assert why_empty(engram, {"tags": ["enginering", "-zzz", "sqlite"]}) == [
        "no topic 'enginering'; did you mean engineering, engine?"
    ]
    assert why_empty(engram, {"tags": ["qqq"]}) == ["no topic 'qqq'"]
    assert why_empty(engram, {"date_from": "2030-01-01", "date_to": "2030-12-31"}) == [
        "no note dated 2030-01-01..2030-12-31; notes are dated 2023-10-02..2026-02-14"
    ]
    assert why_empty(engram, {"date_to": "2020-01-01"}) == [
        "no note dated 2020-01-01 or earlier; notes are dated 2023-10-02..2026-02-14"
    ]
    assert why_empty(engram, {"date_from": "2024-01-01", "date_to": "2025-12-31"}) == [
        "no note dated 2024-01-01..2025-12-31; notes are dated 2023-10-02..2026-02-14"
    ]
    # the filters together exclude every note: nothing to say
    assert why_empty(engram, {"tags": ["cooking"], "date_from": "2023-01-01"}) == []
    assert why_empty(engram, {"query": "nowhere"}) == []


def test_no_dated_note(tmp_path: Path) -> None:
    root = tmp_path / "undated"
    root.mkdir()
    (root / "n.md").write_text("# N\nno date\n")
    with Engram(root) as engram:
        engram.sync()
        assert date_span(engram) is None
        assert why_empty(engram, {"date_from": "2024-01-01"}) == [
            "no note dated 2024-01-01 or later; no note has a date"
        ]

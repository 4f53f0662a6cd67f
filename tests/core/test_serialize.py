"""The one serialiser (``core/serialize.py``) gives each result's JSON exactly as the
hand-written ``to_dict`` methods it replaced did: the same keys, in the same order, with the
same omissions and rounding."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from engram_ls.core.index.store import IndexStatus
from engram_ls.core.librarian import LibrarianReport, NoteOutcome
from engram_ls.core.search import IndexInfo, SearchHit, SearchResponse
from engram_ls.core.serialize import json_value
from engram_ls.core.service import Indexed, TopicCount
from engram_ls.core.sync import SyncReport

HIT = SearchHit("a/b.md", "file:///v/a/b.md", "B", "2024-01-02", ("x", "y"), 1.5, "snip", 3)
INFO = IndexInfo("ready", "index", 7, "2024-05-06T07:08:09Z")

CASES = [
    pytest.param(
        HIT,
        {
            "path": "a/b.md",
            "uri": "file:///v/a/b.md",
            "title": "B",
            "created_at": "2024-01-02",
            "topics": ["x", "y"],
            "score": 1.5,
            "snippet": "snip",
            "line": 3,
        },
        id="hit",
    ),
    pytest.param(
        INFO,
        {
            "state": "ready",
            "served_by": "index",
            "generation": 7,
            "updated_at": "2024-05-06T07:08:09Z",
            "source_revision": None,
        },
        id="index-info",
    ),
    pytest.param(
        SearchResponse([HIT], 1, False, INFO, elapsed_ms=1.23456),
        {
            "results": [json_value(HIT)],
            "total": 1,
            "truncated": False,
            "index": json_value(INFO),
            "elapsed_ms": 1.235,
        },
        id="response-rounds-elapsed",
    ),
    pytest.param(
        SyncReport(3, 2, 1, 0, 0, 5, True, False, 0.123456, 9, ["an error"]),
        {
            "scanned": 3,
            "parsed": 2,
            "touched": 1,
            "removed": 0,
            "moved": 0,
            "unchanged": 5,
            "resumed": True,
            "full": False,
            "elapsed_s": 0.1235,
            "generation": 9,
        },
        id="sync-report-without-errors",
    ),
    pytest.param(
        IndexStatus("ready", 4, None, 10, 1, 3, "/v/.engram/index.sqlite", "fp", {"path": "x"}),
        {
            "state": "ready",
            "generation": 4,
            "updated_at": None,
            "notes": 10,
            "problems": 1,
            "topics": 3,
            "path": "/v/.engram/index.sqlite",
            "moved_aside": {"path": "x"},
            "source_revision": None,
            "trigram_index": None,
            "trigram_bytes": None,
        },
        id="status-without-fingerprint",
    ),
    pytest.param(
        NoteOutcome("a.md", "planned", ("x",)),
        {"path": "a.md", "status": "planned", "topics": ["x"]},
        id="note-outcome-without-message",
    ),
    pytest.param(
        NoteOutcome("b.md", "quarantined", message="binary", moved_to="q/b.md"),
        {"path": "b.md", "status": "quarantined", "message": "binary", "moved_to": "q/b.md"},
        id="note-outcome-without-topics",
    ),
    pytest.param(
        LibrarianReport(
            False,
            4,
            2,
            None,
            (
                NoteOutcome("a.md", "planned", ("x", "y")),
                NoteOutcome("c.md", "failed", message="m"),
            ),
            0.123456,
        ),
        {
            "apply": False,
            "scanned": 4,
            "unchanged": 2,
            "topics_added": 2,
            "counts": {
                "planned": 1,
                "applied": 0,
                "skipped-changed": 0,
                "failed": 1,
                "quarantine-planned": 0,
                "quarantined": 0,
            },
            "quarantine": None,
            "notes": [
                {"path": "a.md", "status": "planned", "topics": ["x", "y"]},
                {"path": "c.md", "status": "failed", "message": "m"},
            ],
            "elapsed_s": 0.123,
        },
        id="librarian-report",
    ),
    pytest.param(
        TopicCount("sqlite", 9, 11), {"name": "sqlite", "notes": 9, "nested": 11}, id="topic"
    ),
    pytest.param(
        Indexed(5, False, "behind"),
        {"generation": 5, "indexed": False, "warning": "behind"},
        id="indexed",
    ),
]


@pytest.mark.parametrize(("value", "want"), CASES)
def test_json_form_is_unchanged(value: Any, want: dict[str, Any]) -> None:
    got = json_value(value)
    assert got == want
    assert list(got) == list(want)  # the key order too (the JSON text is compared by tests)
    assert json.loads(json.dumps(got)) == got


def test_what_has_no_json_form_is_an_error() -> None:
    @dataclass
    class Holder:
        value: object

    with pytest.raises(TypeError, match="object has no JSON form"):
        json_value(Holder(object()))

"""Literal and regex search: scores are matching lines, ``served_by`` says which path answered,
on the index path and the scan path alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.service import Engram
from tests.conftest import engram_in_process

REPEATS = "---\ntitle: Repeats\ntopics: [x]\ncreated_at: 2024-01-02\n---\n" + (
    "foo and foo again\n" * 31
)
ONCE = "---\ntitle: Once\ntopics: [y]\ncreated_at: 2024-01-01\n---\nfoo foo foo foo\n"


@pytest.fixture
def grep_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "repeats.md").write_text(REPEATS, encoding="utf-8")
    (root / "once.md").write_text(ONCE, encoding="utf-8")
    (root / "none.md").write_text("---\ntitle: None\n---\nnothing here\n", encoding="utf-8")
    return root


@pytest.fixture
def engram(grep_vault: Path) -> Iterator[Engram]:
    with Engram(grep_vault) as e:
        e.sync()
        yield e


def scores(engram: Engram, **req: Any) -> dict[str, float]:
    res = engram.search({"limit": 100, **req})
    return {h.path: h.score for h in res.results}


def scanned(engram: Engram, **req: Any) -> Any:
    """The request answered by the scan path (index made unusable)."""
    with engram.index.batch() as b:
        b.set_state("building")
    try:
        return engram.search({"limit": 100, **req})
    finally:
        with engram.index.batch() as b:
            b.set_state("ready")


@pytest.mark.parametrize("mode", ["literal", "regex"])
def test_score_is_the_number_of_matching_lines(engram: Engram, mode: str) -> None:
    expected = {"repeats.md": 31.0, "once.md": 1.0}
    assert scores(engram, query="foo", mode=mode) == expected
    assert scores(engram, query="foo", mode=mode, tags=["x", "y"]) == expected
    scan = scanned(engram, query="foo", mode=mode)
    assert scan.index.served_by == "scan"
    assert {h.path: h.score for h in scan.results} == expected


def test_cli_shows_matching_lines_as_the_score(grep_vault: Path) -> None:
    proc = engram_in_process(
        "search", "--vault", str(grep_vault), "--json", "--mode", "literal", "--", "foo"
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert {r["path"]: r["score"] for r in data["results"]} == {
        "repeats.md": 31.0,
        "once.md": 1.0,
    }


def test_served_by_says_scan_when_ripgrep_scans_the_vault(engram: Engram) -> None:
    """With no filter the index narrows nothing: ripgrep scans every file."""
    for mode in ("literal", "regex"):
        res = engram.search({"query": "fo", "mode": mode})
        assert res.index.served_by == "scan"
        assert res.total == 2


def test_served_by_says_index_when_the_index_gives_the_files(engram: Engram) -> None:
    res = engram.search({"query": r"fo+", "mode": "regex", "tags": ["x"]})
    assert res.index.served_by == "index"
    assert [h.path for h in res.results] == ["repeats.md"]


def test_text_and_listing_are_served_by_the_index(engram: Engram) -> None:
    assert engram.search({"query": "foo"}).index.served_by == "index"
    assert engram.search({"tags": ["x"]}).index.served_by == "index"

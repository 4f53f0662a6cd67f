"""The search service on committed fixture vaults: filters, modes, paging, hostile input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.errors import (
    InvalidRequest,
    LimitExceeded,
    OutsideVault,
)
from engram_ls.core.service import Engram


@pytest.fixture
def tags_vault(vault_copy: Callable[[str], Path]) -> Engram:
    engram = Engram(vault_copy("tags"))
    engram.open()
    engram.sync()
    yield engram  # type: ignore[misc]
    engram.close()


@pytest.fixture
def hostile_vault(vault_copy: Callable[[str], Path]) -> Engram:
    engram = Engram(vault_copy("hostile"))
    engram.open()
    engram.sync()
    yield engram  # type: ignore[misc]
    engram.close()


def names(engram: Engram, **req: Any) -> list[str]:
    res = engram.search({"limit": 1000, **req})
    assert res.index.served_by == "index"
    return sorted(Path(h.path).stem.split("-")[0] for h in res.results)


def scan_names(engram: Engram, **req: Any) -> list[str]:
    """The same request answered by the scan path (index made unusable)."""
    with engram.index.batch() as b:
        b.set_state("building")
    try:
        res = engram.search({"limit": 1000, **req})
        assert res.index.served_by == "scan"
        return sorted(Path(h.path).stem.split("-")[0] for h in res.results)
    finally:
        with engram.index.batch() as b:
            b.set_state("ready")


TAG_CASES = [
    pytest.param({"tags": ["memory"]}, ["a", "b", "f", "g"], id="tag-memory-never-memory-leak"),
    pytest.param({"tags": ["MEMORY"]}, ["a", "b", "f", "g"], id="tag-case-insensitive"),
    pytest.param({"tags": ["#memory"]}, ["a", "b", "f", "g"], id="tag-hash-prefix"),
    pytest.param({"tags": ["memory leak"]}, ["c", "f"], id="tag-multiword"),
    pytest.param({"tags": ["Memory Leak"]}, ["c", "f"], id="tag-multiword-case"),
    pytest.param({"tags": ["memory-leak"]}, ["d"], id="tag-hyphen-distinct"),
    pytest.param({"tags": ["mem"]}, [], id="tag-prefix-never-matches"),
    pytest.param({"tags": ["python"]}, ["e", "f", "g"], id="tag-python"),
    pytest.param({"tags": ["memory", "python"], "tags_mode": "all"}, ["f", "g"], id="all"),
    pytest.param({"tags": ["memory", "python"]}, ["a", "b", "e", "f", "g"], id="any"),
    pytest.param({"tags": ["memory", "-python"]}, ["a", "b"], id="exclude"),
    pytest.param({"tags": ["memory", "nosuchtopic"], "tags_mode": "all"}, [], id="all-unknown"),
    pytest.param({"tags": ["memory", "nosuchtopic"]}, ["a", "b", "f", "g"], id="any-unknown"),
    pytest.param(
        {"tags": ["-python"], "date_from": "2024-01-01"},
        ["a", "b", "c", "d", "h"],
        id="only-exclude",
    ),
    pytest.param(
        {"date_from": "2024-01-01", "date_to": "2024-01-31"}, ["a", "b"], id="dates-inclusive"
    ),
    pytest.param(
        {"date_from": "2024-02-01", "date_to": "2024-12-31"}, ["c", "d", "h"], id="dates-2"
    ),
    pytest.param({"date_from": "2025-01-01"}, ["f"], id="date-from-only"),
    pytest.param({"date_to": "2023-12-31"}, ["e"], id="date-to-only"),
    pytest.param({"date_from": "2024-01-01", "date_to": "2024-01-01"}, ["a"], id="one-day"),
    pytest.param({"tags": ["memory"], "date_from": "2024-01-02"}, ["b", "f"], id="tag-and-date"),
    pytest.param({"query": "memory", "tags": ["-memory"]}, ["c", "d", "h", "i"], id="text-excl"),
]


@pytest.mark.parametrize(("req", "expected"), TAG_CASES)
def test_filters_index(tags_vault: Engram, req: dict[str, Any], expected: list[str]) -> None:
    assert names(tags_vault, **req) == expected


@pytest.mark.parametrize(("req", "expected"), TAG_CASES)
def test_filters_scan_path_means_the_same(
    tags_vault: Engram, req: dict[str, Any], expected: list[str]
) -> None:
    assert scan_names(tags_vault, **req) == expected


def test_undated_never_match_date_filters(tags_vault: Engram) -> None:
    for req in ({"date_from": "0001-01-01"}, {"date_to": "9999-12-31"}):
        got = names(tags_vault, **req)
        assert "g" not in got and "i" not in got
        assert len(got) == 7


def test_listing_newest_first_undated_last(tags_vault: Engram) -> None:
    res = tags_vault.search({"tags": ["memory"]})
    dates = [h.created_at for h in res.results]
    assert dates == ["2025-01-01", "2024-01-31", "2024-01-01", None]
    assert res.total == 4 and not res.truncated


def test_topics_most_common_spelling(tags_vault: Engram) -> None:
    topics = {t.name.casefold(): t for t in tags_vault.topics()}
    assert topics["memory"].name == "memory"
    assert topics["memory"].notes == 4
    assert topics["memory leak"].notes == 2
    res = tags_vault.search({"tags": ["memory"], "path": "a-memory-upper.md"})
    assert res.results[0].topics == ("memory",)  # returned in the most common spelling


def test_topics_prefix(tags_vault: Engram) -> None:
    got = [t.name for t in tags_vault.topics("MEM")]
    assert got[0] == "memory"
    assert set(got) == {"memory", "Memory Leak", "memory-leak"}


def test_text_search_ranks_and_snippets(tags_vault: Engram) -> None:
    res = tags_vault.search({"query": '"memory leak"'})
    assert sorted(Path(h.path).stem[0] for h in res.results) == ["c", "d", "f", "h"]
    assert all(h.score > 0 for h in res.results)
    scores = [h.score for h in res.results]
    assert scores == sorted(scores, reverse=True)
    for h in res.results:
        assert len(h.snippet) <= 300
        assert h.line >= 1
        assert h.uri.startswith("file://")


def test_paging(tags_vault: Engram) -> None:
    first = tags_vault.search({"date_from": "2000-01-01", "limit": 3})
    second = tags_vault.search({"date_from": "2000-01-01", "limit": 3, "offset": 3})
    rest = tags_vault.search({"date_from": "2000-01-01", "limit": 3, "offset": 6})
    assert first.total == second.total == 7
    assert first.truncated and second.truncated and not rest.truncated
    paths = [h.path for r in (first, second, rest) for h in r.results]
    assert len(paths) == len(set(paths)) == 7


@pytest.mark.parametrize("query", ['"memory leak"', "memory", '"memory leak" memory'])
def test_text_paging_keeps_the_total(tags_vault: Engram, query: str) -> None:
    """Every page of a text query (a phrase is ranked and counted in one pass) reports the
    same total, the pages do not overlap, and a page past the end is empty with the total."""
    whole = tags_vault.search({"query": query, "limit": 100})
    assert whole.total == len(whole.results) == len(scan_names(tags_vault, query=query)) > 2
    pages = [tags_vault.search({"query": query, "limit": 2, "offset": o}) for o in (0, 2, 4)]
    assert {p.total for p in pages} == {whole.total}
    paged = [h.path for p in pages for h in p.results]
    assert paged == [h.path for h in whole.results][: len(paged)]
    past = tags_vault.search({"query": query, "limit": 2, "offset": 50})
    assert past.results == [] and past.total == whole.total


def test_path_scope(vault_copy: Callable[[str], Path]) -> None:
    with Engram(vault_copy("example")) as engram:
        engram.sync()
        res = engram.search({"path": "meetings/2024", "limit": 100})
        assert res.total == 5
        assert all(h.path.startswith("meetings/2024/") for h in res.results)
        glob = engram.search({"path": "meetings/**/2025-*.md", "limit": 100})
        assert {h.path for h in glob.results} == {
            "meetings/2025/2025-01-20 roadmap.md",
            "meetings/2025/2025-07-02 lsp demo.md",
            "meetings/2025/2025-10-13 sqlite upgrade.md",
        }
        assert engram.search({"path": "meetings/2024/", "limit": 100}).total == 5
        assert engram.search({"path": "meeting", "limit": 100}).total == 0  # not a prefix match


@pytest.mark.parametrize("mode", ["literal", "regex"])
def test_literal_and_regex_with_filters(vault_copy: Callable[[str], Path], mode: str) -> None:
    with Engram(vault_copy("example")) as engram:
        engram.sync()
        query = "write-ahead log" if mode == "literal" else r"write-ahead\s+log"
        res = engram.search({"query": query, "mode": mode})
        # no filter and the trigram index off (the default): ripgrep reads every file
        assert res.index.served_by == "scan"
        assert res.total >= 2
        for h in res.results:
            text = (engram.vault.root / h.path).read_text(encoding="utf-8").splitlines()
            assert "write-ahead log" in text[h.line - 1].lower()
        tagged = engram.search({"query": query, "mode": mode, "tags": ["sqlite"]})
        assert 0 < tagged.total <= res.total
        for h in tagged.results:
            assert "sqlite" in [t.casefold() for t in h.topics]


def test_regex_is_validated(tags_vault: Engram) -> None:
    with pytest.raises(InvalidRequest, match="regular expression"):
        tags_vault.search({"query": "(unclosed", "mode": "regex"})


@pytest.mark.parametrize(
    ("req", "error"),
    [
        pytest.param({"query": "x" * 5000}, LimitExceeded, id="5000-chars"),
        pytest.param({"query": "x", "limit": 5000}, LimitExceeded, id="limit-cap"),
        pytest.param({"query": "x", "limit": 0}, InvalidRequest, id="limit-zero"),
        pytest.param({"query": "x", "offset": -1}, InvalidRequest, id="offset-negative"),
        pytest.param({"query": ""}, InvalidRequest, id="empty-no-filter"),
        pytest.param({"query": "*"}, InvalidRequest, id="star-only"),
        pytest.param({"query": "x", "date_from": "2024-13-01"}, InvalidRequest, id="bad-date"),
        pytest.param({"query": "x", "date_from": "03/14/2024"}, InvalidRequest, id="us-date"),
        pytest.param(
            {"query": "x", "date_from": "2024-02-01", "date_to": "2024-01-01"},
            InvalidRequest,
            id="reversed-range",
        ),
        pytest.param({"query": "x", "tags": ["-"]}, InvalidRequest, id="empty-tag"),
        pytest.param({"query": "x", "bogus": 1}, InvalidRequest, id="unknown-field"),
        pytest.param({"query": "x", "mode": "sql"}, InvalidRequest, id="unknown-mode"),
        pytest.param({"query": "x", "path": "../"}, OutsideVault, id="path-up"),
        pytest.param({"query": "x", "path": "a/../../b"}, OutsideVault, id="path-deep-up"),
        pytest.param({"query": "x", "path": "/etc"}, OutsideVault, id="path-absolute"),
        pytest.param({"query": "x", "path": "../**/*.md"}, OutsideVault, id="glob-up"),
        pytest.param({"query": "NEAR(", "raw_fts": True}, InvalidRequest, id="raw-fts-error"),
    ],
)
def test_bad_requests_get_typed_errors(
    tags_vault: Engram, req: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error) as info:
        tags_vault.search(req)
    assert getattr(info.value, "code", "").startswith("ENGRAM_")


@pytest.mark.parametrize(
    ("query", "mode", "expected"),
    [
        pytest.param("NEAR(", "text", ["fts-syntax"], id="near"),
        pytest.param('"unbalanced', "text", ["fts-syntax"], id="unbalanced-quote"),
        pytest.param("col:value", "text", ["fts-syntax"], id="column-filter"),
        pytest.param("AND OR NOT", "text", ["fts-syntax"], id="operators"),
        pytest.param("deltaneedle*", "text", ["fts-syntax"], id="prefix"),
        pytest.param("-e", "literal", ["-e"], id="dash-e-literal"),
        pytest.param("--pre=sh", "literal", ["--pre=sh"], id="pre-literal"),
        pytest.param("--pre=sh", "regex", ["--pre=sh"], id="pre-regex"),
        pytest.param("--files", "literal", ["-e"], id="files-flag"),
        pytest.param("NEAR(", "literal", ["fts-syntax"], id="near-literal"),
        pytest.param("gammaneedle", "text", ['it\'s "quoted"'], id="quoted-name"),
        pytest.param("zzzznothing", "text", [], id="no-match"),
    ],
)
def test_hostile_queries_are_data(
    hostile_vault: Engram, query: str, mode: str, expected: list[str]
) -> None:
    res = hostile_vault.search({"query": query, "mode": mode})
    assert sorted(Path(h.path).stem for h in res.results) == sorted(expected)


def test_pre_flag_never_runs_anything(vault_copy: Callable[[str], Path], tmp_path: Path) -> None:
    root = vault_copy("hostile")
    marker = tmp_path / "ran"
    script = root / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n', encoding="utf-8")
    script.chmod(0o755)
    (root / "note.md").write_text("call --pre=./evil.sh here\n", encoding="utf-8")
    with Engram(root) as engram:
        engram.sync()
        for mode in ("literal", "regex"):
            res = engram.search({"query": "--pre=./evil.sh", "mode": mode})
            assert [h.path for h in res.results] == ["note.md"]
        scan = engram.search({"query": "--pre=./evil.sh", "mode": "literal", "tags": ["-x"]})
        assert [h.path for h in scan.results] == ["note.md"]
    assert not marker.exists()


def test_long_query_below_cap_is_fine(hostile_vault: Engram) -> None:
    res = hostile_vault.search({"query": "zzqx " * 190})
    assert res.total == 0


TEXT_FILTER_CASES = [
    pytest.param({"query": "memory", "tags": ["memory"]}, id="text+tag"),
    pytest.param({"query": "memory", "tags": ["memory", "python"]}, id="text+any"),
    pytest.param({"query": "memory", "tags": ["memory", "python"], "tags_mode": "all"}, id="all"),
    pytest.param({"query": "memory", "tags": ["-python"]}, id="text+exclude"),
    pytest.param({"query": "memory", "date_from": "2024-01-01"}, id="text+date"),
    pytest.param({"query": "memory", "path": "*-memory-*.md"}, id="text+glob"),
    pytest.param({"query": "memory", "tags": ["memory"], "date_to": "2024-01-31"}, id="tag+date"),
]


@pytest.mark.parametrize("req", TEXT_FILTER_CASES)
def test_text_filter_strategies_agree(
    tags_vault: Engram, req: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row probes (few matches) and id-set intersection (many) give the same answers."""
    from engram_ls.core.search import index_path as query

    probe = tags_vault.search(req)
    monkeypatch.setattr(query, "PROBE_MAX", 0)
    intersect = tags_vault.search(req)
    assert [(h.path, h.score) for h in probe.results] == [
        (h.path, h.score) for h in intersect.results
    ]
    assert probe.total == intersect.total
    assert scan_names(tags_vault, **req) == names(tags_vault, **req)


def test_topics_scan_fallback_means_the_same(tags_vault: Engram) -> None:
    from_index = [(t.name, t.notes) for t in tags_vault.topics()]
    with tags_vault.index.batch() as b:
        b.set_state("building")
    from_scan = [(t.name, t.notes) for t in tags_vault.topics()]
    assert from_scan == from_index
    assert [t.name for t in tags_vault.topics("mem")] == ["memory", "Memory Leak", "memory-leak"]


def test_a_topic_shows_the_spelling_most_notes_use_now(tmp_path: Path) -> None:
    """A hit shows each topic under its canonical name, the spelling most of its notes use.
    The names a server remembers are of one index state: once more notes spell it another
    way, the next page shows that spelling."""
    root = tmp_path / "vault"
    root.mkdir()
    for i, tag in enumerate(["ML", "ML", "ml"]):
        (root / f"n{i}.md").write_text(f"---\ntags: [{tag}]\n---\n# Note {i}\n")
    engram = Engram(root)
    engram.open()
    engram.sync()
    try:
        first = engram.search({"tags": ["ml"]})
        assert {h.topics for h in first.results} == {("ML",)}
        for i in range(3, 6):
            (root / f"n{i}.md").write_text(f"---\ntags: [ml]\n---\n# Note {i}\n")
        engram.sync()
        again = engram.search({"tags": ["ml"]})
        assert len(again.results) == 6
        assert {h.topics for h in again.results} == {("ml",)}
    finally:
        engram.close()

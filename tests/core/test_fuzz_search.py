"""Hostile search requests (property-based): any request either answers or fails with a clear
``EngramError``; never an SQLite syntax error, never a crash, never a path outside the vault."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_ls.core.errors import EngramError, InvalidRequest
from engram_ls.core.search import parse_request
from engram_ls.core.service import Engram

pytestmark = pytest.mark.slow  # fuzzing: hundreds of generated requests per test

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# FTS5 syntax, quoting and operators, flag-like strings, SQL, paths and odd unicode.
_ATOMS = st.sampled_from(
    [
        '"', "'", "*", "^", "(", ")", ":", "-", "+", "NEAR", "NEAR(", "AND", "OR", "NOT",
        "title:", "body:", "{title body}:", "--help", "-rf", "; DROP TABLE notes;--", "\\",
        "\x00", "../", "..", "/etc/passwd", "%", "_", "memory", "python", "é", "\u200b", "🧠",
        "日本語", "ǅ", "[", "]", "{", "}", "|", ".*", "(?i)", "\\b",
        # lone surrogates (JSON "\\ud800"), undecodable argv bytes (surrogateescape), globs
        # that backtracked
        "\ud800", "\udc00", "\udcff", "g\udcffo", "**/" * 40 + "x", "**/a/" * 20, "*a" * 30,
    ]
)  # fmt: skip
ANY_CHARS = st.text(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=4)
"""Text with any code point, lone surrogates included (plain ``st.text`` has none)."""
QUERIES = st.lists(st.one_of(_ATOMS, st.text(max_size=6), ANY_CHARS), max_size=8).map(" ".join)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True),
    QUERIES,
)
JSONISH = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(QUERIES, inner, max_size=3)
)
FIELDS = [
    "query", "mode", "tags", "tags_mode", "date_from", "date_to", "path", "limit", "offset",
    "case_sensitive", "raw_fts",
]  # fmt: skip


@pytest.fixture(scope="module")
def engram(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engram]:
    from tests.conftest import DATA, copy_tree

    root = copy_tree(DATA / "tags", tmp_path_factory.mktemp("fuzz") / "tags")
    e = Engram(root)
    e.open()
    e.sync()
    yield e
    e.close()


@pytest.fixture(scope="module")
def unindexed(tmp_path_factory: pytest.TempPathFactory) -> Engram:
    """The same vault with no index: every request takes the scan path."""
    from tests.conftest import DATA, copy_tree

    return Engram(copy_tree(DATA / "tags", tmp_path_factory.mktemp("fuzz-scan") / "tags"))


def _inside(engram: Engram, rel: str) -> bool:
    root = engram.vault.root.resolve()
    return (root / rel).resolve().is_relative_to(root)


def _check(engram: Engram, request: Any) -> None:
    try:
        response = engram.search(request)
    except EngramError as exc:
        assert exc.message
        return
    for hit in response.results:
        assert _inside(engram, hit.path)
    assert response.total >= len(response.results)


@FUZZ
@given(query=QUERIES, mode=st.sampled_from(["text", "literal", "regex"]), raw=st.booleans())
def test_any_query_text(
    engram: Engram, unindexed: Engram, query: str, mode: str, raw: bool
) -> None:
    request = {"query": query, "mode": mode, "raw_fts": raw and mode == "text"}
    _check(engram, request)
    _check(unindexed, request)


# Raw FTS5 text: operators, quotes (unterminated strings), column filters, NEAR groups, bytes.
RAW_FTS = st.lists(
    st.one_of(
        _ATOMS,
        st.sampled_from(['a"b', '"a', 'b"', "NEAR(a b", "NEAR(a b, -1)", "title:", "nope:x"]),
        st.text(max_size=6),
        st.binary(max_size=6).map(lambda b: b.decode("utf-8", "replace")),
    ),
    min_size=1,
    max_size=8,
).map(" ".join)


@FUZZ
@given(query=RAW_FTS)
def test_raw_fts_on_a_ready_index_answers_or_is_invalid(engram: Engram, query: str) -> None:
    """Raw FTS5 text on a ready index is answered by the index, or is the caller's error
    (ENGRAM_INVALID_REQUEST, with SQLite's message for a query FTS5 rejects); never "the index
    cannot serve" (``a"b`` was ENGRAM_UNSUPPORTED_MODE) and never an index taken for damaged."""
    generation = engram.status().generation
    try:
        response = engram.search({"query": query, "raw_fts": True})
    except InvalidRequest as exc:
        assert exc.message
    else:
        assert response.index.served_by == "index" and response.index.state == "ready"
    assert engram.status().state == "ready" and engram.status().generation == generation


@FUZZ
@given(st.dictionaries(st.sampled_from(FIELDS) | QUERIES, JSONISH, max_size=6))
def test_any_request_object(engram: Engram, request: dict[str, Any]) -> None:
    try:
        parse_request(request)
    except EngramError as exc:
        assert exc.message
        return
    _check(engram, request)


@FUZZ
@given(
    st.lists(st.sampled_from(["..", ".", "/", "notes", "%2e%2e", "~", "\\", "*", "**"]), max_size=6)
)
def test_path_scopes_never_leave_the_vault(engram: Engram, parts: list[str]) -> None:
    _check(engram, {"query": "", "path": "/".join(parts), "tags": ["python"]})
    _check(engram, {"query": "memory", "path": "".join(parts)})


def test_fixture_is_searchable(engram: Engram, unindexed: Engram) -> None:
    """The properties above run against a vault that does answer."""
    assert engram.search({"query": "", "tags": ["python"]}).total > 0
    assert unindexed.search({"query": "", "tags": ["python"]}).total > 0

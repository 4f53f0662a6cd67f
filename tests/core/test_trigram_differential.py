"""The trigram index path of ``literal`` answers exactly as the ripgrep scan: random substrings
of real note text (the fixture vaults and examples/vault: ASCII, punctuation, Unicode), in case
variants, with and without ``case_sensitive``, compared result by result."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_ls.core.config import load_config
from engram_ls.core.service import Engram
from tests.conftest import DATA, EXAMPLE, copy_tree

VAULTS = {"example": EXAMPLE, **{p.name: p for p in sorted(DATA.iterdir()) if p.is_dir()}}


def with_trigrams(root: Path) -> Engram:
    """An Engram over ``root`` with its own configuration and the trigram index on."""
    config, _ = load_config(root)
    return Engram(root, config=config.model_copy(update={"trigram_index": True}))


@pytest.fixture(scope="module")
def engrams(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Engram]]:
    opened: dict[str, Engram] = {}
    for name, src in VAULTS.items():
        e = with_trigrams(copy_tree(src, tmp_path_factory.mktemp("tri") / name))
        e.open()
        e.sync()
        assert e.status().trigram_index is True
        opened[name] = e
    yield opened
    for e in opened.values():
        e.close()


def _lines() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name, src in VAULTS.items():
        for path in sorted(src.rglob("*.md")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            out += [(name, line) for line in text.splitlines() if len(line.strip()) >= 3]
    return out


LINES = _lines()


@st.composite
def queries(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name, line = draw(st.sampled_from(LINES))
    start = draw(st.integers(0, max(0, len(line) - 3)))
    size = draw(st.integers(1, min(40, len(line) - start)))
    text = line[start : start + size]
    variant = draw(st.sampled_from(["same", "upper", "lower", "swapcase"]))
    if variant != "same":
        text = getattr(text, variant)()
    req = {"query": text, "mode": "literal", "limit": 1000}
    if draw(st.booleans()):
        req["case_sensitive"] = True
    return name, req


def _answer(res: Any) -> tuple[Any, ...]:
    """Everything but topics, which the scan gives in each note's own spelling (by design)."""
    hits = [(h.path, h.score, h.line, h.snippet, h.title) for h in res.results]
    return res.total, hits


def _compare(engram: Engram, req: dict[str, Any]) -> None:
    if not req["query"].strip():
        return
    indexed = engram.search(req)
    with engram.index.batch() as b:
        b.set_state("building")
    try:
        scanned = engram.search(req)
    finally:
        with engram.index.batch() as b:
            b.set_state("ready")
    assert scanned.index.served_by == "scan"
    assert _answer(indexed) == _answer(scanned), req


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=queries())
def test_index_path_equals_the_scan(engrams: dict[str, Engram], case: Any) -> None:
    name, req = case
    _compare(engrams[name], req)


@pytest.mark.slow
@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=queries())
def test_index_path_equals_the_scan_many(engrams: dict[str, Engram], case: Any) -> None:
    name, req = case
    _compare(engrams[name], req)


@pytest.mark.parametrize(
    "query",
    ["ÉCOLE", "école", "straße", "STRASSE", "Ⅻ", "naïve café", "ǅ", "ΣΊΣΥΦΟΣ", "σίσυφος", "K", "ſ"],
)
def test_unicode_case_rules_equal_the_scan(tmp_path: Path, query: str) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text(
        "École et straße, naïve café ⅻ ǆ ǅ Ǆ\nσίσυφος ΣΊΣΥΦΟΣ σίσυφοσ\n\u212aelvin \u017fs\n",
        encoding="utf-8",
    )
    (root / "b.md").write_text("Kelvin ss STRASSE\n", encoding="utf-8")
    with with_trigrams(root) as e:
        e.sync()
        for sensitive in (False, True):
            _compare(e, {"query": query, "mode": "literal", "case_sensitive": sensitive})
            _compare(e, {"query": query + "lvin", "mode": "literal", "case_sensitive": sensitive})


# -- regex: candidates from the trigrams the parsed pattern requires ---------------------------

_META = set("\\.^$|?*+()[]{}#")


def _plain(text: str) -> str:
    """``text`` without regex metacharacters (and ``#``, which ``(?x)`` would read)."""
    return "".join(c for c in text if c not in _META)


@st.composite
def patterns(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A regex over two pieces of one real line: a piece alone, two pieces with anything or
    optional classes between them, an alternation of two, or a piece in a flag group."""
    name, line = draw(st.sampled_from(LINES))
    piece = st.integers(0, max(0, len(line) - 3)).flatmap(
        lambda start: st.integers(1, min(12, len(line) - start)).map(
            lambda size: _plain(line[start : start + size])
        )
    )
    a, b = draw(piece), draw(piece)
    if draw(st.booleans()):
        a, b = a.swapcase(), b.swapcase()
    shape = draw(st.sampled_from(["{a}", "{a}.*{b}", "({a}|{b})", "{a}[ _-]?{b}", "(?i:{a}){b}"]))
    pattern = shape.format(a=a, b=b)
    req = {"query": pattern, "mode": "regex", "limit": 1000}
    if draw(st.booleans()):
        req["case_sensitive"] = True
    return name, req


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=patterns())
def test_regex_index_path_equals_the_scan(engrams: dict[str, Engram], case: Any) -> None:
    name, req = case
    _compare(engrams[name], req)


@pytest.mark.slow
@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=patterns())
def test_regex_index_path_equals_the_scan_many(engrams: dict[str, Engram], case: Any) -> None:
    name, req = case
    _compare(engrams[name], req)


@pytest.mark.parametrize(
    ("pattern", "served_by"),
    [
        (r"write-ahead\s+log", "index"),
        (r"(?i)SQLITE.*wal", "index"),
        (r"(vacuum|checkpoint)", "index"),
        (r"\w+", "scan"),  # requires no trigram
        (r"ab", "scan"),
    ],
)
def test_regex_is_served_by_the_index_when_it_requires_trigrams(
    engrams: dict[str, Engram], pattern: str, served_by: str
) -> None:
    req = {"query": pattern, "mode": "regex", "limit": 1000}
    assert engrams["example"].search(req).index.served_by == served_by
    _compare(engrams["example"], req)

"""Which line a hit shows and how it reads (``core/search/snippet.py``): prose before a
heading, markup never standing for a match, link syntax cleaned away, the cut around the match;
and the same snippet from the index path and the scan path, as every front end gets it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram_ls.core.index import fts
from engram_ls.core.search.snippet import (
    HEADING,
    MARKUP,
    PROSE,
    SHORT,
    TITLE,
    Matcher,
    best_matching_line,
    clean_markup,
    cut_around,
    first_prose_line,
    line_kind,
)
from engram_ls.core.service import Engram


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        pytest.param("The checkpoint copies pages back.", PROSE, id="prose"),
        pytest.param("## Checkpoints", HEADING, id="heading"),
        pytest.param("# Checkpoints", TITLE, id="title"),
        pytest.param("[[sqlite]].", SHORT, id="short"),
        pytest.param("```python", MARKUP, id="fence"),
        pytest.param("~~~", MARKUP, id="tilde-fence"),
        pytest.param("|---|:--:|---:|", MARKUP, id="table-rule"),
        pytest.param("---", MARKUP, id="rule"),
        pytest.param("![the checkpoint diagram](checkpoint.png)", MARKUP, id="image"),
        pytest.param("![[checkpoint.png]]", MARKUP, id="embed"),
        pytest.param('<div align="center">', MARKUP, id="html"),
        pytest.param("https://www.sqlite.org/wal.html#ckpt", MARKUP, id="address"),
        pytest.param("| tokenizer | build time | index size |", PROSE, id="table-row"),
    ],
)
def test_line_kind(line: str, kind: int) -> None:
    assert line_kind(line) == kind


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        pytest.param("See [[alpha|the alpha note]] now", "See the alpha note now", id="alias"),
        pytest.param("See [[alpha#Part]].", "See alpha#Part.", id="wiki"),
        pytest.param("Read [the docs](https://x.org/a_(b)) first", "Read the docs first", id="md"),
        pytest.param("An ![alt text](a.png) image ![[b.png]]", "An alt text image", id="images"),
        pytest.param("<b>bold</b> and <br/> <!-- note --> done", "bold and done", id="html"),
        pytest.param("## A   heading", "A heading", id="heading"),
        pytest.param("a < b and c > d", "a < b and c > d", id="not-a-tag"),
    ],
)
def test_clean_markup(line: str, shown: str) -> None:
    assert clean_markup(line) == shown


def _terms(query: str) -> list[fts.Term]:
    return fts.parse_query(query)


def test_the_first_prose_line_wins_over_a_title_heading_or_fence() -> None:
    body = "# Python notes\n```python\nx = 1\n```\n## Python\nWe ship Python 3.13 everywhere.\n"
    assert best_matching_line(_terms("python"), body) == (5, "We ship Python 3.13 everywhere.")
    assert best_matching_line(_terms("python"), "# Python\n## Python tips\n") == (
        1,
        "## Python tips",
    )


def test_a_match_only_in_the_title_or_markup_is_no_line() -> None:
    body = "# Gamma\n```python\n[docs](https://python.org)\n"
    assert best_matching_line(_terms("python"), body) is None


def test_first_prose_line_skips_code_images_and_headings() -> None:
    body = "# T\n![x](a.png)\n```\nsome code here\n```\n<div>\nThe real first line.\n"
    assert first_prose_line(body) == (6, "The real first line.")


def test_matcher_spans() -> None:
    text = "Écrire, écrit and ECRIRE; nothing else"
    assert Matcher.of("text", "ecrire").spans(text) == [(0, 6), (18, 24)]
    assert Matcher.of("text", "écri*").spans(text) == [(0, 6), (8, 13), (18, 24)]
    assert Matcher.of("text", "ecrire", raw_fts=True).spans(text, first=True) == [(0, 6)]
    assert Matcher.of("literal", "E, é").spans(text) == [(5, 9)]
    assert Matcher.of("literal", "E, é", case_sensitive=True).spans(text) == []
    assert Matcher.of("regex", "ecr.re").spans(text) == []  # ripgrep's to match, not Python's
    assert Matcher.of("semantic", "writing").spans(text) == []


def test_cut_around_the_match() -> None:
    line = "a" * 100 + " the match " + "b" * 100
    text, shift = cut_around(line, 60, line.index("match"))
    assert len(text) <= 60 and text.startswith("…") and text.endswith("…")
    assert text[line.index("match") + shift :].startswith("match")
    assert cut_around("short", 60, 2) == ("short", 0)
    end = "x " * 50 + "match"
    text, _ = cut_around(end, 30, end.index("match"))
    assert text.endswith("match") and len(text) <= 30


NOTE = (
    "---\ntags: [storage]\ndate: 2024-03-05\n---\n\n# Checkpoint notes\n\n"
    "![checkpoint diagram](checkpoint.png)\n\n<p align=center>\n\n"
    "See [[wal|the log note]] about checkpoint timing.\n"
)


@pytest.mark.parametrize("path", ["index", "scan"])
def test_a_hit_shows_the_prose_line_cleaned_on_both_paths(tmp_path: Path, path: str) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "note.md").write_text(NOTE, encoding="utf-8")
    engram = Engram(root)
    engram.open()
    try:
        if path == "index":
            engram.sync()
        else:
            with engram.index.batch() as b:
                b.set_state("building")
        res = engram.search({"query": "checkpoint"})
        assert res.index.served_by == path
        hit = res.results[0]
        assert (hit.line, hit.snippet) == (12, "See the log note about checkpoint timing.")
        literal = engram.search({"query": "[[wal", "mode": "literal"}).results[0]
        assert (literal.line, literal.snippet) == (
            12,
            "See [[wal|the log note]] about checkpoint timing.",
        )
    finally:
        engram.close()

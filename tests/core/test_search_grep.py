"""Literal and regex search: scores are matching lines, ``served_by`` says which path answered,
on the index path and the scan path alike."""

from __future__ import annotations

import json
import os
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
    (root / ".engram").mkdir(parents=True)
    (root / ".engram" / "config.yaml").write_text("trigram_index: true\n", encoding="utf-8")
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


# -- the trigram index -------------------------------------------------------------------------


def hits(res: Any) -> list[tuple[Any, ...]]:
    return [(h.path, h.score, h.line, h.snippet, h.title) for h in res.results]


@pytest.mark.parametrize(
    ("query", "served", "found"),
    [
        pytest.param("foo", "index", ["repeats.md", "once.md"], id="literal"),
        pytest.param("FOO AGAIN", "index", ["repeats.md"], id="case-and-space"),
        pytest.param("title: N", "index", ["none.md"], id="frontmatter-is-searched"),
        pytest.param("fo", "scan", ["repeats.md", "once.md"], id="shorter-than-a-trigram"),
        pytest.param("zzz", "index", [], id="no-candidate"),
    ],
)
def test_literal_from_the_trigram_index(
    engram: Engram, query: str, served: str, found: list[str]
) -> None:
    res = engram.search({"query": query, "mode": "literal"})
    assert res.index.served_by == served
    assert [h.path for h in res.results] == found
    assert hits(res) == hits(scanned(engram, query=query, mode="literal"))


def test_regex_from_the_trigrams_it_requires(engram: Engram) -> None:
    """A regex that requires trigrams takes its candidates from the index; one that requires
    none scans; both answer as the scan does."""
    res = engram.search({"query": "fo+ foo", "mode": "regex"})
    assert res.index.served_by == "index"
    assert hits(res) == hits(scanned(engram, query="fo+ foo", mode="regex"))
    res = engram.search({"query": r"\w+", "mode": "regex"})
    assert res.index.served_by == "scan"


def test_bytes_the_index_cannot_hold_are_always_candidates(grep_vault: Path) -> None:
    """Not UTF-8, or a NUL byte: no trigrams, yet ripgrep finds the literal in them."""
    (grep_vault / "latin1.md").write_bytes(b"caf\xe9 foo bar\n")
    (grep_vault / "nul.md").write_bytes(b"foo bar\n\x00\n")
    with Engram(grep_vault) as e:
        e.sync()
        res = e.search({"query": "foo bar", "mode": "literal"})
        assert res.index.served_by == "index"
        assert {h.path for h in res.results} == {"latin1.md", "nul.md"}
        assert hits(res) == hits(scanned(e, query="foo bar", mode="literal"))


def test_the_trigram_index_follows_every_write(grep_vault: Path) -> None:
    from engram_ls.core.sync import Change

    def found(e: Engram, query: str) -> list[str]:
        res = e.search({"query": query, "mode": "literal"})
        assert res.index.served_by == "index"
        return sorted(h.path for h in res.results)

    with Engram(grep_vault) as e:
        e.sync()
        (grep_vault / "once.md").write_text("quartz crystal\n", encoding="utf-8")
        e.apply_changes([Change("changed", "once.md")])
        assert found(e, "quartz") == ["once.md"] and found(e, "foo") == ["repeats.md"]
        e.move("once.md", "sub/moved.md")
        assert found(e, "quartz") == ["sub/moved.md"]
        (grep_vault / "sub" / "moved.md").unlink()
        e.apply_changes([Change("deleted", "sub/moved.md")])
        assert found(e, "quartz") == []
        (grep_vault / "new.md").write_text("more quartz\n", encoding="utf-8")
        e.sync()  # a reconcile
        assert found(e, "quartz") == ["new.md"]
        e.write_note("written.md", "quartz again\n")
        assert found(e, "quartz") == ["new.md", "written.md"]


def test_an_index_built_before_the_trigram_index_gets_it(grep_vault: Path) -> None:
    import sqlite3

    with Engram(grep_vault) as e:
        e.sync()
        idx = e.index.path
    conn = sqlite3.connect(idx)
    conn.execute("DROP TABLE notes_tri")
    conn.execute("DROP TABLE tri_unindexed")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with Engram(grep_vault) as e:
        e.sync()
        res = e.search({"query": "foo again", "mode": "literal"})
        assert res.index.served_by == "index"
        assert [h.path for h in res.results] == ["repeats.md"]


def test_trigram_index_off_by_config(grep_vault: Path) -> None:
    (grep_vault / ".engram").mkdir(exist_ok=True)
    (grep_vault / ".engram" / "config.yaml").write_text("trigram_index: false\n")
    with Engram(grep_vault) as e:
        e.sync()
        res = e.search({"query": "foo again", "mode": "literal"})
        assert res.index.served_by == "scan"
        assert [h.path for h in res.results] == ["repeats.md"]
        with e.health.reading() as r:
            assert r.conn.execute("SELECT count(*) FROM notes_tri").fetchone()[0] == 0


# -- status ------------------------------------------------------------------------------------


def test_status_shows_the_trigram_index_and_its_size(grep_vault: Path) -> None:
    with Engram(grep_vault) as e:
        e.sync()
        st = e.status()
        assert st.trigram_index is True and st.trigram_bytes is not None
        assert st.trigram_bytes > 0
    text = engram_in_process("status", str(grep_vault))
    assert text.returncode == 0, text.stderr
    assert "trigram:    on, " in text.stdout and " MB at the last full build" in text.stdout
    js = engram_in_process("status", str(grep_vault), "--json")
    data = json.loads(js.stdout)
    assert data["trigram_index"] is True and data["trigram_bytes"] == st.trigram_bytes


def test_status_says_when_the_trigram_index_is_off(grep_vault: Path) -> None:
    (grep_vault / ".engram").mkdir(exist_ok=True)
    (grep_vault / ".engram" / "config.yaml").write_text("trigram_index: false\n")
    with Engram(grep_vault) as e:
        e.sync()
        st = e.status()
        assert st.trigram_index is False and st.trigram_bytes is None
    text = engram_in_process("status", str(grep_vault))
    assert "trigram:    off (literal searches scan the files)" in text.stdout


async def test_mcp_index_status_shows_the_trigram_index(grep_vault: Path) -> None:
    from mcp import Client

    from engram_ls.mcp_server.server import create_server

    with Engram(grep_vault) as e:
        e.sync()
        async with Client(create_server(e)) as client:
            r = await client.call_tool("index_status", {})
            assert r.structured_content["trigram_index"] is True
            assert r.structured_content["trigram_bytes"] > 0


def test_the_trigram_index_is_off_by_default(tmp_path: Path) -> None:
    """Until its cost to a cold build is cut: literal searches scan, and status says so."""
    root = tmp_path / "plain"
    root.mkdir()
    (root / "a.md").write_text(ONCE, encoding="utf-8")
    with Engram(root) as e:
        e.sync()
        assert e.status().trigram_index is False
        assert e.search({"query": "foo foo", "mode": "literal"}).index.served_by == "scan"


def test_a_binary_file_among_others_hides_no_first_line(tmp_path: Path) -> None:
    """rg says "binary file matches" of a file with a NUL byte, on a line without ``--null``'s
    separator: the next file's first line and count are still read right, and one run of
    every line gives way to ``count`` (which counts the binary file's matches too)."""
    from engram_ls.core.ripgrep import Grep

    (tmp_path / "a-bin.md").write_bytes(b"foo bar\n\x00\nfoo bar again\n")
    (tmp_path / "b\nodd: name.md").write_text("nothing\nfoo bar here\n", encoding="utf-8")
    (tmp_path / "c.md").write_text("foo bar\nand foo bar\n", encoding="utf-8")
    grep = Grep(tmp_path, "foo bar", regex=False)
    files = ["a-bin.md", "b\nodd: name.md", "c.md"]
    firsts = grep.first(files)
    assert {p: (m.line, m.text) for p, m in firsts.items()} == {
        "b\nodd: name.md": (2, "foo bar here"),
        "c.md": (1, "foo bar"),
    }
    assert grep.count(files) == {"a-bin.md": 2, "b\nodd: name.md": 1, "c.md": 2}
    assert grep.lines(files) is None
    both = grep.lines(files[1:])
    assert both is not None
    assert {p: (n, m.line, m.text) for p, (n, m) in both.items()} == {
        "b\nodd: name.md": (1, 2, "foo bar here"),
        "c.md": (2, 1, "foo bar"),
    }


@pytest.mark.parametrize("swap", ["fifo", "symlink-out"])
@pytest.mark.parametrize(("mode", "query"), [("literal", "foo"), ("regex", "fo[o]+ ")])
def test_a_note_swapped_for_a_fifo_or_a_symlink_out_is_not_read(
    grep_vault: Path, tmp_path: Path, mode: str, query: str, swap: str
) -> None:
    """After the build, a matching note becomes a FIFO, or a symlink to a file outside the
    vault holding the text many times: the search answers at once (nothing waits on the
    FIFO) from the other notes, and nothing of the outside file counts, in ``total`` either."""
    import os

    outside = tmp_path / "secret.md"
    outside.write_text("foo secret\n" * 40, encoding="utf-8")
    with Engram(grep_vault) as e:
        e.sync()
        before = e.search({"query": query, "mode": mode})
        assert {h.path for h in before.results} == {"repeats.md", "once.md"}
        (grep_vault / "repeats.md").unlink()
        if swap == "fifo":
            os.mkfifo(grep_vault / "repeats.md")
        else:
            os.symlink(outside, grep_vault / "repeats.md")
        res = e.search({"query": query, "mode": mode})
        assert res.index.served_by == "index"
        assert [(h.path, h.score) for h in res.results] == [("once.md", 1.0)]
        assert res.total == 1


def test_a_file_whose_name_is_not_utf8_leaves_literal_and_regex_answering(tmp_path: Path) -> None:
    """A ``.md`` whose name's bytes are not UTF-8 is no note, but ripgrep's own walk (a query
    the index does not narrow) finds it: its name is left out of the answer, which lists the
    notes; before, binding it to SQLite raised UnicodeEncodeError and every literal and regex
    search of the vault failed."""
    root = tmp_path / "vault"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nbicycles everywhere\n", encoding="utf-8")
    with open(os.fsencode(root) + b"/caf\xe9 bicycles.md", "wb") as f:
        f.write(b"# Caf\xe9\n\nbicycles in latin-1\n")
    with Engram(root) as e:
        e.sync()
        for mode, query in (("literal", "bicycles"), ("regex", "bicycl.s")):
            res = e.search({"query": query, "mode": mode})
            assert [h.path for h in res.results] == ["a.md"] and res.total == 1, mode

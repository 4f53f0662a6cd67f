"""Link rules in core: spans, resolution, problems, backlinks, related notes, move plans."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import InvalidRequest, NotFound, OutsideVault
from engram_ls.core.index.schema import SCHEMA_VERSION
from engram_ls.core.links import apply_edits, encode_md_path, link_key, scan_links, slug
from engram_ls.core.parse import parse_note
from engram_ls.core.service import Engram


@pytest.fixture
def links(vault_copy: Callable[[str], Path]) -> Engram:
    engram = Engram(vault_copy("links"))
    engram.open()
    engram.sync()
    return engram


@pytest.mark.parametrize(
    ("yaml", "aliases"),
    [
        pytest.param("aliases: [Bee, B-2]", ("Bee", "B-2"), id="list"),
        pytest.param("aliases: Bee, Buzz", ("Bee", "Buzz"), id="comma-string"),
        pytest.param("alias: Only One", ("Only One",), id="alias-key"),
        pytest.param("aliases: [Bee, bee, '', null]", ("Bee",), id="dedupe-empty"),
        pytest.param("aliases: 42", ("42",), id="number"),
        pytest.param("title: x", (), id="none"),
    ],
)
def test_parse_aliases(yaml: str, aliases: tuple[str, ...]) -> None:
    note = parse_note("n.md", f"---\n{yaml}\n---\nbody\n".encode(), EngramConfig())
    assert note.aliases == aliases


def test_schema_version_bumped() -> None:
    assert SCHEMA_VERSION >= 2


def test_old_index_is_rebuilt(vault_copy: Callable[[str], Path]) -> None:
    import sqlite3

    root = vault_copy("links")
    index = root / ".engram" / "index.sqlite"
    index.parent.mkdir()
    conn = sqlite3.connect(index)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    engram = Engram(root)
    engram.open()
    assert engram.index.rebuilt_reason == "version"
    engram.sync()
    assert engram.resolve_link("index.md", "wiki", "Bee").resolution.note is not None


@pytest.mark.parametrize(
    ("target", "key"),
    [
        pytest.param("Alpha", "alpha", id="plain"),
        pytest.param("folder/Alpha.MD", "alpha", id="path-md"),
        pytest.param("  § Special  ", "§ special", id="spaces"),
        pytest.param("../x/y.md", "y", id="relative"),
    ],
)
def test_link_key(target: str, key: str) -> None:
    assert link_key(target) == key


def test_scan_links_positions_skip_code_and_frontmatter() -> None:
    text = (
        "---\nx: '[[Not A Link]]'\n---\n"
        "A [[T#H|alias]] b [t](<a b.md#c>) [u](x%20y.md)\n"
        "```\n[[Code]]\n```\n`[[Inline]]` [[a\\|b]] [w](https://x.md)\n"
    )
    spans = scan_links(text)
    assert [(s.kind, s.target, s.anchor, s.label) for s in spans] == [
        ("wiki", "T", "H", "alias"),
        ("markdown", "a b.md", "c", "t"),
        ("markdown", "x y.md", None, "u"),
        ("wiki", "a", None, "b"),
    ]
    line = text.split("\n")[3]
    first, second, third = spans[:3]
    assert line[first.start : first.end] == "[[T#H|alias]]"
    assert line[first.target_start : first.target_end] == "T"
    assert line[second.target_start : second.target_end] == "a b.md" and second.angle
    assert line[third.target_start : third.target_end] == "x%20y.md"
    assert spans[3].line == 7


def test_scan_links_bom_and_crlf() -> None:
    spans = scan_links("\ufeffSee [[A]]\r\nand [[B]]\r\n")
    assert [(s.line, s.target_start) for s in spans] == [(0, 7), (1, 6)]


@pytest.mark.parametrize(
    ("source", "kind", "target", "how", "paths"),
    [
        pytest.param("index.md", "wiki", "alpha", "stem", ["alpha.md"], id="stem-any-case"),
        pytest.param("index.md", "wiki", "Alpha.md", "stem", ["alpha.md"], id="stem-with-md"),
        pytest.param("index.md", "wiki", "Beta Note", "title", ["beta.md"], id="title"),
        pytest.param("index.md", "wiki", "b-2", "alias", ["beta.md"], id="alias"),
        pytest.param(
            "index.md", "wiki", "projects/Gamma", "path", ["projects/gamma.md"], id="path"
        ),
        pytest.param(
            "projects/gamma.md", "wiki", "./delta", "relative", ["projects/delta.md"], id="rel"
        ),
        pytest.param(
            "index.md", "wiki", "Dup", "stem", ["one/Dup.md", "two/Dup.md"], id="ambiguous"
        ),
        pytest.param("index.md", "wiki", "one/Dup", "path", ["one/Dup.md"], id="disambiguated"),
        pytest.param("index.md", "wiki", "Missing", "none", [], id="broken"),
        pytest.param(
            "projects/gamma.md", "markdown", "../alpha.md", "relative", ["alpha.md"], id="md-rel"
        ),
        pytest.param("index.md", "markdown", "/beta.md", "relative", ["beta.md"], id="md-root"),
        pytest.param("index.md", "markdown", "../outside.md", "outside", [], id="md-outside"),
        pytest.param("index.md", "wiki", "../../etc/passwd", "outside", [], id="wiki-outside"),
        pytest.param(
            "index.md",
            "markdown",
            "names/§ Special Name.md",
            "relative",
            ["names/§ Special Name.md"],
            id="md-special",
        ),
    ],
)
def test_resolution_rules(
    links: Engram, source: str, kind: str, target: str, how: str, paths: list[str]
) -> None:
    found = links.resolve_link(source, kind, target).resolution  # type: ignore[arg-type]
    assert found.how == how
    assert [n.path for n in found.notes] == paths


def test_anchor_resolution(links: Engram) -> None:
    assert links.resolve_link("index.md", "wiki", "alpha", "second part").heading_line == 3
    assert links.resolve_link("index.md", "wiki", "alpha", "second-part").heading_line == 3
    assert links.resolve_link("index.md", "wiki", "alpha", "Nowhere").heading_line is None
    assert slug("My Heading, again!") == "my-heading-again"


def test_problems_of_the_fixture(links: Engram) -> None:
    text = (links.vault.root / "index.md").read_text(encoding="utf-8")
    found = [(p.code, p.span.target) for p in links.link_problems("index.md", text)]
    assert found == [
        ("broken-link", "Missing Note"),
        ("ambiguous-link", "Dup"),
        ("broken-anchor", "Alpha"),
    ]
    broken = links.link_problems("index.md", text)[0]
    assert broken.suggested_path == "Missing Note.md"


def test_completion_prefix_and_cap(links: Engram) -> None:
    found, more = links.link_completions("b")
    assert [(m.note.path, m.how) for m in found] == [("beta.md", "title")]
    assert not more
    found, _ = links.link_completions("bee")
    assert [(m.note.path, m.how, m.name) for m in found] == [("beta.md", "alias", "Bee")]
    found, more = links.link_completions("", limit=3)
    assert len(found) == 3 and more


def test_backlinks(links: Engram) -> None:
    back = links.backlinks("alpha.md")
    assert [(b.source, b.span.line) for b in back] == [
        ("index.md", 6),
        ("index.md", 6),
        ("index.md", 8),
        ("index.md", 11),
        ("projects/gamma.md", 7),
        ("two/Dup.md", 2),
    ]
    to_heading = links.backlinks("alpha.md", "Second Part")
    assert [(b.source, b.span.label) for b in to_heading] == [("index.md", "the second part")]
    with pytest.raises(OutsideVault):
        links.backlinks("../etc/passwd.md")


def test_related_notes(links: Engram) -> None:
    related = links.related_notes("beta.md")
    assert [o["path"] for o in related["outgoing"]] == ["names/§ Special Name.md"]
    assert [b["path"] for b in related["backlinks"]] == ["index.md", "projects/gamma.md"]
    assert {s["path"] for s in related["sharing_topics"]} == {
        "projects/gamma.md",
        "names/§ Special Name.md",
    }
    with pytest.raises(NotFound):
        links.related_notes("nope.md")
    with pytest.raises(OutsideVault):
        links.related_notes("../../etc/passwd")


def test_plan_rename_of_a_note(links: Engram) -> None:
    plan = links.plan_move([("alpha.md", "archive/Alpha Renamed.md")])
    new = {f.path: f.new_text for f in plan.files}
    assert set(new) == {"index.md", "projects/gamma.md", "two/Dup.md"}
    assert "[[Alpha Renamed#Second Part|the second part]]" in new["index.md"]
    assert "[[Alpha]]" not in new["index.md"]
    assert "[alpha](../archive/Alpha%20Renamed.md)" in new["projects/gamma.md"]
    assert "See [[Alpha Renamed]]." in new["two/Dup.md"]


def test_plan_rename_of_a_folder_fixes_links_out_of_it(links: Engram) -> None:
    plan = links.plan_move([("projects", "work/projects")])
    assert plan.moves == {
        "projects/delta.md": "work/projects/delta.md",
        "projects/gamma.md": "work/projects/gamma.md",
    }
    new = {f.path: f.new_text for f in plan.files}
    # [[projects/Gamma]] still names it (suffix); the Markdown link needs the new folder
    assert "[[projects/Gamma]]" in new["index.md"]
    assert "[gamma intro](work/projects/gamma.md#intro)" in new["index.md"]
    assert "[alpha](../../alpha.md)" in new["projects/gamma.md"]
    assert "[beta](<../../beta.md>)" in new["projects/gamma.md"]
    assert "[[./delta]]" in new["projects/gamma.md"]


def test_rename_to_a_taken_stem_qualifies_the_link(links: Engram) -> None:
    plan = links.plan_move([("one/Dup.md", "one/Alpha.md")])
    assert plan.files == []  # nothing linked uniquely to one/Dup.md
    plan = links.plan_move([("beta.md", "deep/Alpha.md")])
    new = {f.path: f.new_text for f in plan.files}
    # by title and alias: unchanged; the markdown link follows
    assert "[[Beta Note]]" in new.get("index.md", "[[Beta Note]]")
    assert "[beta](<../deep/Alpha.md>)" in new["projects/gamma.md"]


def test_move_applies_edits_and_updates_index(links: Engram) -> None:
    root = links.vault.root
    plan = links.move("alpha.md", "archive/Alpha Renamed.md")
    assert plan.links == 6
    assert not (root / "alpha.md").exists() and (root / "archive/Alpha Renamed.md").exists()
    assert "[[Alpha Renamed]]" in (root / "index.md").read_text(encoding="utf-8")
    text = (root / "index.md").read_text(encoding="utf-8")
    assert [p.code for p in links.link_problems("index.md", text)] == [
        "broken-link",
        "ambiguous-link",
        "broken-anchor",
    ]
    assert len(links.backlinks("archive/Alpha Renamed.md")) == 6


def test_move_dry_run_changes_nothing(links: Engram) -> None:
    root = links.vault.root
    before = {p: p.read_bytes() for p in root.rglob("*.md")}
    plan = links.move("projects", "work/projects", dry_run=True)
    assert plan.files
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == before


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [
        pytest.param("alpha.md", "../alpha.md", OutsideVault, id="dest-outside"),
        pytest.param("../x.md", "y.md", OutsideVault, id="source-outside"),
        pytest.param("alpha.md", "beta.md", InvalidRequest, id="dest-exists"),
        pytest.param("alpha.md", "alpha.txt", InvalidRequest, id="not-a-note"),
        pytest.param("nope.md", "x.md", NotFound, id="missing"),
        pytest.param("projects", "projects/sub", InvalidRequest, id="into-itself"),
    ],
)
def test_move_refuses(links: Engram, old: str, new: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        links.move(old, new)
    assert (links.vault.root / "alpha.md").exists()


def test_apply_edits_and_encoding() -> None:
    from engram_ls.core.links import TextEdit

    text = "a [[X]] b\r\nc [[X]]\n"
    out = apply_edits(text, [TextEdit(0, 4, 5, "Yy"), TextEdit(1, 4, 5, "Z")])
    assert out == "a [[Yy]] b\r\nc [[Z]]\n"
    assert encode_md_path("a b/(c)%.md") == "a%20b/%28c%29%25.md"


def test_a_note_that_is_not_utf8_is_a_backlink_but_never_edited(
    vault_copy: Callable[[str], Path],
) -> None:
    """A note with a stray byte is indexed (its undecodable bytes replaced, an encoding
    problem reported), so its links are backlinks and related notes like any other, at the
    places the index parsed; a move plans no edit of it (it would be written back changed),
    and its bytes stay as they were."""
    root = vault_copy("links")
    latin = root / "latin.md"
    raw = b"# Latin\n\ncaf\xe9 au lait, see [[Alpha]]\n"
    latin.write_bytes(raw)
    engram = Engram(root)
    engram.open()
    engram.sync()
    found = [b for b in engram.backlinks("alpha.md") if b.source == "latin.md"]
    assert [(b.span.line, b.span.start) for b in found] == [(2, 18)]  # "caf\ufffd au lait, see "
    related = engram.related_notes("alpha.md")
    assert "latin.md" in {r["path"] for r in related["backlinks"]}
    plan = engram.plan_move([("alpha.md", "archive/Alpha Renamed.md")])
    assert "latin.md" not in {f.path for f in plan.files}
    engram.move("alpha.md", "archive/Alpha Renamed.md")
    assert latin.read_bytes() == raw

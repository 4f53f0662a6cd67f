"""Obsidian Bases over the index: a table of the supported constructs with the notes each one
passes, an error for each unsupported one, views (sort, limit, groupBy, formulas, summaries),
and a differential test against a brute-force evaluation of every parsed note."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engram_ls.core.bases.expr import BaseError, parse
from engram_ls.core.bases.run import _sort_key
from engram_ls.core.bases.spec import load_base
from engram_ls.core.bases.values import Row, as_date, evaluate, truthy
from engram_ls.core.config import EngramConfig
from engram_ls.core.contained import born_in
from engram_ls.core.errors import InvalidRequest
from engram_ls.core.links import link_key
from engram_ls.core.model import Note
from engram_ls.core.parse import parse_note
from engram_ls.core.search.where import file_value
from engram_ls.core.service import Engram

ALL = [
    "dashboard.md",
    "inbox.md",
    "projects/alpha.md",
    "projects/beta.md",
    "projects/gamma.md",
    "reading/Textbook.md",
    "reading/book-one.md",
]


@pytest.fixture
def bases(vault_copy: Callable[[str], Path], tmp_path: Path) -> Iterator[Engram]:
    with Engram(vault_copy("bases"), index_path=tmp_path / "index.sqlite") as engram:
        engram.sync()
        yield engram


def passing(engram: Engram, filters: str, **kw: Any) -> list[str]:
    text = f"filters: {filters}\nviews:\n  - name: v\n    limit: 1000\n"
    out = engram.query(text=text, **kw)
    assert out["index"]["served_by"] == "index"
    return sorted(r["path"] for r in out["rows"])


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('status == "doing"', ["projects/alpha.md"]),  # a list [doing, blocked] is not "doing"
        ('status != "done"', [p for p in ALL if p != "projects/beta.md"]),  # missing passes
        ("priority > 1", ["projects/alpha.md"]),  # a number: never the text "high"
        ("priority >= 1 && priority < 3", ["projects/beta.md"]),
        ('priority == "high"', ["projects/gamma.md"]),
        ("1 < priority", ["projects/alpha.md"]),  # the property on the right
        ('due < date("2025-01-01")', ["projects/beta.md"]),
        ('due > "2024-12-01"', ["projects/alpha.md", "projects/beta.md"]),  # 09:30 is after
        ('due == date("2025-01-10")', ["projects/alpha.md"]),
        ('due < date("2024-12-25") + "1 month"', ["projects/alpha.md", "projects/beta.md"]),
        ("due.year == 2024", ["projects/beta.md"]),  # evaluated over the index's values
        ("rating >= 4.5", ["reading/Textbook.md"]),
        ("draft == false", ["reading/Textbook.md"]),
        ('status.contains("block")', []),  # a list's items are compared whole
        ('status.contains("blocked")', ["projects/gamma.md"]),
        ('author.contains("Lee")', ["reading/book-one.md"]),  # text: a substring
        ('status.containsAny("done", "blocked")', ["projects/beta.md", "projects/gamma.md"]),
        ('tags.containsAll("work", "work/urgent")', ["projects/alpha.md"]),
        ('file.hasTag("work")', ["projects/alpha.md", "projects/beta.md"]),  # nested included
        ('file.hasTag("work/urgent")', ["projects/alpha.md"]),
        ('file.hasTag("#IDEA")', ["inbox.md"]),  # inline tags; any case, with or without #
        ('file.hasTag("home", "school")', ["projects/gamma.md", "reading/Textbook.md"]),
        (
            'file.inFolder("projects")',
            ["projects/alpha.md", "projects/beta.md", "projects/gamma.md"],
        ),
        ('file.inFolder("proj")', []),  # a folder, not a prefix of one
        ('file.hasLink("Textbook")', ["reading/book-one.md"]),
        ('file.hasLink("beta")', ["projects/alpha.md"]),
        ('file.hasProperty("rating")', ["reading/Textbook.md", "reading/book-one.md"]),
        ('file.name == "inbox.md"', ["inbox.md"]),
        ('file.basename == "Textbook"', ["reading/Textbook.md"]),
        ('file.ext == "md"', ALL),
        ('file.folder == "reading"', ["reading/Textbook.md", "reading/book-one.md"]),
        ("file.size > 100000", []),
        ('file.mtime > now() - "1 week"', ALL),  # copied just now
        ('file.ctime > now() - "1 week" && file.ctime <= now()', ALL),  # created when copied
        (
            '!file.inFolder("projects") && type == "book"',
            ["reading/Textbook.md", "reading/book-one.md"],
        ),
        (
            '(status == "done" || rating == 5) && !draft',
            ["projects/beta.md", "reading/Textbook.md"],
        ),  # no draft, or draft false
        ("price * age > 20", ["projects/alpha.md"]),  # arithmetic: evaluated
        ("number(rating) + 1 > 5", ["reading/Textbook.md"]),
        ("rating", ["reading/Textbook.md", "reading/book-one.md"]),  # truthiness
        ('author.lower().startsWith("ann")', ["reading/book-one.md"]),
        ('if(rating, rating > 4, status == "done")', ["projects/beta.md", "reading/Textbook.md"]),
        ('status.isType("list")', ["projects/gamma.md"]),
        ("tags.length > 1", ["projects/alpha.md", "reading/Textbook.md"]),
        ('note["author"] == "Bo"', ["reading/Textbook.md"]),
        ("note.rating == 4", ["reading/book-one.md"]),
    ],
)
def test_each_construct_passes_the_notes_obsidian_shows(
    bases: Engram, expression: str, expected: list[str]
) -> None:
    assert passing(bases, repr(expression)) == sorted(expected)


@pytest.mark.parametrize(
    ("text", "construct", "where"),
    [
        ("filters: this.file.name == 'x'", "this", "filters"),
        ("filters: 'file.name.matches(/x/)'", "regular expression", "filters"),
        ("filters: 'link(\"a\") == 1'", "link()", "filters"),
        ("filters: 'unknownFn(1)'", "unknownFn()", "filters"),
        ("filters: 'file.backlinks.length > 1'", "file.backlinks", "filters"),
        ("filters: 'file.asLink() == 1'", "file.asLink()", "filters"),
        ("filters: 'title.sparkle()'", ".sparkle()", "filters"),
        ("filters: 'due.relative() == 1'", ".relative()", "filters"),
        ("filters: {nand: [a]}", None, "filters"),
        ("formulas: {x: 'formula.y + 1'}", "formula.y", "formulas.x"),
        ("views: [{type: gallery}]", "gallery", "views[0].type"),
        ("views: [{name: v, fancy: 1}]", "fancy", "views[0].fancy"),
        ("views: [{name: v, summaries: {rating: Mode}}]", "Mode", "views[0].summaries.rating"),
        (
            "summaries: {mean3: 'values.mean()'}\nviews: [{name: v, summaries: {rating: mean3}}]",
            "mean3",
            "views[0].summaries.rating",
        ),
        ("views: [{name: v, order: [formula.nope]}]", "formula.nope", "views[0].order[0]"),
        (
            "views: [{name: v, sort: [{property: rating, direction: UP}]}]",
            None,
            "views[0].sort[0].direction",
        ),
        ("views: [{name: v, limit: many}]", None, "views[0].limit"),
        ("sources: [x]", "sources", "sources"),
    ],
)
def test_each_unsupported_construct_is_an_error_naming_it(
    bases: Engram, text: str, construct: str | None, where: str
) -> None:
    with pytest.raises(InvalidRequest) as info:
        bases.query(text=text)
    data = info.value.data
    assert data["at"] == where, info.value.message
    assert data.get("unsupported") == construct, info.value.message
    assert data["line"] is not None


def test_an_error_gives_the_line_and_column_in_the_file(bases: Engram) -> None:
    with pytest.raises(InvalidRequest) as info:
        bases.query(path="broken.base")
    data = info.value.data
    assert (data["line"], data["column"], data["unsupported"]) == (3, 27, "this")
    assert data["path"] == "broken.base" and "filters.and[1]" in info.value.message
    text = (bases.vault.root / "broken.base").read_text("utf-8").split("\n")
    assert text[data["line"]][data["column"] :].startswith("this.")


def test_malformed_yaml_and_bad_expressions_are_errors_with_a_place(bases: Engram) -> None:
    for text, needle in [
        ("filters: [unclosed", "not valid YAML"),
        ("filters: 'status =='", "unexpected"),
        ("filters: 'status == \"x'", "closing quote"),
        ("filters: 'a == 1 2'", "after the expression"),
        ("views: [{name: a}]\nfilters: 'if(1)'", "takes 2 to 3 arguments"),
    ]:
        with pytest.raises(InvalidRequest) as info:
            bases.query(text=text)
        assert needle in info.value.message
        assert info.value.data.get("line") is not None


def test_a_view_sorts_limits_and_computes_its_formulas(bases: Engram) -> None:
    out = bases.query(path="projects.base")
    assert out["base"] == "projects.base" and out["views"] == ["Priority", "Late"]
    # Descending: text sorts after numbers, so "high" comes first, then 3, then 1.
    assert [r["path"] for r in out["rows"]] == [
        "projects/gamma.md",
        "projects/alpha.md",
        "projects/beta.md",
    ]
    values = {r["path"]: r["values"] for r in out["rows"]}
    assert values["projects/alpha.md"] == {
        "file.name": "alpha.md",
        "status": "doing",
        "priority": 3,
        "formula.value": 62.5,
    }
    assert values["projects/gamma.md"]["status"] == ["doing", "blocked"]
    assert values["projects/gamma.md"]["formula.value"] is None  # no price: null, no error
    late = bases.query(path="projects.base", view="Late")
    assert [r["path"] for r in late["rows"]] == ["projects/beta.md"]
    assert late["rows"][0]["values"]["due"] == "2024-12-01T09:30:00"
    with pytest.raises(InvalidRequest, match="no view named 'Nope'"):
        bases.query(path="projects.base", view="Nope")


def test_group_by_and_summaries(bases: Engram) -> None:
    text = """
views:
  - name: by type
    filters: file.hasProperty("type") || file.inFolder("projects")
    groupBy: {property: type, direction: DESC}
    sort: [{property: file.name, direction: ASC}]
    order: [file.name, rating, price]
    summaries: {rating: Average, price: Sum, file.name: Filled}
"""
    out = bases.query(text=text)
    assert [r["path"] for r in out["rows"]] == [
        "reading/Textbook.md",
        "reading/book-one.md",
        "projects/alpha.md",
        "projects/beta.md",
        "projects/gamma.md",
    ]
    assert out["groups"] == [{"value": "book", "rows": 2}, {"value": None, "rows": 3}]
    assert out["summaries"]["rating"] == {"summary": "Average", "value": 4.5}
    assert out["summaries"]["price"] == {"summary": "Sum", "value": 15.5}
    assert out["summaries"]["file.name"]["value"] == 5


def test_limit_and_total(bases: Engram) -> None:
    out = bases.query(
        text="views: [{name: v, limit: 2, sort: [{property: file.path, direction: DESC}]}]"
    )
    assert [r["path"] for r in out["rows"]] == ["reading/book-one.md", "reading/Textbook.md"]
    assert out["total"] == len(ALL) and out["truncated"]
    default = bases.query(text="views: [{name: v}]")
    assert [r["path"] for r in default["rows"]] == ALL  # no sort: by path
    assert default["columns"] == [{"property": "file.name", "name": "file.name"}]


def test_base_blocks_in_a_note(bases: Engram) -> None:
    first = bases.query(path="dashboard.md")
    assert sorted(r["path"] for r in first["rows"]) == ["projects/alpha.md", "projects/gamma.md"]
    books = bases.query(path="dashboard.md", block=2)
    assert [r["path"] for r in books["rows"]] == ["reading/Textbook.md", "reading/book-one.md"]
    assert books["rows"][0]["values"] == {"file.basename": "Textbook", "rating": 5}
    with pytest.raises(InvalidRequest, match="no base block number 3"):
        bases.query(path="dashboard.md", block=3)


def test_a_buffer_runs_as_the_file_it_is_named_by(bases: Engram) -> None:
    """An editor's unsaved text of a note: its blocks, with the note's path in the answer and
    in an error; the file on disk is not read."""
    note = (bases.vault.root / "dashboard.md").read_text("utf-8")
    edited = note.replace('status != "done"', 'status == "done"')
    out = bases.query(path="dashboard.md", text=edited)
    assert out["base"] == "dashboard.md"
    assert [r["path"] for r in out["rows"]] == ["projects/beta.md"]
    with pytest.raises(InvalidRequest) as info:
        bases.query(path="dashboard.md", text=edited.replace("filters:", "filterz:"))
    assert info.value.data["path"] == "dashboard.md" and info.value.data["line"] == 8


def test_a_path_outside_the_vault_or_missing_is_refused(bases: Engram, tmp_path: Path) -> None:
    outside = tmp_path / "outside.base"
    outside.write_text("views: [{name: x}]\n", "utf-8")
    with pytest.raises(Exception) as info:
        bases.query(path=str(outside))
    assert getattr(info.value, "code", "") == "ENGRAM_OUTSIDE_VAULT"
    with pytest.raises(Exception) as info:
        bases.query(path="../outside.base")
    assert getattr(info.value, "code", "") == "ENGRAM_OUTSIDE_VAULT"
    with pytest.raises(Exception) as info:
        bases.query(path="nope.base")
    assert getattr(info.value, "code", "") == "ENGRAM_NOT_FOUND"


def test_a_changed_note_is_seen_by_the_next_query(bases: Engram) -> None:
    before = passing(bases, "'status == \"done\"'")
    note = bases.vault.root / "projects" / "alpha.md"
    note.write_text(note.read_text("utf-8").replace("status: doing", "status: done"), "utf-8")
    bases.sync()
    assert passing(bases, "'status == \"done\"'") == sorted([*before, "projects/alpha.md"])


def test_the_expression_parser_keeps_offsets_and_precedence() -> None:
    expr = parse("a || b && !c == 1 + 2 * 3")
    assert expr.op == "||"  # type: ignore[union-attr]
    with pytest.raises(BaseError) as info:
        parse("status == 'a' ^ 2")
    assert info.value.offset == 14
    assert load_base("").views[0].name == ""  # an empty base: every note, one view


# -- differential: random filters, the index against every parsed note ---------------------


def _row(note: Note, size: int, mtime_ns: int, now: dt.datetime, born_ns: int = 0) -> Row:
    """A note's values read from the parsed note (not from the index)."""
    values: dict[str, Any] = {}
    grouped: dict[str, list[Any]] = {}
    listed: set[str] = set()
    for p in note.properties:
        if p.kind == "date":
            v: Any = as_date(p.value)
        elif p.kind == "bool":
            v = bool(p.value)
        elif p.kind == "null":
            v = None
        else:
            v = p.value
        grouped.setdefault(p.name, []).append(v)
        if p.item:
            listed.add(p.name)
    for name, vs in grouped.items():
        values[name] = vs if name in listed else vs[0]
    files: dict[str, Any] = {}
    for name in ("file.name", "file.basename", "file.path", "file.folder", "file.ext", "file.size"):
        files[name] = file_value(name, note.path, size, mtime_ns)
    for name in ("file.mtime", "file.ctime"):
        files[name] = dt.datetime.fromisoformat(
            str(file_value(name, note.path, size, mtime_ns, born_ns))
        )
    files["file.tags"] = list(dict.fromkeys(t.casefold() for t in note.topics))
    files["file.links"] = [link_key(link.target) for link in note.links]
    return Row(values, files, {}, now)


_SCOPES = frozenset({"note", "file", "formula", "this", "true", "false", "null"})
"""Names that are not a property when written bare (``note["note"]`` is)."""


def _literal(kind: str, value: Any) -> str:
    if kind == "text":
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'
    if kind == "bool":
        return "true" if value else "false"
    if kind == "date":
        return f'date("{value}")' if "T" not in str(value) else f'"{value}"'
    if kind == "null":
        return "null"
    return repr(value)


def _leaf(
    rng: random.Random, pool: dict[str, list[tuple[str, Any]]], facts: dict[str, list[str]]
) -> str:
    names = sorted(pool)
    name = rng.choice([*names, "nothing"])
    kind, value = rng.choice(pool.get(name) or [("text", "x")])
    plain = name.replace("_", "a").isalnum() and name not in _SCOPES
    prop = name if plain else f'note["{name}"]'
    roll = rng.random()
    if roll < 0.12:
        return f'file.hasTag("{rng.choice(facts["tags"] or ["x"])}")'
    if roll < 0.2:
        return f'file.inFolder("{rng.choice(facts["folders"] or ["x"])}")'
    if roll < 0.25:
        return f'file.hasLink("{rng.choice(facts["links"] or ["x"])}")'
    if roll < 0.3:
        return f'file.hasProperty("{name}")'
    if roll < 0.38 and kind == "text" and value:
        text = str(value)
        cut = rng.randrange(0, len(text))
        return f"{prop}.contains({_literal('text', text[cut : cut + rng.randint(1, 6)])})"
    if roll < 0.42:
        return f"{prop}.contains({_literal(kind, value)})"
    if roll < 0.47:
        return rng.choice([prop, f"!{prop}", f"{prop}.isEmpty()", f"{prop}.toString().length > 3"])
    if roll < 0.52:
        return f'due < today() - "{rng.randint(1, 4000)}d"'
    if roll < 0.56:
        return f"file.size {rng.choice(['<', '>'])} {rng.randint(100, 3000)}"
    op = rng.choice(["==", "!=", "<", "<=", ">", ">="])
    lit = _literal(kind, value)
    if kind == "number" and rng.random() < 0.3:
        lit = repr(value + rng.choice([-1, 1, 0.5]))
    return f"{lit} {op} {prop}" if rng.random() < 0.15 else f"{prop} {op} {lit}"


def _expr(rng: random.Random, pool: Any, facts: Any, depth: int = 0) -> str:
    roll = rng.random()
    if depth >= 3 or roll < 0.45:
        return _leaf(rng, pool, facts)
    if roll < 0.55:
        return f"!({_expr(rng, pool, facts, depth + 1)})"
    op = "&&" if roll < 0.8 else "||"
    return f"({_expr(rng, pool, facts, depth + 1)} {op} {_expr(rng, pool, facts, depth + 1)})"


def _differential(root: Path, index: Path, runs: int, seed: int) -> None:
    config = EngramConfig()
    now = dt.datetime.now().replace(microsecond=0)
    with Engram(root, config=config, index_path=index) as engram:
        engram.sync()
        listed = {
            str(p): (int(s), int(m))
            for p, s, m in engram.index.reader().execute("SELECT path, size, mtime_ns FROM notes")
        }
        notes = {rel: parse_note(rel, (root / rel).read_bytes(), config) for rel in listed}
        real = str(root.resolve())
        rows = {rel: _row(n, *listed[rel], now, born_in(real, rel)) for rel, n in notes.items()}
        pool: dict[str, list[tuple[str, Any]]] = {}
        for n in notes.values():
            for p in n.properties:
                if len(str(p.value)) < 60 and "\n" not in str(p.value):
                    pool.setdefault(p.name, []).append((p.kind, p.value))
        facts = {
            "tags": sorted({t for r in rows.values() for t in r.files["file.tags"]}),
            "folders": sorted({rel.rpartition("/")[0] for rel in listed} - {""}),
            "links": sorted({k for r in rows.values() for k in r.files["file.links"]})[:200],
        }
        rng = random.Random(seed)
        nonempty = 0
        for _ in range(runs):
            expression = _expr(rng, pool, facts)
            want = sorted(rel for rel, r in rows.items() if truthy(evaluate(parse(expression), r)))
            text = yaml.safe_dump({"filters": expression, "views": [{"name": "v", "limit": 10000}]})
            try:
                got = engram.query(text=text)
            except InvalidRequest as exc:
                raise AssertionError(f"{expression}: {exc.message}") from None
            assert sorted(r["path"] for r in got["rows"]) == want, expression
            assert got["total"] == len(want), expression
            nonempty += bool(want) and len(want) < len(rows)
            # A sort on one property with a limit: read in index order when no filter is
            # left to evaluate; the same order as sorting every note's values.
            name = rng.choice(sorted(pool))
            desc = rng.random() < 0.5
            limit = rng.randint(1, 30)
            ordered = sorted(want)
            ordered.sort(key=lambda rel: _sort_key(rows[rel].get(name), desc))
            sort = [{"property": name, "direction": "DESC" if desc else "ASC"}]
            view = {"name": "v", "limit": limit, "sort": sort}
            text = yaml.safe_dump({"filters": expression, "views": [view]})
            got = engram.query(text=text)
            assert [r["path"] for r in got["rows"]] == ordered[:limit], (expression, name, desc)
        assert nonempty > runs // 5


def test_bases_equal_a_brute_force_evaluation_on_the_real_vault(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    _differential(vault_copy("real"), tmp_path / "real.sqlite", runs=200, seed=3)


def test_bases_equal_a_brute_force_evaluation_on_a_generated_vault(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    _differential(generated(3000), tmp_path / "gen.sqlite", runs=150, seed=8)


def test_hostile_bases_are_refused_with_a_typed_error(bases: Engram, tmp_path: Path) -> None:
    """A FIFO or a symlink out where a base was, bytes that are not UTF-8, an alias bomb,
    nesting past the limits: each a typed error, quickly, and the next query still answers."""
    import os

    root = bases.vault.root
    os.mkfifo(root / "fifo.base")
    outside = tmp_path / "secret.base"
    outside.write_text("views: [{name: secret}]\n", "utf-8")
    (root / "link.base").symlink_to(outside)
    (root / "bytes.base").write_bytes(b"filters: '\xff\xfe'\n")
    bomb = ["filters:", "  and:", '    - &a {or: ["x", "x", "x", "x", "x", "x", "x", "x"]}']
    for p, c in zip("abcde", "bcdef", strict=True):  # 8**6 filters once the aliases expand
        bomb.append(f"    - &{c} {{or: [{', '.join(['*' + p] * 8)}]}}")
    (root / "bomb.base").write_text("\n".join(bomb) + "\n", "utf-8")
    cases = [
        ({"path": "fifo.base"}, "ENGRAM_NOT_FOUND"),
        ({"path": "link.base"}, "ENGRAM_OUTSIDE_VAULT"),
        ({"path": "bytes.base"}, "ENGRAM_INVALID_REQUEST"),
        ({"path": "bomb.base"}, "ENGRAM_INVALID_REQUEST"),
        ({"text": "filters: '" + "(" * 200 + "1" + ")" * 200 + "'"}, "ENGRAM_INVALID_REQUEST"),
        ({"text": "filters: '" + "!" * 200 + "a'"}, "ENGRAM_INVALID_REQUEST"),
        ({"text": "filters: '" + "a == 1 && " * 500 + "b'"}, "ENGRAM_INVALID_REQUEST"),
        ({"text": "filters: " + "{and: [" * 40 + "a" + "]}" * 40}, "ENGRAM_INVALID_REQUEST"),
        ({"text": "filters: '\"\\q\"'"}, "ENGRAM_INVALID_REQUEST"),
        ({"text": "views: [{name: v, limit: 99999999999}]"}, "ENGRAM_INVALID_REQUEST"),
    ]
    for source, code in cases:
        with pytest.raises(Exception) as info:
            bases.query(**source)
        assert getattr(info.value, "code", None) == code, (source, info.value)
    with pytest.raises(InvalidRequest, match="more than 20000 YAML values"):
        bases.query(path="bomb.base")  # counted as expanded, not as written
    chain = "".join(f"  f{i}: formula.f{i + 1} + 1\n" for i in range(200)) + "  f200: 1\n"
    with pytest.raises(InvalidRequest, match="more than 32 deep"):
        bases.query(text=f"formulas:\n{chain}views: [{{name: v, order: [formula.f0]}}]")
    big = bases.query(text="filters: 'file.name.repeat(1000000000).length > 100000'")
    assert big["total"] == 0  # repeat is capped at 100,000 characters: no name fills memory
    assert passing(bases, "'rating >= 4'") == ["reading/Textbook.md", "reading/book-one.md"]

"""``where``: typed properties in the index and conditions on them, the same from the index and
from the files (a differential test against a brute-force evaluation of every parsed note)."""

from __future__ import annotations

import datetime as dt
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.config import EngramConfig
from engram_ls.core.contained import born_in
from engram_ls.core.errors import InvalidRequest
from engram_ls.core.model import Note
from engram_ls.core.parse import parse_note
from engram_ls.core.search.where import FILE_PROPS, matches, note_facts, parse_where
from engram_ls.core.service import Engram


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def typed_vault(tmp_path: Path) -> Engram:
    root = tmp_path / "v"
    write(root, "a.md", "---\nstatus: done\npriority: 2\ndue: 2024-05-01\ntags: [x, y]\n---\n# A\n")
    write(root, "b.md", "---\nStatus: Done\npriority: high\nrating: 4.5\n---\nbody\n")
    write(
        root,
        "c.md",
        "---\nstatus: todo\npriority: 5\ndraft: true\nreview: {next: 2025-01-02}\n---\n",
    )
    write(root, "sub/d.md", '---\npriority: "2"\ndue: 2024-05-01T10:00:00\naliases: []\n---\n#x\n')
    write(root, "sub/e.md", "no frontmatter, [[a]]\n")
    engram = Engram(root, index_path=tmp_path / "index.sqlite")
    engram.open()
    engram.sync()
    yield engram  # type: ignore[misc]
    engram.close()


def paths(engram: Engram, where: Any, **req: Any) -> list[str]:
    res = engram.search({"where": where, "limit": 1000, **req})
    assert res.total == len(res.results)
    return sorted(h.path for h in res.results)


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("status = done", ["a.md"]),
        ("status = Done", ["b.md"]),  # text is compared as written
        ("STATUS exists", ["a.md", "b.md", "c.md"]),  # names are case-insensitive
        ("priority >= 2", ["a.md", "c.md"]),  # a number: never the text "high" or "2"
        ("priority = high", ["b.md"]),
        ('priority = "2"', ["sub/d.md"]),  # quoted: text
        ("priority != 2", ["b.md", "c.md", "sub/d.md", "sub/e.md"]),  # not =, missing included
        ("due <= 2024-05-01", ["a.md"]),  # a time of day is after its date
        ("due starts_with 2024-05", ["a.md", "sub/d.md"]),
        ("due > 2024-05-01", ["sub/d.md"]),
        ("rating > 4", ["b.md"]),
        ("draft = true", ["c.md"]),
        ("review.next = 2025-01-02", ["c.md"]),
        ("note.review.next exists", ["c.md"]),
        ("tags contains x", ["a.md"]),  # an item equal to it (the inline #x is file.tags)
        ("tags = y", ["a.md"]),
        ("file.tags contains X", ["a.md", "sub/d.md"]),
        ('status contains "on"', ["a.md", "b.md"]),  # a single text value: a substring
        ("aliases exists", ["sub/d.md"]),  # an empty list is there
        ("aliases = null", ["sub/d.md"]),
        ("nothing exists", []),  # an unknown property matches nothing...
        ("nothing = 1", []),
        ("nothing missing", ["a.md", "b.md", "c.md", "sub/d.md", "sub/e.md"]),  # ...but missing
        ("file.folder = sub", ["sub/d.md", "sub/e.md"]),
        ("file.folder = /", ["a.md", "b.md", "c.md"]),
        ("file.name = a.md", ["a.md"]),
        ("file.basename = e", ["sub/e.md"]),
        ("file.ext = md", ["a.md", "b.md", "c.md", "sub/d.md", "sub/e.md"]),
        ("file.path starts_with sub/", ["sub/d.md", "sub/e.md"]),
        ("file.links contains A", ["sub/e.md"]),
        ("file.size > 1000000", []),
        (["status exists", "priority < 3"], ["a.md"]),  # a list: all of them
        ({"or": ["status = todo", "rating exists"]}, ["b.md", "c.md"]),
        ({"not": {"or": ["status exists", "file.folder = sub"]}}, []),
        ({"not": "status exists"}, ["sub/d.md", "sub/e.md"]),
        ([{"property": "priority", "op": ">", "value": 1.5}], ["a.md", "c.md"]),
        ({"property": "due", "op": "=", "value": "2024-05-01"}, ["a.md"]),  # a date in text
        ({"property": "draft", "op": "=", "value": True}, ["c.md"]),
    ],
)
def test_a_condition_selects_the_notes_its_rules_say(
    typed_vault: Engram, where: Any, expected: list[str]
) -> None:
    assert paths(typed_vault, where) == expected


def test_where_combines_with_tags_dates_path_and_text(typed_vault: Engram) -> None:
    assert paths(typed_vault, "priority exists", tags=["x"]) == ["a.md", "sub/d.md"]
    assert paths(typed_vault, "priority exists", path="sub") == ["sub/d.md"]
    assert paths(typed_vault, "status exists", query="body") == ["b.md"]
    assert paths(typed_vault, "file.tags exists", mode="literal", query="#x") == ["sub/d.md"]


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("status like done", "where: 'status like done' is not 'PROPERTY OP VALUE'"),
        (["a = 1", "status like done"], "where[1]: 'status like done' is not"),
        ([{"property": "s", "op": "~", "value": 1}], "where[0].op: '~' is not one of"),
        ([{"property": "", "op": "="}], "where[0].property"),
        ({"and": []}, "where.and: a non-empty list"),
        ({"and": ["a = 1"], "or": ["b = 2"]}, "where: 'and' must be the only key"),
        ([{"property": "s", "op": "=", "value": [1, 2]}], "where[0].value: a single value"),
        ([{"property": "s", "op": "exists", "value": 1}], "where[0].value: exists takes no"),
        ([{"property": "s", "op": "<", "value": None}], "where[0].value: < needs a value"),
        ([{"property": "s", "op": "="}], "where[0].value: = needs a value"),
        ([{"property": "s", "op": "=", "value": 1, "x": 2}], "where[0]: unknown key 'x'"),
        ({"or": ["a = 1", {"not": 3}]}, "where.or[1].not: a condition is an object or text"),
        (["a = 1"] * 65, "more than 64 conditions"),
        ("= 3", "names no property"),
    ],
)
def test_a_malformed_condition_is_an_invalid_request_naming_its_part(
    typed_vault: Engram, where: Any, named: str
) -> None:
    with pytest.raises(InvalidRequest) as caught:
        typed_vault.search({"where": where})
    assert named in caught.value.message


def test_the_scan_path_means_the_same_as_the_index(typed_vault: Engram, tmp_path: Path) -> None:
    scanning = Engram(typed_vault.vault.root, index_path=tmp_path / "none.sqlite", read_only=True)
    scanning.open()
    try:
        for where in ("priority >= 2", "file.tags contains x", {"not": "status exists"}):
            res = scanning.search({"where": where, "limit": 1000})
            assert res.index.served_by == "scan"
            assert sorted(h.path for h in res.results) == paths(typed_vault, where)
    finally:
        scanning.close()


def test_a_changed_note_is_found_by_its_new_values(typed_vault: Engram) -> None:
    root = typed_vault.vault.root
    write(root, "a.md", "---\nstatus: doing\n---\n")
    typed_vault.sync()
    assert paths(typed_vault, "status = doing") == ["a.md"]
    assert paths(typed_vault, "status = done") == []
    assert paths(typed_vault, "priority exists") == ["b.md", "c.md", "sub/d.md"]


# -- differential: random trees, the index against every parsed note --------------------------


def _request_value(kind: str, value: Any) -> Any:
    if kind == "bool":
        return bool(value)
    if kind == "null":
        return None
    return value


def _pool(facts: dict[str, dict[str, list[Any]]]) -> dict[str, list[tuple[str, Any]]]:
    pool: dict[str, list[tuple[str, Any]]] = {}
    for note in facts.values():
        for name, values in note.items():
            pool.setdefault(name, []).extend((k, v) for k, v, _ in values)
    return pool


def _leaf(rng: random.Random, pool: dict[str, list[tuple[str, Any]]]) -> Any:
    names = sorted(pool)
    name = rng.choice([*names, "not-a-property", *FILE_PROPS])
    values = pool.get(name) or [("text", "x")]
    kind, value = rng.choice(values)
    op = rng.choice(
        ["=", "!=", "<", "<=", ">", ">=", "contains", "starts_with", "exists", "missing"]
    )
    if op in ("exists", "missing"):
        return {"property": name, "op": op}
    if kind == "null" and op not in ("=", "!="):
        op = "="
    if op == "starts_with" or (op == "contains" and kind == "text"):
        text = str(value)
        cut = rng.randrange(1, max(2, len(text) + 1))
        start = 0 if op == "starts_with" else rng.randrange(0, max(1, len(text) - cut + 1))
        return {"property": name, "op": op, "value": text[start : start + cut] or "a"}
    if kind == "number" and rng.random() < 0.3:
        value = value + rng.choice([-1, 1, 0.5])
    return {"property": name, "op": op, "value": _request_value(kind, value)}


def _tree(rng: random.Random, pool: dict[str, list[tuple[str, Any]]], depth: int = 0) -> Any:
    roll = rng.random()
    if depth >= 3 or roll < 0.45:
        return _leaf(rng, pool)
    if roll < 0.6:
        return {"not": _tree(rng, pool, depth + 1)}
    items = [_tree(rng, pool, depth + 1) for _ in range(rng.randint(2, 3))]
    return {"and" if roll < 0.8 else "or": items}


def _other_filters(
    rng: random.Random, topics: list[str], folders: list[str]
) -> tuple[dict[str, Any], Callable[[Note], bool]]:
    """Some of a tag, a date range and a folder, and what they pass (DESIGN §4)."""
    request: dict[str, Any] = {}
    tag = rng.choice(topics) if topics and rng.random() < 0.25 else None
    lo: str | None = None
    hi: str | None = None
    y = rng.randint(2018, 2025)
    if rng.random() < 0.25:
        lo, hi = f"{y}-01-01", f"{y}-12-31"
    folder = rng.choice(folders) if folders and rng.random() < 0.2 else None
    if tag:
        request["tags"] = [tag]
    if lo:
        request.update(date_from=lo, date_to=hi)
    if folder:
        request["path"] = folder

    def passes(note: Note) -> bool:
        keys = {t.casefold() for t in note.topics}
        if tag and not any(k == tag or k.startswith(tag + "/") for k in keys):  # nested tags
            return False
        if lo and not (note.created_at and lo <= note.created_at <= str(hi)):
            return False
        return not folder or note.path.startswith(folder + "/")

    return request, passes


def _differential(root: Path, index: Path, trees: int, seed: int) -> None:
    config = EngramConfig()
    with Engram(root, config=config, index_path=index) as engram:
        engram.sync()
        listed = {
            str(p): (int(s), int(m))
            for p, s, m in engram.index.reader().execute("SELECT path, size, mtime_ns FROM notes")
        }
        facts = {}
        for rel, (size, mtime_ns) in listed.items():
            note = parse_note(rel, (root / rel).read_bytes(), config)
            facts[rel] = note_facts(note, size, mtime_ns, born_in(str(root.resolve()), rel))
        pool = _pool(facts)
        rng = random.Random(seed)
        nonempty = 0
        notes = {rel: parse_note(rel, (root / rel).read_bytes(), config) for rel in listed}
        topics = sorted({t.casefold() for n in notes.values() for t in n.topics})
        folders = sorted({rel.rpartition("/")[0] for rel in listed} - {""})
        for _ in range(trees):
            raw = _tree(rng, pool)
            node = parse_where(raw)
            assert node is not None
            request, passes = _other_filters(rng, topics, folders)
            want = sorted(
                rel for rel, f in facts.items() if matches(node, f) and passes(notes[rel])
            )
            got: list[str] = []
            offset = 0
            while True:
                res = engram.search({**request, "where": raw, "limit": 1000, "offset": offset})
                assert res.index.served_by == "index"
                got += [h.path for h in res.results]
                offset += 1000
                if offset >= res.total:
                    break
            assert sorted(got) == want, raw
            assert res.total == len(want), raw
            nonempty += bool(want) and len(want) < len(facts)
        assert nonempty > trees // 4  # the trees select something, and not everything


def test_where_equals_a_brute_force_evaluation_on_the_real_vault(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    _differential(vault_copy("real"), tmp_path / "real.sqlite", trees=250, seed=17)


def test_where_equals_a_brute_force_evaluation_on_a_generated_vault(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    _differential(generated(600), tmp_path / "gen.sqlite", trees=250, seed=5)


@pytest.mark.parametrize("where", ["status exists", "priority = high", {"not": "draft = true"}])
def test_pages_of_a_where_listing_are_newest_first_and_add_up(
    generated: Callable[..., Path], tmp_path: Path, where: Any
) -> None:
    """Paged from the notes in date order (a condition most notes pass) or from the few that
    pass it: the pages put together are the notes passing, newest first, each once."""
    with Engram(generated(400), index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        whole = engram.search({"where": where, "limit": 1000})
        assert 0 < whole.total == len(whole.results) < 400
        got = []
        for offset in range(0, whole.total + 7, 7):
            got += [
                h.path
                for h in engram.search({"where": where, "limit": 7, "offset": offset}).results
            ]
        assert got == [h.path for h in whole.results]
        order = [
            str(p)
            for (p,) in engram.index.reader().execute(
                "SELECT path FROM notes ORDER BY created_at DESC, id DESC"
            )
        ]
        passing = set(got)
        assert got == [p for p in order if p in passing]


def test_file_ctime_is_when_the_file_was_created(tmp_path: Path) -> None:
    """``file.ctime`` is the file's birth time (statx on Linux), not its modification time:
    a note whose mtime is set back to 2001 keeps the day it was created."""
    root = tmp_path / "v"
    write(root, "old.md", "---\nstatus: done\n---\n")
    write(root, "new.md", "---\nstatus: done\n---\n")
    old_stamp = dt.datetime(2001, 1, 1, tzinfo=dt.UTC).timestamp()
    os.utime(root / "old.md", (old_stamp, old_stamp))
    born = born_in(str(root.resolve()), "old.md")
    with Engram(root, index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        assert paths(engram, "file.mtime < 2002-01-01") == ["old.md"]
        created = dt.datetime.fromtimestamp(born / 1e9, dt.UTC).strftime("%Y-%m-%d")
        assert paths(engram, f"file.ctime >= {created}") == ["new.md", "old.md"]
        if born // 1_000_000_000 > old_stamp:  # the file system keeps birth times
            assert paths(engram, "file.ctime < 2002-01-01") == []


@pytest.mark.parametrize(
    "pick",
    [
        pytest.param(lambda order, rng: order[-40:], id="the-oldest-notes"),
        pytest.param(lambda order, rng: order[:30], id="the-newest-notes"),
        pytest.param(lambda order, rng: rng.sample(order, 25), id="a-few-anywhere"),
        pytest.param(lambda order, rng: rng.sample(order, 900), id="most-notes"),
        pytest.param(lambda order, rng: order[::2][-300:], id="every-other-old-one"),
    ],
)
@pytest.mark.parametrize("budget", [(8, 4096), (1, 0)], ids=["as-shipped", "listed-soon"])
def test_a_page_of_passing_notes_is_the_same_read_by_date_or_listed(
    generated: Callable[..., Path],
    tmp_path: Path,
    pick: Callable[..., list[int]],
    budget: tuple[int, int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``where_bits.page`` reads the notes in date order for a while, then (the page not full:
    the passing notes are old) lists the passing notes instead: every page, at every offset,
    is the passing notes in date order either way."""
    from engram_ls.core.index.bitmaps import bitmap, ids_of
    from engram_ls.core.search import where_bits

    monkeypatch.setattr(where_bits, "SCAN_PER_NOTE", budget[0])
    monkeypatch.setattr(where_bits, "SCAN_LEAST", budget[1])
    listed: list[int] = []

    def ids(self: where_bits.NoteBits) -> list[int]:
        listed.append(1)
        return ids_of(self.member)

    monkeypatch.setattr(where_bits.NoteBits, "ids", ids)
    with Engram(generated(1200), index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        conn = engram.index.reader()
        order = [
            int(i)
            for (i,) in conn.execute("SELECT id FROM notes ORDER BY created_at DESC, id DESC")
        ]
        chosen = set(pick(order, random.Random(3)))
        notes = where_bits.NoteBits.of(bitmap(chosen))
        want = [i for i in order if i in chosen]
        assert ids_of(notes.member) == sorted(chosen)
        for limit in (1, 7, 50):
            for offset in range(0, len(want) + limit, max(limit, len(want) // 5)):
                got = where_bits.page(conn, notes, offset, limit, len(order), lambda: None)
                assert got == want[offset : offset + limit], (limit, offset)
        if budget == (8, 4096):
            assert not listed  # 4,096 notes or more are read in date order: all 1,200 here
        elif set(order[-40:]) == chosen:
            assert listed  # one note read a note passing: the oldest are listed


@pytest.mark.parametrize("count", [0, 1, 5, 300, 2500, 6000, 9999])
def test_a_bitmaps_ids_are_the_ids_put_in_sparse_or_dense(count: int) -> None:
    from engram_ls.core.index.bitmaps import bitmap, has, ids_of, member

    rng = random.Random(count)
    ids = sorted({*rng.sample(range(1, 10_001), count), *([0, 7, 8, 10_007] if count else [])})
    members = member(bitmap(ids))
    assert ids_of(members) == ids
    assert all(has(members, i) for i in ids)
    assert not has(members, 10_008) and (count or not has(members, 3))

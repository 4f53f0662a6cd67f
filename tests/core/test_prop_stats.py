"""Property counts (``core/index/prop_stats.py``): the vault's property names, most used first,
and the values of a property with few of them, kept exact by every kind of write."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from engram_ls.core.errors import IndexUnavailable
from engram_ls.core.index import prop_stats
from engram_ls.core.service import Engram
from tests.conftest import EXAMPLE, copy_tree


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def stats(index: Path) -> list[tuple[str, str, int]]:
    conn = sqlite3.connect(index)
    try:
        return sorted(conn.execute("SELECT key, kind, notes FROM prop_stats"))
    finally:
        conn.close()


def recounted(index: Path) -> list[tuple[str, str, int]]:
    """What the counts are from ``props`` itself, on a copy of the index."""
    source, conn = sqlite3.connect(index), sqlite3.connect(":memory:")
    try:
        source.backup(conn)
        prop_stats.recount(conn)
        return sorted(conn.execute("SELECT key, kind, notes FROM prop_stats"))
    finally:
        source.close()
        conn.close()


@pytest.fixture
def vault(tmp_path: Path) -> tuple[Engram, Path]:
    root = tmp_path / "v"
    write(root, "a.md", "---\nstatus: done\npriority: 2\ntags: [x, y]\n---\n# A\n")
    write(root, "b.md", "---\nStatus: todo\npriority: high\ndraft: true\n---\nbody\n")
    write(root, "c.md", "---\nstatus: done\nreview: {next: 2025-01-02}\naliases: []\n---\n")
    write(root, "d.md", "no frontmatter\n")
    index = tmp_path / "index.sqlite"
    engram = Engram(root, index_path=index)
    engram.open()
    engram.sync()
    yield engram, index  # type: ignore[misc]
    engram.close()


def test_names_most_used_first_with_their_kinds(vault: tuple[Engram, Path]) -> None:
    engram, _ = vault
    found = {p.name: p for p in engram.properties()}
    assert [p.name for p in engram.properties()][:2] == ["status", "priority"]
    assert found["status"].notes == 3 and found["status"].kind == "text"
    assert found["priority"].kinds == {"number": 1, "text": 1}
    assert found["priority"].kind == "mixed"
    assert found["tags"].kind == "list of text" and found["tags"].lists == 1
    assert found["review.next"].kind == "date"
    assert found["aliases"].kind == "null"
    assert [p.name for p in engram.properties("ST")] == ["status"]
    assert engram.properties("nothing") == []


def test_values_with_counts_and_as_written(vault: tuple[Engram, Path]) -> None:
    engram, _ = vault
    about, values = engram.property_values("Status")
    assert about is not None and about.notes == 3
    assert [(v.text, v.notes) for v in values or []] == [("done", 2), ("todo", 1)]
    assert [v.text for v in engram.property_values("draft")[1] or []] == ["true"]
    assert engram.property_values("aliases")[1] == []  # an empty list has no value to offer
    assert engram.property_values("unknown") == (None, [])


def test_a_property_of_free_text_has_no_values_to_offer(tmp_path: Path) -> None:
    root = tmp_path / "v"
    for i in range(prop_stats.MAX_DISTINCT + 1):
        write(root, f"n{i}.md", f"---\nsummary: note number {i}\nkind: one\n---\n")
    with Engram(root, index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        about, values = engram.property_values("summary")
        assert about is not None and about.notes == prop_stats.MAX_DISTINCT + 1
        assert values is None
        assert [(v.text, v.notes) for v in engram.property_values("kind")[1] or []] == [
            ("one", prop_stats.MAX_DISTINCT + 1)
        ]


def test_counts_stay_exact_through_edits_deletes_moves_and_rebuilds(tmp_path: Path) -> None:
    root = copy_tree(EXAMPLE, tmp_path / "v")
    index = tmp_path / "index.sqlite"
    rng = random.Random(17)
    values = ["done", "2", "[a, b]", "[1, x]", "true", "2024-01-02", "", "{a: 1}", "[]"]
    with Engram(root, index_path=index) as engram:
        engram.sync()
        assert stats(index) == recounted(index) and stats(index)
        for step in range(40):
            notes = sorted(p for p in root.rglob("*.md") if ".engram" not in p.parts)
            action = rng.choice(["edit", "edit", "add", "delete", "move"])
            if action == "edit" or (action in ("delete", "move") and len(notes) < 5):
                target = rng.choice(notes)
                keys = rng.sample(["status", "priority", "tags", "x.y", "Mixed"], 2)
                body = "".join(f"{k}: {rng.choice(values)}\n" for k in keys)
                target.write_text(f"---\n{body}---\n# step {step}\n", encoding="utf-8")
            elif action == "add":
                write(root, f"new/n{step}.md", f"---\nstatus: {rng.choice(values)}\n---\n")
            elif action == "delete":
                rng.choice(notes).unlink()
            else:
                src = rng.choice(notes)
                src.rename(src.with_name(f"moved-{step}.md"))
            engram.sync()
            assert stats(index) == recounted(index), f"step {step}: {action}"
        engram.sync(full=True)
        assert stats(index) == recounted(index)


def test_not_answered_from_files_while_the_index_cannot(tmp_path: Path) -> None:
    root = copy_tree(EXAMPLE, tmp_path / "v")
    engram = Engram(root, index_path=tmp_path / "missing" / "i.sqlite")
    with engram, pytest.raises(IndexUnavailable):
        engram.properties()  # not built yet: never a walk of the vault

"""Completing tasks: the edit of one line (a table), recurrence, and the edit on disk: exactly
one line changes, a second toggle gives the bytes back, and a line that changed is refused."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from engram_ls.core.config import EngramConfig
from engram_ls.core.edits import NoteChanged
from engram_ls.core.errors import InvalidRequest, OutsideVault
from engram_ls.core.parse import parse_note
from engram_ls.core.service import Engram
from engram_ls.core.tasks.edit import toggled

TODAY = dt.date(2025, 1, 20)


def edit(line: str, *, done: bool) -> tuple[str, str | None, str | None]:
    (task,) = parse_note("n.md", (line + "\n").encode(), EngramConfig()).tasks
    out = toggled(line, task, done=done, today=TODAY)
    return out.after, out.inserted, out.recurrence


@pytest.mark.parametrize(
    ("line", "done", "after"),
    [
        pytest.param("- [ ] write", True, "- [x] write ✅ 2025-01-20", id="done"),
        pytest.param(
            "  * [/] half 📅 2025-01-10",
            True,
            "  * [x] half 📅 2025-01-10 ✅ 2025-01-20",
            id="in-progress-nested",
        ),
        pytest.param(
            "1. [ ] first   ", True, "1. [x] first ✅ 2025-01-20   ", id="trailing-spaces-kept"
        ),
        pytest.param(
            "- [ ] linked ^ab-1", True, "- [x] linked ✅ 2025-01-20 ^ab-1", id="before-block-id"
        ),
        pytest.param("- [ ]", True, "- [x] ✅ 2025-01-20", id="empty-task"),
        pytest.param(
            "- [ ] call [due:: 2025-01-19]",
            True,
            "- [x] call [due:: 2025-01-19] [completion:: 2025-01-20]",
            id="dataview",
        ),
        pytest.param("- [x] write ✅ 2025-01-05", False, "- [ ] write", id="undone"),
        pytest.param(
            "- [X] a [completion:: 2025-01-05] b", False, "- [ ] a b", id="undone-dataview"
        ),
        pytest.param(
            "- [-] dropped ❌ 2025-01-02",
            True,
            "- [x] dropped ❌ 2025-01-02 ✅ 2025-01-20",
            id="cancelled-done",
        ),
        pytest.param(
            "- [x] already ✅ 2025-01-05",
            True,
            "- [x] already ✅ 2025-01-05",
            id="done-again-keeps-its-day",
        ),
    ],
)
def test_toggled(line: str, done: bool, after: str) -> None:
    assert edit(line, done=done)[0] == after


@pytest.mark.parametrize(
    ("line", "inserted", "recurrence"),
    [
        pytest.param(
            "- [ ] water 🔁 every week 📅 2025-01-13",
            "- [ ] water 🔁 every week 📅 2025-01-20",
            "added",
            id="every-week",
        ),
        pytest.param(
            "- [ ] pay 🔁 every 2 months ⏳ 2025-01-31 📅 2025-02-03",
            "- [ ] pay 🔁 every 2 months ⏳ 2025-03-31 📅 2025-04-03",
            "added",
            id="months-from-due-other-days-keep-their-distance",
        ),
        pytest.param(
            "- [ ] rent 🔁 every month 📅 2025-01-31",
            "- [ ] rent 🔁 every month 📅 2025-02-28",
            "added",
            id="month-end-clamped",
        ),
        pytest.param(
            "- [ ] run 🔁 every 3 days when done 📅 2025-01-01",
            "- [ ] run 🔁 every 3 days when done 📅 2025-01-23",
            "added",
            id="when-done",
        ),
        pytest.param(
            "  - [ ] d [repeat:: every year] [due:: 2024-02-29]",
            "  - [ ] d [repeat:: every year] [due:: 2025-02-28]",
            "added",
            id="dataview-year",
        ),
        pytest.param(
            "- [ ] gym 🔁 every week on Monday 📅 2025-01-13",
            None,
            "not added: Engram follows 'every N days/weeks/months/years' rules, not"
            " 'every week on Monday'",
            id="unsupported-rule",
        ),
        pytest.param(
            "- [ ] someday 🔁 every day",
            None,
            "not added: the task has no due, scheduled or start day to move",
            id="no-day",
        ),
    ],
)
def test_recurrence(line: str, inserted: str | None, recurrence: str) -> None:
    after, got, why = edit(line, done=True)
    assert after.startswith(line.replace("[ ]", "[x]", 1))
    assert after.endswith(("✅ 2025-01-20", "[completion:: 2025-01-20]"))
    assert (got, why) == (inserted, recurrence)


NOTE = (
    b"---\r\ntags: [x]\r\n---\r\n# Tasks\r\n"
    b"- [ ] one \xf0\x9f\x93\x85 2025-01-10\r\n"
    b"  - [ ] two\r\n"
    b"```\r\n- [ ] in code\r\n```\r\n"
    b"last line without an ending"
)


@pytest.fixture
def engram(tmp_path: Path) -> Engram:
    root = tmp_path / "v"
    root.mkdir()
    (root / "t.md").write_bytes(NOTE)
    e = Engram(root, index_path=tmp_path / "i.sqlite")
    e.open()
    e.sync()
    yield e  # type: ignore[misc]
    e.close()


def test_a_toggle_changes_one_line_and_a_second_gives_the_bytes_back(engram: Engram) -> None:
    note = engram.vault.root / "t.md"
    out = engram.toggle_task("t.md", 5, today=TODAY)
    assert out["after"] == "- [x] one 📅 2025-01-10 ✅ 2025-01-20" and out["done"] is True
    after = note.read_bytes()
    old_lines, new_lines = NOTE.split(b"\n"), after.split(b"\n")
    assert len(old_lines) == len(new_lines)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert changed == [4] and new_lines[4].endswith(b"\r")  # line 5, its CRLF kept
    assert engram.tasks({"status": "done"})["tasks"][0]["line"] == 5  # indexed before returning
    back = engram.toggle_task("t.md", 5, today=TODAY, expect=out["after"])
    assert back["done"] is False and note.read_bytes() == NOTE


def test_a_line_that_changed_or_is_no_task_is_refused(engram: Engram) -> None:
    note = engram.vault.root / "t.md"
    with pytest.raises(NoteChanged) as info:
        engram.toggle_task("t.md", 5, expect="- [ ] one")
    assert info.value.code == "ENGRAM_INVALID_REQUEST" and note.read_bytes() == NOTE
    for line in (4, 8, 10, 99):  # a heading, a task in a code block, the last line, past the end
        with pytest.raises(InvalidRequest):
            engram.toggle_task("t.md", line)
    assert note.read_bytes() == NOTE
    with pytest.raises(OutsideVault):
        engram.toggle_task("../t.md", 5)


def test_a_recurring_task_adds_its_next_occurrence_above(engram: Engram) -> None:
    note = engram.vault.root / "r.md"
    note.write_text("# R\n- [ ] water 🔁 every week 📅 2025-01-13\n- [ ] other\n", "utf-8")
    out = engram.toggle_task("r.md", 2, today=TODAY)
    assert out["recurrence"] == "added" and (out["inserted_line"], out["line"]) == (2, 3)
    assert note.read_text("utf-8") == (
        "# R\n- [ ] water 🔁 every week 📅 2025-01-20\n"
        "- [x] water 🔁 every week 📅 2025-01-13 ✅ 2025-01-20\n- [ ] other\n"
    )
    lines = [(t["line"], t["status"]) for t in engram.tasks({"path": "r.md"})["tasks"]]
    assert lines == [(2, " "), (3, "x"), (4, " ")]

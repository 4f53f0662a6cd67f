"""``engram tasks`` and ``engram task`` on the example vault: the listing grouped by note with
overdue tasks marked, the filters, JSON, and completing a task from the command line (one
line changed, a second command gives the bytes back, a stale --expect refused)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import engram_in_process
from tests.test_cli import engram_process

ROADMAP = "meetings/2025/2025-01-20 roadmap.md"


def test_tasks_lists_grouped_by_note_and_filters(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    proc = engram_in_process("tasks", "--vault", str(root), "--open", "--sort", "priority")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "meetings/2024/2024-11-04 perf sync.md  (Performance sync)"
    assert lines[1].split()[:4] == ["27", "[", "]", "Measure"]
    assert lines[1].endswith("due 2024-11-15  high  OVERDUE")
    assert f"{ROADMAP}  (Roadmap 2025)" in lines
    assert "   17  [/] Ship the VS Code extension #editor  due 2025-06-30  high  OVERDUE" in lines
    assert lines[-1].startswith("5 of 5 tasks; served by index")
    proc = engram_in_process("tasks", "--vault", str(root), "--tag", "editor", "--json")
    out = json.loads(proc.stdout)
    assert [(t["line"], t["status"], t["parent"]) for t in out["tasks"]] == [
        (17, "/", None),
        (18, " ", 17),
    ]
    proc = engram_in_process(
        "tasks", "--vault", str(root), "--due-before", "2025-01-01", "--status", "all", "--json"
    )
    assert [t["path"] for t in json.loads(proc.stdout)["tasks"]] == [
        "meetings/2024/2024-11-04 perf sync.md"
    ]
    proc = engram_in_process("tasks", "--vault", str(root), "--done", "--json")
    assert [t["line"] for t in json.loads(proc.stdout)["tasks"]] == [28]
    proc = engram_in_process("tasks", "--vault", str(root), "--due-before", "someday")
    assert proc.returncode == 2 and "not a day" in proc.stderr


def test_task_done_changes_one_line_and_undone_gives_the_bytes_back(
    vault_copy: Callable[[str], Path],
) -> None:
    root = vault_copy("example")
    note = root / ROADMAP
    before = note.read_bytes()
    proc = engram_process("task", "done", f"{note}:17")
    assert proc.returncode == 0, proc.stderr
    today = dt.date.today().isoformat()
    assert proc.stdout.splitlines()[2] == (
        "+ - [x] Ship the VS Code extension [due:: 2025-06-30] [priority:: high] #editor"
        f" [completion:: {today}]"
    )
    after = note.read_bytes().split(b"\n")
    assert [
        i for i, (a, b) in enumerate(zip(before.split(b"\n"), after, strict=True)) if a != b
    ] == [16]
    line = after[16].decode()
    proc = engram_process("task", "undone", f"{note}:17", "--expect", "- [ ] stale")
    assert proc.returncode == 2 and "no longer holds the task" in proc.stderr
    proc = engram_process("task", "undone", f"{note}:17", "--expect", line, "--json")
    assert json.loads(proc.stdout)["done"] is False
    # undone is a space: the original was in progress ("/")
    assert note.read_bytes() == before.replace(b"- [/] Ship", b"- [ ] Ship")
    proc = engram_process("task", "toggle", f"{note}:16")
    assert proc.returncode == 2 and "is not a task" in proc.stderr

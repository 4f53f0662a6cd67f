"""Tasks: the grammar (a table of every construct), the index's answers against a brute-force
scan of the files (a differential test on the real vault and a generated one), the scan path,
and the index kept current by edits, renames and deletions."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import InvalidRequest
from engram_ls.core.parse import parse_note
from engram_ls.core.service import Engram
from engram_ls.core.tasks.query import Found, passes, sort_key, wanted
from engram_ls.core.tasks.request import TasksRequest
from engram_ls.core.vault import Vault

VS = "\ufe0f"


def tasks_of(body: str, frontmatter: str = "") -> list[Any]:
    return list(parse_note("n.md", (frontmatter + body).encode("utf-8"), EngramConfig()).tasks)


def one(body: str) -> Any:
    found = tasks_of(body)
    assert len(found) == 1, found
    return found[0]


GRAMMAR = [
    pytest.param("- [ ] plain", {"status": " ", "description": "plain"}, id="dash-todo"),
    pytest.param("* [x] done", {"status": "x", "state": "done"}, id="star-done"),
    pytest.param("+ [X] done upper", {"status": "X", "state": "done"}, id="plus-done-upper"),
    pytest.param("1. [/] half", {"status": "/", "state": "in_progress"}, id="ordered-in-progress"),
    pytest.param("12) [-] dropped", {"status": "-", "state": "cancelled"}, id="paren-cancelled"),
    pytest.param("- [?] asked", {"status": "?", "state": "other"}, id="other-status"),
    pytest.param("- [ ]", {"text": "", "description": ""}, id="empty-text"),
    pytest.param("- [ ] a 📅 2025-01-10", {"due": "2025-01-10", "description": "a"}, id="due"),
    pytest.param("- [ ] a 📆 2025-01-10", {"due": "2025-01-10"}, id="due-calendar"),
    pytest.param(f"- [ ] a 🗓{VS} 2025-01-10", {"due": "2025-01-10"}, id="due-spiral-vs16"),
    pytest.param("- [ ] a 🗓 2025-01-10", {"due": "2025-01-10"}, id="due-spiral"),
    pytest.param("- [ ] a ⏳ 2025-02-01", {"scheduled": "2025-02-01"}, id="scheduled"),
    pytest.param("- [ ] a ⌛ 2025-02-01", {"scheduled": "2025-02-01"}, id="scheduled-hourglass"),
    pytest.param("- [ ] a 🛫 2025-03-01", {"start": "2025-03-01"}, id="start"),
    pytest.param("- [ ] a ➕ 2024-12-01", {"created": "2024-12-01"}, id="created"),
    pytest.param("- [x] a ✅ 2025-01-11", {"done": "2025-01-11"}, id="done-date"),
    pytest.param("- [-] a ❌ 2025-01-12", {"cancelled": "2025-01-12"}, id="cancelled-date"),
    pytest.param("- [ ] a 🔺", {"priority": "highest", "description": "a"}, id="highest"),
    pytest.param("- [ ] a ⏫", {"priority": "high"}, id="high"),
    pytest.param(f"- [ ] a ⏫{VS}", {"priority": "high", "description": "a"}, id="high-vs16"),
    pytest.param("- [ ] a 🔼", {"priority": "medium"}, id="medium"),
    pytest.param("- [ ] a 🔽", {"priority": "low"}, id="low"),
    pytest.param("- [ ] a ⏬", {"priority": "lowest"}, id="lowest"),
    pytest.param("- [ ] a", {"priority": "normal"}, id="no-priority"),
    pytest.param(
        "- [ ] water 🔁 every week on Monday 📅 2025-01-06",
        {"recurrence": "every week on Monday", "due": "2025-01-06", "description": "water"},
        id="recurrence",
    ),
    pytest.param(
        "- [ ] a 🆔 abc-1 ⛔ x1, y_2",
        {"id": "abc-1", "depends_on": ("x1", "y_2"), "description": "a"},
        id="id-and-depends",
    ),
    pytest.param(
        "- [ ] a 🏁 delete 📅 2025-01-01", {"description": "a", "due": "2025-01-01"}, id="on-done"
    ),
    pytest.param(
        "- [ ] call [due:: 2025-04-01] [priority:: high] (owner:: Ann Lee)",
        {
            "due": "2025-04-01",
            "priority": "high",
            "fields": (("due", "2025-04-01"), ("priority", "high"), ("owner", "Ann Lee")),
            "description": "call",
        },
        id="dataview-fields",
    ),
    pytest.param(
        "- [x] a [completion:: 2025-01-02] [repeat:: every day] [Scheduled:: 2025-01-01]",
        {"done": "2025-01-02", "recurrence": "every day", "scheduled": "2025-01-01"},
        id="dataview-dates-any-case",
    ),
    pytest.param(
        "- [ ] a [id:: t1] [dependsOn:: t0, t9]",
        {"id": "t1", "depends_on": ("t0", "t9")},
        id="dataview-ids",
    ),
    pytest.param(
        "- [ ] a 📅 2025-01-10 [due:: 2026-01-01]", {"due": "2025-01-10"}, id="first-due-wins"
    ),
    pytest.param(
        "- [ ] a 📅 2025-02-30",
        {"due": None, "description": "a 📅 2025-02-30"},
        id="no-such-day-stays-text",
    ),
    pytest.param(
        "- [ ] a #work and #Work/urgent, not a#b nor #123",
        {
            "tags": ("work", "Work/urgent"),
            "description": "a #work and #Work/urgent, not a#b nor #123",
        },
        id="tags",
    ),
    pytest.param(
        "- [ ] see `📅 2025-01-01 #code` then 🔽",
        {
            "due": None,
            "tags": (),
            "priority": "low",
            "description": "see `📅 2025-01-01 #code` then",
        },
        id="nothing-in-code-spans",
    ),
    pytest.param(
        "- [ ] a\U0001f4c52025-01-10",
        {"due": "2025-01-10", "description": "a"},
        id="date-without-space",
    ),
]


@pytest.mark.parametrize(("line", "expected"), GRAMMAR)
def test_grammar(line: str, expected: dict[str, Any]) -> None:
    task = one(line + "\n")
    for name, value in expected.items():
        assert getattr(task, name) == value, (name, task)


NOT_TASKS = [
    pytest.param("-[ ] no space after the marker", id="no-space-after-marker"),
    pytest.param("- [ ]no space after the box", id="no-space-after-box"),
    pytest.param("- [xx] two characters", id="two-characters"),
    pytest.param("- [] empty box", id="empty-box"),
    pytest.param("[ ] no list marker", id="no-marker"),
    pytest.param("text - [ ] in a paragraph", id="mid-line"),
    pytest.param("```\n- [ ] in a fence\n```", id="fenced"),
    pytest.param("~~~~md\n- [ ] in a tilde fence\n~~~~", id="tilde-fenced"),
    pytest.param("<!-- - [ ] in a comment -->", id="comment"),
    pytest.param("<!--\n- [ ] in a comment\nof two lines -->", id="multi-line-comment"),
    pytest.param("`- [ ] in a code span`", id="code-span"),
]


@pytest.mark.parametrize("body", NOT_TASKS)
def test_not_tasks(body: str) -> None:
    assert tasks_of(body + "\n") == []


def test_frontmatter_is_never_a_task() -> None:
    fm = "---\ntodo: |\n  - [ ] not a task\n---\n"
    assert [t.line for t in tasks_of("- [ ] real\n", fm)] == [5]


def test_lines_headings_nesting_and_crlf() -> None:
    body = (
        "---\ntitle: x\n---\n"  # 1-3
        "# Plan\n"  # 4
        "- [ ] top\n"  # 5
        "  - [x] child\n"  # 6
        "\t- [ ] tab child\n"  # 7
        "    - note, not a task\n"  # 8
        "      - [ ] grandchild under a plain item\n"  # 9
        "- plain item\n"  # 10
        "  - [ ] under the plain item\n"  # 11
        "\n"  # 12
        "## Later\n"  # 13
        "1. [ ] numbered\n"  # 14
        "   1. [ ] nested numbered\n"  # 15
        "A paragraph ends the list.\n"  # 16
        "  - [ ] after the paragraph\n"  # 17
    )
    lf = tasks_of(body)
    crlf = tasks_of(body.replace("\n", "\r\n"))
    assert lf == crlf
    assert [(t.line, t.heading, t.parent) for t in lf] == [
        (5, "Plan", None),
        (6, "Plan", 5),
        (7, "Plan", 6),  # a tab is 4 columns: under the child, not beside it
        (9, "Plan", 6),  # the item at column 4 closed the tab child
        (11, "Plan", None),
        (14, "Later", None),
        (15, "Later", 14),
        (17, "Later", None),
    ]
    assert lf[1].text == "child" and lf[1].status == "x"


# -- the index against the files -------------------------------------------------------------


def brute_force(root: Path, request: dict[str, Any], today: dt.date) -> list[tuple[str, int]]:
    """Every task of every note, parsed from the files, kept by ``passes`` and ordered by
    ``sort_key``: (path, line) of the whole answer."""
    config = EngramConfig()
    w = wanted(TasksRequest(**request, limit=1000), Vault(root, config), config, today)
    found = []
    for file in sorted(root.rglob("*.md")):
        rel = file.relative_to(root).as_posix()
        if rel.startswith(".engram/"):
            continue
        note = parse_note(rel, file.read_bytes(), config)
        found += [
            Found(rel, t, note.title, note.created_at, note.topics)
            for t in note.tasks
            if passes(w, t, rel, note.topics)
        ]
    found.sort(key=lambda f: sort_key(w, f))
    return [(f.path, f.task.line) for f in found]


def answer(engram: Engram, request: dict[str, Any], today: dt.date) -> tuple[list[Any], str]:
    got: list[tuple[str, int]] = []
    offset = 0
    while True:
        out = engram.tasks({**request, "limit": 97, "offset": offset}, today=today)
        got += [(t["path"], t["line"]) for t in out["tasks"]]
        offset += 97
        if offset >= out["total"]:
            assert len(got) == out["total"]
            return got, out["index"]["served_by"]


def random_request(
    rng: random.Random, tags: list[str], topics: list[str], folders: list[str]
) -> dict[str, Any]:
    request: dict[str, Any] = {}
    if rng.random() < 0.6:
        request["status"] = rng.choice(
            ["open", "done", "cancelled", "todo", "in_progress", "all", "x", "?"]
        )
    if rng.random() < 0.4:
        day = dt.date(2018, 1, 1) + dt.timedelta(days=rng.randrange(3000))
        request[rng.choice(["due_before", "due_after"])] = day.isoformat()
        if rng.random() < 0.5:
            request["due_before" if "due_after" in request else "due_after"] = (
                day + dt.timedelta(days=rng.choice([-40, 7, 90]))
            ).isoformat()
    if rng.random() < 0.15:
        request["scheduled_before"] = rng.choice(["2025-06-01", "+3d"])
    if rng.random() < 0.3:
        request["priority"] = rng.sample(
            ["highest", "high", "medium", "normal", "low", "lowest"], rng.randint(1, 3)
        )
    if rng.random() < 0.3 and tags:
        request["tags"] = rng.sample(tags, 1) + (["no-such-tag"] if rng.random() < 0.2 else [])
    if rng.random() < 0.2 and topics:
        request["note_tags"] = rng.sample(topics, rng.randint(1, 2))
    if rng.random() < 0.3 and folders:
        request["path"] = rng.choice([*folders, "area-0*/2019/*", "*"])
    if rng.random() < 0.2:
        request["text"] = rng.choice(["the", "data QUEUE", "e", "zzz-none"])
    request["sort"] = rng.choice(["path", "due", "priority"])
    return request


def differential(root: Path, requests: int, seed: int, least: int) -> None:
    today = dt.date(2021, 6, 15)
    with Engram(root, index_path=root.parent / "index.sqlite") as engram:
        engram.sync()
        listed = engram.tasks({"limit": 1000}, today=today)
        assert listed["total"] > 0
        notes = {
            p: parse_note(p, (root / p).read_bytes(), EngramConfig())
            for p in {t["path"] for t in listed["tasks"]}
        }
        tags = sorted(
            {
                t.casefold().split("/")[0]
                for n in notes.values()
                for task in n.tasks
                for t in task.tags
            }
        )
        topics = sorted({t.casefold() for n in notes.values() for t in n.topics})[:40]
        folders = sorted({p.rpartition("/")[0] for p in notes} - {""})
        rng = random.Random(seed)
        nonempty = 0
        for _ in range(requests):
            request = random_request(rng, tags, topics, folders)
            want = brute_force(root, request, today)
            got, served = answer(engram, request, today)
            assert served == "index"
            assert got == want, request
            nonempty += bool(want)
        assert nonempty >= least  # the requests find something


def test_index_equals_a_brute_force_scan_on_a_generated_vault(
    generated: Callable[..., Path],
) -> None:
    differential(generated(500), requests=120, seed=3, least=50)


def test_index_equals_a_brute_force_scan_on_the_real_vault(
    vault_copy: Callable[[str], Path],
) -> None:
    differential(vault_copy("real"), requests=60, seed=4, least=10)  # 14 tasks


def test_the_scan_path_means_the_same(generated: Callable[..., Path], tmp_path: Path) -> None:
    """With no index to read (read-only, none built), the files are read: the same answers."""
    root = generated(200)
    today = dt.date(2021, 6, 15)
    with Engram(root, index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        indexed = [answer(engram, r, today)[0] for r in _FIXED]
    with Engram(root, index_path=tmp_path / "none.sqlite", read_only=True) as engram:
        for request, want in zip(_FIXED, indexed, strict=True):
            got, served = answer(engram, request, today)
            assert served == "scan" and got == want, request


_FIXED: list[dict[str, Any]] = [
    {"status": "open", "sort": "due"},
    {"status": "done", "due_after": "2020-01-01", "sort": "priority"},
    {"tags": ["urgent"], "path": "area-00"},
    {"priority": ["high", "highest"], "due_before": "today"},
]


def test_tasks_follow_edits_renames_and_deletions(tmp_path: Path) -> None:
    root = tmp_path / "v"
    (root / "p").mkdir(parents=True)
    note = root / "p" / "a.md"
    note.write_text("# A\n- [ ] one 📅 2025-01-10\n- [x] two\n", "utf-8")
    today = dt.date(2025, 1, 20)
    with Engram(root, index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        assert answer(engram, {"status": "open"}, today)[0] == [("p/a.md", 2)]
        assert engram.tasks({"status": "open"}, today=today)["tasks"][0]["overdue"]
        note.write_text("# A\n- [x] one 📅 2025-01-10\n- [ ] two\n- [ ] three #new\n", "utf-8")
        engram.sync()
        assert answer(engram, {"status": "open"}, today)[0] == [("p/a.md", 3), ("p/a.md", 4)]
        assert answer(engram, {"tags": ["new"]}, today)[0] == [("p/a.md", 4)]
        (root / "p").rename(root / "q")
        engram.sync()
        assert answer(engram, {"status": "open"}, today)[0] == [("q/a.md", 3), ("q/a.md", 4)]
        (root / "q" / "a.md").unlink()
        engram.sync()
        assert answer(engram, {}, today)[0] == []
        assert engram.index.reader().execute("SELECT count(*) FROM task_tags").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"status": "later"}, "status"),
        ({"due_before": "2025-13-01"}, "not a valid calendar date"),
        ({"due_after": "next tuesday"}, "not a day"),
        ({"priority": ["urgent"]}, "not a priority"),
        ({"sort": "title"}, "sort"),
        ({"path": "../x"}, "leaves the vault"),
        ({"nope": 1}, "nope"),
    ],
)
def test_bad_requests_are_invalid_and_say_why(
    tmp_path: Path, request_: dict[str, Any], message: str
) -> None:
    from engram_ls.core.errors import EngramError

    (tmp_path / "v").mkdir()
    with Engram(tmp_path / "v", index_path=tmp_path / "i.sqlite") as engram:
        with pytest.raises(EngramError) as info:
            engram.tasks(request_)
        assert message in info.value.message
        assert isinstance(info.value, InvalidRequest) or info.value.code == "ENGRAM_OUTSIDE_VAULT"


def test_relative_days_are_from_the_day_asked(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    (root / "a.md").write_text(
        "- [ ] soon 📅 2025-01-12\n- [ ] later 📅 2025-01-30\n- [ ] past 📅 2025-01-01\n", "utf-8"
    )
    with Engram(root, index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        today = dt.date(2025, 1, 10)
        week = {"due_after": "yesterday", "due_before": "+1w"}
        assert answer(engram, week, today)[0] == [("a.md", 1)]
        assert answer(engram, {"due_before": "today"}, today)[0] == [("a.md", 3)]
        assert answer(engram, {"due_after": "+2w"}, today)[0] == [("a.md", 2)]


def test_a_task_with_a_tag_and_one_nested_under_it_counts_once(tmp_path: Path) -> None:
    """The count of a tag's tasks (read from the tags' index when the request asks for
    nothing else) counts a task with #a and #a/b once, open ones only when asked."""
    root = tmp_path / "v"
    root.mkdir()
    (root / "n.md").write_text(
        "- [ ] one #a #a/b\n- [ ] two #a\n- [x] three #a/c\n- [ ] four #ab\n- [ ] five #b\n",
        "utf-8",
    )
    today = dt.date(2025, 1, 1)
    with Engram(root, index_path=tmp_path / "i.sqlite") as engram:
        engram.sync()
        for request, total in [
            ({"tags": ["a"]}, 3),
            ({"tags": ["a"], "status": "open"}, 2),
            ({"tags": ["A", "b"]}, 4),
            ({"tags": ["ab"]}, 1),
        ]:
            page = engram.tasks({**request, "limit": 1, "offset": 1}, today=today)
            assert page["total"] == total, request

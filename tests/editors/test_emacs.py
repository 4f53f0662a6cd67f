"""Emacs with eglot and the real engram-ls, end to end, running docs/editors.md's snippets.

The Emacs section of docs/editors.md holds two ``elisp`` blocks: the configuration (eglot's
server program, completion on C-M-i in markdown-mode) and an ``engram/search`` through
``jsonrpc-request``. They are read from the doc here and run as written by
``tests/editors/emacs/e2e.el`` in ``emacs --batch`` (Debian's emacs-nox 28 with elpa-eglot 1.9
and elpa-markdown-mode: ``scripts/install_emacs.sh``), which writes what it saw to a JSON file
after every step; the tests assert on that file, so a failure names the step and its error.

Two runs: a copy of ``examples/vault`` that is a git repository (eglot's project root is the
vault), every step; and a copy that is not a repository, with ``.obsidian/`` at its top and
no ``.engram/``, where a note of a sub-folder is opened without a project (eglot's root is the
sub-folder): the whole vault must be indexed.
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

from tests.conftest import EXAMPLE, copy_tree, git
from tests.editors import needs

pytestmark = pytest.mark.slow  # a real editor end to end

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "editors.md"
DRIVER = Path(__file__).resolve().parent / "emacs" / "e2e.el"
RUN_TIMEOUT_S = 90
"""For one Emacs run; e2e.el waits with its own shorter timeouts and reports."""
NOTE = "projects/search-service.md"
SUBFOLDER_NOTE = "meetings/2025/2025-10-13 sqlite upgrade.md"


def emacs_snippets(doc: str) -> tuple[str, str]:
    """The ``elisp`` blocks of the doc's Emacs section: the configuration and the search."""
    section = re.search(r"^## Emacs\n(.*?)(?=^## )", doc, re.S | re.M)
    if section is None:
        raise AssertionError("docs/editors.md has no '## Emacs' section")
    blocks = re.findall(r"^```elisp\n(.*?)^```$", section[1], re.S | re.M)
    if len(blocks) != 2:
        raise AssertionError(f"expected 2 elisp blocks in the Emacs section, found {len(blocks)}")
    return blocks[0], blocks[1]


def server_bin() -> Path:
    """The folder holding this environment's ``engram-ls`` (put first on PATH, as a user's)."""
    folder = Path(sys.executable).parent
    if not (folder / "engram-ls").is_file():
        pytest.fail(f"no engram-ls next to {sys.executable}: run scripts/install.sh --dev")
    return folder


@pytest.fixture(scope="module")
def emacs() -> str:
    path = shutil.which("emacs")
    if path is None:
        needs.missing("emacs", "scripts/install_emacs.sh installs Debian's emacs-nox (as root)")
    probe = subprocess.run(
        [
            path,
            "--batch",
            "--eval",
            "(progn (package-initialize) (princ (if (and "
            '(locate-library "eglot") (locate-library "markdown-mode")) "ok" "missing")))',
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.stdout.strip() != "ok":
        needs.missing(
            "eglot or markdown-mode",
            "scripts/install_emacs.sh installs Debian's elpa-eglot and elpa-markdown-mode",
        )
    return path


def run_e2e(emacs: str, base: Path, vault: Path, note: str, mode: str) -> dict[str, Any]:
    setup, search = emacs_snippets(DOC.read_text("utf-8"))
    (base / "setup.el").write_text(setup, "utf-8")
    (base / "search.el").write_text(search, "utf-8")
    home = base / "home"
    home.mkdir()
    out = base / "results.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMACS", "ENGRAM_"))}
    env.update(
        HOME=str(home),
        LANG="C.UTF-8",  # as a user's terminal: file names with accents shown as they are
        PATH=f"{server_bin()}{os.pathsep}{os.environ.get('PATH', '')}",
        ENGRAM_E2E_SETUP=str(base / "setup.el"),
        ENGRAM_E2E_SEARCH=str(base / "search.el"),
        ENGRAM_E2E_VAULT=str(vault),
        ENGRAM_E2E_NOTE=note,
        ENGRAM_E2E_MODE=mode,
        ENGRAM_E2E_OUT=str(out),
    )
    argv = [emacs, "--batch", "-l", str(DRIVER)]
    try:
        proc = subprocess.run(
            argv,
            cwd=home,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
        )
        ended = f"exit status {proc.returncode}; stderr: {proc.stderr[-3000:]}"
    except subprocess.TimeoutExpired as exc:
        ended = f"timed out after {RUN_TIMEOUT_S} s; stderr: {exc.stderr!r}"
    results: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {"steps": {}}
    if not results.get("done"):
        failed = results.get("failed_step") or results.get("current")
        pytest.fail(
            f"Emacs e2e ({mode}) did not finish: failed step {failed!r}: {results.get('error')}\n"
            f"steps done: {list(results['steps'])}\nemacs: {ended}\n"
            f"eglot's events:\n{results.get('events', '(none)')}"
        )
    return results


@pytest.fixture(scope="module")
def full(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every step, in a copy of the example vault that is a git repository."""
    base = tmp_path_factory.mktemp("emacs-e2e")
    if shutil.which("git") is None:
        needs.missing("git", "the vault is a git repository, as a project eglot finds")
    vault = copy_tree(EXAMPLE, base / "vault")
    git(vault, "init", "-q")
    results = run_e2e(emacs, base, vault, NOTE, "full")
    results["vault"] = vault.resolve()
    return results


@pytest.fixture(scope="module")
def subfolder(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A note of a sub-folder, no project, a vault marked by .obsidian/ only."""
    base = tmp_path_factory.mktemp("emacs-e2e-subfolder")
    vault = copy_tree(EXAMPLE, base / "vault")
    shutil.rmtree(vault / ".engram")
    (vault / ".obsidian").mkdir()
    results = run_e2e(emacs, base, vault, SUBFOLDER_NOTE, "subfolder")
    results["vault"] = vault.resolve()
    return results


def step(results: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = results["steps"][name]
    return found


# -- the full run -----------------------------------------------------------------------------


def test_the_doc_snippet_configures_eglot_and_markdown_mode(full: dict[str, Any]) -> None:
    setup = step(full, "setup")
    assert setup["eglot_program"] == ["engram-ls", "--stdio"]
    assert setup["engram_ls"] == str(server_bin() / "engram-ls")
    attach = step(full, "attach")
    assert attach["major_mode"] == "markdown-mode"
    assert attach["c_m_i"] == "completion-at-point"  # the snippet's binding
    assert attach["tab"] == "markdown-cycle"  # why completion needs its own key


def test_m_x_eglot_serves_the_project_root_as_the_vault(full: dict[str, Any]) -> None:
    attach = step(full, "attach")
    assert attach["project_root"] == f"{full['vault']}/"
    assert attach["vaults"] == [str(full["vault"])]
    assert attach["notes"] == 31


def test_completion_in_frontmatter(full: dict[str, Any]) -> None:
    completion = step(full, "completion")
    assert completion["unique"] == "  - performance"  # C-M-i completed the only match
    assert {"memory", "meeting", "meta"} <= set(completion["candidates"])


def test_workspace_symbols_show_a_note_by_its_title_line(full: dict[str, Any]) -> None:
    xref = step(full, "symbols")["xref"]
    assert "reference/sqlite.md" in xref
    assert "title: SQLite field notes" in xref
    assert "---" not in xref.split("\n")[1:]  # no note shown by its frontmatter fence


def test_engram_search_through_jsonrpc_request(full: dict[str, Any]) -> None:
    search = step(full, "search")
    assert search["total"] == 5
    assert sorted(search["paths"]) == [
        "meetings/2024/2024-01-15 kickoff.md",
        "meetings/2024/2024-03-05 sqlite review.md",
        "meetings/2024/2024-11-04 perf sync.md",
        "projects/search-service.md",
        "reference/fts5.md",
    ]
    assert search["served_by"] == "index"


def test_go_to_definition_of_a_wiki_link(full: dict[str, Any]) -> None:
    definition = step(full, "definition")
    assert definition["file"] == "reference/sqlite.md"
    assert definition["text"] == "## Write-ahead log"


def test_references_list_backlinks(full: dict[str, Any]) -> None:
    xref = step(full, "references")["xref"]
    assert "projects/search-service.md" in xref
    assert "[[fts5]]" in xref


def test_diagnostics_through_flymake(full: dict[str, Any]) -> None:
    diagnostics = step(full, "diagnostics")
    assert diagnostics["flymake_mode"] is True
    (broken,) = diagnostics["broken"]
    assert broken["line"] == 7  # date: 2024-13-45
    assert "2024-13-45" in broken["text"]
    assert diagnostics["fixed"] == []


def test_a_save_is_seen_by_search(full: dict[str, Any]) -> None:
    save = step(full, "save")
    assert save["before"] == 0
    assert save["paths"] == [NOTE]
    assert "emacsbatchword" in (full["vault"] / NOTE).read_text("utf-8")


# -- a note in a sub-folder, no project ---------------------------------------------------------


def test_a_sub_folder_root_serves_the_whole_vault(subfolder: dict[str, Any]) -> None:
    attach = step(subfolder, "attach")
    note_folder = (subfolder["vault"] / SUBFOLDER_NOTE).parent
    assert attach["project_root"] == f"{note_folder}/"  # eglot sent the note's folder
    assert attach["vaults"] == [str(subfolder["vault"])]
    assert attach["notes"] == 31
    search = step(subfolder, "search_outside_the_folder")
    assert "reference/sqlite.md" in search["paths"]  # outside the note's folder
    assert search["folder_index"] is False
    assert not (note_folder / ".engram").exists()

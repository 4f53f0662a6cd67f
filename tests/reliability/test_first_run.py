"""A new user's first commands: no folder becomes a vault by accident, and reading commands
(``status``, ``topics``, ``search --no-sync``) never create or write an index.

``engram`` through ``main(argv)`` in this process (no process behaviour is under test: the
exit status, the message and the files on disk are the same), a real ``engram-mcp`` process, on
real folders; what is checked is what a user would see: the exit status, the message, and the
files on disk (names, sizes and mtimes).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import engram_in_process as engram_cli
from tests.reliability.helpers import PY

NO_VAULT = "no vault here"


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root`` (itself included) with its size and mtime."""
    out = {".": (0, root.stat().st_mtime_ns)}
    for path in root.rglob("*"):
        st = path.lstat()
        size = st.st_size if path.is_file() else 0
        out[path.relative_to(root).as_posix()] = (size, st.st_mtime_ns)
    return out


@pytest.fixture
def loose_folder(tmp_path: Path) -> Path:
    """A folder of notes with no ``.engram/`` or ``.obsidian/`` at or above it (like /tmp)."""
    folder = tmp_path / "downloads"
    (folder / "sub").mkdir(parents=True)
    (folder / "foo.md").write_text("---\ntopics: [x]\n---\n# Foo\n\nfoo bar\n", encoding="utf-8")
    (folder / "sub" / "other.md").write_text("# Other\n\nfoo\n", encoding="utf-8")
    marked = [d for d in folder.parents if (d / ".engram").is_dir() or (d / ".obsidian").is_dir()]
    if marked:
        pytest.skip(f"a folder above {folder} is marked as a vault; cannot test a loose folder")
    return folder


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["search", "foo"], id="search"),
        pytest.param(["search", "foo", "--no-sync"], id="search-no-sync"),
        pytest.param(["status"], id="status"),
        pytest.param(["topics"], id="topics"),
        pytest.param(["index"], id="index"),
        pytest.param(["librarian"], id="librarian"),
    ],
)
def test_a_folder_that_is_no_vault_is_refused(loose_folder: Path, args: list[str]) -> None:
    """Run from a folder with no vault marker above it, a command names the way out and
    writes nothing (it used to index the whole tree and make the folder a vault)."""
    before = _tree(loose_folder)
    proc = engram_cli(*args, cwd=loose_folder / "sub", env={"ENGRAM_VAULT": ""})
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert NO_VAULT in proc.stderr and "engram index DIR" in proc.stderr, proc.stderr
    assert "[ENGRAM_NOT_FOUND]" in proc.stderr
    assert proc.stdout == ""
    assert _tree(loose_folder) == before


def test_engram_mcp_refuses_a_folder_that_is_no_vault(loose_folder: Path) -> None:
    before = _tree(loose_folder)
    proc = subprocess.run(
        [PY, "-m", "engram_ls.mcp_server", "--no-watch"],
        cwd=loose_folder,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "ENGRAM_VAULT": ""},
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert NO_VAULT in proc.stderr and "[ENGRAM_NOT_FOUND]" in proc.stderr
    assert _tree(loose_folder) == before


@pytest.mark.parametrize("marker", [".engram", ".obsidian"])
def test_the_nearest_marked_folder_is_the_vault(loose_folder: Path, marker: str) -> None:
    (loose_folder / marker).mkdir()
    proc = engram_cli("search", "foo", "--json", cwd=loose_folder / "sub", env={"ENGRAM_VAULT": ""})
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["path"] for r in json.loads(proc.stdout)["results"]) == [
        "foo.md",
        "sub/other.md",
    ]


def test_an_explicit_folder_is_used_as_given_and_index_makes_it_a_vault(
    loose_folder: Path,
) -> None:
    sub = loose_folder / "sub"
    no_env = {"ENGRAM_VAULT": ""}
    proc = engram_cli("search", "foo", "--vault", str(sub), "--json", "--no-sync", env=no_env)
    assert proc.returncode == 0, proc.stderr
    assert [r["path"] for r in json.loads(proc.stdout)["results"]] == ["other.md"]
    proc = engram_cli(
        "search", "foo", "--json", "--no-sync", cwd=loose_folder, env={"ENGRAM_VAULT": str(sub)}
    )
    assert [r["path"] for r in json.loads(proc.stdout)["results"]] == ["other.md"]
    assert not (sub / ".engram").exists()

    proc = engram_cli("index", str(loose_folder), env={"ENGRAM_VAULT": ""})
    assert proc.returncode == 0, proc.stderr
    assert (loose_folder / ".engram").is_dir()
    proc = engram_cli("status", "--json", cwd=sub, env={"ENGRAM_VAULT": ""})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["vault"] == str(loose_folder.resolve())


READ_ONLY = [
    pytest.param(["status"], id="status"),
    pytest.param(["status", "--json", "--problems"], id="status-json"),
    pytest.param(["topics"], id="topics"),
    pytest.param(["topics", "--no-sync"], id="topics-no-sync"),
    pytest.param(["search", "foo", "--no-sync"], id="search-no-sync"),
    pytest.param(["search", "--tag", "x", "--no-sync", "--json"], id="search-tag-no-sync"),
]


@pytest.mark.parametrize("args", READ_ONLY)
def test_reading_commands_create_no_index(loose_folder: Path, args: list[str]) -> None:
    """A vault without an index: answered (empty state, or by scanning), nothing created."""
    (loose_folder / ".engram").mkdir()
    before = _tree(loose_folder)
    proc = engram_cli(*args, cwd=loose_folder, env={"ENGRAM_VAULT": ""})
    assert proc.returncode == 0, proc.stderr
    assert _tree(loose_folder) == before
    if args[0] == "status":
        assert "empty" in proc.stdout
    if args[0] == "search":
        assert "foo.md" in proc.stdout and "scan" in proc.stdout


@pytest.mark.parametrize("args", READ_ONLY)
def test_reading_commands_leave_an_index_untouched(loose_folder: Path, args: list[str]) -> None:
    """A built index, then a note changed: a reading command answers from the index as it is
    and changes no file (no -wal or -shm left beside it, no mtime moved)."""
    built = engram_cli("index", str(loose_folder))
    assert built.returncode == 0, built.stderr
    (loose_folder / "new.md").write_text("# New\n\nfoo\n", encoding="utf-8")
    before = _tree(loose_folder)
    proc = engram_cli(*args, cwd=loose_folder / "sub", env={"ENGRAM_VAULT": ""})
    assert proc.returncode == 0, proc.stderr
    assert _tree(loose_folder) == before
    if args[0] == "status":
        assert "ready" in proc.stdout
    if args[0] == "search":
        assert "served by index" in proc.stdout or '"served_by": "index"' in proc.stdout
        assert "new.md" not in proc.stdout  # the index as it is: not brought up to date


def test_status_reads_an_index_another_process_has_open(loose_folder: Path) -> None:
    """With a writer's -wal and -shm beside the index (a server running), status reads
    through them and adds no file."""
    assert engram_cli("index", str(loose_folder)).returncode == 0
    index = loose_folder / ".engram" / "index.sqlite"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('PRAGMA journal_mode=WAL'); c.execute('SELECT count(*) FROM notes')\n"
            "print('open', flush=True); time.sleep(60)",
            str(index),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        names = sorted(p.name for p in index.parent.iterdir())
        assert names == [".gitignore", "index.sqlite", "index.sqlite-shm", "index.sqlite-wal"]
        proc = engram_cli("status", "--json", cwd=loose_folder)
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout)
        assert data["state"] == "ready" and data["notes"] == 2
        assert sorted(p.name for p in index.parent.iterdir()) == names
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize(
    ("query", "sqlite_says"),
    [
        pytest.param('a"b', "unterminated string", id="unterminated-string"),
        pytest.param('"', "unterminated string", id="lone-quote"),
        pytest.param("NEAR(a b", "syntax error", id="near-unclosed"),
        pytest.param("*", "unknown special query", id="star-alone"),
        pytest.param("nope:foo", "no such column: nope", id="unknown-column"),
    ],
)
def test_raw_fts_syntax_errors_are_invalid_requests(
    loose_folder: Path, query: str, sqlite_says: str
) -> None:
    """On a ready index, a raw FTS5 query SQLite rejects is the caller's error, with SQLite's
    message (``a"b`` used to be ENGRAM_UNSUPPORTED_MODE, "need the index"), and the index is
    left as it was (an unknown column is no sign of damage)."""
    assert engram_cli("index", str(loose_folder)).returncode == 0
    names = sorted(_tree(loose_folder))
    status = engram_cli("status", "--json", str(loose_folder)).stdout
    for extra in ([], ["--no-sync"], ["--tag", "x"]):
        proc = engram_cli("search", query, "--raw-fts", "--vault", str(loose_folder), *extra)
        assert proc.returncode == 2, (extra, proc.stdout, proc.stderr)
        assert "[ENGRAM_INVALID_REQUEST]" in proc.stderr, proc.stderr
        assert sqlite_says in proc.stderr and "FTS5 query error" in proc.stderr
        assert proc.stdout == ""
    assert sorted(_tree(loose_folder)) == names  # nothing moved aside as damaged
    assert engram_cli("status", "--json", str(loose_folder)).stdout == status
    proc = engram_cli("search", "foo", "--raw-fts", "--vault", str(loose_folder), "--json")
    assert json.loads(proc.stdout)["index"]["served_by"] == "index"


PROCS_MJS = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "e2e" / "procs.mjs"


def test_vscode_e2e_finds_a_server_at_a_long_path_with_spaces(tmp_path: Path) -> None:
    """The VS Code end-to-end run finds engram-ls by its path among code-server's session; a
    clone at an ordinary path (long, with spaces) under ``COLUMNS=80`` (as pytest runs it)
    was never found, since ``ps`` cut its lines to 80 characters."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed (the VS Code tests need Node 20)")
    folder = tmp_path / "a long path with spaces" / "for the engram clone" / "engram" / ".venv"
    folder.mkdir(parents=True)
    server = folder / "bin" / "engram-ls"
    server.parent.mkdir()
    server.write_text("import time\ntime.sleep(60)\n", encoding="utf-8")
    assert len(str(server)) > 80
    # A stand-in for the server code-server starts: its own session, the path as an argument.
    proc = subprocess.Popen([sys.executable, str(server), "--stdio"], start_new_session=True)
    try:
        script = (
            f"import {{ sessionPids }} from {json.dumps(PROCS_MJS.as_uri())};"
            "const [sid, program] = process.argv.slice(1);"
            "console.log(JSON.stringify(sessionPids(Number(sid), program)));"
        )
        found = subprocess.run(
            ["node", "--input-type=module", "-e", script, str(proc.pid), str(server)],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "80"},
            timeout=30,
        )
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout) == [proc.pid]
        other = subprocess.run(
            ["node", "--input-type=module", "-e", script, str(os.getpid()), str(server)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert json.loads(other.stdout) == []  # another session: not ours
    finally:
        proc.kill()
        proc.wait()


REPO = Path(__file__).resolve().parents[2]
VSCODE_E2E = f"{REPO}/tests/editors/test_vscode.py::test_end_to_end_in_code_server"
TOOLS = ["bash", "env", "dirname", "sha256sum", "cut", "cat", "dpkg", "dpkg-query", "id"]
TOOLS += ["mktemp", "cp", "mkdir", "tar", "rm", "touch", "gzip", "basename"]


def _stub(path: Path, body: str) -> None:
    path.write_text(f'#!/bin/sh\necho "$(basename "$0") $*" >> "$CALLS"\n{body}\n')
    path.chmod(0o755)


def _contributor_checkout(tmp_path: Path, with_node: bool = True) -> tuple[Path, Path]:
    """A copy of scripts/test.sh and its installers in a checkout whose installers, linters
    and pytest are stubs that log their calls, on a PATH with no chromium and no C++ toolchain
    (apt-get is there, logging: it must not be called)."""
    repo = tmp_path / "checkout"
    (repo / "scripts").mkdir(parents=True)
    for name in ("test.sh", "install_vscode.sh", "install_inspector.sh", "install_emacs.sh"):
        (repo / "scripts" / name).write_bytes((REPO / "scripts" / name).read_bytes())
        (repo / "scripts" / name).chmod(0o755)
    _stub(repo / "scripts" / "install.sh", "exit 0")
    (repo / ".venv" / "bin").mkdir(parents=True)
    for name in ("ruff", "mypy", "pytest"):
        _stub(repo / ".venv" / "bin" / name, "exit 0")
    (repo / "editors" / "vscode").mkdir(parents=True)
    (repo / "editors" / "vscode" / "package-lock.json").write_text("{}\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    _stub(bin_dir / "apt-get", "exit 100")
    if with_node:
        _stub(bin_dir / "node", "exit 0")
        _stub(bin_dir / "npm", "mkdir -p node_modules; exit 0")
    return repo, bin_dir


def _run_test_sh(
    tmp_path: Path, ci: str | None, with_node: bool = True
) -> tuple[subprocess.CompletedProcess[str], str]:
    repo, bin_dir = _contributor_checkout(tmp_path, with_node)
    calls = tmp_path / "calls.log"
    calls.touch()
    env = {"PATH": str(bin_dir), "CALLS": str(calls), "ENGRAM_TEST_NOT_ROOT": "1", "HOME": "/"}
    if ci is not None:
        env["CI"] = ci
    proc = subprocess.run(
        [str(repo / "scripts" / "test.sh"), "-k", "x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return proc, calls.read_text()


def test_test_sh_without_root_skips_the_editor_tools_and_runs_the_rest(tmp_path: Path) -> None:
    """A contributor without root, apt, Chromium or a C++ toolchain: test.sh says what it skips
    and why, never calls apt-get, and runs the linters and pytest (it used to stop in
    install_vscode.sh, at apt-get)."""
    proc, calls = _run_test_sh(tmp_path, ci=None)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "skipped chromium" in out and "needs root and apt-get" in out, out
    assert "skipped code-server" in out and "build-essential" in out, out
    assert "apt-get" not in calls
    assert "npm ci" in calls  # the node unit tests' packages are still installed
    assert "pytest -q -rs -p no:cacheprovider -k x" in calls and "ruff check ." in calls
    assert "mypy" in calls


def test_test_sh_without_node_runs_the_rest(tmp_path: Path) -> None:
    proc, calls = _run_test_sh(tmp_path, ci=None, with_node=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "node and npm (Node 20) are not installed" in out
    assert "pytest -q -rs" in calls and "apt-get" not in calls


@pytest.mark.parametrize("ci", ["true", "1"])
def test_test_sh_under_ci_fails_loudly_when_an_editor_tool_is_missing(
    tmp_path: Path, ci: str
) -> None:
    proc, calls = _run_test_sh(tmp_path, ci=ci)
    assert proc.returncode != 0
    assert "error: cannot install chromium" in proc.stderr, proc.stdout + proc.stderr
    assert "CI=true" in proc.stderr
    assert "pytest" not in calls and "apt-get" not in calls


@pytest.mark.slow  # runs the VS Code end-to-end test module in an inner pytest
@pytest.mark.parametrize(("ci", "outcome"), [(None, "1 skipped"), ("true", "1 error")])
def test_editor_e2e_test_without_chromium_skips_or_fails_under_ci(
    tmp_path: Path, ci: str | None, outcome: str
) -> None:
    """The VS Code end-to-end test on a machine without Chromium: skipped with the reason on a
    contributor's machine (it used to fail), a failure under CI=true."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("node", "npm"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = str(bin_dir)
    if ci is not None:
        env["CI"] = ci
    proc = subprocess.run(
        [PY, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-n", "0", VSCODE_E2E],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    assert outcome in proc.stdout, proc.stdout[-3000:]
    assert "is missing" in proc.stdout and "scripts/install_vscode.sh" in proc.stdout

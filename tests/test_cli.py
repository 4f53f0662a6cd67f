"""The ``engram`` command over real files, with real exit codes: through ``main(argv)`` in this
process where no process behaviour is under test; as a real process for the entry point's exit
status, a terminal's progress bar and a quiet stderr when piped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engram_ls.cli import build_parser
from tests.conftest import engram_in_process


def engram(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``engram ARGS`` in this process (no process behaviour is under test where it is used)."""
    return engram_in_process(*args, cwd=cwd, env=env)


def engram_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m engram_ls ARGS``: the real entry point in its own process."""
    return subprocess.run(
        [sys.executable, "-m", "engram_ls", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def search_json(root: Path, *args: str) -> dict[str, Any]:
    proc = engram("search", "--vault", str(root), "--json", *args)
    assert proc.returncode == 0, proc.stderr
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


def test_index_search_status_topics(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    proc = engram("index", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "31 notes" in proc.stdout

    data = search_json(root, "write-ahead log")
    assert set(data) == {"results", "total", "truncated", "index", "elapsed_ms"}
    assert data["index"]["served_by"] == "index" and data["index"]["state"] == "ready"
    hit = data["results"][0]
    assert set(hit) == {"path", "uri", "title", "created_at", "topics", "score", "snippet", "line"}

    data = search_json(root, "--tag", "sqlite", "--from", "2024-01-01", "--to", "2024-12-31")
    assert data["total"] == 5
    assert all("2024-01-01" <= r["created_at"] <= "2024-12-31" for r in data["results"])

    human = engram("search", "fts5", "--vault", str(root))
    assert human.returncode == 0 and "reference/fts5.md:" in human.stdout

    st = engram("status", str(root), "--json")
    status = json.loads(st.stdout)
    assert status["state"] == "ready" and status["notes"] == 31 and status["problems"] >= 2

    problems = engram("status", str(root), "--problems")
    assert (
        "projects/indexer-rewrite.md" in problems.stdout
        and "templates/meeting.md" in problems.stdout
    )

    topics = json.loads(engram("topics", str(root), "--json").stdout)
    assert topics[0] == {"name": "sqlite", "notes": 9, "nested": 9}


def test_exclude_tag_with_leading_dash(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    data = search_json(root, "--tag", "memory", "--tag", "-python")
    assert sorted(Path(r["path"]).stem[0] for r in data["results"]) == ["a", "b"]


def test_search_builds_index_first(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    assert not (root / ".engram" / "index.sqlite").exists()
    data = search_json(root, "--tag", "python")
    assert data["total"] == 3 and data["index"]["served_by"] == "index"


def test_vault_from_env_and_cwd(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    proc = engram("search", "--json", "--tag", "python", env={"ENGRAM_VAULT": str(root)})
    assert json.loads(proc.stdout)["total"] == 3
    engram("index", str(root))
    proc = engram("search", "--json", "--tag", "python", cwd=root / ".engram")
    assert json.loads(proc.stdout)["total"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--from", "2024-02-30"], "--from 2024-02-30 is not a date", id="bad-date"),
        pytest.param(["x", "--path", "../.."], "ENGRAM_OUTSIDE_VAULT", id="traversal"),
        pytest.param(["(", "--mode", "regex"], "regular expression", id="bad-regex"),
        pytest.param(["x" * 5000], "ENGRAM_LIMIT", id="long-query"),
        pytest.param([], "ENGRAM_INVALID_REQUEST", id="nothing"),
        pytest.param(["-e"], "unrecognized arguments", id="flag-like"),
        pytest.param(["x", "--limit", "abc"], "--limit abc is not a whole", id="not-a-number"),
    ],
)
def test_bad_input_exits_2_with_clear_message(
    vault_copy: Callable[[str], Path], args: list[str], message: str
) -> None:
    root = vault_copy("hostile")
    proc = engram("search", "--vault", str(root), *args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert proc.stdout == ""


def test_flag_like_query_after_double_dash(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("hostile")
    data = search_json(root, "--mode", "literal", "--", "--pre=sh")
    assert [Path(r["path"]).name for r in data["results"]] == ["--pre=sh.md"]


def test_missing_vault(tmp_path: Path) -> None:
    proc = engram_process("index", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "ENGRAM_NOT_FOUND" in proc.stderr


def test_every_command_is_documented() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():  # type: ignore[union-attr]
        assert f"engram {name}" in docs, f"docs/cli.md does not document `engram {name}`"
        for action in p._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and opt != "--help":
                    assert opt in docs, f"docs/cli.md does not mention {opt} of `engram {name}`"


def test_progress_bar_on_a_terminal(generated: Callable[..., Path]) -> None:
    import pty

    root = generated(600)
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram_ls", "index", str(root)],
        stdout=subprocess.PIPE,
        stderr=secondary,
        text=True,
    )
    os.close(secondary)
    out, _ = proc.communicate(timeout=120)
    seen = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(primary)
    assert proc.returncode == 0
    assert b"indexing [" in seen and b"600/600" in seen
    assert "600 notes" in out


def test_no_progress_bar_when_piped(generated: Callable[..., Path]) -> None:
    root = generated(600)
    proc = engram_process("index", str(root))
    assert proc.returncode == 0 and proc.stderr == ""


def test_bare_engram_prints_help() -> None:
    proc = engram_process()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: engram") and "search" in proc.stdout
    assert proc.stderr == ""


def test_one_note_is_said_in_the_singular(tmp_path: Path) -> None:
    (tmp_path / "only.md").write_text("---\ndate: 2024-13-45\n---\n# Only\n", "utf-8")
    proc = engram("index", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert ": 1 note, 0 topics (" in proc.stdout
    assert "1 note has problems" in proc.stdout


def test_status_names_an_index_moved_aside_for_its_version(
    vault_copy: Callable[[str], Path],
) -> None:
    """An index of another schema version is moved aside and rebuilt; status says so in plain
    words (it printed "(version: None)")."""
    import sqlite3

    from engram_ls.core.index.schema import SCHEMA_VERSION

    root = vault_copy("tags")
    assert engram_in_process("index", str(root)).returncode == 0
    conn = sqlite3.connect(root / ".engram" / "index.sqlite")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    conn.close()
    assert engram_in_process("index", str(root)).returncode == 0
    out = engram_in_process("status", str(root)).stdout
    (line,) = [x for x in out.splitlines() if x.startswith("moved aside: ")]
    assert line.endswith("(version)") and ".version-" in line, line

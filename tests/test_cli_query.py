"""``engram query`` on the example vault's ``.base`` file and the fixture vault's: the
Markdown table (groups and summaries), CSV, JSON, a note's block, standard input, the vault
found from the file, and an unsupported construct as exit status 2 naming it."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import engram_in_process
from tests.test_cli import engram_process


def test_query_prints_a_table_csv_and_json(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    (root / ".engram").mkdir(exist_ok=True)
    base = root / "bases" / "work.base"
    proc = engram_in_process("query", str(base), "--view", "By status")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "| file.name | Status | rating |"
    assert "| **done** |  |  |" in lines
    assert "|  |  | Average: 4.25 |" in lines
    assert lines[-1].startswith("By status: 4 of 4 notes; served by index")
    proc = engram_in_process("query", str(base), "--csv")
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    assert rows[0] == ["path", "file.name", "Status", "priority", "due", "formula.overdue"]
    assert rows[1][:3] == ["projects/lsp-server.md", "lsp-server.md", "doing"]
    proc = engram_in_process("query", str(base), "--view", "Rated", "--json")
    out = json.loads(proc.stdout)
    assert out["rows"][0]["values"]["formula.label"] == "DONE · lsp-basics"
    assert out["base"] == "bases/work.base" and out["index"]["served_by"] == "index"


def test_query_a_block_stdin_and_errors(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("bases")
    (root / ".engram").mkdir(exist_ok=True)
    proc = engram_process("query", str(root / "dashboard.md"), "--block", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["path"] for r in json.loads(proc.stdout)["rows"]] == [
        "reading/Textbook.md",
        "reading/book-one.md",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "engram_ls", "query", "-", "--vault", str(root), "--json"],
        input="filters: 'price > 10'\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert [r["path"] for r in json.loads(proc.stdout)["rows"]] == ["projects/alpha.md"]
    proc = engram_process("query", str(root / "broken.base"))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "'this' (the base file itself) is not supported (line 4, column 28)" in proc.stderr
    assert "ENGRAM_INVALID_REQUEST" in proc.stderr


def test_query_takes_the_vault_from_the_environment_before_the_file(
    vault_copy: Callable[[str], Path],
) -> None:
    """As every command: --vault, else $ENGRAM_VAULT, else the vault the file is in."""
    example, bases = vault_copy("example"), vault_copy("bases")
    (bases / ".engram").mkdir(exist_ok=True)
    proc = engram_in_process(
        "query", str(bases / "projects.base"), "--json", env={"ENGRAM_VAULT": str(example)}
    )
    assert proc.returncode == 2 and "ENGRAM_OUTSIDE_VAULT" in proc.stderr
    proc = engram_in_process(
        "query", str(bases / "projects.base"), "--json", env={"ENGRAM_VAULT": None}
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["total"] == 3

"""``engram search --require-index / --max-staleness-ms`` and the source revision in ``engram
status`` and ``engram search --json`` (issue 15, item 4), over real vaults, real index files
and a real git repository."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import engram_in_process

GitVault = Callable[..., tuple[Path, str]]


def _age_index(root: Path) -> None:
    with sqlite3.connect(root / ".engram" / "index.sqlite") as conn:
        conn.execute("UPDATE meta SET value = '2020-01-01T00:00:00Z' WHERE key = 'updated_at'")


def test_require_index_without_an_index_exits_2(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    scanned = engram_in_process("search", "--vault", str(root), "--no-sync", "-t", "memory")
    assert scanned.returncode == 0 and "served by scan" in scanned.stdout
    r = engram_in_process(
        "search", "--vault", str(root), "--no-sync", "--require-index", "-t", "memory"
    )
    assert r.returncode == 2 and r.stdout == ""
    assert "[ENGRAM_INDEX_STALE]" in r.stderr and "require_index" in r.stderr
    assert "answering by scanning" not in r.stderr  # it does not
    assert not (root / ".engram" / "index.sqlite").exists()


def test_require_index_with_an_index_that_cannot_be_made(
    vault_copy: Callable[[str], Path], unmakeable_index: Path
) -> None:
    root = vault_copy("tags")
    idx = str(unmakeable_index)
    r = engram_in_process("search", "--vault", str(root), "--index", idx, "--require-index", "x")
    assert r.returncode == 2 and "[ENGRAM_INDEX_STALE]" in r.stderr
    ok = engram_in_process("search", "--vault", str(root), "--index", idx, "memory")
    assert ok.returncode == 0 and "served by scan" in ok.stdout


def test_max_staleness_with_and_without_sync(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    assert engram_in_process("index", str(root)).returncode == 0
    _age_index(root)  # as if the index had last changed long ago
    args = ["search", "--vault", str(root), "memory", "--max-staleness-ms", "60000"]
    stale = engram_in_process(*args, "--no-sync")
    assert stale.returncode == 2 and "[ENGRAM_INDEX_STALE]" in stale.stderr
    assert "60000 ms" in stale.stderr
    plain = engram_in_process("search", "--vault", str(root), "memory", "--no-sync", "--json")
    assert plain.returncode == 0 and json.loads(plain.stdout)["index"]["served_by"] == "index"
    synced = engram_in_process(*args, "--json")  # syncs first: in line with the files now
    assert synced.returncode == 0
    assert json.loads(synced.stdout)["total"] > 0
    bad = engram_in_process(*args[:-1], "-1")
    assert bad.returncode == 2 and "ENGRAM_INVALID_REQUEST" in bad.stderr


def test_status_and_search_show_the_git_revision(git_vault: GitVault) -> None:
    root, head = git_vault(dirty=True)
    assert engram_in_process("index", str(root)).returncode == 0
    st = engram_in_process("status", str(root), "--json")
    assert json.loads(st.stdout)["source_revision"] == {"commit": head, "dirty": True}
    text = engram_in_process("status", str(root))
    assert f"revision:   {head} (uncommitted changes)" in text.stdout
    found = engram_in_process("search", "--vault", str(root), "hello", "--json")
    assert json.loads(found.stdout)["index"]["source_revision"] == {"commit": head, "dirty": True}


def test_the_real_process_answers_stale_with_exit_2(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    argv = ["search", "--vault", str(root), "--no-sync", "--require-index", "memory"]
    r = subprocess.run(
        [sys.executable, "-m", "engram_ls", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 2 and r.stdout == "" and "[ENGRAM_INDEX_STALE]" in r.stderr

"""The librarian's entry points with a FIFO or a device where a note was (issue 14 item 3):
``engram librarian`` as a real process, and a note swapped for a FIFO between the walk and the
read. The librarian reads through the vault's one reader, so nothing hangs and nothing but
the notes it edits changes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.config import EngramConfig
from engram_ls.core.librarian import Librarian, LibrarianReport
from tests.reliability.test_special_files import SPECIALS, TIMEOUT


def _is_special(path: Path) -> bool:
    mode = os.lstat(path).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


@pytest.mark.parametrize("make", SPECIALS)
def test_cli_librarian_passes_over_a_special_file(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    root = tmp_path / "vault"
    (root / ".engram").mkdir(parents=True)
    (root / ".engram" / "config.yaml").write_text("keyword_topics:\n  sqlite: databases\n")
    (root / "db.md").write_text("---\ntags: [storage]\n---\nsqlite notes\n", encoding="utf-8")
    make(root / "x.md")
    proc = subprocess.run(
        [sys.executable, "-m", "engram_ls", "librarian", str(root), "--apply", "--json"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT * 3,
        env={k: v for k, v in os.environ.items() if k not in ("ENGRAM_VAULT", "ENGRAM_INDEX")},
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [(n["path"], n["status"]) for n in report["notes"]] == [("db.md", "applied")]
    assert "tags: [storage, databases]" in (root / "db.md").read_text(encoding="utf-8")
    assert _is_special(root / "x.md")


def test_a_note_swapped_for_a_fifo_after_the_walk_fails_alone(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("sqlite a\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("sqlite b\n", encoding="utf-8")
    (tmp_path / "c.md").write_text("sqlite c\n", encoding="utf-8")

    def swap(rel: str) -> None:
        if rel == "a.md":  # b.md was walked as a note; now it is a FIFO
            (tmp_path / "b.md").unlink()
            os.mkfifo(tmp_path / "b.md")

    config = EngramConfig(keyword_topics={"sqlite": "databases"})
    librarian = Librarian(tmp_path, config, before_write=swap)
    reports: list[LibrarianReport] = []
    worker = threading.Thread(target=lambda: reports.append(librarian.run(apply=True)), daemon=True)
    worker.start()
    worker.join(TIMEOUT)
    assert not worker.is_alive(), "the librarian hung on a FIFO"
    statuses = {n.path: n.status for n in reports[0].notes}
    assert statuses == {"a.md": "applied", "b.md": "failed", "c.md": "applied"}
    assert _is_special(tmp_path / "b.md")
    assert (tmp_path / "c.md").read_text(encoding="utf-8").startswith("---\ntopics: [databases]")

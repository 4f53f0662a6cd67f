"""``engram librarian`` over real files, through ``main(argv)`` in this process."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.config import load_config
from engram_ls.core.librarian import Librarian
from engram_ls.core.parse import parse_note
from tests.conftest import REAL_VAULT, engram_in_process
from tests.reliability.oracle import snapshot

KEYWORDS = """\
keyword_topics:
  sqlite: databases
  postgres: databases
  machine learning: ml
  "re:\\\\bLLMs?\\\\b": llm
"""


def engram(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``engram ARGS`` in this process (``main(argv)``), without a vault from the environment."""
    return engram_in_process(*args, cwd=cwd, env={"ENGRAM_VAULT": None, "ENGRAM_INDEX": None})


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / ".engram").mkdir(parents=True)
    (root / ".engram" / "config.yaml").write_text(KEYWORDS, encoding="utf-8")
    (root / "db.md").write_bytes(
        b"---\r\ntitle: WAL in SQLite\r\ntags: [storage]  # keep\r\n---\r\nPostgres too.\r\n"
    )
    (root / "area").mkdir()
    (root / "area" / "ml.md").write_text(
        "# Notes\n\nMachine learning with LLMs.\n", encoding="utf-8"
    )
    (root / "area" / "plain.md").write_text(
        "---\ntags:\n  - misc # why\n---\nnothing to see\n", encoding="utf-8"
    )
    (root / "broken.md").write_text("---\ntags: [a\n---\nsqlite\n", encoding="utf-8")
    return root


def test_dry_run_apply_rerun(vault: Path) -> None:
    before = snapshot(vault)
    dry = engram("librarian", str(vault))
    assert dry.returncode == 1, dry.stderr  # broken.md cannot be edited
    assert snapshot(vault) == before
    assert "db.md: +databases\n" in dry.stdout
    assert "area/ml.md: +ml, +llm\n" in dry.stdout
    assert "would add 3 topics to 2 notes (4 notes scanned, 1 unchanged)" in dry.stdout
    assert "failed broken.md: cannot edit the topics safely" in dry.stderr

    applied = engram("librarian", str(vault), "--apply", "--json")
    assert applied.returncode == 1, applied.stderr
    report = json.loads(applied.stdout)
    assert report["counts"]["applied"] == 2 and report["counts"]["failed"] == 1
    assert report["topics_added"] == 3 and report["apply"] is True
    assert (vault / "db.md").read_bytes() == (
        b"---\r\ntitle: WAL in SQLite\r\ntags: [storage, databases]  # keep\r\n---\r\n"
        b"Postgres too.\r\n"
    )
    assert (vault / "area" / "ml.md").read_text(encoding="utf-8") == (
        "---\ntopics: [ml, llm]\n---\n# Notes\n\nMachine learning with LLMs.\n"
    )
    after = snapshot(vault)
    assert {k for k in after if after[k] != before[k]} == {"db.md", "area/ml.md"}

    again = engram("librarian", str(vault), "--apply")
    assert "added 0 topics to 0 notes" in again.stdout
    assert snapshot(vault) == after


def test_quarantine(vault: Path) -> None:
    (vault / "broken.md").unlink()
    (vault / "area" / "latin1.md").write_bytes(b"caf\xe9 sqlite\n")
    (vault / "blob.md").write_bytes(b"\x00\x01\x02sqlite")
    without = engram("librarian", str(vault))
    assert without.returncode == 1
    assert "failed area/latin1.md: the file is not valid UTF-8" in without.stderr

    dry = engram("librarian", str(vault), "--quarantine", ".engram/quarantine")
    assert dry.returncode == 0, dry.stderr
    assert "area/latin1.md: would move to .engram/quarantine/area/latin1.md" in dry.stdout
    assert (vault / "area" / "latin1.md").exists()

    (vault / ".engram" / "quarantine").mkdir()
    (vault / ".engram" / "quarantine" / "blob.md").write_bytes(b"an earlier one")
    run = engram("librarian", str(vault), "--apply", "--quarantine", ".engram/quarantine")
    assert run.returncode == 0, run.stderr
    q = vault / ".engram" / "quarantine"
    assert not (vault / "area" / "latin1.md").exists() and not (vault / "blob.md").exists()
    assert (q / "area" / "latin1.md").read_bytes() == b"caf\xe9 sqlite\n"
    assert (q / "blob.1.md").read_bytes() == b"\x00\x01\x02sqlite"
    assert (q / "blob.md").read_bytes() == b"an earlier one"
    log = [json.loads(line) for line in (q / "quarantine.log.jsonl").read_text().splitlines()]
    assert [(e["from"], e["to"], e["reason"]) for e in log] == [
        ("area/latin1.md", ".engram/quarantine/area/latin1.md", "invalid-utf8"),
        ("blob.md", ".engram/quarantine/blob.1.md", "binary"),
    ]
    assert "moved 2 to .engram/quarantine" in run.stdout
    # the quarantine folder is not indexed
    index = engram("index", str(vault), "--json")
    assert index.returncode == 0, index.stderr
    assert json.loads(index.stdout)["status"]["notes"] == 3


@pytest.mark.parametrize(
    ("folder", "message"),
    [
        ("../outside", "ENGRAM_OUTSIDE_VAULT"),
        ("attic", "would be indexed"),
        (".", "cannot be the vault root"),
    ],
)
def test_quarantine_folder_refused(vault: Path, folder: str, message: str) -> None:
    before = snapshot(vault)
    proc = engram("librarian", str(vault), "--apply", "--quarantine", folder)
    assert proc.returncode == 2 and message in proc.stderr
    assert snapshot(vault) == before


def test_excluded_quarantine_folder_is_accepted(vault: Path) -> None:
    (vault / ".engram" / "config.yaml").write_text(
        KEYWORDS + 'exclude: ["attic/**"]\n', encoding="utf-8"
    )
    (vault / "bad.md").write_bytes(b"\xff")
    proc = engram("librarian", str(vault), "--apply", "--quarantine", "attic")
    assert (vault / "attic" / "bad.md").read_bytes() == b"\xff", proc.stderr


def test_bad_regex_is_an_error(vault: Path) -> None:
    (vault / ".engram" / "config.yaml").write_text(
        'keyword_topics: {"re:(unclosed": x}\n', encoding="utf-8"
    )
    proc = engram("librarian", str(vault), "--apply")
    assert proc.returncode == 2
    assert "not a valid regular expression" in proc.stderr and "ENGRAM_INVALID_REQUEST" in (
        proc.stderr
    )


def test_apply_reindexes_an_existing_index(vault: Path) -> None:
    (vault / "broken.md").unlink()
    assert engram("index", str(vault)).returncode == 0
    proc = engram("librarian", str(vault), "--apply", "--json")
    assert json.loads(proc.stdout)["reindexed"] is True
    found = engram("search", "--vault", str(vault), "--tag", "llm", "--no-sync", "--json")
    assert [r["path"] for r in json.loads(found.stdout)["results"]] == ["area/ml.md"]


# --- the real vault ------------------------------------------------------------------------

REAL_KEYWORDS = """\
keyword_topics:
  golang: go
  database: database
  kubernetes: kubernetes
  machine learning: machine-learning
  design system: design system
  "c++": "c++"
  "re:\\\\bLLMs?\\\\b": llm
  "re:\\\\bAI\\\\b": ai
  "re:(?i)blockchain|web3": "web3, crypto"
"""

_TOPIC_KEY_RE = re.compile(r"(?:topics|tags|tag)[ \t]*:", re.IGNORECASE)


def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8").removeprefix("\ufeff")
    pieces = text.split("\n")
    return [p + "\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])


def _closing_fence(lines: list[str]) -> int | None:
    if not lines or lines[0].rstrip("\r\n").rstrip(" \t") != "---":
        return None
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip(" \t") in ("---", "..."):
            return i
    return None


def assert_only_topic_entry_changed(rel: str, old: bytes, new: bytes) -> None:
    """An independent check: the lines that differ are the topic key line and its items."""
    assert old.startswith(b"\xef\xbb\xbf") == new.startswith(b"\xef\xbb\xbf"), rel
    a, b = _lines(old), _lines(new)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    removed, added = a[head : len(a) - tail], b[head : len(b) - tail]
    close = _closing_fence(a)
    if close is None:  # a frontmatter block was put in front
        assert head == 0 and not removed, rel
        assert added[0] == "---\n" and added[-1] == "---\n", rel
        assert len(added) == 3 and _TOPIC_KEY_RE.match(added[1]), rel
        return
    assert head >= 1 and len(a) - tail <= close, f"{rel}: change outside the frontmatter"

    def continuation(line: str) -> bool:
        return line[:1] in (" ", "\t", "-") or line.lstrip().startswith("#")

    for line in removed + added:
        assert _TOPIC_KEY_RE.match(line) or continuation(line), f"{rel}: changed {line!r}"
    if any(not _TOPIC_KEY_RE.match(line) for line in removed + added):
        owner = head - 1 if not removed or not _TOPIC_KEY_RE.match(removed[0]) else head
        while owner > 0 and not _TOPIC_KEY_RE.match(a[owner]) and continuation(a[owner]):
            owner -= 1
        assert _TOPIC_KEY_RE.match(a[owner]), f"{rel}: items changed outside the topic entry"


@pytest.mark.slow  # the librarian applied to every note of the real vault, then compared
def test_real_vault_apply_changes_only_topic_entries(
    vault_copy: Callable[[str], Path],
) -> None:
    root = vault_copy("real")
    (root / ".engram").mkdir(exist_ok=True)
    (root / ".engram" / "config.yaml").write_text(REAL_KEYWORDS, encoding="utf-8")
    before = snapshot(root)
    dry = Librarian(root).run()  # in process: the command itself is run for --apply below
    assert snapshot(root) == before
    planned = {n.path: list(n.topics) for n in dry.notes if n.status == "planned"}
    assert len(planned) > 50

    proc = engram("librarian", str(root), "--apply", "--json")
    assert proc.returncode in (0, 1), proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    applied = {n["path"]: n["topics"] for n in report["notes"] if n["status"] == "applied"}
    assert applied == planned
    assert report["counts"]["skipped-changed"] == 0

    after = snapshot(root)
    assert after.keys() == before.keys()
    config, _ = load_config(root)
    for rel, old in before.items():
        new = after[rel]
        if rel not in applied:
            assert new == old, f"{rel} changed but was not reported"
            continue
        assert_only_topic_entry_changed(rel, old, new)
        old_note = parse_note(rel, old, config)
        new_note = parse_note(rel, new, config)
        gained = [t.casefold() for t in applied[rel]]
        old_keys = [t.casefold() for t in old_note.topics]
        assert sorted(t.casefold() for t in new_note.topics) == sorted(old_keys + gained), rel
        assert new_note.body == old_note.body and new_note.title == old_note.title, rel
        assert new_note.created_at == old_note.created_at, rel
        assert [p.code for p in new_note.problems] == [p.code for p in old_note.problems], rel

    assert Librarian(root).run().counts["planned"] == 0
    assert snapshot(root) == after
    assert REAL_VAULT.is_dir()  # the shared vault itself was only read

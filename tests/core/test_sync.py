"""Building, reconciling and applying change batches, against real SQLite files."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.index.schema import SCHEMA_VERSION
from engram_ls.core.service import Engram
from engram_ls.core.sync import Change
from tests.reliability.oracle import contents as dump  # what an index says, by path
from tests.reliability.oracle import fresh as fresh_dump  # the same for a fresh build


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def note(title: str, tags: str = "[a]", date: str = "2024-01-01", body: str = "") -> str:
    return f"---\ntitle: {title}\ntags: {tags}\ndate: {date}\n---\n# {title}\n\n{body}\n"


def test_cold_build_then_warm_noop(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    with Engram(root) as engram:
        assert engram.status().state == "empty"
        report = engram.sync()
        st = engram.status()
        assert st.state == "ready" and st.notes == report.parsed == report.scanned
        gen = st.generation
        again = engram.sync()
        assert again.parsed == 0 and again.unchanged == st.notes
        assert engram.status().generation == gen  # nothing committed


def test_reconcile_changed_touched_deleted_created(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    root = vault_copy("tags")
    with Engram(root) as engram:
        engram.sync()
        gen = engram.status().generation
        write(root / "new.md", note("New", "[fresh]"))
        (root / "e-python.md").unlink()
        p = root / "a-memory-upper.md"
        os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10_000_000))  # touch only
        q = root / "b-memory-lower.md"
        write(q, q.read_text(encoding="utf-8") + "\nextra words zebra\n")
        report = engram.sync()
        assert (report.parsed, report.touched, report.removed) == (2, 1, 1)
        assert engram.status().generation > gen
        assert [h.path for h in engram.search({"query": "zebra"}).results] == ["b-memory-lower.md"]
        assert engram.search({"tags": ["fresh"]}).total == 1
        assert engram.search({"tags": ["python"]}).total == 2
    assert dump(root / ".engram" / "index.sqlite") == fresh_dump(root, tmp_path)


def test_apply_changes_file_events(vault_copy: Callable[[str], Path], tmp_path: Path) -> None:
    root = vault_copy("tags")
    with Engram(root) as engram:
        engram.sync()
        write(root / "saved.md", note("Saved", "[kiwi]", body="banana split"))
        r = engram.apply_changes([Change("created", "saved.md")])
        assert r.parsed == 1
        assert [h.path for h in engram.search({"query": "banana"}).results] == ["saved.md"]

        write(root / "saved.md", note("Saved", "[kiwi, mango]", body="cherry pie"))
        engram.apply_changes([Change("changed", str(root / "saved.md"))])  # absolute path works
        assert engram.search({"query": "banana"}).total == 0
        assert engram.search({"tags": ["mango"]}).total == 1

        os.rename(root / "saved.md", root / "sub" / "moved.md") if (
            root / "sub"
        ).mkdir() is None else None
        r = engram.apply_changes([Change("renamed", "saved.md", "sub/moved.md")])
        assert r.moved == 1
        assert [h.path for h in engram.search({"query": "cherry"}).results] == ["sub/moved.md"]

        (root / "sub" / "moved.md").unlink()
        r = engram.apply_changes([Change("deleted", "sub/moved.md")])
        assert r.removed == 1
        assert engram.search({"tags": ["kiwi"]}).total == 0
        assert all(t.name != "kiwi" for t in engram.topics())  # unused topics disappear

        # A watcher that reports a file that did not change: nothing re-parsed.
        r = engram.apply_changes([Change("changed", "a-memory-upper.md")])
        assert r.parsed == 0 and r.unchanged == 1
        # Events for non-notes and vanished files are harmless.
        write(root / "x.txt", "not a note")
        engram.apply_changes([Change("created", "x.txt"), Change("deleted", "ghost.md")])
    assert dump(root / ".engram" / "index.sqlite") == fresh_dump(root, tmp_path)


def test_folder_rename_moves_rows_without_parsing(
    generated: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = generated(1200)
    folders = sorted(
        {p.parent for p in root.rglob("*.md")}, key=lambda p: -len(list(p.glob("*.md")))
    )
    src = folders[0].parent  # an area folder with many notes
    count = len(list(src.rglob("*.md")))
    assert count >= 1000
    with Engram(root) as engram:
        engram.sync()
        before = engram.search({"path": src.relative_to(root).as_posix(), "limit": 1000}).total
        assert before == count

        import engram_ls.core.sync as sync_mod

        calls = []
        real = sync_mod.parse_note
        monkeypatch.setattr(
            sync_mod, "parse_note", lambda *a, **k: calls.append(a[0]) or real(*a, **k)
        )
        dest = root / "renamed area"
        os.rename(src, dest)
        report = engram.apply_changes(
            [Change("renamed", src.relative_to(root).as_posix(), "renamed area")]
        )
        assert calls == []
        assert report.parsed == 0 and report.moved == count
        assert engram.search({"path": "renamed area", "limit": 1000}).total == count
        assert engram.search({"path": src.relative_to(root).as_posix()}).total == 0

        # Deleting the folder removes every row under it.
        import shutil

        shutil.rmtree(dest)
        report = engram.apply_changes([Change("deleted", "renamed area")])
        assert report.removed == count
    assert dump(root / ".engram" / "index.sqlite") == fresh_dump(root, tmp_path)


def test_garbage_over_index_scan_then_rebuild(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    idx = root / ".engram" / "index.sqlite"
    with Engram(root) as engram:
        engram.sync()
        expected = sorted(h.path for h in engram.search({"tags": ["memory"]}).results)
        engram.close()
        for suffix in ("", "-wal", "-shm"):
            side = Path(str(idx) + suffix)
            if side.exists():
                side.write_bytes(os.urandom(8192))
        res = engram.search({"tags": ["memory"]})
        assert res.index.served_by == "scan"
        assert sorted(h.path for h in res.results) == expected
        engram.sync()
        res = engram.search({"tags": ["memory"]})
        assert res.index.served_by == "index"
        assert sorted(h.path for h in res.results) == expected
    assert any(p.name.startswith("index.sqlite.corrupt-") for p in idx.parent.iterdir())


def test_garbage_before_open_is_moved_aside(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    idx = root / ".engram" / "index.sqlite"
    idx.parent.mkdir(parents=True, exist_ok=True)
    idx.write_bytes(b"this is not sqlite" * 100)
    with Engram(root) as engram:
        assert engram.status().state == "empty"
        engram.sync()
        assert engram.search({"tags": ["python"]}).total == 3


def test_schema_version_mismatch_rebuilds(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    with Engram(root) as engram:
        engram.sync()
    idx = root / ".engram" / "index.sqlite"
    conn = sqlite3.connect(idx)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 41}")
    conn.close()
    with Engram(root) as engram:
        assert engram.status().state == "empty"
        assert engram.search({"tags": ["python"]}).index.served_by == "scan"
        engram.sync()
        assert engram.search({"tags": ["python"]}).total == 3
    assert any(".version-" in p.name for p in idx.parent.iterdir())


def test_config_change_reparses_everything(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    with Engram(root) as engram:
        engram.sync()
        assert engram.search({"tags": ["incident"], "date_from": "2025-03-14"}).total == 1
    (root / ".engram" / "config.yaml").write_text("date_formats: []\n", encoding="utf-8")
    with Engram(root) as engram:
        report = engram.sync()
        assert report.full and report.parsed == report.scanned
        assert engram.search({"tags": ["incident"], "date_from": "2025-03-14"}).total == 0


def _processes_with_env(marker: bytes) -> list[int]:
    """Live (not zombie) processes whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            env = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        if state != "Z" and marker in env:
            found.append(int(entry.name))
    return found


@pytest.mark.serial
@pytest.mark.slow
def test_killed_build_resumes_to_identical_index(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    root = generated(12000)
    idx = tmp_path / "killed.sqlite"
    # Commits every second, so that a 12,000-note build has committed some before it ends.
    env = {**os.environ, "ENGRAM_INDEX": str(idx), "ENGRAM_COMMIT_SECONDS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram_ls", "index", str(root)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    committed = 0
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
        try:
            conn = sqlite3.connect(f"file:{idx}?mode=ro", uri=True, timeout=0.2)
            row = conn.execute("SELECT value FROM meta WHERE key = 'notes'").fetchone()
            conn.close()
        except sqlite3.Error:
            continue
        committed = int(row[0]) if row else 0
        if committed >= 2000:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the build finished before it could be killed"
    # its parse worker processes end with it (no orphans left behind)
    marker = f"ENGRAM_INDEX={idx}".encode()
    deadline = time.monotonic() + 5
    while _processes_with_env(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_with_env(marker) == []
    assert 0 < committed < 12000
    with Engram(root, index_path=idx) as engram:
        assert engram.status().state == "building"
        assert engram.search({"tags": ["memory"]}).index.served_by == "scan"
        report = engram.sync()
        assert report.resumed
        assert report.parsed <= 12000 - committed  # it did not start over
        assert engram.status().state == "ready"
    assert dump(idx) == fresh_dump(root, tmp_path)


@pytest.mark.slow
def test_parallel_build_equals_serial(generated: Callable[..., Path], tmp_path: Path) -> None:
    root = generated(3500)
    a, b = tmp_path / "a.sqlite", tmp_path / "b.sqlite"
    with Engram(root, index_path=a) as engram:
        engram.sync(workers=2)
    with Engram(root, index_path=b) as engram:
        engram.sync(workers=1)
    assert dump(a) == dump(b)


@pytest.mark.parametrize(
    ("raw", "want"),
    [("", 3.0), ("1", 1.0), ("0.25", 0.25), ("0", 0.0), ("-1", 3.0), ("nan", 3.0), ("x", 3.0)],
)
def test_commit_interval_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, raw: str, want: float
) -> None:
    from engram_ls.core.sync import commit_seconds

    monkeypatch.setenv("ENGRAM_COMMIT_SECONDS", raw)
    assert commit_seconds() == want


def test_a_build_leaves_the_cycle_collector_as_it_found_it(
    generated: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large build runs without automatic cycle collection (``memory.batch_collections``):
    after it, and after one that fails halfway, the collector is on again and nothing is left
    frozen (a server goes on collecting its own garbage)."""
    import gc

    from engram_ls.core.index.rows import Batch

    root = generated(1200)
    assert gc.isenabled()
    with Engram(root, index_path=tmp_path / "a.sqlite") as engram:
        engram.sync(workers=0)
        assert engram.status().notes == 1200
    assert gc.isenabled() and gc.get_freeze_count() == 0
    written = 0

    def failing(self: Batch, items: list[object]) -> None:
        nonlocal written
        written += 1
        assert gc.isenabled() is False  # inside the build's batch
        raise RuntimeError("a bug in the writer")

    monkeypatch.setattr(Batch, "insert_new", failing)
    with Engram(root, index_path=tmp_path / "b.sqlite") as engram, pytest.raises(RuntimeError):
        engram.sync(workers=0)
    assert written == 1
    assert gc.isenabled() and gc.get_freeze_count() == 0

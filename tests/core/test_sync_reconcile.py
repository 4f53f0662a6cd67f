"""The warm-start reconcile streams the vault walk against the index in path order: these pin
that it finds exactly the changes a full comparison finds, where a merge of two sorted streams
could go wrong (the walk's order against SQLite's), and that it holds no vault in memory.
Real files, real SQLite files."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sqlite3
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.config import load_config
from engram_ls.core.index import db
from engram_ls.core.service import Engram
from engram_ls.core.vault import Vault
from tests.reliability.oracle import contents as dump
from tests.reliability.oracle import diff
from tests.reliability.oracle import fresh as fresh_dump

# Names whose order differs between a per-folder name sort and a sort of whole paths ('-', ' '
# and '.' sort before '/', '0' right after it), between code points and UTF-16 (an astral
# character against one just below the surrogates), and between cases and normal forms.
TRICKY = [
    "a.md",
    "a-b.md",
    "a b.md",
    "a0.md",
    "a/x.md",
    "a/b.md",
    "a/b-c.md",
    "a/b/c.md",
    "a/b.c/d.md",
    "a-b/z.md",
    "a b/y.md",
    "a.b/z.md",
    "a0/z.md",
    "ab/z.md",
    "A.md",
    "Note.md",
    "note.md",
    "é.md",
    "e\u0301.md",
    "日本/記事.md",
    "\U0001f600.md",
    "\uffee.md",
    "z/deep/deeper/deepest/still/n.md",
    "z/deep.md",
    "z/deep-er.md",
    "c.md/inner.md",
    "c.md-x.md",
]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def note(title: str, body: str = "") -> str:
    return f"---\ntitle: {title}\ntags: [t]\ndate: 2024-01-01\n---\n# {title}\n\n{body}\n"


def make_vault(root: Path, paths: list[str]) -> Path:
    for i, rel in enumerate(paths):
        write(root / rel, note(f"Note {i}", f"body {i}"))
    return root


def vault_of(root: Path) -> Vault:
    return Vault(root, load_config(root)[0])


def sqlite_order(paths: list[str]) -> list[str]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (path TEXT NOT NULL UNIQUE)")
    conn.executemany("INSERT INTO t VALUES (?)", [(p,) for p in paths])
    return [p for (p,) in conn.execute("SELECT path FROM t ORDER BY path")]


def test_walk_sorted_is_sqlite_path_order(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v", TRICKY)
    (root / "skip.txt").write_text("not a note")
    (root / ".hidden").mkdir()
    write(root / ".hidden" / "h.md", note("hidden"))
    vault = vault_of(root)
    got = [f.path for f in vault.walk_sorted()]
    assert sorted(got) == sorted(TRICKY) == sorted(f.path for f in vault.walk())
    assert got == sqlite_order(TRICKY)
    under = [f.path for f in vault.walk_sorted("a")]
    assert under == [p for p in sqlite_order(TRICKY) if p.startswith("a/")]
    assert [f.path for f in vault.walk_sorted("missing")] == []


def test_walk_sorted_same_stats_as_walk(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v", TRICKY)
    os.symlink(root / "a.md", root / "link.md")  # inside the vault: counts
    outside = tmp_path / "outside.md"
    outside.write_text(note("out"))
    os.symlink(outside, root / "escape.md")  # leaves the vault: does not
    os.symlink(root / "a", root / "linked-folder")  # symlinked folders are not entered
    os.mkfifo(root / "fifo.md")
    vault = vault_of(root)
    assert list(vault.walk_sorted()) == sorted(vault.walk(), key=lambda f: f.path)
    assert "link.md" in {f.path for f in vault.walk_sorted()}


def test_reconcile_tricky_changes_match_a_fresh_build(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v", TRICKY)
    with Engram(root) as engram:
        assert engram.sync().parsed == len(TRICKY)
        again = engram.sync()
        assert (again.scanned, again.unchanged, again.parsed, again.removed) == (
            len(TRICKY),
            len(TRICKY),
            0,
            0,
        )

        # a folder replaced by a file of the same name, and a file by a folder
        for p in (root / "a.b").iterdir():
            p.unlink()
        (root / "a.b").rmdir()
        write(root / "a.b", "not a note, no .md")
        (root / "c.md" / "inner.md").unlink()
        (root / "c.md").rmdir()
        write(root / "c.md", note("a file where a folder was"))
        (root / "a0.md").unlink()
        write(root / "a0.md" / "inside.md", note("inside"))
        # case-only and normal-form renames, a non-ASCII rename
        os.rename(root / "Note.md", root / "NOTE.md")
        os.rename(root / "e\u0301.md", root / "e\u0301x.md")
        os.rename(root / "日本" / "記事.md", root / "日本" / "きじ.md")
        # changes deep down and next to folders with sorting neighbours
        write(root / "z/deep/deeper/deepest/still/n.md", note("changed deep", "zebra"))
        write(root / "z/deep/deeper/new/m.md", note("new deep"))
        write(root / "a/b/c-new.md", note("c new"))
        (root / "a" / "b-c.md").unlink()
        p = root / "a-b.md"
        os.utime(p, ns=(p.stat().st_atime_ns, p.stat().st_mtime_ns + 10_000_000))  # touch
        write(root / "\U0001f601.md", note("astral"))

        report = engram.sync()
        # removed: a.b/z.md, c.md/inner.md, a0.md, Note.md, é (NFD), 記事.md, a/b-c.md
        # parsed: c.md, a0.md/inside.md, NOTE.md, éx, きじ, n.md, m.md, c-new.md, 😁
        assert (report.removed, report.parsed, report.touched) == (7, 9, 1)
        assert report.scanned == len(TRICKY) - 7 + 8
        assert report.unchanged == report.scanned - report.parsed - report.touched
        assert [h.path for h in engram.search({"query": "zebra"}).results] == [
            "z/deep/deeper/deepest/still/n.md"
        ]
    got = dump(root / ".engram" / "index.sqlite")
    want = fresh_dump(root, tmp_path)
    assert got == want, diff(got, want)


def test_reconcile_everything_gone_and_everything_new(tmp_path: Path) -> None:
    root = make_vault(tmp_path / "v", TRICKY)
    with Engram(root) as engram:
        engram.sync()
        for rel in TRICKY:
            os.rename(root / rel, root / (rel[:-3] + ".txt"))
        report = engram.sync()
        assert (report.scanned, report.removed) == (0, len(TRICKY))
        for rel in TRICKY:
            os.rename(root / (rel[:-3] + ".txt"), root / rel)
        report = engram.sync()
        assert (report.scanned, report.parsed, report.removed) == (len(TRICKY), len(TRICKY), 0)
    got = dump(root / ".engram" / "index.sqlite")
    want = fresh_dump(root, tmp_path)
    assert got == want, diff(got, want)


def _reconcile_peak(root: Path) -> int:
    """Peak of Python allocations during a warm reconcile that finds nothing to do."""
    with Engram(root) as engram:
        engram.sync(workers=1)
        tracemalloc.start()
        try:
            report = engram.sync()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert report.parsed == report.removed == 0 and report.unchanged == report.scanned
    return peak


def test_warm_reconcile_holds_no_vault_in_memory(tmp_path: Path) -> None:
    """A no-op reconcile of 8x the notes (same folder size, 8x the folders) must not need
    anywhere near 8x the memory: it holds one folder's listing at a time (and the folders
    above it), not every path and stat of the vault and of the index. (Holding those, the
    peak grew about 8x here.)"""
    peaks = []
    for n in (250, 2000):
        root = tmp_path / f"v{n}"
        make_vault(root, [f"f{i // 50:03d}/note-{i:05d}.md" for i in range(n)])
        peaks.append(_reconcile_peak(root))
    assert peaks[1] < 2 * peaks[0], peaks


def _sqlite_memory_used() -> Callable[[], int]:
    """sqlite3_memory_used of the library the sqlite3 module uses (skip when that is not a
    shared libsqlite3 loaded in this process)."""
    found = ctypes.util.find_library("sqlite3")
    if found is None:
        pytest.skip("no shared libsqlite3")
    lib = ctypes.CDLL(found)
    lib.sqlite3_libversion.restype = ctypes.c_char_p
    maps = Path("/proc/self/maps")
    if (
        lib.sqlite3_libversion().decode() != sqlite3.sqlite_version
        or not maps.exists()
        or b"libsqlite3" not in maps.read_bytes()
    ):
        pytest.skip("the sqlite3 module does not use the shared libsqlite3")
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return lambda: int(lib.sqlite3_memory_used())


def test_page_cache_stays_small_and_the_reconcile_frees_it(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    """A connection's page cache is capped at READ_CACHE_KB (one connection per thread: the
    sum must stay small whatever the vault), and the reconcile, which reads the whole notes
    table, gives its pages back."""
    used = _sqlite_memory_used()
    root = generated(1500)
    idx = tmp_path / "index.sqlite"
    with Engram(root, index_path=idx) as engram:
        engram.sync(workers=1)
    assert idx.stat().st_size > 3 * db.READ_CACHE_KB * 1024
    with Engram(root, index_path=idx) as engram:
        before = used()
        assert engram.sync().unchanged == 1500
        assert used() - before < 128 * 1024  # without freeing: ~600 KiB more
        for word in ("the", "index", "memory", "cache", "build"):
            engram.search({"query": word, "limit": 200})
        assert used() - before < db.READ_CACHE_KB * 1024 + 1024 * 1024

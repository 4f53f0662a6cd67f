"""The indexes a cold build makes at its end (``schema.BUILT_LAST``): sorted in temporary files
of the index's own folder, never elsewhere, and the connection as it was afterwards; sorted in
memory, as before, where that folder cannot be used."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from engram_ls.core.index import db
from engram_ls.core.index.schema import BUILT_LAST
from engram_ls.core.service import Engram
from tests.reliability.oracle import assert_index_matches_vault

_SORTS_IN_FILES = pytest.mark.skipif(
    not sys.platform.startswith("linux") or sqlite3.sqlite_version_info < db.SORT_DIRECTORY_SAFE,
    reason="reads /proc/self/fd; an older SQLite sorts in memory",
)


def _vault(root: Path, notes: int = 300) -> Path:
    for i in range(notes):
        folder = root / f"area-{i % 4}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"note {i:04d}.md").write_text(
            f"---\ntitle: Note {i}\nstatus: {('todo', 'doing', 'done')[i % 3]}\n"
            f"priority: {i % 5}\nsummary: {'a summary of some length ' * 80}{i}\n"
            f"tags: [t{i % 11}, area/a{i % 3}]\ndate: 2024-{1 + i % 12:02d}-{1 + i % 28:02d}\n---\n"
            f"# Note {i}\n\n- [ ] a task 📅 2024-05-{1 + i % 28:02d}\n\n"
            f"See [[note {i + 1:04d}]].\n",
            encoding="utf-8",
        )
    return root


def _open_temp_files() -> set[str]:
    """Where the files this process has open named ``etilqs_*`` (SQLite's temporary files,
    unlinked as soon as made) are."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if "etilqs_" in target:
                found.add(os.path.dirname(target))
    return found


def _indexes(index: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(index)) as conn:
        rows = conn.execute("SELECT name FROM sqlite_schema WHERE type = 'index'")
        return {str(r[0]) for r in rows}


def _watch_sorts(
    monkeypatch: pytest.MonkeyPatch, seen_by: Callable[[sqlite3.Connection], set[str]]
) -> None:
    """``db.sorting_on_disk`` noting, while it lasts, where the process's SQLite temporary
    files are (into ``seen_by(conn)``), in runs of 64 KB so that a test vault's sorts go to
    files (100,000 notes' do at 2 MB)."""
    monkeypatch.setattr(db, "SORT_CACHE_KB", 64)
    real = db.sorting_on_disk

    @contextlib.contextmanager
    def watched(conn: sqlite3.Connection) -> Iterator[None]:
        seen = seen_by(conn)
        with real(conn):
            conn.set_progress_handler(lambda: seen.update(_open_temp_files()) or 0, 200)
            try:
                yield
            finally:
                conn.set_progress_handler(None, 0)

    monkeypatch.setattr(db, "sorting_on_disk", watched)


@_SORTS_IN_FILES
def test_a_cold_build_sorts_its_last_indexes_beside_the_index_and_nowhere_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _vault(tmp_path / "vault", notes=800)
    folder = tmp_path / "an index's folder, with spaces"
    index = folder / "index.sqlite"
    seen: set[str] = set()
    _watch_sorts(monkeypatch, lambda conn: seen)
    with Engram(root, index_path=index) as engram:
        engram.sync(full=True, workers=0)
        conn = engram.index.conn()
        # the connection as every other: sorts in memory, no folder of its own, its cache
        assert conn.execute("PRAGMA temp_store").fetchone()[0] == 2
        assert conn.execute("PRAGMA temp_store_directory").fetchone() in (None, ("",))
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -db.READ_CACHE_KB
    assert seen == {str(folder)}
    assert set(BUILT_LAST) <= _indexes(index)
    assert sorted(os.listdir(folder)) == ["index.sqlite"]
    assert_index_matches_vault(index, root, tmp_path / "fresh")


@_SORTS_IN_FILES
@pytest.mark.parametrize(
    "why", ["no folder", "undecodable name", "older sqlite", "folder swapped for a symlink"]
)
def test_the_last_indexes_are_sorted_in_memory_where_the_folder_cannot_be_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    root = _vault(tmp_path / "vault", notes=800)
    index = tmp_path / "idx" / "index.sqlite"
    outside = tmp_path / "outside"
    outside.mkdir()
    seen: set[str] = set()
    _watch_sorts(monkeypatch, lambda conn: seen)
    if why == "no folder":  # SQLite refuses a folder it cannot write: the sort stays in memory
        monkeypatch.setattr(db, "_main_folder", lambda conn: str(tmp_path / "missing"))
    elif why == "undecodable name":  # a name of bytes that are not UTF-8 cannot be said in SQL
        monkeypatch.setattr(db, "_main_folder", lambda conn: str(tmp_path / "bad\udcff"))
    elif why == "older sqlite":
        monkeypatch.setattr(db, "SORT_DIRECTORY_SAFE", (99,))
    else:  # the index's folder replaced by a symlink to elsewhere while the build ran
        watched = db.sorting_on_disk

        @contextlib.contextmanager
        def swapped(conn: sqlite3.Connection) -> Iterator[None]:
            (tmp_path / "idx").rename(tmp_path / "idx-real")
            (tmp_path / "idx").symlink_to(outside)
            try:
                with watched(conn):
                    yield
            finally:
                (tmp_path / "idx").unlink()
                (tmp_path / "idx-real").rename(tmp_path / "idx")

        monkeypatch.setattr(db, "sorting_on_disk", swapped)
    with Engram(root, index_path=index) as engram:
        engram.sync(full=True, workers=0)
        conn = engram.index.conn()
        assert conn.execute("PRAGMA temp_store").fetchone()[0] == 2
        assert conn.execute("PRAGMA temp_store_directory").fetchone() in (None, ("",))
    assert seen == set()  # no sort file anywhere
    assert set(BUILT_LAST) <= _indexes(index)
    assert not (tmp_path / "missing").exists()
    assert os.listdir(outside) == []
    assert_index_matches_vault(index, root, tmp_path / "fresh")


@_SORTS_IN_FILES
def test_two_vaults_built_at_once_each_sort_beside_their_own_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    seen: dict[str, set[str]] = {"a": set(), "b": set()}
    _watch_sorts(
        monkeypatch,
        lambda conn: seen.setdefault(os.path.basename(str(db._main_folder(conn))), set()),
    )
    roots = {name: _vault(tmp_path / f"vault-{name}", notes=800) for name in seen}
    errors: list[BaseException] = []

    def build(name: str) -> None:
        try:
            with Engram(roots[name], index_path=tmp_path / name / "index.sqlite") as engram:
                engram.sync(full=True, workers=0)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=build, args=(name,)) for name in roots]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # one sort at a time in the process, each in its own index's folder
    assert seen == {name: {str(tmp_path / name)} for name in roots}
    for name, root in roots.items():
        assert_index_matches_vault(tmp_path / name / "index.sqlite", root, tmp_path / f"f-{name}")

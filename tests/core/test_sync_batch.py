"""Change batches as watchers deliver them: many files at once, and folders moved on disk
(reported as "deleted old" + "created new"), against real files and SQLite. After every batch
the index must equal a fresh build of the vault."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.config import EngramConfig
from engram_ls.core.service import Engram
from engram_ls.core.sync import Change, _read_chunk
from engram_ls.core.sync_wire import Touched, pack, unpack
from tests.reliability.oracle import assert_index_matches_vault, note_ids


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def note(i: int, word: str, tag: str = "batchtag") -> str:
    return (
        f"---\ntitle: Batch {i}\ntags: [{tag}, t{i % 7}]\ndate: 2024-03-{1 + i % 28:02d}\n---\n"
        f"# Batch {i}\n\nSome {word} text and a [[link-{i % 5}]].\n\n## Part {i}\n"
    )


def test_many_files_in_one_batch_equal_a_fresh_build(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    root = vault_copy("tags")
    index = root / ".engram" / "index.sqlite"
    with Engram(root) as engram:
        engram.sync()
        files = [root / "batch" / f"n{i:03d}.md" for i in range(300)]
        for i, f in enumerate(files):
            write(f, note(i, "alpha"))
        changes = [Change("created", str(f)) for f in files]
        changes += [Change("changed", "batch/n000.md")]  # reported twice: synced once
        changes += [Change("created", "batch/notes.txt"), Change("created", "gone.md")]
        r = engram.apply_changes(changes)
        assert (r.parsed, r.unchanged) == (300, 0)
        assert engram.search({"tags": ["batchtag"]}).total == 300
        assert_index_matches_vault(index, root, tmp_path)

        # Changed content, a touched file (same bytes, new mtime), a deleted one reported as
        # changed, a folder reported as created, and the vault root reported as changed.
        for i, f in enumerate(files[:100]):
            write(f, note(i, "beta", tag="othertag"))
        os.utime(files[100], ns=(1, 1))
        files[101].unlink()
        write(root / "more" / "deep" / "x.md", note(999, "gamma"))
        r = engram.apply_changes(
            [Change("changed", str(f)) for f in files[:102]]
            + [Change("created", "more"), Change("changed", str(root))]
        )
        assert (r.parsed, r.touched, r.removed) == (101, 1, 1)
        assert engram.search({"tags": ["othertag"]}).total == 100
        assert engram.search({"query": "gamma"}).total == 1
        assert_index_matches_vault(index, root, tmp_path)


def test_folder_moved_on_disk_is_rekeyed_without_parsing(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    root = generated(600)
    index = root / ".engram" / "index.sqlite"
    src = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    count = len(list(src.rglob("*.md")))
    assert count > 50
    with Engram(root) as engram:
        engram.sync()
        before = note_ids(index, src.name)
        assert len(before) == count
        dest = root / "moved" / src.name
        dest.parent.mkdir()
        os.rename(src, dest)
        # What a watcher reports: the old folder deleted, the new ones created (any order).
        r = engram.apply_changes(
            [
                Change("created", str(dest.parent)),
                Change("created", str(dest)),
                Change("deleted", str(src)),
            ]
        )
        assert (r.parsed, r.moved, r.removed) == (0, count, 0)
        assert note_ids(index, f"moved/{src.name}") == before  # the same rows, re-keyed
        assert engram.search({"path": src.name}).total == 0
        assert_index_matches_vault(index, root, tmp_path)


def test_nested_folder_moves_and_edits_in_the_same_batch(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    root = generated(600)
    index = root / ".engram" / "index.sqlite"
    area = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    y1, y2, y3 = sorted(p for p in area.iterdir() if p.is_dir())[:3]
    with Engram(root) as engram:
        engram.sync()
        y1_ids, y2_ids = (
            note_ids(index, f"{area.name}/{y1.name}"),
            note_ids(index, f"{area.name}/{y2.name}"),
        )
        # Two folders move in one batch, one deeper under a new folder; in the moved folder
        # one note is edited and one removed before the batch is applied.
        (area / "archive").mkdir()
        os.rename(y1, area / "archive" / "old")
        os.rename(y2, area / "renamed")
        moved = area / "archive" / "old"
        edited, removed = sorted(moved.glob("*.md"))[:2]
        write(edited, note(1, "edited"))
        removed.unlink()
        r = engram.apply_changes(
            [
                Change("created", str(area / "archive")),
                Change("created", str(moved)),
                Change("created", str(area / "renamed")),
                Change("deleted", str(y1)),
                Change("deleted", str(y2)),
                Change("changed", str(edited)),
                Change("deleted", str(removed)),
            ]
        )
        assert (r.parsed, r.removed, r.moved) == (1, 1, len(y1_ids) + len(y2_ids))
        del y1_ids[removed.name]
        assert note_ids(index, f"{area.name}/archive/old") == y1_ids
        assert note_ids(index, f"{area.name}/renamed") == y2_ids
        assert_index_matches_vault(index, root, tmp_path)

        # A folder moved into another that is renamed in the same batch: the watcher sees
        # only the outer folder's new name; the result is still exact.
        os.rename(y3, area / "renamed" / "inner")
        os.rename(area / "renamed", area / "renamed-again")
        engram.apply_changes(
            [
                Change("created", str(area / "renamed" / "inner")),
                Change("deleted", str(y3)),
                Change("deleted", str(area / "renamed")),
                Change("created", str(area / "renamed-again")),
            ]
        )
        assert engram.search({"path": f"{area.name}/renamed"}).total == 0
        assert_index_matches_vault(index, root, tmp_path)


def test_folders_moved_out_of_and_into_the_vault(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    root = generated(300)
    index = root / ".engram" / "index.sqlite"
    outside = tmp_path / "outside"
    outside.mkdir()
    src = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    count = len(list(src.rglob("*.md")))
    with Engram(root) as engram:
        engram.sync()
        shutil.move(src, outside / src.name)
        r = engram.apply_changes([Change("deleted", str(src))])
        assert r.removed == count
        assert_index_matches_vault(index, root, tmp_path)

        shutil.move(outside / src.name, root / "back")
        r = engram.apply_changes([Change("created", str(root / "back"))])
        assert r.parsed == count
        assert_index_matches_vault(index, root, tmp_path)

        # A folder deleted and an unrelated new one created in one batch: no files in
        # common, so nothing is paired; the new one is parsed, the old rows removed.
        shutil.rmtree(root / "back")
        for i in range(5):
            write(root / "fresh" / f"f{i}.md", note(i, "fresh"))
        r = engram.apply_changes(
            [Change("deleted", str(root / "back")), Change("created", str(root / "fresh"))]
        )
        assert (r.parsed, r.moved, r.removed) == (5, 0, count)
        assert_index_matches_vault(index, root, tmp_path)


def test_topics_counted_once_when_a_build_of_many_commits_ends(
    generated: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While an index is building its topics are not recounted at each commit; the
    transaction that ends the build counts them all, so the result equals a one-commit build."""
    import engram_ls.core.sync as sync_mod

    root = generated(600)
    index = tmp_path / "many-commits.sqlite"
    monkeypatch.setattr(sync_mod, "CHUNK", 50)
    monkeypatch.setattr(sync_mod, "COMMIT_SECONDS", 0.0)  # a commit after every chunk
    seen: list[tuple[str, int]] = []
    with Engram(root, index_path=index) as engram:

        def progress(done: int, total: int) -> None:
            conn = sqlite3.connect(index)
            try:
                state = conn.execute("SELECT value FROM meta WHERE key = 'state'").fetchone()
                seen.append((str(state[0]), done))
            finally:
                conn.close()

        engram.sync(workers=0, progress=progress)
    assert len(seen) == 12 and all(state == "building" for state, _ in seen)
    conn = sqlite3.connect(index)
    try:
        stored = sorted(conn.execute("SELECT key, notes FROM topics"))
        counted = sorted(
            conn.execute(
                "SELECT t.key, count(*) FROM note_topics nt JOIN topics t ON t.id = nt.topic_id"
                " GROUP BY t.id"
            )
        )
    finally:
        conn.close()
    assert stored == counted and all(n > 0 for _, n in stored)
    assert_index_matches_vault(index, root, tmp_path)


def test_parse_workers_start_before_the_walk_in_a_threaded_process(
    generated: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in the language server (other threads running, so workers are spawned): a coming
    build starts its parse process ahead of the walk, a warm index starts none, and none is
    left after the sync."""
    import multiprocessing
    import threading

    import engram_ls.core.sync as sync_mod

    root = generated(400)
    monkeypatch.setattr(sync_mod, "PARALLEL_MIN", 300)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        with Engram(root, index_path=tmp_path / "early.sqlite") as engram:
            engram.syncer.start_workers(workers=1)
            assert len(multiprocessing.active_children()) == 1
            engram.syncer.stop_workers()
            assert multiprocessing.active_children() == []

            report = engram.sync(workers=1)
            assert report.parsed == 400
            assert multiprocessing.active_children() == []
            assert_index_matches_vault(tmp_path / "early.sqlite", root, tmp_path)

            engram.syncer.start_workers(workers=1)  # built: nothing to start
            assert multiprocessing.active_children() == []
    finally:
        stop.set()


def test_the_writer_parses_what_the_parse_process_has_not_started_while_it_waits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_shared_parse`` gives every note's results once, in the chunks' order, whoever
    parsed them: while the next results are not back, the writing thread begins the furthest
    chunk of its window that the pool was not given, a few notes at a time, and gives the pool
    the rest once they are; the pool is never given more than the window, and no task is ever
    cancelled; a note that fails raises, in the pool or in the writer."""
    import collections
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    import engram_ls.core.sync as sync_mod

    me = threading.get_ident()
    parsed_by: dict[str, list[str]] = collections.defaultdict(list)
    in_flight: list[int] = []
    lock = threading.Lock()
    fail_at: str | None = None

    def read_chunk(root: str, items: list[tuple[str, bytes | None]], config: object) -> list:
        here = threading.get_ident() == me
        for rel, _ in items:
            if rel == fail_at:
                raise ValueError(rel)
            time.sleep(0.004 if here else 0.001)  # a note costs the writer more
            with lock:
                parsed_by[rel].append("writer" if here else "pool")
        return [(rel, True, None) for rel, _ in items]

    monkeypatch.setattr(sync_mod, "_read_chunk", read_chunk)
    monkeypatch.setattr(sync_mod, "AHEAD", 6)
    monkeypatch.setattr(sync_mod, "POOL_TASKS", 2)
    monkeypatch.setattr(sync_mod, "STEAL_NOTES", 1)
    chunks = [[(f"c{i:02d}-{j}.md", None) for j in range(6)] for i in range(30)]
    with ThreadPoolExecutor(1) as pool:
        submit = pool.submit

        def counted(fn: Any, *args: Any) -> Any:
            with lock:
                in_flight.append(sum(1 for f in handed if not f.done()))
            future = submit(fn, *args)
            handed.append(future)
            return future

        handed: list[Any] = []
        monkeypatch.setattr(pool, "submit", counted)
        got = list(sync_mod._shared_parse(pool, "root", chunks, EngramConfig()))
    assert got == [[(rel, True, None) for rel, _ in chunk] for chunk in chunks]
    assert all(len(by) == 1 for by in parsed_by.values())
    assert sorted(parsed_by) == sorted(rel for chunk in chunks for rel, _ in chunk)
    split = [c for c in chunks if len({parsed_by[rel][0] for rel, _ in c}) == 2]
    assert split, "a chunk begun by the writer and finished by the pool"
    assert max(in_flight) < 6
    assert not any(f.cancelled() for f in handed)

    for fail_at in ("c05-0.md", "c29-5.md"):
        parsed_by.clear()
        with ThreadPoolExecutor(1) as pool, pytest.raises(ValueError, match=fail_at):
            list(sync_mod._shared_parse(pool, "root", chunks, EngramConfig()))


_PARSED_HERE: list[int] = []


def _slow_task(root: str, items: Any, config: Any) -> Any:
    """A parse process's task, slower than the writer's parse."""
    import time

    time.sleep(0.002 * len(items))
    return pack(_read_chunk(root, items, config))


def _read_here(root: str, items: Any, config: Any) -> Any:
    """``sync._read_chunk``, counting the notes the writer parses (its pid is in the
    environment; a forked parse process has this function too)."""
    if str(os.getpid()) == os.environ.get("ENGRAM_TEST_WRITER_PID"):
        _PARSED_HERE.append(len(items))
    return _read_chunk(root, items, config)


def test_a_build_parsed_by_a_process_and_by_the_writer_equals_the_vault(
    generated: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build whose parse process is slower than its writer: the writer parses some chunks
    itself, and the index equals the vault (every note once, in order of path)."""

    import engram_ls.core.sync as sync_mod

    root = generated(700)
    monkeypatch.setenv("ENGRAM_TEST_WRITER_PID", str(os.getpid()))
    _PARSED_HERE.clear()
    monkeypatch.setattr(sync_mod, "_parse_chunk", _slow_task)
    monkeypatch.setattr(sync_mod, "_read_chunk", _read_here)
    monkeypatch.setattr(sync_mod, "PARALLEL_MIN", 300)
    monkeypatch.setattr(sync_mod, "CHUNK", 20)
    index = tmp_path / "shared.sqlite"
    with Engram(root, index_path=index) as engram:
        report = engram.sync(workers=1)
    assert report.parsed == 700 and _PARSED_HERE
    assert_index_matches_vault(index, root, tmp_path)
    conn = sqlite3.connect(index)
    try:
        paths = [p for (p,) in conn.execute("SELECT path FROM notes ORDER BY id")]
    finally:
        conn.close()
    assert paths == sorted(paths)


def _dying_task(root: str, items: Any, config: Any) -> Any:
    """A parse process's task that ends the process, as the kernel's OOM killer would."""
    os._exit(3)


def test_a_build_whose_parse_process_dies_is_parsed_by_the_writer(
    generated: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A parse process that dies mid-build breaks its pool: the writer parses the rest of the
    build itself (no build waits forever for a task the broken pool will never answer), says
    so in the log, and the index equals the vault."""
    import logging
    import threading

    import engram_ls.core.sync as sync_mod

    root = generated(700)
    monkeypatch.setattr(sync_mod, "_parse_chunk", _dying_task)
    monkeypatch.setattr(sync_mod, "PARALLEL_MIN", 300)
    monkeypatch.setattr(sync_mod, "CHUNK", 20)
    index = tmp_path / "broken.sqlite"
    reports: list[Any] = []
    with (
        caplog.at_level(logging.WARNING, logger="engram_ls.core.sync"),
        Engram(root, index_path=index) as engram,
    ):
        build = threading.Thread(target=lambda: reports.append(engram.sync(workers=1)))
        build.start()
        build.join(120)
        assert not build.is_alive(), "the build waits for a broken pool"
    assert reports and reports[0].parsed == 700
    assert "a parse process ended" in caplog.text
    assert_index_matches_vault(index, root, tmp_path)


def test_what_the_pool_parsed_before_it_broke_is_not_parsed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the pool breaks at one chunk, the writer parses that chunk and the ones the pool
    had not finished, and takes the results the pool had finished as they are."""
    import collections
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    import engram_ls.core.sync as sync_mod

    me = threading.get_ident()
    parsed_by: dict[str, list[str]] = collections.defaultdict(list)
    lock = threading.Lock()

    def read_chunk(root: str, items: list[tuple[str, bytes | None]], config: object) -> list:
        here = threading.get_ident() == me
        if not here and items[0][0] == "c03-0.md":
            raise BrokenProcessPool("a parse process ended")
        for rel, _ in items:
            time.sleep(0.003 if here else 0.0)  # the pool runs well ahead of the writer
            with lock:
                parsed_by[rel].append("writer" if here else "pool")
        return [(rel, True, None) for rel, _ in items]

    monkeypatch.setattr(sync_mod, "_read_chunk", read_chunk)
    chunks = [[(f"c{i:02d}-{j}.md", None) for j in range(4)] for i in range(20)]
    with ThreadPoolExecutor(1) as pool:
        got = list(sync_mod._shared_parse(pool, "root", chunks, EngramConfig()))
    assert got == [[(rel, True, None) for rel, _ in chunk] for chunk in chunks]
    assert all(by == ["writer"] for rel, by in parsed_by.items() if rel.startswith("c03-"))
    after = [c for c in chunks[4:] if all(parsed_by[rel] == ["pool"] for rel, _ in c)]
    assert after, "the pool's finished chunks past the break were taken as they are"


class Word(str):
    """A value of a type of its own (pickle needs it at a module's top)."""


def test_what_a_parse_process_sends_comes_back_as_it_was(
    generated: Callable[..., Path],
) -> None:
    """``pack`` / ``unpack``, what a parse process sends the writer: a chunk's rows, a
    stat-only update and an unreadable file come back equal and of the same types; a value
    marshal cannot hold (a subclass of ``str``, as a YAML loader could make) is sent by
    pickle, of its own type."""
    root = generated(40)
    odd = {  # values of every kind a note can give, and bytes that are not UTF-8
        "odd/values.md": "---\nrating: .nan\nbig: 123456789012345678901234567890\nfar: 1e400\n"
        "when: 2024-03-05T10:00:00+02:00\nday: 2024-03-05\nnested: {a: {b: [1, true, null]}}\n"
        "tags: [💡, émoji]\n---\n# Odd 💡\n\n- [ ] a task 📅 2024-03-06 #t\n\n[[x#y|z]]\n",
        "odd/bytes.md": b"---\ntitle: bad \xff\n---\nbody \xfe\n",
    }
    for rel, text in odd.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text if isinstance(text, bytes) else text.encode())
    items = sorted((p.relative_to(root).as_posix(), None) for p in root.rglob("*.md"))
    results = _read_chunk(os.fspath(root), items, EngramConfig())
    results += [("gone.md", False, None), ("same.md", False, Touched(1, 2, 3))]
    data = pack(results)
    back = unpack(data)
    assert data[:1] == b"m"
    assert back == results
    assert [type(got) for _, _, got in back] == [type(got) for _, _, got in results]

    first = results[0]
    values = (*first[2].values[:-1], Word(first[2].values[-1]))
    odd_rows = [(first[0], first[1], first[2]._replace(values=values)), *results[1:]]
    data = pack(odd_rows)
    assert data[:1] == b"p"
    back = unpack(data)
    assert back == odd_rows
    assert type(back[0][2].values[-1]) is Word


def test_new_notes_written_in_bulk_with_one_path_indexed_already(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    """``Batch.insert_new`` given a path the index holds already (another process added it
    between a build's walk and its write): the notes it inserted before that one are taken out
    again and each note is written one by one; the index equals the vault, its full-text
    index whole."""
    from engram_ls.core.sync import read_rows

    root = generated(30)
    index = tmp_path / "i.sqlite"
    rels = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))
    with Engram(root, index_path=index) as engram:
        engram.sync(workers=0)
        for i, rel in enumerate(("new/a.md", "new/z.md")):
            write(root / rel, note(1000 + i, "freshword"))
        write(root / rels[3], note(3, "changedword"))
        batch = [
            read_rows(os.fspath(root), rel, engram.config, None)[2]
            for rel in ("new/a.md", rels[3], "new/z.md")
        ]
        with engram.index.batch() as b:
            b.insert_new(batch)  # type: ignore[arg-type]
        conn = sqlite3.connect(index)
        conn.execute("INSERT INTO notes_fts (notes_fts) VALUES ('integrity-check')")
        conn.close()
    assert_index_matches_vault(index, root, tmp_path)

"""The service under conditions a user hits: deadlines, cancellation, an index that cannot be
created, several processes on one index."""

from __future__ import annotations

import multiprocessing
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.config import EngramConfig, Limits
from engram_ls.core.errors import IndexUnavailable, SearchTimeout
from engram_ls.core.service import Engram
from engram_ls.core.sync import Change


def test_deadline_stops_a_slow_scan(generated: Callable[..., Path]) -> None:
    root = generated(3000)
    config = EngramConfig(limits=Limits(deadline_ms=10))
    with Engram(root, config=config) as engram:
        # No index built: the request is answered by a scan, which cannot finish in 10 ms.
        with pytest.raises(SearchTimeout) as info:
            engram.search({"query": "index"})
        assert info.value.code == "ENGRAM_TIMEOUT"


def test_cancel_event_stops_a_search(generated: Callable[..., Path]) -> None:
    root = generated(1000)
    cancel = threading.Event()
    cancel.set()
    with Engram(root) as engram:
        engram.sync()
        with pytest.raises(SearchTimeout):
            engram.search({"query": "index"}, cancel=cancel)
        with pytest.raises(SearchTimeout):
            engram.search({"query": "index", "mode": "literal"}, cancel=cancel)


def test_index_that_cannot_be_created_means_scan(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    blocker = root / "not-a-folder"
    blocker.write_text("a file where the index folder should be", encoding="utf-8")
    with Engram(root, index_path=blocker / "index.sqlite") as engram:
        assert engram.unavailable is not None
        assert engram.status().state == "failed"
        res = engram.search({"tags": ["memory"]})
        assert res.index.served_by == "scan" and res.total == 4
        with pytest.raises(IndexUnavailable):
            engram.sync()
    assert blocker.read_text(encoding="utf-8").startswith("a file")


def _writer(root: str, index: str, n: int, errors: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    try:
        with Engram(Path(root), index_path=Path(index)) as engram:
            for i in range(n):
                p = Path(root) / f"w{i % 7}.md"
                p.write_text(f"---\ntags: [w{i}]\n---\nwriter {i}\n", encoding="utf-8")
                engram.apply_changes([Change("changed", p.name)])
    except Exception as exc:  # pragma: no cover - reported to the parent
        errors.put(repr(exc))


def test_two_processes_write_one_index(vault_copy: Callable[[str], Path], tmp_path: Path) -> None:
    root = vault_copy("tags")
    index = tmp_path / "shared.sqlite"
    with Engram(root, index_path=index) as engram:
        engram.sync()
    errors: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()  # type: ignore[type-arg]
    ctx = multiprocessing.get_context("fork")
    procs = [
        ctx.Process(target=_writer, args=(str(root), str(index), 60, errors)) for _ in range(2)
    ]
    for p in procs:
        p.start()
    with Engram(root, index_path=index) as engram:
        for _ in range(30):
            engram.sync()
            assert engram.search({"query": "writer"}).index.served_by == "index"
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert errors.empty()
    with Engram(root, index_path=index) as engram:
        engram.sync()
        assert engram.search({"query": "writer"}).total == 7


def _open_while_reading(root: Path) -> list[BaseException]:
    """Open and build a fresh index while two threads read status and search."""
    engram = Engram(root)
    stop = threading.Event()
    errors: list[BaseException] = []

    def read() -> None:
        try:
            while not stop.is_set():
                engram.status()
                engram.search({"query": "", "tags": ["python"]})
        except BaseException as exc:  # reported by the caller
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        engram.open()
        engram.sync()
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert engram.status().state == "ready"
    engram.close()
    return errors


def test_reads_racing_the_first_open_never_move_the_index_aside(
    vault_copy: Callable[[str], Path],
) -> None:
    """A status or search while another thread opens a new index must not take the half-made
    file for damage (the language server answers engram/status during its first build)."""
    root = vault_copy("tags")
    for _ in range(8):
        shutil.rmtree(root / ".engram", ignore_errors=True)
        assert _open_while_reading(root) == []
        assert [p.name for p in (root / ".engram").iterdir() if "corrupt" in p.name] == []

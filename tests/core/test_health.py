"""The index's health (``core/health.py``), the interruptible query (``index/db.py``) and the
lifetime of the index's helper thread."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.errors import EngramError
from engram_ls.core.index import db
from engram_ls.core.index import symbols as sym
from engram_ls.core.search import SearchResponse
from engram_ls.core.service import Engram


def _helpers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("engram-symbols")]


def test_the_helper_thread_ends_with_the_index(vault_copy: Callable[[str], Path]) -> None:
    before = set(_helpers())
    engram = Engram(vault_copy("example"))
    engram.open()
    engram.sync()
    runner = sym.second_thread(engram.index)
    seen, parts = runner(lambda conn: [(0, conn.execute("SELECT 1").fetchall())]).result()
    assert seen == engram.status().generation
    assert parts == [(0, [(1,)])]
    started = set(_helpers()) - before
    assert len(started) == 1
    engram.close()
    assert not any(t.is_alive() for t in started)
    # the index can be used again: a new helper, ended by the next close
    engram.open()
    hits = engram.symbols("a")
    assert runner(lambda conn: [(0, [])]).result()[1] == [(0, [])]
    assert hits
    engram.close()
    assert not [t for t in _helpers() if t not in before and t.is_alive()]


def test_close_waits_for_work_given_to_the_helper(vault_copy: Callable[[str], Path]) -> None:
    with Engram(vault_copy("example")) as engram:
        engram.sync()
        gate = threading.Event()

        def slow(conn: sqlite3.Connection) -> list[tuple[int, list[sym.Row]]]:
            gate.wait(5)
            return [(0, [])]

        future = sym.second_thread(engram.index)(slow)
        threading.Timer(0.05, gate.set).start()
    assert future.done() and future.result()[1] == [(0, [])]


@pytest.mark.parametrize("stop", ["cancel", "deadline"])
def test_interruptible_stops_a_query(stop: str) -> None:
    conn = sqlite3.connect(":memory:")
    cancel = threading.Event()
    if stop == "cancel":
        cancel.set()
    deadline = 0.0 if stop == "deadline" else None
    with pytest.raises(db.Interrupted), db.interruptible(conn, cancel, deadline):
        conn.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000000)"
            " SELECT count(*) FROM c"
        ).fetchone()
    # the handler is gone afterwards: the same query runs to its end
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_links_follow_an_index_file_replaced_by_another_process(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """Links read the index file that is at the path now, as searches do: after another
    process replaced it, the old (deleted) file's notes are not answered any more."""
    root = tmp_path / "v"
    root.mkdir()
    (root / "alpha.md").write_text("# Alpha\n", encoding="utf-8")
    ix = tmp_path / "ix.sqlite"
    with Engram(root, index_path=ix) as first:
        first.sync()
        assert [m.note.path for m in first.link_completions("")[0]] == ["alpha.md"]
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(f"{ix}{suffix}"):
                os.unlink(f"{ix}{suffix}")
        (root / "alpha.md").unlink()
        (root / "beta.md").write_text("# Beta\n", encoding="utf-8")
        with Engram(root, index_path=ix) as other:
            other.sync()
        assert [m.note.path for m in first.link_completions("")[0]] == ["beta.md"]


def test_every_reader_answers_when_the_index_fails_before_it_is_read(
    vault_copy: Callable[[str], Path],
) -> None:
    """Garbage over the index file: the first query of a read fails (before the read
    transaction). Searches and topics scan, problems are empty, links say the index is
    unavailable, and the file is moved aside: no reader fails otherwise."""
    root = vault_copy("tags")
    ix = root / ".engram" / "index.sqlite"
    with Engram(root) as engram:
        engram.sync()
        topics = engram.topics()
        tagged = sorted(h.path for h in engram.search({"tags": ["memory"]}).results)
        readers: list[tuple[str, Callable[[], object]]] = [
            ("search", lambda: engram.search({"tags": ["memory"]})),
            ("topics", engram.topics),
            ("problems", engram.problems),
            ("links", lambda: engram.link_completions("")),
            ("symbols", lambda: engram.symbols("memory")),
        ]
        for name, reader in readers:
            engram.close()
            for suffix in ("", "-wal", "-shm"):
                side = Path(f"{ix}{suffix}")
                if side.exists():
                    side.write_bytes(os.urandom(8192))
            try:
                answer = reader()
            except EngramError as exc:
                assert name in ("links", "symbols"), exc
                assert exc.code == "ENGRAM_INDEX_UNAVAILABLE", exc
                continue
            finally:
                assert engram.status().state in ("empty", "failed")  # replaced, not built
                engram.sync()
            if name == "search":
                assert isinstance(answer, SearchResponse)
                assert answer.index.served_by == "scan"
                assert sorted(h.path for h in answer.results) == tagged
            elif name == "topics":
                assert answer == topics
            else:
                assert name == "problems"
                assert answer == []

"""Faults: killed writers, a lock held too long, a full disk, files that vanish or change
between the walk and the read. After each, the index equals a fresh build of the vault and no
note changed unless a write was asked for; searches keep answering (scan path where needed).

A killed cold build, garbage or truncation in the index file, a wrong schema version and an
index folder that cannot be created are tested in ``tests/core`` (see docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from engram_ls.core.errors import IndexUnavailable
from engram_ls.core.service import Engram
from tests.conftest import engram_in_process
from tests.lsp.conftest import request, search, wait_ready
from tests.reliability.helpers import (
    IS_ROOT,
    child,
    child_cli,
    engram_cli,
    grow,
    lsp_session,
    save,
    server_alive,
    until,
)
from tests.reliability.oracle import (
    assert_files_unchanged,
    assert_index_matches_vault,
    contents,
    snapshot,
)


def _notes(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))


# -- SIGKILL during a batch update ------------------------------------------------------------


@pytest.mark.slow
def test_sigkill_during_batch_update(generated: Callable[..., Path], tmp_path: Path) -> None:
    """A process killed inside ``apply_changes`` leaves the index exactly as before the batch
    (one transaction), and the next reconcile brings it to the vault's state."""
    root = generated(2000)
    idx = tmp_path / "index.sqlite"
    with Engram(root, index_path=idx) as engram:
        engram.sync(workers=1)
    paths = _notes(root)
    listing = tmp_path / "paths.txt"
    listing.write_text("\n".join(paths), encoding="utf-8")

    def edit_all(mark: int) -> None:
        for rel in paths:
            with open(root / rel, "a", encoding="utf-8") as fh:
                fh.write(f"\nround {mark} #round{mark}\n")

    # How long one uninterrupted batch takes here, to kill the others early, midway and late.
    edit_all(99)
    proc = child("apply", str(root), str(idx), str(listing))
    assert proc.stdout is not None and proc.stdout.readline().strip() == "go"
    t0 = time.monotonic()
    assert proc.stdout.readline().strip() == "done"
    batch_s = time.monotonic() - t0
    assert proc.wait(30) == 0
    for round_, fraction in enumerate((0.1, 0.4, 0.7)):
        for attempt in range(4):  # when load drops a batch can end before the kill: again, earlier
            # A tag of this attempt's own: a batch that ended before its kill is in the index,
            # with its tag, and the next attempt must not be judged by that one.
            mark = 10 * round_ + attempt
            before = contents(idx)
            edit_all(mark)
            proc = child("apply", str(root), str(idx), str(listing))
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "go", proc.stderr.read() if proc.stderr else ""
            time.sleep(batch_s * fraction / 2**attempt)
            proc.send_signal(signal.SIGKILL)
            out, _ = proc.communicate(timeout=30)
            if proc.returncode == -signal.SIGKILL and "done" not in out:
                if contents(idx) == before:
                    break
                # The kill landed after the batch's commit, before its "done" (the child
                # still had work after the commit, on a loaded machine): then all of the
                # batch is there, never a part of it; try again, earlier.
                with Engram(root, index_path=idx) as engram:
                    whole = engram.search({"query": "", "tags": [f"round{mark}"], "limit": 1})
                assert whole.total == len(paths), "a part of the interrupted batch is visible"
        assert proc.returncode == -signal.SIGKILL and "done" not in out, "batch ended too soon"
        # nothing of the interrupted batch is visible: it was one transaction
        assert contents(idx) == before
        with Engram(root, index_path=idx) as engram:
            res = engram.search({"query": "", "tags": [f"round{mark}"], "limit": 1})
            assert res.total == 0 and res.index.served_by == "index"
            engram.sync()
        assert_index_matches_vault(idx, root, tmp_path)


# -- SIGKILL during engram librarian --apply --------------------------------------------------


@pytest.mark.slow
def test_sigkill_during_librarian_apply(generated: Callable[..., Path], tmp_path: Path) -> None:
    """Every note is its old bytes or its fully edited bytes, never a part; running again
    finishes the job; the index then equals a fresh build."""
    config = "keyword_topics:\n  index: idx-topic\n  query: q-topic\n  system: sys-topic\n"
    root = generated(700, name="killed")
    (root / ".engram").mkdir()
    (root / ".engram" / "config.yaml").write_text(config, encoding="utf-8")
    expected_root = shutil.copytree(root, tmp_path / "expected")
    assert engram_cli("librarian", str(expected_root), "--apply").returncode in (0, 1)
    old, new = snapshot(root), snapshot(expected_root)
    edited = [p for p in old if old[p] != new[p]]
    assert len(edited) > 300

    assert engram_cli("index", str(root)).returncode == 0
    proc = child_cli("librarian", str(root), "--apply")
    # kill once a good part of the notes has been written
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        done = sum(1 for p in edited if (root / p).stat().st_size != len(old[p]))
        if done >= len(edited) // 4:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, "the librarian finished before it was killed"

    now = snapshot(root)
    leftovers = [p for p in now if p not in old]
    assert all(os.path.basename(p).startswith(".") and p.endswith(".tmp") for p in leftovers)
    notes = [p for p in old if p.endswith(".md")]
    written = [p for p in notes if now[p] == new[p] and old[p] != new[p]]
    partial = [p for p in notes if now[p] not in (old[p], new[p])]
    assert partial == [], partial[:3]
    assert 0 < len(written) < len(edited)
    # The index may lag behind the killed run; a reconcile brings it in line.
    with Engram(root) as engram:
        engram.sync()
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)
    # Running again finishes the job: the vault equals the uninterrupted run's.
    assert engram_cli("librarian", str(root), "--apply").returncode in (0, 1)
    final = {p: b for p, b in snapshot(root).items() if p in new}
    assert final == new
    # the re-run re-indexed what it wrote
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)


# -- a lock held longer than the busy timeout -------------------------------------------------

BUSY_ENV = {"ENGRAM_BUSY_TIMEOUT_MS": "300"}


async def _locked(locker: Any) -> None:
    line = await asyncio.wait_for(asyncio.to_thread(locker.stdout.readline), 30)
    assert line.strip() == "locked", locker.stderr.read()


async def test_write_lock_held_longer_than_busy_timeout(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """Another process holds the index's write lock for 4 s against a 300 ms busy timeout:
    engram-ls and the CLI keep answering at once (by scanning: the index is known to be
    behind), and a save made meanwhile is not lost: it lands in the index once the lock is
    gone, with no further event."""
    root = vault_copy("tags")
    idx = root / ".engram" / "index.sqlite"
    async with lsp_session([root], "neovim", BUSY_ENV) as client:
        await wait_ready(client)
        locker = child("lock", str(idx), "4", "write")
        await _locked(locker)
        t0 = time.monotonic()
        note = root / "during-lock.md"
        note.write_text("---\ntags: [locked]\n---\n# During the lock\n", encoding="utf-8")
        save(client, note)
        await asyncio.sleep(0.5)  # the update has failed by now (300 ms)
        res = await search(client, query="", tags=["locked"])
        assert res["index"]["served_by"] == "scan"
        assert [r["path"] for r in res["results"]] == ["during-lock.md"]
        # Status says what searches do: not "ready" while the index misses the save.
        st = (await request(client, "engram/status", {}))["vaults"][0]
        assert st["state"] == "stale" and not st["building"]
        # in this process: a CLI process starting up under load could outlast the lock
        cli = engram_in_process(
            "search", "--vault", str(root), "--json", "--tag", "locked", env=BUSY_ENV
        )
        assert cli.returncode == 0, cli.stderr
        assert '"during-lock.md"' in cli.stdout and '"scan"' in cli.stdout
        assert time.monotonic() - t0 < 4, "answers waited for the lock to go"
        assert await asyncio.to_thread(locker.wait, 30) == 0

        async def landed() -> bool:
            r = await search(client, query="", tags=["locked"])
            return r["index"]["served_by"] == "index" and r["total"] == 1

        await until(landed, timeout=30)
        assert (await request(client, "engram/status", {}))["vaults"][0]["state"] == "ready"
        assert server_alive(client)
    assert_index_matches_vault(idx, root, tmp_path)


async def test_exclusive_lock_blocks_even_readers(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """A process holds the index in exclusive locking mode (no other process can read it) for
    8 s while engram-ls starts and the CLI searches: both answer by scanning; engram-ls then
    opens and builds the index by itself. (8 s, not 4: the start of engram-ls is inside the
    window, and under load it alone took more than 4 s.)"""
    root = vault_copy("tags")
    idx = root / ".engram" / "index.sqlite"
    assert engram_cli("index", str(root)).returncode == 0
    (root / "while-locked.md").write_text("---\ntags: [python]\n---\n", encoding="utf-8")
    locker = child("lock", str(idx), "8", "exclusive")
    await _locked(locker)
    t0 = time.monotonic()
    # in this process: a CLI process starting up under load could outlast the lock
    cli = engram_in_process(
        "search", "--vault", str(root), "--json", "--tag", "python", env=BUSY_ENV
    )
    assert cli.returncode == 0, cli.stderr
    assert '"served_by": "scan"' in cli.stdout and '"total": 4' in cli.stdout
    async with lsp_session([root], "neovim", BUSY_ENV) as client:
        res = await search(client, query="", tags=["python"])
        assert res["index"]["served_by"] == "scan" and res["total"] == 4
        assert time.monotonic() - t0 < 8, "answers waited for the lock to go"
        assert await asyncio.to_thread(locker.wait, 30) == 0
        await wait_ready(client, timeout=60)
        res = await search(client, query="", tags=["python"])
        assert res["index"]["served_by"] == "index" and res["total"] == 4
    assert_index_matches_vault(idx, root, tmp_path)


# -- a full disk for the index ----------------------------------------------------------------


def test_full_disk_for_the_index(
    generated: Callable[..., Path], tmp_path: Path, tmpfs: Path
) -> None:
    """The index lives on a 512 KiB tmpfs that fills up during the build: the build fails with
    ENGRAM_INDEX_UNAVAILABLE, searches answer by scanning with the same results, no note is
    touched; once there is room again, catching up gives the fresh-build index."""
    root = generated(1500)
    before = snapshot(root)
    reference = tmp_path / "reference.sqlite"
    with Engram(root, index_path=reference) as ref:
        ref.sync(workers=1)
        want = ref.search({"query": "", "tags": ["python"], "limit": 1000})
    idx = tmpfs / "index.sqlite"
    with Engram(root, index_path=idx) as engram:
        with pytest.raises(IndexUnavailable) as info:
            engram.sync(workers=1)
        assert "full" in info.value.message
        assert engram.behind is not None
        got = engram.search({"query": "", "tags": ["python"], "limit": 1000})
        assert got.index.served_by == "scan"
        assert sorted(h.path for h in got.results) == sorted(h.path for h in want.results)
        grow(tmpfs)
        report = engram.catch_up()
        assert report is not None and engram.behind is None
        assert engram.search({"query": "", "tags": ["python"]}).index.served_by == "index"
    assert_index_matches_vault(idx, root, tmp_path)
    assert_files_unchanged(root, before)


async def test_full_disk_under_a_running_server(
    generated: Callable[..., Path], tmp_path: Path, tmpfs: Path
) -> None:
    """engram-ls whose index disk is full: up, answering from the files; when room comes back
    it finishes the index by itself (no restart, no event)."""
    root = generated(1200)
    idx = tmpfs / "index.sqlite"
    async with lsp_session([root], "neovim", {"ENGRAM_INDEX": str(idx)}) as client:

        async def built_or_failed() -> bool:
            st = (await request(client, "engram/status", {}))["vaults"][0]
            return not st["building"]

        await until(built_or_failed, timeout=60)
        res = await search(client, query="", tags=["python"], limit=1)
        assert res["index"]["served_by"] == "scan" and res["total"] > 0
        grow(tmpfs)
        await wait_ready(client, timeout=90)
        res2 = await search(client, query="", tags=["python"], limit=1)
        assert res2["index"]["served_by"] == "index" and res2["total"] == res["total"]
        assert server_alive(client)
    assert_index_matches_vault(idx, root, tmp_path)


# -- files that vanish, change type or become unreadable between walk and read -----------------


def _sabotage(root: Path, paths: list[str]) -> None:
    """Between the listing and the reading: delete, replace by a FIFO, by a folder, and make
    unreadable (mode 000) a quarter of the notes each."""
    for i, rel in enumerate(paths):
        p = root / rel
        if i % 4 == 0:
            p.unlink()
        elif i % 4 == 1:
            p.unlink()
            os.mkfifo(p)
        elif i % 4 == 2:
            p.unlink()
            p.mkdir()
        else:
            p.chmod(0)


def test_files_change_between_walk_and_read(
    generated: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reconcile finishes (a FIFO never blocks it), indexes what it can read, and equals a
    fresh build of the vault as it then is; when the files come back, so do their rows."""
    root = generated(400)
    idx = tmp_path / "index.sqlite"
    victims = _notes(root)[::5]
    saved = {rel: (root / rel).read_bytes() for rel in victims}
    engram = Engram(root, index_path=idx)
    engram.open()
    real_walk = engram.vault.walk_sorted  # the reconcile's (path-ordered) walk

    def walk_then_sabotage(under: str = "") -> Any:
        listed = list(real_walk(under))
        _sabotage(root, victims)
        monkeypatch.setattr(engram.vault, "walk_sorted", real_walk)
        return iter(listed)

    monkeypatch.setattr(engram.vault, "walk_sorted", walk_then_sabotage)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (engram.sync(workers=1), done.set()), daemon=True)
    worker.start()
    worker.join(60)
    assert done.is_set(), "the reconcile hung on a file that changed under it"
    indexed = {row[0] for row in contents(idx)["notes"]}
    unreadable = victims[3::4]
    assert not indexed & set(victims[::4] + victims[1::4] + victims[2::4])
    if not IS_ROOT:  # root reads mode-000 files anyway
        assert not indexed & set(unreadable)
    engram.close()
    assert_index_matches_vault(idx, root, tmp_path)
    # the user puts everything back
    for rel, data in saved.items():
        p = root / rel
        if p.is_dir():
            p.rmdir()
        elif p.exists() or p.is_fifo():
            p.chmod(0o644)
            p.unlink()
        p.write_bytes(data)
    with Engram(root, index_path=idx) as engram2:
        engram2.sync()
    indexed = {row[0] for row in contents(idx)["notes"]}
    assert set(victims) <= indexed
    assert_index_matches_vault(idx, root, tmp_path)


# -- the vault folder deleted under a running server ------------------------------------------


async def test_vault_deleted_under_running_server(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    """engram-ls keeps serving while its vault folder (and the index in it) is deleted:
    searches answer ENGRAM_NOT_FOUND, nothing recreates the folder; when the folder comes
    back, the server picks it up by itself and answers from a rebuilt index."""
    root = vault_copy("tags")
    backup = shutil.copytree(root, tmp_path / "backup", ignore=shutil.ignore_patterns(".engram"))
    async with lsp_session([root], "neovim") as client:
        await wait_ready(client)
        assert (await search(client, query="", tags=["python"]))["total"] == 3
        shutil.rmtree(root)
        for _ in range(5):
            try:
                res = await search(client, query="", tags=["python"])
            except Exception as exc:  # a JSON-RPC error response
                assert "ENGRAM_NOT_FOUND" in repr(exc) or "does not exist" in str(exc)
            else:
                assert res["total"] == 0, res
            await request(client, "engram/status", {})
            symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="m"))
            assert not symbols
            await asyncio.sleep(0.2)
        assert not root.exists(), "the server recreated the deleted vault folder"
        assert server_alive(client)
        shutil.copytree(backup, root)
        (root / "new-after-restore.md").write_text("---\ntags: [python]\n---\n", "utf-8")

        async def back() -> bool:
            try:
                r = await search(client, query="", tags=["python"])
            except Exception:
                return False
            return r["index"]["served_by"] == "index" and r["total"] == 4

        await until(back, timeout=30)
        await wait_ready(client)
    assert_index_matches_vault(root / ".engram" / "index.sqlite", root, tmp_path)

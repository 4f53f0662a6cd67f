"""The core watcher on a real folder with the real watchfiles: the folders it watches, its
``established`` signal, and folders that appear, move or go while it runs (each folder has a
watch of its own)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from engram_ls.core.service import Engram
from engram_ls.core.sync import Change
from engram_ls.core.watch import VaultWatcher, folders


def test_folders_are_every_watched_folder_and_no_other(tmp_path: Path) -> None:
    for rel in ("a/b/c", "a/d", ".git/objects", "node_modules/x", "e/.hidden/f", "g"):
        (tmp_path / rel).mkdir(parents=True)
    (tmp_path / "a" / "note.md").write_text("# n\n", "utf-8")  # files are not folders
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    (outside / "sub").mkdir(parents=True)
    os.symlink(outside, tmp_path / "link")  # a symlinked folder is never entered
    got = sorted(os.path.relpath(p, tmp_path) for p in folders(str(tmp_path)))
    assert got == [".", "a", "a/b", "a/b/c", "a/d", "e", "g"]


def test_a_missing_root_has_no_folders_but_itself(tmp_path: Path) -> None:
    assert folders(str(tmp_path / "gone")) == [str(tmp_path / "gone")]


class Seen:
    """What the watcher delivered, with a way to wait for a path to show up."""

    def __init__(self) -> None:
        self.changes: list[Change] = []
        self.lock = threading.Condition()

    def __call__(self, changes: list[Change]) -> None:
        with self.lock:
            self.changes.extend(changes)
            self.lock.notify_all()

    def wait_for(self, path: Path, timeout: float = 10.0) -> None:
        end = time.monotonic() + timeout
        with self.lock:
            while not any(Path(c.path) == path for c in self.changes):
                left = end - time.monotonic()
                assert left > 0, f"{path} never reported; got {self.changes}"
                self.lock.wait(left)


def test_new_moved_and_recreated_folders_are_watched(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "old").mkdir(parents=True)
    seen = Seen()
    watcher = VaultWatcher(Engram(root, index_path=tmp_path / "i.sqlite"), on_changes=seen)
    watcher.start()
    try:
        assert watcher.wait_established()
        # A file in an existing folder.
        (root / "old" / "a.md").write_text("a\n", "utf-8")
        seen.wait_for(root / "old" / "a.md")
        # New nested folders: the deepest is reported (changed) once its watch is in place,
        # and a file written in it later is an event of its own watch.
        deep = root / "n1" / "n2"
        deep.mkdir(parents=True)
        seen.wait_for(root / "n1")
        time.sleep(0.3)
        (deep / "later.md").write_text("later\n", "utf-8")
        seen.wait_for(deep / "later.md")
        # Moved: events inside come under the new path.
        os.rename(root / "n1", root / "m1")
        seen.wait_for(root / "m1")
        time.sleep(0.3)
        (root / "m1" / "n2" / "after-move.md").write_text("x\n", "utf-8")
        seen.wait_for(root / "m1" / "n2" / "after-move.md")
        # Deleted and made again under the same name.
        (root / "m1" / "n2" / "after-move.md").unlink()
        (root / "m1" / "n2" / "later.md").unlink()
        os.rmdir(root / "m1" / "n2")
        seen.wait_for(root / "m1" / "n2")
        (root / "m1" / "n2").mkdir()
        time.sleep(0.3)
        (root / "m1" / "n2" / "again.md").write_text("y\n", "utf-8")
        seen.wait_for(root / "m1" / "n2" / "again.md")
    finally:
        watcher.stop()

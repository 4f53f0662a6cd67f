"""The server's own watcher (Neovim-like client) through the real server: nothing written while
the server starts is lost, and folders that appear, move or go after the start are watched
(each folder has a watch of its own, so a new folder gets one when it appears)."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from pytest_lsp import LanguageClient

from engram_ls.core.service import Engram
from tests.lsp.conftest import start, wait_ready
from tests.lsp.test_lsp_watch_batch import until_total
from tests.reliability.oracle import assert_index_matches_vault

PRESET = "neovim"


def note(word: str) -> str:
    return f"---\ntags: [startup]\n---\n# {word}\n\n{word}\n"


async def test_notes_written_while_the_server_starts_are_found(
    client: LanguageClient, generated: Callable[..., Path], tmp_path: Path
) -> None:
    root = generated(600)
    index = root / ".engram" / "index.sqlite"
    with Engram(root) as engram:  # a warm start: the index exists, nothing changed yet
        engram.sync()
    area = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    edited = sorted(area.rglob("*.md"))[0]
    original = edited.read_text("utf-8")
    written: list[str] = []
    ready = asyncio.Event()

    async def keep_writing() -> None:
        """From ``initialized`` until ready (and a little after): a new note in an existing
        folder, one in a new folder, and an edit of an existing note, every few ms."""
        i = 0
        extra = 10
        while extra:
            word = f"startupword{i}"
            (area / f"startup-{i}.md").write_text(note(word), "utf-8")
            fresh = root / f"startup-folder-{i}"
            fresh.mkdir()
            (fresh / "inside.md").write_text(note(f"{word}x"), "utf-8")
            edited.write_text(original + f"\nstartupedit{i}\n", "utf-8")
            written.append(word)
            i += 1
            if ready.is_set():
                extra -= 1
            await asyncio.sleep(0.005)

    await start(client, [root], PRESET)
    writer = asyncio.ensure_future(keep_writing())
    try:
        await wait_ready(client)
    finally:
        ready.set()
        await writer
    last = len(written) - 1
    await until_total(client, 2 * len(written), tags=["startup"])
    await until_total(client, 1, query=f"startupedit{last}")
    for word in (written[0], written[len(written) // 2], written[-1]):
        await until_total(client, 1, query=word)
        await until_total(client, 1, query=f"{word}x")
    assert_index_matches_vault(index, root, tmp_path)


async def test_folders_that_appear_move_and_go_are_watched(
    client: LanguageClient, generated: Callable[..., Path], tmp_path: Path
) -> None:
    root = generated(100)
    index = root / ".engram" / "index.sqlite"
    await start(client, [root], PRESET)
    await wait_ready(client)
    # Folders made at once with a note at the bottom: the note was written before any watch
    # of the new folders could exist.
    deep = root / "new" / "b" / "c"
    deep.mkdir(parents=True)
    (deep / "x.md").write_text(note("deepfirst"), "utf-8")
    await until_total(client, 1, query="deepfirst")
    # A note written later in the deepest new folder: its own watch reports it.
    await asyncio.sleep(0.3)
    (deep / "y.md").write_text(note("deepsecond"), "utf-8")
    await until_total(client, 1, query="deepsecond")
    # The top folder moved: the notes move, and an edit inside it afterwards is seen under
    # the new path (not the old one).
    os.rename(root / "new", root / "moved")
    await until_total(client, 2, path="moved")
    await until_total(client, 0, path="new")
    await asyncio.sleep(0.3)
    (root / "moved" / "b" / "c" / "x.md").write_text(note("deepedited"), "utf-8")
    await until_total(client, 1, query="deepedited", path="moved")
    await until_total(client, 0, query="deepfirst")
    # A folder deleted, then made again with other notes under the same name.
    shutil.rmtree(root / "moved")
    await until_total(client, 0, path="moved")
    again = root / "moved" / "b"
    again.mkdir(parents=True)
    await asyncio.sleep(0.3)
    (again / "z.md").write_text(note("deepagain"), "utf-8")
    await until_total(client, 1, query="deepagain")
    assert_index_matches_vault(index, root, tmp_path)

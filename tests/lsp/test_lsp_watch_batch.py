"""Batches of file events through the real server: a folder moved on disk (seen by the server's
own watcher under Neovim, reported as deleted + created watched files under VS Code) is
re-keyed without re-parsing, and many new files in one batch; after each, the index equals a
fresh build of the vault."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import search, start, wait_ready
from tests.reliability.oracle import assert_index_matches_vault, note_ids


async def until_total(client: LanguageClient, expected: int, **params: object) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + 10.0
    while (total := (await search(client, limit=1, **params))["total"]) != expected:
        assert loop.time() < end, f"{params}: total {total}, never reached {expected}"
        await asyncio.sleep(0.05)


def report(client: LanguageClient, preset: str, events: list[tuple[Path, str]]) -> None:
    """VS Code reports what its watcher saw; under Neovim the server watches by itself."""
    if preset != "visual-studio-code":
        return
    kinds = {"created": types.FileChangeType.Created, "deleted": types.FileChangeType.Deleted}
    client.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=p.as_uri(), type=kinds[k]) for p, k in events]
        )
    )


@pytest.mark.presets
async def test_folder_moved_on_disk_is_rekeyed(
    client: LanguageClient,
    preset: str,
    generated: Callable[..., Path],
    tmp_path: Path,
) -> None:
    root = generated(400)
    index = root / ".engram" / "index.sqlite"
    await start(client, [root], preset)
    await wait_ready(client)
    area = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    src = sorted(p for p in area.iterdir() if p.is_dir())[0]
    old = f"{area.name}/{src.name}"
    before = note_ids(index, old)
    assert before
    await asyncio.sleep(0.3)  # the server's watcher is running
    dest = root / "archive" / "moved"
    dest.parent.mkdir()
    # The watcher watches a new folder a moment after it appears: a move into it made at once
    # can reach the server as only "archive created" (then it is re-parsed: right, slower).
    await asyncio.sleep(0.3)
    os.rename(src, dest)
    report(client, preset, [(src, "deleted"), (dest.parent, "created"), (dest, "created")])
    await until_total(client, len(before), path="archive/moved")
    await until_total(client, 0, path=old)
    assert note_ids(index, "archive/moved") == before  # the same rows: moved, not re-parsed
    assert_index_matches_vault(index, root, tmp_path)

    # Moved out of the vault, then back in under another name.
    outside = tmp_path / "outside"
    os.rename(dest, outside)
    report(client, preset, [(dest, "deleted")])
    await until_total(client, 0, path="archive/moved")
    os.rename(outside, root / "back")
    report(client, preset, [(root / "back", "created")])
    await until_total(client, len(before), path="back")
    assert_index_matches_vault(index, root, tmp_path)


@pytest.mark.presets
async def test_many_new_files_in_one_batch(
    client: LanguageClient,
    preset: str,
    generated: Callable[..., Path],
    tmp_path: Path,
) -> None:
    root = generated(200)
    index = root / ".engram" / "index.sqlite"
    await start(client, [root], preset)
    await wait_ready(client)
    await asyncio.sleep(0.3)
    folder = root / "batch"
    folder.mkdir()
    files = [folder / f"n{i:04d}.md" for i in range(500)]
    for i, f in enumerate(files):
        f.write_text(f"---\ntags: [batchtag]\n---\n# N {i}\n\nword{i % 3}\n", "utf-8")
    report(client, preset, [(folder, "created")] + [(f, "created") for f in files])
    await until_total(client, 500, tags=["batchtag"])
    for f in files[:250]:
        f.write_text("---\ntags: [othertag]\n---\n# changed\n", "utf-8")
    if preset == "visual-studio-code":
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=f.as_uri(), type=types.FileChangeType.Changed)
                    for f in files[:250]
                ]
            )
        )
    await until_total(client, 250, tags=["othertag"])
    await until_total(client, 250, tags=["batchtag"])
    assert_index_matches_vault(index, root, tmp_path)

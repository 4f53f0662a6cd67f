"""Which folder is the vault, whatever root the client sends (the real server over stdio).

A client's root or workspace folder inside a larger vault (eglot without a project, Helix, a
folder opened by mistake) means that vault: the nearest folder at or above it holding
``.engram/`` or ``.obsidian/``; without one the folder itself is the vault. A client that
sends no root at all gets the vault above the first note it opens, never the note's folder.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import EXAMPLE
from tests.lsp.conftest import (
    capabilities,
    install_registration_handler,
    paths,
    request,
    search,
    start,
    wait_ready,
)
from tests.lsp.test_lsp_symbols import symbols, where
from tests.lsp.test_lsp_watch_batch import until_total

SQLITE_NOTES = [
    "meetings/2024/2024-03-05 sqlite review.md",
    "reference/sqlite.md",
]
"""Notes of the example vault on sqlite, in two folders (neither is ``projects/``)."""


def marked_vault(copy: Callable[[Path, str], Path], marker: str) -> Path:
    """A copy of the example vault whose only vault marker is ``marker`` at its top."""
    vault = copy(EXAMPLE, "vault")
    if marker != ".engram":
        shutil.rmtree(vault / ".engram")
        (vault / marker).mkdir()
    return vault


def roots(status: dict[str, Any]) -> list[str]:
    return [v["root"] for v in status["vaults"]]


async def open_note(client: LanguageClient, path: Path) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="markdown", version=1, text=path.read_text("utf-8")
            )
        )
    )


async def initialize(client: LanguageClient, preset: str, root: Path | None) -> None:
    """With ``root`` as rootUri and no workspace folders (as eglot without a project sends
    the opened note's folder); with None no root at all (a client opening a single file)."""
    install_registration_handler(client)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(preset),
            root_uri=None if root is None else root.as_uri(),
        )
    )


@pytest.mark.parametrize("marker", [".engram", ".obsidian"])
async def test_a_workspace_folder_inside_a_vault_means_the_vault(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path], marker: str
) -> None:
    vault = marked_vault(copy, marker)
    await start(client, [vault / "projects"], preset)
    status = await wait_ready(client)
    assert roots(status) == [str(vault.resolve())]
    assert status["vaults"][0]["notes"] == 31
    result = await search(client, query="sqlite", tags=["sqlite"])
    assert set(SQLITE_NOTES) <= set(paths(result))
    assert not (vault / "projects" / ".engram").exists(), "no index in the sub-folder"


async def test_a_root_uri_deep_inside_a_vault_means_the_vault(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    """The root as eglot sends it without a project: the opened note's folder, as rootUri."""
    vault = copy(EXAMPLE, "vault")
    folder = vault / "meetings" / "2025"
    await initialize(client, preset, folder)
    status = await wait_ready(client)
    assert roots(status) == [str(vault.resolve())]
    found = await symbols(client, "SQLite field notes")
    assert [where(s)[0] for s in found] == [(vault / "reference" / "sqlite.md").as_uri()]


async def test_folders_of_one_vault_are_one_vault(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    vault = copy(EXAMPLE, "vault")
    await start(client, [vault / "projects", vault / "meetings" / "2024", vault], preset)
    status = await wait_ready(client)
    assert roots(status) == [str(vault.resolve())]
    assert status["vaults"][0]["notes"] == 31


async def test_without_a_vault_above_the_folder_is_the_vault(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    vault = copy(EXAMPLE, "plain")
    shutil.rmtree(vault / ".engram")
    await start(client, [vault / "projects"], preset)
    status = await wait_ready(client)
    assert roots(status) == [str((vault / "projects").resolve())]
    assert status["vaults"][0]["notes"] == 5


@pytest.mark.presets
async def test_no_root_then_a_note_opened_in_a_sub_folder_serves_the_whole_vault(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    vault = marked_vault(copy, ".obsidian")
    await initialize(client, preset, None)
    assert roots(await request(client, "engram/status", {})) == []
    note = vault / "meetings" / "2025" / "2025-10-13 sqlite upgrade.md"
    await open_note(client, note)
    status = await wait_ready(client)
    assert roots(status) == [str(vault.resolve())]
    result = await search(client, query="sqlite", tags=["sqlite"])
    assert set(SQLITE_NOTES) <= set(paths(result))
    assert not (note.parent / ".engram").exists(), "the note's folder is not a vault"
    # A second note of the vault opens no second vault.
    await open_note(client, vault / "reference" / "sqlite.md")
    assert roots(await wait_ready(client)) == [str(vault.resolve())]
    # The server watches that vault: a note written by another program is found.
    (vault / "inbox" / "written elsewhere.md").write_text(
        "---\ntags: [elsewhere]\n---\n# Elsewhere\n", "utf-8"
    )
    await until_total(client, 1, tags=["elsewhere"])


async def test_no_root_and_no_vault_above_the_note_indexes_nothing(
    client: LanguageClient, preset: str, tmp_path: Path
) -> None:
    folder = tmp_path / "loose"
    folder.mkdir()
    note = folder / "note.md"
    note.write_text("---\ntags: [x]\n---\n# Loose\n", "utf-8")
    await initialize(client, preset, None)
    await open_note(client, note)
    await asyncio.sleep(0.3)
    assert roots(await request(client, "engram/status", {})) == []
    assert not (folder / ".engram").exists()


async def test_a_note_of_another_vault_opens_that_vault(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    first = copy(EXAMPLE, "first")
    other = copy(EXAMPLE, "other")
    await start(client, [first], preset)
    await wait_ready(client)
    await open_note(client, other / "projects" / "lsp-server.md")
    status = await wait_ready(client)
    assert sorted(roots(status)) == sorted([str(first.resolve()), str(other.resolve())])
    result = await request(client, "engram/search", {"tags": ["sqlite"], "uri": other.as_uri()})
    assert result["total"] == 9


@pytest.mark.parametrize("preset", ["visual-studio-code"])
async def test_a_vault_above_the_folder_is_watched_beyond_the_folder(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    """A client watches its folder only: a note written elsewhere in the vault, by another
    program, is still seen (the server watches the vault itself)."""
    vault = copy(EXAMPLE, "vault")
    await start(client, [vault / "projects"], preset)
    await wait_ready(client)
    (vault / "inbox" / "written elsewhere.md").write_text(
        "---\ntags: [elsewhere]\n---\n# Elsewhere\n", "utf-8"
    )
    await until_total(client, 1, tags=["elsewhere"])

"""Keeping the index current: saves, file operations, watched files, or our own watcher.

- ``textDocument/didSave``: the note is re-indexed at once (no debounce), so the next
  ``engram/search`` sees it.
- ``workspace/didCreateFiles``, ``didRenameFiles``, ``didDeleteFiles`` for notes and folders
  (a folder rename moves index rows without re-parsing).
- ``workspace/didChangeWatchedFiles``, registered dynamically when the client can, so edits by
  git, scripts and agents are seen; when it cannot (e.g. Neovim on Linux), the server watches
  each vault itself. Events are debounced and applied as batches.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from engram_ls.core.sync import Change
from engram_ls.core.watch import VaultWatcher

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

log = logging.getLogger(__name__)

_NOTE_FILTER = types.FileOperationFilter(
    pattern=types.FileOperationPattern(glob="**/*.md", matches=types.FileOperationPatternKind.File)
)
_FOLDER_FILTER = types.FileOperationFilter(
    pattern=types.FileOperationPattern(glob="**", matches=types.FileOperationPatternKind.Folder)
)
FILE_OPERATIONS = types.FileOperationRegistrationOptions(filters=[_NOTE_FILTER, _FOLDER_FILTER])
WATCH_ID = "engram-watched-files"


async def _submit(
    ls: EngramLanguageServer,
    items: Iterable[tuple[str, str, str | None]],
    *,
    debounce: float | None = None,
    watched: bool = False,
) -> None:
    """Route (kind, uri, new_uri) events to their vaults' queues; ``watched``: events of the
    client's watcher, left out for the vaults the server watches itself (it saw them too)."""
    await ls.ready()
    resolved: dict[Path, Path] = {}  # each folder is resolved once per notification
    for kind, uri, new_uri in items:
        found = ls.vault_for_uri(uri, resolved)
        if kind == "renamed" and new_uri is not None:
            target = ls.vault_for_uri(new_uri, resolved)
            if found is not None and target is not None and target[0] is found[0]:
                found[0].submit(
                    [Change("renamed", found[1], target[1])],
                    **({} if debounce is None else {"debounce": debounce}),
                )
                continue
            # Moved between vaults (or in/out of the workspace): a delete and a create.
            if found is not None:
                found[0].submit([Change("deleted", found[1])])
            if target is not None:
                target[0].submit([Change("created", target[1])])
            continue
        if found is None or (watched and found[0].watcher is not None):
            continue
        vault, rel = found
        if not rel:
            continue
        vault.submit(
            [Change(kind, rel)],  # type: ignore[arg-type]
            **({} if debounce is None else {"debounce": debounce}),
        )


async def did_save(ls: EngramLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    await _submit(ls, [("changed", params.text_document.uri, None)], debounce=0)


async def did_create(ls: EngramLanguageServer, params: types.CreateFilesParams) -> None:
    await _submit(ls, [("created", f.uri, None) for f in params.files])


async def did_rename(ls: EngramLanguageServer, params: types.RenameFilesParams) -> None:
    await _submit(ls, [("renamed", f.old_uri, f.new_uri) for f in params.files])


async def did_delete(ls: EngramLanguageServer, params: types.DeleteFilesParams) -> None:
    await _submit(ls, [("deleted", f.uri, None) for f in params.files])


async def did_change_watched(
    ls: EngramLanguageServer, params: types.DidChangeWatchedFilesParams
) -> None:
    kinds = {
        types.FileChangeType.Created: "created",
        types.FileChangeType.Changed: "changed",
        types.FileChangeType.Deleted: "deleted",
    }
    await _submit(ls, [(kinds[c.type], c.uri, None) for c in params.changes], watched=True)


async def start_watching(ls: EngramLanguageServer) -> None:
    """Once the vaults exist: file watching by the client, else by the server. A vault the
    client did not send as a folder (one above its folder) is watched by the server: the
    client watches its folders only."""
    if ls.supports("workspace", "did_change_watched_files", "dynamic_registration"):
        _watch_ourselves(ls, [v for v in ls.vaults if not v.client_folder])
        await _register_watchers(ls)
    else:
        ls.own_watch = True
        _watch_ourselves(ls, list(ls.vaults))


def watch_added(ls: EngramLanguageServer, vault: VaultSession) -> None:
    """A vault opened after the start: the one above a note opened outside every vault (the
    server watches it: a client watches its own folders only), or one made again with new
    settings (watched as before: by the server unless it is a folder the client watches)."""
    if vault.client_folder and not ls.own_watch:
        return
    _watch_ourselves(ls, [vault])


def _watch_ourselves(ls: EngramLanguageServer, vaults: Iterable[VaultSession]) -> None:
    """The core watcher per vault; its batches join the vault's ordered queue on the loop."""
    loop = asyncio.get_running_loop()

    def forward(vault: VaultSession) -> Callable[[list[Change]], object]:
        # The watcher has debounced its batch already: apply it without a second wait.
        return lambda changes: loop.call_soon_threadsafe(partial(vault.submit, changes, debounce=0))

    for vault in vaults:
        if vault.watcher is not None:
            continue
        watcher = VaultWatcher(vault.engram, on_changes=forward(vault))
        watcher.start()
        vault.watcher = watcher
        ls.watchers.append(watcher)


async def _register_watchers(ls: EngramLanguageServer) -> None:
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[
            types.FileSystemWatcher(glob_pattern="**/*.md"),
            types.FileSystemWatcher(
                glob_pattern="**/*",
                kind=types.WatchKind.Create | types.WatchKind.Delete,
            ),
        ]
    )
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id=WATCH_ID,
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=options,
                    )
                ]
            )
        )
    except Exception as exc:
        log.warning("the client refused file watching (%s); watching the vaults ourselves", exc)
        ls.own_watch = True
        _watch_ourselves(ls, list(ls.vaults))

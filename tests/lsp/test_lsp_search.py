"""engram/search, engram/status and keeping the index current, through the real server."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.conftest import DATA, EXAMPLE
from tests.lsp.conftest import Shared, paths, request, search, shared_server, start, wait_ready

tags = shared_server(DATA / "tags", "tags")


async def test_search_and_status(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(EXAMPLE, "example")
    await start(client, [root], preset)
    status = await wait_ready(client)
    assert status["vaults"][0]["notes"] == 31
    result = await search(client, tags=["sqlite"], date_from="2024-01-01", date_to="2024-12-31")
    assert result["total"] == 5
    assert result["index"]["served_by"] == "index"
    hit = result["results"][0]
    assert hit["uri"].startswith("file://") and hit["range"]["start"]["line"] == hit["line"] - 1
    text = await search(client, query="write-ahead log")
    assert "reference/sqlite.md" in paths(text)
    assert client.progress_reports, "a work-done progress was reported for the build"


@pytest.mark.parametrize(
    ("params", "code"),
    [
        pytest.param(
            {"query": "x", "date_from": "2024-13-01"}, "ENGRAM_INVALID_REQUEST", id="date"
        ),
        pytest.param({"query": "x", "path": "../.."}, "ENGRAM_OUTSIDE_VAULT", id="traversal"),
        pytest.param({"query": "x" * 5000}, "ENGRAM_LIMIT", id="long"),
        pytest.param({"query": "x", "bogus": True}, "ENGRAM_INVALID_REQUEST", id="unknown-field"),
        pytest.param({"query": "(", "mode": "regex"}, "ENGRAM_INVALID_REQUEST", id="regex"),
    ],
)
@pytest.mark.asyncio(loop_scope="module")
async def test_bad_requests_are_invalid_params(tags: Shared, params: dict, code: str) -> None:
    """One server for all of them (each request is refused and changes nothing); the mapping
    of every error class to its JSON-RPC code is unit-tested in test_convert_errors.py."""
    client = tags.client
    with pytest.raises(JsonRpcException) as info:
        await request(client, "engram/search", params)
    err = info.value
    assert err.code == -32602
    assert err.data["code"] == code  # type: ignore[index]
    # the server keeps serving
    assert (await search(client, tags=["python"]))["total"] == 3


async def test_save_is_visible_to_next_search(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "tags", "tags")
    await start(client, [root], preset)
    await wait_ready(client)
    note = root / "e-python.md"
    note.write_text("---\ntags: [python, kiwi]\ndate: 2023-12-31\n---\nzanzibar\n", "utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=note.as_uri())
        )
    )
    result = await search(client, query="zanzibar")
    assert paths(result) == ["e-python.md"]
    assert (await search(client, tags=["kiwi"]))["total"] == 1


@pytest.mark.presets
async def test_folder_rename_via_did_rename_files(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(EXAMPLE, "example")
    await start(client, [root], preset)
    await wait_ready(client)
    before = paths(await search(client, path="meetings/2024", limit=100))
    assert len(before) == 5
    os.rename(root / "meetings" / "2024", root / "meetings" / "year-2024")
    client.workspace_did_rename_files(
        types.RenameFilesParams(
            files=[
                types.FileRename(
                    old_uri=(root / "meetings" / "2024").as_uri(),
                    new_uri=(root / "meetings" / "year-2024").as_uri(),
                )
            ]
        )
    )
    await asyncio.sleep(0.2)
    assert (await search(client, path="meetings/2024"))["total"] == 0
    after = paths(await search(client, path="meetings/year-2024", limit=100))
    assert after == [p.replace("meetings/2024/", "meetings/year-2024/") for p in before]


@pytest.mark.presets
async def test_file_written_without_notification_is_found(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    """Neovim: the server's own watcher. VS Code: the dynamically registered watcher, whose
    events this test client sends as VS Code would."""
    root = copy(DATA / "tags", "tags")
    await start(client, [root], preset)
    await wait_ready(client)
    (root / "sub").mkdir()
    new = root / "sub" / "from-git.md"
    new.write_text("---\ntags: [gitborne]\n---\nwritten by a script\n", "utf-8")
    if preset == "visual-studio-code":
        registered = client.registered  # type: ignore[attr-defined]
        assert any(r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES for r in registered)
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[types.FileEvent(uri=new.as_uri(), type=types.FileChangeType.Created)]
            )
        )
    loop = asyncio.get_running_loop()
    end = loop.time() + 2.0
    while (await search(client, tags=["gitborne"]))["total"] != 1:
        assert loop.time() < end, "not found within 2 s"
        await asyncio.sleep(0.05)
    shutil.rmtree(root / "sub")
    if preset == "visual-studio-code":
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(uri=(root / "sub").as_uri(), type=types.FileChangeType.Deleted)
                ]
            )
        )
    end = loop.time() + 2.0
    while (await search(client, tags=["gitborne"]))["total"] != 0:
        assert loop.time() < end, "deletion not seen within 2 s"
        await asyncio.sleep(0.05)


async def test_multi_root_and_nested(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    a = copy(DATA / "tags", "a")
    b = copy(EXAMPLE, "b")
    nested = copy(DATA / "hostile", "a/inner")
    await start(client, [a, b, nested], preset)
    status = await wait_ready(client)
    counts = {Path(v["root"]).name: v["notes"] for v in status["vaults"]}
    assert counts == {"a": 9, "b": 31, "inner": 5}  # inner's notes belong to inner only
    r = await request(client, "engram/search", {"tags": ["hostile"], "uri": nested.as_uri()})
    assert r["total"] == 5
    r = await request(client, "engram/search", {"tags": ["sqlite"], "uri": b.as_uri()})
    assert r["total"] == 9


@pytest.mark.slow
async def test_cancel_request_stops_a_long_search(
    client: LanguageClient, preset: str, generated: Callable[..., Path], tmp_path: Path
) -> None:
    root = generated(4000)
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder", "utf-8")
    # No usable index: every search is a scan of 4,000 files, long enough to cancel.
    await start(client, [root], preset, {"index_path": str(blocker / "index.sqlite")})
    msg_id = "long-search"
    # send_request (not the async variant, which only sends once awaited)
    future = asyncio.wrap_future(
        client.protocol.send_request("engram/search", {"query": "index"}, msg_id=msg_id)
    )
    await asyncio.sleep(0.2)
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(future, 10)
    assert info.value.code == -32800
    status = await request(client, "engram/status", {})
    assert status["vaults"][0]["state"] == "failed"  # the index could not be created
    assert client.messages, "the user was told the index cannot be used"


async def test_bad_settings_are_reported_and_defaults_used(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "tags", "tags")
    await start(client, [root], preset, {"topic_keys": 5, "inline_tags": False})
    await wait_ready(client)
    assert any("topic_keys" in m.message for m in client.messages)
    # topic_keys fell back to its default; the valid key still applies
    assert (await search(client, tags=["memory"]))["total"] == 4


@pytest.mark.presets
async def test_file_operations_create_and_delete(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "tags", "tags")
    await start(client, [root], preset)
    await wait_ready(client)
    folder = root / "new"
    folder.mkdir()
    (folder / "one.md").write_text("---\ntags: [fresh]\n---\none\n", "utf-8")
    (folder / "two.md").write_text("---\ntags: [fresh]\n---\ntwo\n", "utf-8")
    single = root / "single.md"
    single.write_text("---\ntags: [fresh]\n---\nsingle\n", "utf-8")
    client.workspace_did_create_files(
        types.CreateFilesParams(
            files=[types.FileCreate(uri=folder.as_uri()), types.FileCreate(uri=single.as_uri())]
        )
    )
    assert (await search(client, tags=["fresh"]))["total"] == 3
    shutil.rmtree(folder)
    client.workspace_did_delete_files(
        types.DeleteFilesParams(files=[types.FileDelete(uri=folder.as_uri())])
    )
    assert paths(await search(client, tags=["fresh"])) == ["single.md"]


async def test_where_conditions_through_engram_search(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    """Typed conditions on properties, as text and as objects, a saved change seen by the next
    search, and a malformed condition refused with the part named."""
    root = copy(EXAMPLE, "example")
    await start(client, [root], preset)
    await wait_ready(client)
    done = await search(client, where=["status = done"])
    assert sorted(paths(done)) == ["projects/rust-tokenizer.md", "reference/lsp-basics.md"]
    tree = {"or": [{"property": "priority", "op": "<=", "value": 1}, "rating >= 5"]}
    assert sorted(paths(await search(client, where=tree))) == [
        "projects/lsp-server.md",
        "reference/lsp-basics.md",
    ]
    note = root / "projects" / "lsp-server.md"
    note.write_text(note.read_text("utf-8").replace("status: doing", "status: done"), "utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=note.as_uri())
        )
    )
    assert "projects/lsp-server.md" in paths(await search(client, where=["status = done"]))
    with pytest.raises(JsonRpcException) as info:
        await request(client, "engram/search", {"where": [{"property": "x", "op": "like"}]})
    assert info.value.data["code"] == "ENGRAM_INVALID_REQUEST"  # type: ignore[index]
    assert "where[0].op" in info.value.message

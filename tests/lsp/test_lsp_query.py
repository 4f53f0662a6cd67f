"""``engram/query`` through the real ``engram-ls`` process: a ``.base`` file of the vault, its
open buffer (unsaved edits included), a note's ```` ```base ```` block, base text, a saved
change seen by the next query, and an unsupported construct refused with its place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.conftest import DATA
from tests.lsp.conftest import request, start, wait_ready


async def test_engram_query_runs_a_base_from_its_file_its_buffer_or_text(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "bases", "bases")
    await start(client, [root], preset)
    await wait_ready(client)
    base = root / "projects.base"
    out = await request(client, "engram/query", {"uri": base.as_uri()})
    assert out["view"] == "Priority" and out["base"] == "projects.base"
    assert [r["path"] for r in out["rows"]] == [
        "projects/gamma.md",
        "projects/alpha.md",
        "projects/beta.md",
    ]
    assert out["rows"][1]["uri"] == (root / "projects" / "alpha.md").as_uri()
    assert out["rows"][1]["values"]["formula.value"] == 62.5
    late = await request(client, "engram/query", {"uri": base.as_uri(), "view": "Late"})
    assert [r["path"] for r in late["rows"]] == ["projects/beta.md"]
    assert "markdown" not in late
    shown = await request(client, "engram/query", {"uri": base.as_uri(), "format": "markdown"})
    table = shown["markdown"].splitlines()
    assert table[0] == "| file.name | status | priority | formula.value |"
    # each row's first cell opens its note; the rest is what `engram query` prints
    alpha = (root / "projects" / "alpha.md").as_uri()
    assert table[3].startswith(f"| [alpha.md](<{alpha}>) | ") and "| 62.5 |" in table[3]
    assert table[-1].startswith("Priority: 3 of 3 notes; served by index")
    with pytest.raises(JsonRpcException) as info:
        await request(client, "engram/query", {"uri": base.as_uri(), "format": "html"})
    assert info.value.data["code"] == "ENGRAM_INVALID_REQUEST"

    # The open buffer, not the file: an edit not saved yet is what runs.
    edited = base.read_text("utf-8").replace("direction: DESC", "direction: ASC")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=base.as_uri(), language_id="yaml", version=1, text=edited
            )
        )
    )
    out = await request(client, "engram/query", {"uri": base.as_uri()})
    assert out["rows"][0]["path"] == "projects/beta.md"

    books = await request(
        client, "engram/query", {"uri": (root / "dashboard.md").as_uri(), "block": 2}
    )
    assert [r["path"] for r in books["rows"]] == ["reading/Textbook.md", "reading/book-one.md"]
    # the block at an editor's cursor (lines from 0): above the first, in it, in the second
    dashboard = (root / "dashboard.md").as_uri()
    for line, view in [(0, "Open"), (9, "Open"), (15, "Open"), (17, "Books"), (40, "Books")]:
        at = await request(client, "engram/query", {"uri": dashboard, "line": line})
        assert at["view"] == view, line
    text = await request(
        client, "engram/query", {"text": "filters: 'rating >= 4'\nviews: [{name: r}]"}
    )
    assert text["total"] == 2

    note = root / "reading" / "book-one.md"
    note.write_text(note.read_text("utf-8").replace("rating: 4", "rating: 3"), "utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=note.as_uri())
        )
    )
    text = await request(
        client, "engram/query", {"text": "filters: 'rating >= 4'\nviews: [{name: r}]"}
    )
    assert [r["path"] for r in text["rows"]] == ["reading/Textbook.md"]


async def test_engram_query_errors_name_the_construct_and_its_place(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "bases", "bases")
    await start(client, [root], preset)
    await wait_ready(client)
    with pytest.raises(JsonRpcException) as info:
        await request(client, "engram/query", {"uri": (root / "broken.base").as_uri()})
    data = info.value.data
    assert data["code"] == "ENGRAM_INVALID_REQUEST"  # type: ignore[index]
    assert (data["line"], data["column"], data["unsupported"]) == (3, 27, "this")  # type: ignore[index]
    for params, code in [
        ({}, "ENGRAM_INVALID_REQUEST"),
        ({"uri": "file:///elsewhere/x.base"}, "ENGRAM_OUTSIDE_VAULT"),
        ({"uri": (root / "nope.base").as_uri()}, "ENGRAM_NOT_FOUND"),
        ({"text": "views: [{name: v, limit: -1}]"}, "ENGRAM_INVALID_REQUEST"),
    ]:
        with pytest.raises(JsonRpcException) as info:
            await request(client, "engram/query", params)
        assert info.value.data["code"] == code, params  # type: ignore[index]

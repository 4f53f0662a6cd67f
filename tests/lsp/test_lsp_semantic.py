"""Search by meaning through the real language server: modes, status, progress, related
notes, and an edit found by meaning after the save."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import EXAMPLE
from tests.lsp.conftest import request, search, start, wait_ready


def preset_reports_progress(client: LanguageClient) -> bool:
    """Whether the client declared work-done progress (the build reports it then too)."""
    return any(str(t).startswith("engram-build-") for t in client.progress_reports)


def ranked(result: dict[str, Any]) -> list[str]:
    """The hits' paths in their order (``conftest.paths`` sorts them)."""
    return [h["path"] for h in result["results"]]


async def _semantic_ready(client: LanguageClient, timeout: float = 60) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        vault = (await request(client, "engram/status", {}))["vaults"][0]
        if vault["semantic"]["state"] == "ready":
            return vault  # type: ignore[no-any-return]
        assert loop.time() < end, f"semantic never ready: {vault['semantic']}"
        await asyncio.sleep(0.1)


async def test_semantic_modes_status_progress_and_related(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(EXAMPLE, "example")
    await start(client, [root], preset)
    await wait_ready(client)
    vault = await _semantic_ready(client)
    assert vault["capabilities"] == {
        "semantic": True,
        "model": "wordllama/l2_supercat_256",
        "dims": 256,
    }
    assert vault["semantic"]["embedded"] == vault["semantic"]["notes"] == 31
    embedding = [t for t in client.progress_reports if str(t).startswith("engram-embed-")]
    if preset_reports_progress(client):
        assert embedding, "a work-done progress was reported for the embedding"
        kinds = [getattr(p, "kind", None) for p in client.progress_reports[embedding[0]]]
        assert kinds[0] == "begin" and kinds[-1] == "end"
    query = "a process keeps growing its RAM use over days"
    assert (await search(client, query=query))["total"] == 0  # no note says it in these words
    res = await search(client, query=query, mode="semantic", limit=5)
    assert "projects/memory-leak-hunt.md" in ranked(res)[:3]
    hit = res["results"][0]
    assert hit["range"]["start"]["line"] == hit["line"] - 1 and 0 <= hit["score"] <= 1
    hybrid = await search(client, query="the watcher kept every event in memory", mode="hybrid")
    assert ranked(hybrid)[0] == "projects/memory-leak-hunt.md"
    tagged = await search(client, query=query, mode="semantic", tags=["sqlite"], limit=50)
    assert tagged["results"]
    for h in tagged["results"]:
        assert "sqlite" in [t.casefold() for t in h["topics"]]
    related = await request(
        client, "engram/related", {"uri": (root / "projects/memory-leak-hunt.md").as_uri()}
    )
    reasons = {r for item in related["results"] for r in item["reasons"]}
    assert "meaning" in reasons
    for item in related["results"]:
        assert item["uri"].startswith("file://") and item["line"] >= 0
        assert item["path"] != "projects/memory-leak-hunt.md"


async def test_a_saved_edit_is_found_by_meaning(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(EXAMPLE, "example")
    await start(client, [root], preset)
    await wait_ready(client)
    await _semantic_ready(client)
    note = root / "inbox/open questions.md"
    note.write_text("# Open questions\n\nShould we adopt a puppy or a kitten for the office?\n")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=note.as_uri())
        )
    )
    loop = asyncio.get_running_loop()
    end = loop.time() + 30
    while True:
        res = await search(client, query="getting a pet dog or cat", mode="semantic", limit=3)
        if ranked(res)[:1] == ["inbox/open questions.md"]:
            break
        assert loop.time() < end, f"the edit was not found by meaning: {ranked(res)}"
        await asyncio.sleep(0.1)

"""textDocument/hover on topics, through the real server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import DATA, EXAMPLE
from tests.lsp.conftest import PRESETS, Shared, shared_server
from tests.lsp.test_lsp_completion import cursor, open_doc, units

TIMEOUT = 30

# the tests that only read share it, over two vaults
tags = shared_server(DATA / "tags", "tags", example=EXAMPLE)


async def hover(
    client: LanguageClient, root: Path, marked: str, preset: str, name: str = "draft.md"
) -> types.Hover | None:
    text, line, before = cursor(marked)
    uri = (root / name).as_uri()
    open_doc(client, uri, text)
    result = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=line, character=units(before, preset)),
            )
        ),
        TIMEOUT,
    )
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return result


def markdown(result: types.Hover | None) -> str:
    assert result is not None
    assert isinstance(result.contents, types.MarkupContent)
    assert result.contents.kind == types.MarkupKind.Markdown
    return result.contents.value


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_on_topics(tags: Shared) -> None:
    client, root, preset = tags.client, tags.root, PRESETS[0]

    flow = await hover(client, root, "---\ntags: [memory, pyt|hon]\n---\n", preset)
    text = markdown(flow)
    assert "3 notes" in text
    # newest first, with title, date and path; the undated note last
    several = text.index("Several topics")
    only = text.index("Python only")
    undated = text.index("Undated note")
    assert several < only < undated
    assert "2025-01-01" in text and "2023-12-31" in text and "undated" in text
    assert "`f-several.md`" in text and "`e-python.md`" in text
    assert (root / "f-several.md").as_uri() in text
    assert flow is not None and flow.range == types.Range(
        start=types.Position(line=1, character=len("tags: [memory, ")),
        end=types.Position(line=1, character=len("tags: [memory, python")),
    )

    block = markdown(await hover(client, root, "---\ntags:\n  - Memory L|eak\n---\n", preset))
    assert "2 notes" in block and "Memory Leak as two words" in block

    inline = await hover(client, root, "# Title\n\nSee #me|mory and more.\n", preset)
    assert "4 notes" in markdown(inline)
    assert inline is not None and inline.range is not None
    assert inline.range.start == types.Position(line=2, character=len("See #"))

    unused = markdown(await hover(client, root, "#brand-n|ew\n", preset))
    assert "no note" in unused


@pytest.mark.asyncio(loop_scope="module")
async def test_no_hover_elsewhere(tags: Shared) -> None:
    client, root = tags.client, tags.root
    for marked in [
        "---\ntitle: pyt|hon\ntags: [python]\n---\n",
        "---\ntags: [python]\n---\nplain pyt|hon text\n",
        "---\ntags: [python]\n---\n```\n#pyt|hon\n```\n",
        "---\ntags: [python]\n---\nsee `#pyt|hon`\n",
        "---\ntags: [python]\n---\nthe colour #ff8|800\n",
        "---\ntags: [python]\n-|--\n",
    ]:
        assert await hover(client, root, marked, PRESETS[0]) is None, marked


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_in_example_vault(tags: Shared) -> None:
    client, root = tags.client, tags.roots["example"]
    text = markdown(
        await hover(client, root, "---\ntopics: [SQL|ite]\n---\n", "visual-studio-code")
    )
    assert "9 notes" in text and "Most recent:" in text
    assert text.count("\n- ") == 5
    assert "SQLite upgrade" in text  # 2025-10-13, the newest sqlite note

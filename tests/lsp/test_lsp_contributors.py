"""Each method with several contributors survives one that fails (issue 14 item 6).

The server under test is the real ``engram-ls`` with one more contributor, listed first for
hover, completion, code actions and diagnostics, that always raises (``failing_server.py``:
no real input was found that makes a shipped contributor fail, since each one handles the
errors its core calls document). Every shipped contributor must still answer, and each
failure must be logged (the test server forwards the registry's log to the client).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import make_client, start, wait_ready
from tests.lsp.test_lsp_completion import open_doc

TIMEOUT = 30
SERVER = [sys.executable, "-c", "from tests.lsp.failing_server import main; main()"]
CONFIG = "keyword_topics:\n  sqlite: databases\n"
NOTE = (
    "---\n"
    "tags: [alpha]\n"
    "date: not a date\n"
    "---\n"
    "# A\n"
    "\n"
    "See [[b]] and [[Missing]]; we use sqlite.\n"
    "More: [[\n"
)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client))
async def failing_client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    yield lsp_client
    await lsp_client.shutdown_session()


def make_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / ".engram").mkdir(parents=True)
    (root / ".engram" / "config.yaml").write_text(CONFIG, encoding="utf-8")
    (root / "b.md").write_text("---\ntags: [alpha, beta]\n---\n# Bee\n\nabout b\n")
    return root


def doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def pos(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


async def wait_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    for _ in range(400):
        shown = list(client.diagnostics.get(uri, []))
        codes = {d.code for d in shown}
        if {"date", "broken-link"} <= codes:
            return shown
        await asyncio.sleep(0.05)
    raise AssertionError(f"diagnostics of both contributors never came: {shown}")


async def hover_text(client: LanguageClient, uri: str, line: int, character: int) -> str:
    result = await asyncio.wait_for(
        client.text_document_hover_async(
            types.HoverParams(text_document=doc(uri), position=pos(line, character))
        ),
        TIMEOUT,
    )
    assert result is not None
    assert isinstance(result.contents, types.MarkupContent)
    return result.contents.value


async def labels(client: LanguageClient, uri: str, line: int, character: int) -> list[str]:
    result = await asyncio.wait_for(
        client.text_document_completion_async(
            types.CompletionParams(text_document=doc(uri), position=pos(line, character))
        ),
        TIMEOUT,
    )
    assert isinstance(result, types.CompletionList), result
    return [item.label for item in result.items]


async def test_a_failing_contributor_is_logged_and_skipped(
    failing_client: LanguageClient, tmp_path: Path
) -> None:
    client = failing_client
    root = make_vault(tmp_path)
    await start(client, [root], "visual-studio-code")
    await wait_ready(client)
    uri = (root / "a.md").as_uri()
    open_doc(client, uri, NOTE)

    # diagnostics: the core's problems (the date) and the link problems, both still there
    shown = await wait_diagnostics(client, uri)
    broken = next(d for d in shown if d.code == "broken-link")

    # hover: on a link (the link contributor), on a topic (the topic contributor)
    assert "Bee" in await hover_text(client, uri, 6, NOTE.split("\n")[6].index("[[b") + 3)
    assert "Topic alpha" in await hover_text(client, uri, 1, len("tags: [al"))

    # completion: a link being typed, a topic being typed
    assert "Bee" in await labels(client, uri, 7, len("More: [["))
    topic_doc = (root / "t.md").as_uri()
    open_doc(client, topic_doc, "---\ntags: [be\n---\n")
    assert "beta" in await labels(client, topic_doc, 1, len("tags: [be"))

    # code actions: "Create note" for the broken link and "Add suggested topics", both
    actions = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=doc(uri),
                range=broken.range,
                context=types.CodeActionContext(diagnostics=[broken]),
            )
        ),
        TIMEOUT,
    )
    titles = sorted(a.title for a in actions or [] if isinstance(a, types.CodeAction))
    assert titles == ["Add suggested topics: databases", "Create note Missing.md"]

    # every failure was logged, with its method and the contributor's name
    logged = [m.message for m in client.log_messages]
    for method in (
        types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
        types.TEXT_DOCUMENT_HOVER,
        types.TEXT_DOCUMENT_COMPLETION,
        types.TEXT_DOCUMENT_CODE_ACTION,
    ):
        assert f"{method}: failing_server.failing failed" in logged, (method, logged)

"""textDocument/codeAction "Add suggested topics", through the real server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from lsprotocol import types
from pytest_lsp import LanguageClient

from engram_ls.core.config import load_config
from engram_ls.core.parse import parse_note
from tests.lsp.conftest import PRESETS, Shared, lsp_session, wait_ready
from tests.lsp.test_lsp_completion import open_doc

TIMEOUT = 30
CONFIG = """keyword_topics:
  sqlite: databases
  postgres: databases
  neovim: editors
"""


def make_vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    (root / ".engram").mkdir(parents=True)
    (root / ".engram" / "config.yaml").write_text(CONFIG)
    (root / "seed.md").write_text("---\ntopics: [databases]\n---\n# Seed\n")
    return root


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def vault(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shared]:
    """One server for the module: its tests only open buffers."""
    root = make_vault(tmp_path_factory.mktemp("code-action"))
    async with lsp_session([root], PRESETS[0]) as client:
        await wait_ready(client)
        yield Shared(client, root, {"vault": root}, PRESETS[0])


async def actions(
    client: LanguageClient, uri: str, only: list[str] | None = None
) -> list[types.CodeAction]:
    result = await asyncio.wait_for(
        client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(
                    start=types.Position(line=0, character=0),
                    end=types.Position(line=0, character=0),
                ),
                context=types.CodeActionContext(diagnostics=[], only=only),
            )
        ),
        TIMEOUT,
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


def apply_edit(text: str, uri: str, edit: types.WorkspaceEdit) -> str:
    """Apply a single-document WorkspaceEdit (ASCII text: columns are code points)."""
    if edit.document_changes:
        (change,) = edit.document_changes
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.uri == uri
        edits = list(change.edits)
    else:
        assert edit.changes is not None
        edits = list(edit.changes[uri])
    (only,) = edits
    assert isinstance(only, types.TextEdit)
    lines = text.split("\n")

    def offset(pos: types.Position) -> int:
        return sum(len(line) + 1 for line in lines[: pos.line]) + pos.character

    start, end = offset(only.range.start), offset(only.range.end)
    return text[:start] + only.new_text + text[end:]


@pytest.mark.asyncio(loop_scope="module")
async def test_add_suggested_topics(vault: Shared) -> None:
    client, root = vault.client, vault.root
    config, _ = load_config(root)

    text = (
        "---\ntitle: Storage\ntopics: [notes]  # kept\nstatus: draft\n---\n"
        "We moved from Postgres to SQLite.\n"
    )
    uri = (root / "storage.md").as_uri()
    open_doc(client, uri, text)
    (action,) = await actions(client, uri)
    assert action.kind == types.CodeActionKind.QuickFix
    assert action.title == "Add suggested topics: databases"
    assert action.edit is not None
    after = apply_edit(text, uri, action.edit)
    note = parse_note("storage.md", after.encode(), config)
    assert note.topics == ("notes", "databases")
    before_lines, after_lines = text.split("\n"), after.split("\n")
    # only the topic line changed
    assert len(before_lines) == len(after_lines)
    changed = [i for i, (a, b) in enumerate(zip(before_lines, after_lines, strict=True)) if a != b]
    assert changed == [2]

    # once the topics are there, nothing is offered
    open_doc(client, uri, after, version=2)
    assert await actions(client, uri) == []


@pytest.mark.asyncio(loop_scope="module")
async def test_note_without_frontmatter_and_crlf(vault: Shared) -> None:
    client, root = vault.client, vault.root
    config, _ = load_config(root)

    text = "# Editor setup\r\n\r\nI use Neovim every day.\r\n"
    uri = (root / "editor.md").as_uri()
    open_doc(client, uri, text)
    (action,) = await actions(client, uri)
    assert action.edit is not None
    after = apply_edit(text, uri, action.edit)
    assert after.endswith(text)  # the body is untouched
    assert after.startswith("---\r\n")
    assert "\n" not in after.replace("\r\n", "")  # CRLF everywhere
    assert parse_note("editor.md", after.encode(), config).topics == ("editors",)


@pytest.mark.asyncio(loop_scope="module")
async def test_nothing_offered(vault: Shared) -> None:
    client, root = vault.client, vault.root

    uri = (root / "plain.md").as_uri()
    open_doc(client, uri, "---\ntopics: [misc]\n---\nNothing to see here.\n")
    assert await actions(client, uri) == []

    # malformed frontmatter: no edit is risked
    uri = (root / "broken.md").as_uri()
    open_doc(client, uri, "---\ntopics: [sqlite\n---\nSQLite notes.\n")
    assert await actions(client, uri) == []

    # a client asking only for other kinds
    uri = (root / "match.md").as_uri()
    open_doc(client, uri, "SQLite notes.\n")
    assert await actions(client, uri, only=[types.CodeActionKind.Source]) == []
    assert len(await actions(client, uri, only=[types.CodeActionKind.QuickFix])) == 1

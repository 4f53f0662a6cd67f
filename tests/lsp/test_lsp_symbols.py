"""workspace/symbol and textDocument/documentSymbol through the real server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.conftest import DATA, EXAMPLE
from tests.lsp.conftest import Shared, shared_server, start, wait_ready

TIMEOUT = 30

example = shared_server(EXAMPLE, "example")  # the tests that only read share it


Symbol = types.WorkspaceSymbol | types.SymbolInformation
"""The server sends ``WorkspaceSymbol`` objects with a full location; lsprotocol's client
converter may read them as the identical-looking ``SymbolInformation``."""


async def symbols(client: LanguageClient, query: str) -> list[Symbol]:
    result = await asyncio.wait_for(
        client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query)), TIMEOUT
    )
    assert result is not None
    out: list[Symbol] = list(result)
    return out


async def outline(client: LanguageClient, uri: str) -> list[types.DocumentSymbol]:
    result = await asyncio.wait_for(
        client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=uri))
        ),
        TIMEOUT,
    )
    assert result is not None
    out = list(result)
    assert all(isinstance(s, types.DocumentSymbol) for s in out)
    return out  # type: ignore[return-value]


def tree(nodes: Sequence[types.DocumentSymbol]) -> list[Any]:
    """Names, nested: ``[name, [children...]]`` (leaves are plain names)."""
    return [[n.name, tree(n.children)] if n.children else n.name for n in nodes or ()]


def where(symbol: Symbol) -> tuple[str, int]:
    location = symbol.location
    assert isinstance(location, types.Location)
    return location.uri, location.range.start.line


@pytest.mark.asyncio(loop_scope="module")
async def test_workspace_symbols(example: Shared) -> None:
    client, root = example.client, example.root

    # a note, by its title
    found = await symbols(client, "SQLite field notes")
    assert [(s.name, s.kind) for s in found] == [("SQLite field notes", types.SymbolKind.File)]
    # on its `title:` line: a client that shows the line (eglot's *xref*) shows the title
    assert where(found[0]) == ((root / "reference" / "sqlite.md").as_uri(), 1)
    assert found[0].container_name == "reference"

    # a heading, on its line, inside its note
    (heading,) = [s for s in await symbols(client, "write-ahead") if s.name == "Write-ahead log"]
    assert heading.kind == types.SymbolKind.String
    assert heading.container_name == "SQLite field notes"
    uri, line = where(heading)
    assert uri == (root / "reference" / "sqlite.md").as_uri()
    assert (root / "reference" / "sqlite.md").read_text("utf-8").split("\n")[line] == (
        "## Write-ahead log"
    )

    # a topic: the newest note using it, on the line naming it
    (topic,) = [s for s in await symbols(client, "neovim") if s.kind == types.SymbolKind.Key]
    assert topic.name == "neovim" and topic.container_name == "1 note"
    uri, line = where(topic)
    setup = root / "reference" / "editor-setup.md"
    assert uri == setup.as_uri()
    assert "#neovim" in setup.read_text("utf-8").split("\n")[line]

    # ranking: exact before prefix; among prefixes the most recent first
    ranked = [s.name for s in await symbols(client, "sqlite")]
    assert ranked == [
        "sqlite",
        "SQLite",
        "SQLite upgrade",
        "SQLite review",
        "SQLite field notes",
    ]

    # fuzzy: the query's characters in order, any case
    fuzzy = [s.name for s in await symbols(client, "SFN")]
    assert "SQLite field notes" in fuzzy

    # an empty query lists recent notes; nothing matches nonsense
    recent = await symbols(client, "")
    assert recent[0].name == "Saturday notes"
    assert all(s.kind == types.SymbolKind.File for s in recent)
    assert await symbols(client, "qqqqzzzz") == []


async def test_symbols_are_capped(
    client: LanguageClient, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(EXAMPLE, "example")
    await start(client, [root], "neovim", {"limits": {"workspace_symbols": 5}})
    await wait_ready(client)
    assert len(await symbols(client, "e")) == 5
    assert len(await symbols(client, "")) == 5


async def test_multi_root_results_are_merged(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    a = copy(DATA / "tags", "a")
    b = copy(EXAMPLE, "b")
    await start(client, [a, b], preset)
    await wait_ready(client)
    found = await symbols(client, "memory")
    uris = [where(s)[0] for s in found]
    assert any(u.startswith(a.as_uri() + "/") for u in uris)
    assert any(u.startswith(b.as_uri() + "/") for u in uris)
    # ranked together: exact matches of both vaults come before prefix matches
    names = [s.name.casefold() for s in found]
    exact = [n == "memory" for n in names]
    assert exact == sorted(exact, reverse=True)
    # the topic `memory` of each vault
    topics = [where(s)[0] for s in found if s.kind == types.SymbolKind.Key and s.name == "memory"]
    assert len(topics) == 2
    # notes are told apart by their vault's folder
    notes = [s for s in found if s.kind == types.SymbolKind.File]
    assert notes and all((s.container_name or "").split("/")[0] in ("a", "b") for s in notes)


async def test_a_note_symbol_is_on_the_line_its_title_comes_from(
    client: LanguageClient, tmp_path: Path
) -> None:
    root = tmp_path / "titles"
    root.mkdir()
    notes = {
        # the title from frontmatter, not the first line (`---`) nor the heading
        "front.md": "---\ntags: [t]\ntitle: Zebra front  # a comment\n---\n\n# Other\n",
        # from the first `# ` heading (an empty `title:` gives none)
        "heading.md": "---\ntitle:\ndate: 2024-01-01\n---\n\n## Zebra intro\n\n# Zebra heading\n",
        # no frontmatter: the heading
        "plain.md": "Some text first.\n\n# Zebra plain\n",
        # from the file name: the top of the note
        "Zebra stem.md": "---\ntags: [t]\n---\n\nNo heading.\n",
    }
    for name, text in notes.items():
        (root / name).write_text(text, "utf-8")
    await start(client, [root], "neovim")
    await wait_ready(client)
    found = {
        s.name: where(s) for s in await symbols(client, "zebra") if s.kind == types.SymbolKind.File
    }
    assert found == {
        "Zebra front": ((root / "front.md").as_uri(), 2),
        "Zebra heading": ((root / "heading.md").as_uri(), 7),
        "Zebra plain": ((root / "plain.md").as_uri(), 2),
        "Zebra stem": ((root / "Zebra stem.md").as_uri(), 0),
    }


@pytest.mark.asyncio(loop_scope="module")
async def test_document_symbols_nest_headings(example: Shared) -> None:
    client, root = example.client, example.root
    note = root / "reference" / "sqlite.md"
    nodes = await outline(client, note.as_uri())  # not open: read from disk
    assert tree(nodes) == [
        [
            "SQLite field notes",
            [
                ["Write-ahead log", ["Checkpoints", "Synchronous"]],
                "Busy timeout",
                "Versioning the schema",
                "Full-text search",
            ],
        ]
    ]
    lines = note.read_text("utf-8").split("\n")
    top = nodes[0]
    assert top.selection_range.start.line == lines.index("# SQLite field notes")
    assert top.range.end.line >= len(lines) - 2  # the h1 runs to the end of the note
    wal = top.children[0]  # type: ignore[index]
    busy = top.children[1]  # type: ignore[index]
    assert wal.range.start.line == lines.index("## Write-ahead log")
    assert wal.range.end.line == lines.index("## Busy timeout") - 1
    assert wal.range.end.character == len(lines[wal.range.end.line])
    assert busy.range.start.line == wal.range.end.line + 1
    checkpoints, synchronous = wal.children  # type: ignore[misc]
    assert checkpoints.range.end.line == synchronous.range.start.line - 1
    assert checkpoints.detail == "###"


@pytest.mark.asyncio(loop_scope="module")
async def test_document_symbols_follow_the_unsaved_buffer(example: Shared) -> None:
    client, root = example.client, example.root
    note = root / "reference" / "sqlite.md"
    text = "---\ntitle: Draft\n---\n# One\n\n## Two\ntext\n### Three\n## Four\n# Five\n"
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=note.as_uri(), language_id="markdown", version=1, text=text
            )
        )
    )
    nodes = await outline(client, note.as_uri())
    assert tree(nodes) == [["One", [["Two", ["Three"]], "Four"]], "Five"]
    assert [n.range.start.line for n in nodes] == [3, 9]
    assert nodes[0].range.end.line == 8  # up to the line before "# Five"
    # an edit that is not saved
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=note.as_uri(), version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="# Only\n")],
        )
    )
    assert tree(await outline(client, note.as_uri())) == ["Only"]
    assert "# SQLite field notes" in note.read_text("utf-8")  # the file is untouched
    client.text_document_did_close(  # the shared server reads the note from disk again
        types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=note.as_uri())
        )
    )
    assert tree(await outline(client, note.as_uri()))[0][0] == "SQLite field notes"


async def test_documents_outside_vaults_have_no_symbols(
    client: LanguageClient, copy: Callable[[Path, str], Path], tmp_path: Path
) -> None:
    root = copy(DATA / "tags", "tags")
    await start(client, [root], "visual-studio-code")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Heading\n", "utf-8")
    assert await outline(client, outside.as_uri()) == []
    assert await outline(client, (root / "missing.md").as_uri()) == []
    assert await outline(client, "untitled:Untitled-1") == []
    (root / "code.py").write_text("# not a heading\n", "utf-8")
    assert await outline(client, (root / "code.py").as_uri()) == []
    # the server still answers
    await wait_ready(client)
    assert [s.name for s in await symbols(client, "python only")] == ["Python only"]

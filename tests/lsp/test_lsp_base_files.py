"""Editing Obsidian bases through the real server: diagnostics, completion and hover in
``.base`` files (and diagnostics of a note's ```base blocks), on the bases fixture vault
(``status``, ``priority``, ``due`` on the projects; ``type``, ``rating``, ``author`` on the
books)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from engram_ls.lsp.features.bases import base_spot
from tests.conftest import DATA
from tests.lsp.conftest import Shared, shared_server
from tests.lsp.test_lsp_completion import cursor, open_doc, units
from tests.lsp.test_lsp_diagnostics import close, diagnostics_for, published

TIMEOUT = 30

bases = shared_server(DATA / "bases", "bases", ["visual-studio-code", "neovim"])


def open_base(client: LanguageClient, uri: str, text: str) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="yaml", version=1, text=text)
        )
    )


async def complete_base(shared: Shared, marked: str, name: str = "draft.base") -> list[str]:
    text, line, before = cursor(marked)
    uri = (shared.root / name).as_uri()
    open_base(shared.client, uri, text)
    try:
        found = await asyncio.wait_for(
            shared.client.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line, units(before, shared.preset)),
                )
            ),
            TIMEOUT,
        )
    finally:
        close(shared.client, uri)
    if found is None:
        return []
    assert isinstance(found, types.CompletionList)
    return [item.label for item in found.items]


@pytest.mark.asyncio(loop_scope="module")
async def test_an_error_is_shown_where_it_is(bases: Shared) -> None:
    client, root = bases.client, bases.root
    uri = (root / "broken.base").as_uri()
    text = (root / "broken.base").read_text("utf-8")
    open_base(client, uri, text)
    try:
        found = await diagnostics_for(client, uri, published)
        assert len(found) == 1
        error = found[0]
        assert error.severity == types.DiagnosticSeverity.Error
        assert error.code == "base-unsupported"
        assert "this" in error.message and "filters.and[1]" in error.message
        line = text.splitlines()[3]
        assert error.range.start == types.Position(
            3, units(line[: line.index("this")], bases.preset)
        )
    finally:
        close(client, uri)


@pytest.mark.asyncio(loop_scope="module")
async def test_unknown_properties_are_warned_and_a_fix_clears_them(bases: Shared) -> None:
    client, root = bases.client, bases.root
    uri = (root / "draft.base").as_uri()
    text = "filters: 'staus == \"done\" && priority > 1'\nviews:\n  - order: [file.name, ratng]\n"
    open_base(client, uri, text)
    try:
        found = await diagnostics_for(client, uri, published)
        assert [(d.code, d.range.start.line, d.range.start.character) for d in found] == [
            ("unknown-property", 0, 10),
            ("unknown-property", 2, 23),
        ]
        assert all(d.severity == types.DiagnosticSeverity.Warning for d in found)
        assert "staus" in found[0].message
        assert found[0].range.end.character == 15
        fixed = text.replace("staus", "status").replace("ratng", "rating")
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)],
            )
        )
        await diagnostics_for(client, uri, lambda d: d is not None and not d)
    finally:
        close(client, uri)


@pytest.mark.asyncio(loop_scope="module")
async def test_a_notes_base_block_is_checked_too(bases: Shared) -> None:
    client, root = bases.client, bases.root
    uri = (root / "block-draft.md").as_uri()
    text = "# Draft\n\n```base\nviews:\n  - type: kanban\n```\n"
    open_doc(client, uri, text)
    try:
        found = await diagnostics_for(client, uri, published)
        assert [(d.code, d.range.start.line) for d in found] == [("base-unsupported", 4)]
        assert "kanban" in found[0].message
    finally:
        close(client, uri)


@pytest.mark.asyncio(loop_scope="module")
async def test_completion_offers_what_goes_there(bases: Shared) -> None:
    props = await complete_base(bases, "filters: 'sta|'\n")
    assert props[0] == "status"
    everything = await complete_base(bases, "filters: '|'\n")
    assert {"status", "priority", "rating", "date", "today", "if", "file", "note"} <= set(
        everything
    )
    files = await complete_base(bases, "filters: 'file.|'\n")
    assert {"name", "folder", "tags", "hasTag", "inFolder"} <= set(files)
    assert await complete_base(bases, "filters: 'file.has|'\n") == [
        "hasTag",
        "hasLink",
        "hasProperty",
    ]
    formulas = await complete_base(
        bases, "formulas:\n  cost: 'price * 2'\nviews:\n  - order: [formula.|]\n"
    )
    assert formulas == ["cost"]
    methods = await complete_base(bases, "filters: 'status.upp|'\n")
    assert methods == ["upper"]
    order = await complete_base(bases, "views:\n  - type: table\n    order:\n      - fi|\n")
    assert "file.name" in order and "file.folder" in order
    sort = await complete_base(bases, "views:\n  - sort:\n      - property: prio|\n")
    assert sort == ["priority"]
    # nowhere else: a key, a view's name, inside a text in an expression
    assert await complete_base(bases, "views:\n  - name: sta|\n") == []
    assert await complete_base(bases, "filt|\n") == []
    assert await complete_base(bases, "filters: 'status == \"do|'\n") == []


@pytest.mark.asyncio(loop_scope="module")
async def test_hover_on_a_property_of_a_base(bases: Shared) -> None:
    client, root = bases.client, bases.root
    uri = (root / "projects.base").as_uri()
    text = (root / "projects.base").read_text("utf-8")
    open_base(client, uri, text)
    try:
        lines = text.splitlines()
        row = next(i for i, t in enumerate(lines) if "order: [file.name, status" in t)

        async def hover_at(word: str) -> str:
            col = lines[row].index(word) + 1
            found = await client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(row, col),
                )
            )
            assert found is not None and isinstance(found.contents, types.MarkupContent)
            return found.contents.value

        status = await hover_at("status")
        assert "status" in status and "3 notes" in status and "doing" in status
        assert "the file's name" in await hover_at("file.name")
        assert "formula" in await hover_at("formula.value")
    finally:
        close(client, uri)


@pytest.mark.parametrize(
    ("marked", "expected"),
    [
        ("filters: 'sta|'", ("expression", "", "sta")),
        ("filters:\n  and:\n    - >\n      note.pr|", ("expression", "note", "pr")),
        ('formulas:\n  f: "rat|"', ("expression", "", "rat")),
        ("views:\n  - order: [file.name, st|]", ("property", "", "st")),
        ("views:\n  - type: table\n    name: x|", None),
        ("views:\n  - type: ta|", None),
        ("# a comment fil|", None),
    ],
)
def test_base_spot(marked: str, expected: tuple[str, str, str] | None) -> None:
    text, line, before = cursor(marked)
    spot = base_spot(text.splitlines(), line, len(before))
    assert (None if spot is None else (spot.context, spot.scope, spot.word)) == expected

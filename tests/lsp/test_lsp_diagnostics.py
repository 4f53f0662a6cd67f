"""textDocument/publishDiagnostics for note problems, through the real server."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from engram_ls.core.config import EngramConfig
from engram_ls.core.parse import parse_note
from tests.conftest import DATA, EXAMPLE
from tests.lsp.conftest import Shared, shared_server, start, wait_ready
from tests.lsp.test_lsp_completion import open_doc

TIMEOUT = 15

# the tests that only open buffers share one server over three vaults
vaults = shared_server(DATA / "tags", "tags", hostile=DATA / "hostile", example=EXAMPLE)
Check = Callable[[Sequence[types.Diagnostic] | None], bool]

BROKEN = "---\ntitle: Broken\ntags: [python, sqlite\ndate: 2024-01-01\n---\n\nBody.\n"
FIXED = "---\ntitle: Broken\ntags: [python, sqlite]\ndate: 2024-01-01\n---\n\nBody.\n"


async def diagnostics_for(
    client: LanguageClient, uri: str, check: Check, timeout: float = TIMEOUT
) -> Sequence[types.Diagnostic]:
    """Wait until the diagnostics published for ``uri`` satisfy ``check``."""

    async def poll() -> Sequence[types.Diagnostic]:
        while True:
            found = client.diagnostics.get(uri)
            if check(found):
                return found or []
            await asyncio.sleep(0.02)

    return await asyncio.wait_for(poll(), timeout)


def published(diagnostics: Sequence[types.Diagnostic] | None) -> bool:
    return bool(diagnostics)


def cleared(diagnostics: Sequence[types.Diagnostic] | None) -> bool:
    return diagnostics is not None and len(diagnostics) == 0


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


def close(client: LanguageClient, uri: str) -> None:
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )


@pytest.mark.asyncio(loop_scope="module")
async def test_malformed_frontmatter_then_fixed(vaults: Shared) -> None:
    client, root = vaults.client, vaults.root
    uri = (root / "broken.md").as_uri()
    open_doc(client, uri, BROKEN)
    found = await diagnostics_for(client, uri, published)
    assert len(found) == 1
    diag = found[0]
    expected = parse_note("broken.md", BROKEN.encode(), EngramConfig()).problems[0]
    assert expected.line is not None
    assert diag.range.start.line == expected.line - 1
    assert diag.range.start.line in (2, 3)  # the unclosed '[' line, or where YAML noticed it
    assert diag.severity == types.DiagnosticSeverity.Error
    assert diag.code == "yaml" and diag.source == "engram"
    assert "YAML" in diag.message

    # typing: the fix is published once the edits pause
    change(client, uri, 2, FIXED)
    await diagnostics_for(client, uri, cleared)

    # broken again by an incremental edit, then closed: cleared on close
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[
                types.TextDocumentContentChangePartial(
                    range=types.Range(
                        start=types.Position(line=2, character=21),
                        end=types.Position(line=2, character=22),
                    ),
                    text="",
                )
            ],
        )
    )
    await diagnostics_for(client, uri, published)
    close(client, uri)
    await diagnostics_for(client, uri, cleared)


@pytest.mark.asyncio(loop_scope="module")
async def test_date_placeholder_is_a_warning(vaults: Shared) -> None:
    client, root = vaults.client, vaults.roots["hostile"]
    note = root / "placeholder-date.md"
    uri = note.as_uri()
    open_doc(client, uri, note.read_text("utf-8"))
    found = await diagnostics_for(client, uri, published)
    assert [(d.code, d.severity, d.range.start.line) for d in found] == [
        ("date", types.DiagnosticSeverity.Warning, 3)
    ]
    assert "{{date}}" in found[0].message
    assert found[0].range.end.character == len('date: "{{date}}"')
    close(client, uri)


@pytest.mark.asyncio(loop_scope="module")
async def test_other_problems(vaults: Shared) -> None:
    client, root = vaults.client, vaults.roots["example"]
    cases = {
        "unclosed.md": ("---\ntitle: x\n\nbody\n", "unclosed-frontmatter", 0),
        "list.md": ("---\n- a\n- b\n---\nbody\n", "frontmatter-type", 0),
        "nul.md": ("text\x00more\n", "binary", 0),
    }
    for name, (text, _code, _line) in cases.items():
        open_doc(client, (root / "inbox" / name).as_uri(), text)
    for name, (_text, code, line) in cases.items():
        found = await diagnostics_for(client, (root / "inbox" / name).as_uri(), published)
        assert [(d.code, d.range.start.line) for d in found] == [(code, line)], name
        assert found[0].severity == types.DiagnosticSeverity.Error
        close(client, (root / "inbox" / name).as_uri())

    # the example vault's one malformed note, as it is on disk
    note = root / "projects" / "indexer-rewrite.md"
    open_doc(client, note.as_uri(), note.read_text("utf-8"))
    found = await diagnostics_for(client, note.as_uri(), published)
    assert [d.code for d in found] == ["yaml"]
    assert 1 <= found[0].range.start.line <= 3
    close(client, note.as_uri())


@pytest.mark.presets
async def test_file_encoding_checked_on_open_and_save(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "tags", "tags")
    await start(client, [root], preset)
    await wait_ready(client)
    note = root / "latin 1.md"  # a space: the URI has %20 in it
    note.write_bytes(b"---\ntitle: Caf\xe9\n---\nbody\n")
    uri = note.as_uri()
    # the editor shows the file decoded somehow; the file itself is not UTF-8
    open_doc(client, uri, "---\ntitle: Café\n---\nbody\n")
    found = await diagnostics_for(client, uri, published)
    assert [(d.code, d.severity, d.range.start.line) for d in found] == [
        ("encoding", types.DiagnosticSeverity.Warning, 1)
    ]
    # saved as UTF-8: the warning goes
    note.write_text("---\ntitle: Café\n---\nbody\n", "utf-8")
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await diagnostics_for(client, uri, cleared)


@pytest.mark.asyncio(loop_scope="module")
async def test_clean_notes_and_other_files_get_nothing(vaults: Shared, tmp_path: Path) -> None:
    client, root = vaults.client, vaults.root
    outside = tmp_path / "outside"
    outside.mkdir()
    clean = (root / "e-python.md").as_uri()
    open_doc(client, clean, (root / "e-python.md").read_text("utf-8"))
    elsewhere = (outside / "broken.md").as_uri()
    open_doc(client, elsewhere, BROKEN)
    hidden = (root / ".obsidian" / "broken.md").as_uri()  # not a note of the vault
    open_doc(client, hidden, BROKEN)
    marker = (root / "marker.md").as_uri()
    open_doc(client, marker, BROKEN)  # opened last: its diagnostics mean the others were done
    await diagnostics_for(client, marker, published)
    await asyncio.sleep(0.1)
    assert clean not in client.diagnostics
    assert elsewhere not in client.diagnostics
    assert hidden not in client.diagnostics
    for uri in (clean, elsewhere, hidden, marker):
        close(client, uri)


class Recording(dict[str, Sequence[types.Diagnostic]]):
    """``client.diagnostics`` that also keeps every publication."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, int]] = []

    def __setitem__(self, uri: str, diagnostics: Sequence[types.Diagnostic]) -> None:
        self.log.append((uri, len(diagnostics)))
        super().__setitem__(uri, diagnostics)


@pytest.mark.asyncio(loop_scope="module")
async def test_typing_is_debounced(vaults: Shared) -> None:
    client, root = vaults.client, vaults.root
    recording = Recording()
    kept, client.diagnostics = client.diagnostics, recording
    try:
        uri = (root / "typing.md").as_uri()
        open_doc(client, uri, FIXED)
        # A burst of edits, each leaving the YAML broken, sent as fast as typing at its fastest
        # (pauses between them would measure the machine's load, not the debounce: on a busy
        # one, 20 ms sleeps were seen to stretch past the 300 ms of quiet time).
        for version in range(2, 8):
            change(client, uri, version, BROKEN.replace("Broken", "Broken" + "!" * version))
        await diagnostics_for(client, uri, published)
        await asyncio.sleep(0.5)
        assert [n for u, n in recording.log if u == uri] == [1], recording.log
        close(client, uri)
    finally:
        client.diagnostics = kept


async def test_too_large_is_a_warning(
    client: LanguageClient, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(DATA / "tags", "tags")
    await start(client, [root], "neovim", {"limits": {"max_note_bytes": 1024}})
    uri = (root / "big.md").as_uri()
    open_doc(client, uri, "---\ntitle: Big\n---\n" + "word " * 400)
    found = await diagnostics_for(client, uri, published)
    assert [(d.code, d.severity, d.range.start.line) for d in found] == [
        ("too-large", types.DiagnosticSeverity.Warning, 0)
    ]

"""A FIFO or a character device where a note was, at every entry point of the language
server that reads a note (issue 14 item 3): hover, completion, code actions, definition and
references on a document the editor has not opened (its text is read from the file), and
references (backlinks), rename planning, hover and link completion when a note that links to
another was replaced after it was indexed. Each must answer within ``TIMEOUT`` instead of
hanging on the FIFO (or reading the device forever), and the server must keep serving.
Document symbols and diagnostics are in ``test_special_files.py``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import request, wait_ready
from tests.lsp.test_lsp_completion import open_doc
from tests.reliability.helpers import lsp_session
from tests.reliability.oracle import snapshot
from tests.reliability.test_special_files import SPECIALS, TIMEOUT, make_vault

PRESET = "visual-studio-code"
"""The client watches files (and sends nothing here): the index keeps the replaced note."""


def doc(path: Path) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=path.as_uri())


def at(line: int, character: int) -> types.Position:
    return types.Position(line=line, character=character)


async def ask(client: LanguageClient, method: str, params: Any) -> Any:
    return await request(client, method, params, timeout=TIMEOUT)


def is_special(path: Path) -> bool:
    mode = os.lstat(path).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


@pytest.mark.parametrize("make", SPECIALS)
async def test_requests_on_a_special_file_the_editor_has_not_opened(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """A request on a document that is not open reads the file: through the vault's reader,
    which refuses anything but a regular file (the document then has no answer)."""
    root = make_vault(tmp_path)
    special = root / "x.md"
    make(special)
    before = snapshot(root)
    async with lsp_session([root], PRESET) as client:
        await wait_ready(client)
        position = types.TextDocumentPositionParams(text_document=doc(special), position=at(0, 2))
        hover = await ask(
            client, types.TEXT_DOCUMENT_HOVER, types.HoverParams(doc(special), at(0, 2))
        )
        assert hover is None
        completion = await ask(
            client, types.TEXT_DOCUMENT_COMPLETION, types.CompletionParams(doc(special), at(0, 2))
        )
        assert not completion or not completion.items
        actions = await ask(
            client,
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionParams(
                text_document=doc(special),
                range=types.Range(start=at(0, 0), end=at(0, 0)),
                context=types.CodeActionContext(diagnostics=[]),
            ),
        )
        assert not actions
        definition = await ask(
            client,
            types.TEXT_DOCUMENT_DEFINITION,
            types.DefinitionParams(position.text_document, position.position),
        )
        assert not definition
        references = await ask(
            client,
            types.TEXT_DOCUMENT_REFERENCES,
            types.ReferenceParams(
                text_document=doc(special),
                position=at(0, 2),
                context=types.ReferenceContext(include_declaration=False),
            ),
        )
        assert not references
        status = await ask(client, "engram/status", {})
        assert status["vaults"][0]["state"] == "ready"
    assert snapshot(root) == before


@pytest.mark.parametrize("make", SPECIALS)
async def test_link_requests_survive_a_linking_note_replaced_by_a_special_file(
    tmp_path: Path, make: Callable[[Path], None]
) -> None:
    """``a.md`` links to ``b.md``; once indexed, ``a.md`` becomes a FIFO or device (the index
    still lists it). Backlinks of ``b.md`` and the link edits of renaming it read ``a.md``'s
    text: it is skipped, not waited on; hover and completion of links keep answering."""
    root = make_vault(tmp_path)
    async with lsp_session([root], PRESET) as client:
        await wait_ready(client)
        (root / "a.md").unlink()
        make(root / "a.md")
        note_b = root / "b.md"
        references = await ask(
            client,
            types.TEXT_DOCUMENT_REFERENCES,
            types.ReferenceParams(
                text_document=doc(note_b),
                position=at(3, 2),
                context=types.ReferenceContext(include_declaration=False),
            ),
        )
        assert not references  # the one note linking here cannot be read: no place to show
        renamed = await ask(
            client,
            types.WORKSPACE_WILL_RENAME_FILES,
            types.RenameFilesParams(
                files=[types.FileRename(old_uri=note_b.as_uri(), new_uri=(root / "c.md").as_uri())]
            ),
        )
        assert renamed is None  # no readable note links to b.md: nothing to rewrite

        draft = root / "draft.md"
        text = "See [[a]] and [[\n"
        open_doc(client, draft.as_uri(), text)
        hover = await ask(
            client, types.TEXT_DOCUMENT_HOVER, types.HoverParams(doc(draft), at(0, 7))
        )
        assert hover is not None and "a.md" in hover.contents.value  # from the index
        completion = await ask(
            client,
            types.TEXT_DOCUMENT_COMPLETION,
            types.CompletionParams(doc(draft), at(0, len(text) - 1)),
        )
        assert {"A", "B"} <= {item.label for item in completion.items}
        headings = await ask(
            client,
            types.TEXT_DOCUMENT_COMPLETION,
            types.CompletionParams(doc(draft), at(0, len("See [[a"))),
        )
        assert headings is not None
        status = await ask(client, "engram/status", {})
        assert status["vaults"][0]["state"] == "ready"
    assert is_special(root / "a.md")

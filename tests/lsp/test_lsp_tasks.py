"""Tasks through the real ``engram-ls``: ``engram/tasks``, the toggle code action (applied by
the client, exactly one line changed), the ``engram.toggleTask`` command on a closed note (the
file) and on an open one (the buffer, through workspace/applyEdit), tasks in workspace
symbols, and overdue tasks as diagnostics when the vault asks for them."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.conftest import EXAMPLE
from tests.lsp.conftest import request, start, wait_ready

ROADMAP = "meetings/2025/2025-01-20 roadmap.md"
TODAY = dt.date.today().isoformat()


def open_note(client: LanguageClient, path: Path) -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id="markdown", version=1, text=path.read_text("utf-8")
            )
        )
    )


def apply(text: str, edits: list[types.TextEdit]) -> str:
    """A client applying whole-line edits (ranges within one line, or empty inserts)."""
    lines = text.split("\n")
    for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True
    ):
        s, end = e.range.start, e.range.end
        line = lines[s.line]
        if s.line == end.line:
            lines[s.line] = line[: s.character] + e.new_text + line[end.character :]
        else:
            raise AssertionError(f"a multi-line edit: {e}")
        lines = "\n".join(lines).split("\n")
    return "\n".join(lines)


async def test_tasks_request_code_action_command_and_symbols(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(EXAMPLE, "vault")
    await start(client, [root], preset)
    await wait_ready(client)

    out = await request(client, "engram/tasks", {"status": "open", "sort": "due"})
    listed = [(t["path"], t["line"]) for t in out["tasks"]]
    assert listed[0] == ("meetings/2024/2024-11-04 perf sync.md", 27)
    assert (ROADMAP, 17) in listed and (ROADMAP, 20) not in listed  # cancelled
    ship = next(t for t in out["tasks"] if t["line"] == 17)
    assert ship["uri"] == (root / ROADMAP).as_uri()
    assert ship["range"]["start"] == {"line": 16, "character": 0}
    assert ship["priority"] == "high" and ship["tags"] == ["editor"] and ship["overdue"]
    child = await request(
        client, "engram/tasks", {"uri": (root / ROADMAP).as_uri(), "tags": "editor"}
    )
    assert [t["parent"] for t in child["tasks"]] == [None, 17]
    with pytest.raises(JsonRpcException) as info:
        await request(client, "engram/tasks", {"due_before": "soon"})
    assert info.value.data["code"] == "ENGRAM_INVALID_REQUEST"

    # The code action on an open note: the client applies its edit; one line changes.
    note = root / ROADMAP
    open_note(client, note)
    before = note.read_text("utf-8")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=note.as_uri()),
            range=types.Range(
                start=types.Position(line=16, character=3), end=types.Position(line=16, character=3)
            ),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    (action,) = [a for a in actions or [] if isinstance(a, types.CodeAction) and "task" in a.title]
    assert action.title == "Mark task done" and action.kind == types.CodeActionKind.QuickFix
    assert action.edit is not None
    changes = action.edit.document_changes or []
    edits = list(changes[0].edits) if changes else list((action.edit.changes or {})[note.as_uri()])
    after = apply(before, edits)
    diff = [(a, b) for a, b in zip(before.split("\n"), after.split("\n"), strict=True) if a != b]
    assert diff == [
        (
            "- [/] Ship the VS Code extension [due:: 2025-06-30] [priority:: high] #editor",
            "- [x] Ship the VS Code extension [due:: 2025-06-30] [priority:: high] #editor"
            f" [completion:: {TODAY}]",
        )
    ]

    # The command on a closed note: the file changes (and the index before the answer).
    perf = root / "meetings/2024/2024-11-04 perf sync.md"
    raw = perf.read_bytes()
    done = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="engram.toggleTask", arguments=[{"uri": perf.as_uri(), "line": 27}]
        )
    )
    assert done["applied"] == "disk" and done["done"] is True
    assert perf.read_bytes().split(b"\n")[26].endswith(f"\u2705 {TODAY}\r".encode())
    now = await request(client, "engram/tasks", {"path": "meetings/2024", "status": "done"})
    assert [t["line"] for t in now["tasks"]] == [27, 28]
    undo = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="engram.toggleTask",
            arguments=[{"uri": perf.as_uri(), "line": 27, "expect": done["after"]}],
        )
    )
    assert undo["done"] is False and perf.read_bytes() == raw
    with pytest.raises(JsonRpcException) as info:
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="engram.toggleTask",
                arguments=[{"uri": perf.as_uri(), "line": 27, "expect": "- [ ] something else"}],
            )
        )
    assert info.value.data["code"] == "ENGRAM_INVALID_REQUEST" and perf.read_bytes() == raw

    # Tasks in workspace symbols: kind Event, at their line.
    symbols = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="health check"))
    found = [s for s in symbols or [] if s.kind == types.SymbolKind.Event]
    assert [(s.name, s.location.range.start.line) for s in found] == [
        ("Weekly index health check", 18)
    ]


async def test_the_command_on_an_open_note_edits_its_buffer(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(EXAMPLE, "vault")
    edits: list[types.ApplyWorkspaceEditParams] = []

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def applied(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    await start(client, [root], preset)
    await wait_ready(client)
    note = root / ROADMAP
    open_note(client, note)
    disk = note.read_bytes()
    out = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="engram.toggleTask", arguments=[{"uri": note.as_uri(), "line": 19}]
        )
    )
    assert out["applied"] == "buffer" and out["recurrence"] == "added" and out["line"] == 20
    assert out["inserted"] == "- [ ] Weekly index health check 🔁 every week 📅 2025-02-10"
    assert note.read_bytes() == disk  # the editor's buffer changed, not the file
    (params,) = edits
    change = (params.edit.document_changes or [None])[0]
    texts = (
        [e.new_text for e in change.edits]
        if change
        else [e.new_text for e in (params.edit.changes or {})[note.as_uri()]]
    )
    assert texts[0].startswith("- [ ] Weekly index health check") and texts[0].endswith("\n")
    assert texts[1].endswith(f"2025-02-03 \u2705 {TODAY}")


async def test_overdue_tasks_are_diagnostics_when_asked(
    client: LanguageClient, preset: str, copy: Callable[[Path, str], Path]
) -> None:
    root = copy(EXAMPLE, "vault")
    await start(client, [root], preset, {"tasks": {"overdue": "warning"}})
    await wait_ready(client)
    note = root / ROADMAP
    open_note(client, note)
    for _ in range(100):
        found = [d for d in client.diagnostics.get(note.as_uri(), []) if d.code == "task-overdue"]
        if found:
            break
        await asyncio.sleep(0.1)
    assert [(d.range.start.line, d.severity) for d in found] == [
        (16, types.DiagnosticSeverity.Warning),
        (17, types.DiagnosticSeverity.Warning),
        (18, types.DiagnosticSeverity.Warning),
    ]
    assert found[0].message == "overdue: due 2025-06-30"


def _unused(_: Any) -> None:  # keeps the Any import for the edits' types
    pass

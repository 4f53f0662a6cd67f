"""Tasks in the editor: the ``engram/tasks`` request, a code action and a command that toggle
a task, and overdue tasks as diagnostics (when the vault's ``tasks.overdue`` asks for them).

- ``engram/tasks`` takes the tasks request (``core/tasks/request.py``, docs/tasks.md) plus an
  optional ``uri`` that picks the vault (a folder or note of it scopes ``path`` when the request
  gives none, as ``engram/search`` does). Each task also carries its note's ``uri`` and the
  ``range`` of its line (0-based).
- The code action "Mark task done" (or "Mark task not done") on a task line edits that line in
  the editor's buffer (a ✅ day, or the next occurrence of a recurring task inserted above it),
  as Obsidian Tasks would; the editor applies it, unsaved, like any edit.
- The command ``engram.toggleTask`` with one argument ``{uri, line, expect?, done?}`` (``line``
  from 1, as ``engram/tasks`` gives it; ``expect``: the line's text the caller saw) toggles the
  task there: through ``workspace/applyEdit`` when the note is open in the editor (its buffer
  changes), else on disk (``Engram.toggle_task``: written atomically, refused if the line no
  longer holds the task, indexed before the answer). It answers what changed and where
  (``applied``: ``buffer`` or ``disk``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from engram_ls.core.errors import EngramError
from engram_ls.core.model import Task
from engram_ls.core.parse import parse_note
from engram_ls.core.tasks.edit import Toggled, toggled
from engram_ls.lsp import convert
from engram_ls.lsp.document import Document, client_range, open_document

if TYPE_CHECKING:
    from engram_ls.lsp.diagnostics import Check
    from engram_ls.lsp.server import EngramLanguageServer

TASKS = "engram/tasks"
TOGGLE = "engram.toggleTask"
KIND = types.CodeActionKind.QuickFix
OVERDUE = {
    "hint": types.DiagnosticSeverity.Hint,
    "information": types.DiagnosticSeverity.Information,
    "warning": types.DiagnosticSeverity.Warning,
}


def _bad(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message, data={"code": "ENGRAM_INVALID_REQUEST"})


async def tasks(ls: EngramLanguageServer, params: Any) -> dict[str, Any]:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise _bad("engram/tasks params must be an object")
    params = dict(params)
    await ls.ready()
    uri = params.pop("uri", None)
    vault, rel = ls.request_vault(None if uri is None else str(uri))
    if rel and "path" not in params:
        params["path"] = rel
    await vault.settled()
    try:
        out = await ls.run(vault.engram.tasks, params)
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    for task in out["tasks"]:
        task["uri"] = vault.engram.vault.uri(task["path"])
        # plain JSON (not lsprotocol objects, which the answer's serialization hands to cattrs
        # one by one): the answer is written as it is
        start = {"line": task["line"] - 1, "character": 0}
        task["range"] = {"start": start, "end": dict(start)}
    return out


# -- toggling --------------------------------------------------------------------------------


def _task_at(document: Document, line: int) -> tuple[Task, str] | None:
    """The task on the 1-based ``line`` of the document's text (its buffer), with the line."""
    config = document.vault.config
    note = parse_note(document.rel, document.source.encode("utf-8"), config)
    task = next((t for t in note.tasks if t.line == line), None)
    if task is None:
        return None
    return task, document.source.split("\n")[line - 1].removesuffix("\r")


def _edit(document: Document, line: int, text: str, edit: Toggled) -> list[types.TextEdit]:
    """The text edits of a toggle: the task's line replaced (its line ending kept), the next
    occurrence inserted above it."""
    doc = document.doc
    edits = [
        types.TextEdit(range=client_range(doc, line - 1, text, 0, len(text)), new_text=edit.after)
    ]
    if edit.inserted is not None:
        start = types.Position(line=line - 1, character=0)
        ending = "\r\n" if document.source.split("\n")[line - 1].endswith("\r") else "\n"
        edits.insert(
            0,
            types.TextEdit(
                range=types.Range(start=start, end=start), new_text=edit.inserted + ending
            ),
        )
    return edits


def _workspace_edit(
    ls: EngramLanguageServer, document: Document, edits: list[types.TextEdit]
) -> types.WorkspaceEdit:
    if ls.supports("workspace", "workspace_edit", "document_changes"):
        return types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=document.doc.uri, version=document.doc.version
                    ),
                    edits=list(edits),
                )
            ]
        )
    return types.WorkspaceEdit(changes={document.doc.uri: list(edits)})


async def toggle_actions(
    ls: EngramLanguageServer, document: Document, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """Code action contributor: "Mark task done" / "Mark task not done" on the task lines of
    the range (the cursor's line)."""
    first, last = params.range.start.line + 1, params.range.end.line + 1
    note = parse_note(document.rel, document.source.encode("utf-8"), document.vault.config)
    lines = document.source.split("\n")
    today = dt.date.today()
    actions = []
    for task in note.tasks:
        if not first <= task.line <= last:
            continue
        text = lines[task.line - 1].removesuffix("\r")
        done = task.state != "done"
        edit = toggled(text, task, done=done, today=today)
        title = "Mark task done" if done else "Mark task not done"
        if edit.inserted is not None:
            title += " (and add its next occurrence)"
        actions.append(
            types.CodeAction(
                title=title,
                kind=KIND,
                edit=_workspace_edit(ls, document, _edit(document, task.line, text, edit)),
            )
        )
    return actions


async def toggle_command(ls: Any, *args: Any) -> dict[str, Any]:
    """``engram.toggleTask`` (see the module's doc). ``ls`` is not annotated with its class:
    pygls reads a command's annotations at run time, where that name is not imported."""
    if len(args) != 1 or not isinstance(args[0], dict):
        raise _bad(f"{TOGGLE} takes one argument: {{uri, line, expect?, done?}}")
    arg = args[0]
    uri, line, expect, done = arg.get("uri"), arg.get("line"), arg.get("expect"), arg.get("done")
    if not isinstance(uri, str) or not isinstance(line, int) or isinstance(line, bool) or line < 1:
        raise _bad(f"{TOGGLE} needs the note's uri and the task's line (from 1)")
    if (expect is not None and not isinstance(expect, str)) or done not in (None, True, False):
        raise _bad("expect is the line's text; done is true or false")
    await ls.ready()
    vault, rel = ls.request_vault(uri)
    opened = open_document(ls, uri)
    if opened is not None and unquote(uri) in ls.workspace.text_documents:  # open: the buffer
        found = _task_at(opened, line)
        if found is None:
            raise _bad(f"{rel}:{line} is not a task")
        task, text = found
        if expect is not None and expect != text:
            raise _bad(f"{rel}:{line} no longer holds the task you saw (it reads {text[:120]!r})")
        target = task.state != "done" if done is None else bool(done)
        edit = toggled(text, task, done=target, today=dt.date.today())
        applied = await ls.workspace_apply_edit_async(
            types.ApplyWorkspaceEditParams(
                edit=_workspace_edit(ls, opened, _edit(opened, line, text, edit)),
                label="Engram: toggle task",
            )
        )
        if not applied.applied:
            reason = applied.failure_reason or "no reason given"
            raise _bad(f"the editor did not apply the edit: {reason}")
        return {
            "applied": "buffer",
            "path": rel,
            "line": line + (edit.inserted is not None),
            "before": text,
            "after": edit.after,
            "done": target,
            "inserted": edit.inserted,
            "recurrence": edit.recurrence,
        }
    try:
        out = await ls.run(lambda: vault.engram.toggle_task(rel, line, expect=expect, done=done))
    except asyncio.CancelledError:
        raise
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    return {"applied": "disk", **out}


# -- overdue diagnostics ---------------------------------------------------------------------


async def diagnose(ls: EngramLanguageServer, check: Check) -> list[types.Diagnostic]:
    """Diagnostics contributor: each open task due before today, when ``tasks.overdue`` is not
    ``off``."""
    severity = OVERDUE.get(check.vault.config.tasks.overdue)
    if severity is None:
        return []
    note = parse_note(check.rel, check.text.encode("utf-8"), check.vault.config)
    today = dt.date.today().isoformat()
    lines = check.text.split("\n")
    out = []
    for task in note.tasks:
        if task.due is None or task.due >= today or task.state in ("done", "cancelled"):
            continue
        text = lines[task.line - 1].removesuffix("\r")
        out.append(
            types.Diagnostic(
                range=client_range(check.doc, task.line - 1, text, 0, len(text)),
                message=f"overdue: due {task.due}",
                severity=severity,
                code="task-overdue",
                source="engram",
            )
        )
    return out


__all__ = ["TASKS", "TOGGLE", "diagnose", "tasks", "toggle_actions", "toggle_command"]

"""Links between notes: completion, go to definition, references (backlinks), hover,
diagnostics, "create note" quick fixes and link updates when notes are renamed.

Every answer comes from the index through ``Engram``'s link methods (``core/navigation.py``;
the rules are in ``core/links.py`` and docs/links.md). Columns in the core are code points;
they become client units (UTF-16 by default) here, with each line's own text.

- Completion inside ``[[...`` (wiki) and ``[text](...`` (Markdown): notes whose title, file
  name or alias starts with what is typed (indexed prefix lookups, at most ``MAX_ITEMS``, the
  list ``isIncomplete`` when there are more); after ``#``, the headings of the target.
- ``textDocument/definition`` on a link: the note (at the heading the anchor names); every
  candidate when the link is ambiguous.
- ``textDocument/references``: on a link, the links to its target; on a ``##``…``######``
  heading, the links to that heading; elsewhere in a note, the links to the note.
- Hover on a link: the target's title, path, summary and topics (or why it has none).
- Diagnostics ``broken-link``, ``ambiguous-link``, ``broken-anchor`` and the quick fix that
  creates a missing note.

Completion, hover, diagnostics and the quick fix are contributors of their methods (listed in
``features/__init__.py``); definition, references and willRenameFiles are this module's alone.
- ``workspace/willRenameFiles``: a ``WorkspaceEdit`` that rewrites every link to the renamed
  notes and folders (and relative links inside them), computed before the rename happens.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from engram_ls.core.errors import EngramError, IndexUnavailable
from engram_ls.core.links import (
    LinkSpan,
    MovePlan,
    encode_md_path,
    link_at,
    relative_path,
    slug,
)
from engram_ls.core.navigation import Backlink, LinkProblem, Target
from engram_ls.core.parse import in_code_span, parse_note
from engram_ls.lsp import convert
from engram_ls.lsp.convert import escape_markdown
from engram_ls.lsp.diagnostics import Check
from engram_ls.lsp.document import (
    Document,
    Units,
    buffers,
    client_range,
    index_ready,
    line_range,
    link_locations,
    locate,
    location,
    read_once,
    span_range,
    to_column,
    units_of,
    uri_of,
    wants_markdown,
)

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

log = logging.getLogger(__name__)

MAX_ITEMS = 50
"""Most link candidates in one completion answer (then ``isIncomplete``)."""
MAX_PREFIX_CHARS = 200
MAX_REFERENCES = 1000
CREATE_TITLE = "Create note"

_MD_OPEN_RE = re.compile(r"\]\((<?)([^()\s<>]*)$")
_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_HEADING_LINE_RE = re.compile(r"#{2,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
"""A level 2-6 heading: references to it. On a level-1 heading (the title) they are the note's."""


# -- shared helpers ------------------------------------------------------------------------------


async def _link_under_cursor(
    ls: EngramLanguageServer, document: Document, position: types.Position
) -> LinkSpan | None:
    source = document.source
    lines = source.split("\n")
    if position.line >= len(lines):
        return None
    col = to_column(document.doc, lines[position.line].rstrip("\r"), position.character)
    span: LinkSpan | None = await ls.run(link_at, source, position.line, col)
    return span


async def _resolve(
    ls: EngramLanguageServer, vault: VaultSession, rel: str, span: LinkSpan
) -> Target | None:
    await ls.ready()
    await vault.settled()
    try:
        return await ls.run(vault.engram.resolve_link, rel, span.kind, span.target, span.anchor)
    except IndexUnavailable:
        return None


# -- completion ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinkSlot:
    kind: str
    """``wiki`` or ``markdown``."""
    start: int
    """Code-point column where the typed target starts (after ``[[`` or ``](``)."""
    typed: str
    """The typed text up to the cursor."""
    angle: bool = False


def link_slot(line: str, col: int) -> LinkSlot | None:
    """The link being typed at ``col`` of ``line``, if any (pure)."""
    before = line[:col]
    wiki = before.rfind("[[")
    if wiki >= 0 and "]]" not in before[wiki:] and "|" not in before[wiki:]:
        typed = before[wiki + 2 :]
        if "[" not in typed:
            return LinkSlot("wiki", wiki + 2, typed)
    md = _MD_OPEN_RE.search(before)
    if md is not None and not _URL_RE.match(md.group(2)):
        return LinkSlot("markdown", md.start(2), md.group(2), angle=bool(md.group(1)))
    return None


def _closing(line: str, col: int, slot: LinkSlot) -> str:
    after = line[col:]
    if slot.kind == "wiki":
        return "" if after.startswith("]]") or after.startswith("|") else "]]"
    if slot.angle:
        return "" if after.startswith(">") else ">)"
    return "" if after.startswith(")") else ")"


def _note_items(
    vault: VaultSession,
    rel: str,
    slot: LinkSlot,
    typed: str,
    closing: str,
    edit_range: types.Range,
) -> types.CompletionList:
    engram = vault.engram
    folder, _, name_prefix = typed.rpartition("/") if slot.kind == "markdown" else ("", "", typed)
    found, more = engram.link_completions(name_prefix, MAX_ITEMS)
    items: list[types.CompletionItem] = []
    for match in found:
        note = match.note
        if note.path == rel and slot.kind == "markdown":
            continue
        if slot.kind == "wiki":
            target = match.target
            new_text = f"{target}|{match.name}" if match.how == "alias" else target
        else:
            target = relative_path(rel, note.path)
            new_text = target if slot.angle else encode_md_path(target)
        filter_text = (folder + "/" if folder else "") + match.name
        items.append(
            types.CompletionItem(
                label=match.name,
                kind=types.CompletionItemKind.File,
                detail=note.path if match.name == note.title else f"{note.title} · {note.path}",
                documentation=note.summary,
                sort_text=f"{len(items):05d}",
                filter_text=filter_text,
                text_edit=types.TextEdit(range=edit_range, new_text=new_text + closing),
            )
        )
    return types.CompletionList(is_incomplete=more, items=items)


def _heading_items(
    vault: VaultSession,
    rel: str,
    slot: LinkSlot,
    target: str,
    typed: str,
    closing: str,
    edit_range: types.Range,
    source: str,
) -> types.CompletionList | None:
    engram = vault.engram
    kind = "wiki" if slot.kind == "wiki" else "markdown"
    if target:
        found = engram.resolve_link(rel, kind, target).resolution.note  # type: ignore[arg-type]
        if found is None:
            return types.CompletionList(is_incomplete=False, items=[])
        path = found.path
        headings = engram.note_headings(path)
    else:  # [[#heading]] / (#anchor): the note itself, as the buffer has it
        path = rel
        note = parse_note(rel, source.encode("utf-8", "replace"), vault.config)
        headings = [(h.line, h.level, h.text) for h in note.headings]
    wanted = typed.casefold()
    items: list[types.CompletionItem] = []
    for line, level, text in headings:
        if wanted and not (text.casefold().startswith(wanted) or slug(text).startswith(wanted)):
            continue
        new_text = text if slot.kind == "wiki" else slug(text)
        items.append(
            types.CompletionItem(
                label=text,
                kind=types.CompletionItemKind.Reference,
                detail=f"{'#' * level} line {line} of {path}",
                sort_text=f"{len(items):05d}",
                filter_text=new_text,
                text_edit=types.TextEdit(range=edit_range, new_text=new_text + closing),
            )
        )
        if len(items) >= MAX_ITEMS:
            return types.CompletionList(is_incomplete=True, items=items)
    return types.CompletionList(is_incomplete=False, items=items)


async def complete(
    ls: EngramLanguageServer, document: Document, params: types.CompletionParams
) -> types.CompletionList | None:
    """Completion contributor: notes (or headings) in a link being typed; None elsewhere."""
    vault, rel, doc, source = document.vault, document.rel, document.doc, document.source
    where = locate(source, params.position.line)
    if where is None or where.kind != "body":
        return None
    col = to_column(doc, where.line, params.position.character)
    slot = link_slot(where.line, col)
    if slot is None or len(slot.typed) > MAX_PREFIX_CHARS:
        return None
    if in_code_span(where.line, slot.start) or where.in_fence():
        return None
    closing = _closing(where.line, col, slot)
    target, hash_, anchor = slot.typed.partition("#")
    start = slot.start + (len(target) + 1 if hash_ else 0)
    edit_range = client_range(doc, params.position.line, where.line, start, col)
    if vault.building and not await ls.run(index_ready, vault):  # no thread hop when built
        return types.CompletionList(is_incomplete=True, items=[])
    try:
        if hash_:
            return await ls.run(
                _heading_items,
                vault,
                rel,
                slot,
                target.strip(),
                anchor,
                closing,
                edit_range,
                source,
            )
        return await ls.run(_note_items, vault, rel, slot, target, closing, edit_range)
    except IndexUnavailable:
        return types.CompletionList(is_incomplete=True, items=[])


# -- definition, references, hover ----------------------------------------------------------------


async def definition(
    ls: EngramLanguageServer, document: Document, params: types.DefinitionParams
) -> list[types.Location] | None:
    span = await _link_under_cursor(ls, document, params.position)
    if span is None:
        return None
    vault = document.vault
    target = await _resolve(ls, vault, document.rel, span)
    if target is None or not target.resolution.notes:
        return None
    if target.resolution.note is not None:
        return [location(vault, target.resolution.note.path, target.heading_line)]
    return [location(vault, n.path, None) for n in target.resolution.notes]


def _heading_at(source: str, line: int) -> str | None:
    lines = source.split("\n")
    if line >= len(lines):
        return None
    match = _HEADING_LINE_RE.fullmatch(lines[line].rstrip("\r"))
    return match.group(1).strip() if match else None


async def references(
    ls: EngramLanguageServer, document: Document, params: types.ReferenceParams
) -> list[types.Location] | None:
    vault, rel, source = document.vault, document.rel, document.source
    await ls.ready()
    await vault.settled()
    span = await _link_under_cursor(ls, document, params.position)
    path, heading = rel, _heading_at(source, params.position.line)
    if span is not None:
        target = await _resolve(ls, vault, rel, span)
        if target is None or target.resolution.note is None:
            return None
        path, heading = target.resolution.note.path, target.heading
    read = read_once(buffers(ls, vault))
    try:
        links: list[Backlink] = await ls.run(
            lambda: vault.engram.backlinks(path, heading, read_text=read, limit=MAX_REFERENCES)
        )
    except IndexUnavailable:
        return None
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    return link_locations(vault, links, read, units_of(ls))


def render_hover(target: Target, span: LinkSpan, markdown: bool) -> str:
    resolution = target.resolution
    note = resolution.note
    esc = escape_markdown if markdown else (lambda s: s)
    code = (lambda s: f"`{s}`") if markdown else (lambda s: s)
    if note is None and resolution.notes:
        lines = [f"{esc(span.target)} names {len(resolution.notes)} notes:", ""]
        lines += [f"- {esc(n.title)} · {code(n.path)}" for n in resolution.notes[:10]]
        return "\n".join(lines)
    if note is None:
        return f"No note named {esc(span.target)}" + (
            f" (would be {code(resolution.path)})" if resolution.path else ""
        )
    title = f"**{esc(note.title)}**" if markdown else note.title
    lines = [f"{title} · {code(note.path)}"]
    if target.heading:
        lines.append(f"Heading: {esc(target.heading)} (line {target.heading_line})")
    elif span.anchor and not span.anchor.startswith("^"):
        lines.append(f"No heading {esc(span.anchor)} in this note")
    if note.summary:
        lines += ["", esc(note.summary)]
    if note.topics:
        lines += ["", "Topics: " + ", ".join(esc(t) for t in note.topics)]
    return "\n".join(lines)


async def hover(
    ls: EngramLanguageServer, document: Document, params: types.HoverParams
) -> types.Hover | None:
    """Hover contributor: on a link, its target's title, path, summary and topics."""
    span = await _link_under_cursor(ls, document, params.position)
    if span is None:
        return None
    target = await _resolve(ls, document.vault, document.rel, span)
    if target is None:
        return None
    markdown = wants_markdown(ls)
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    units = document.doc.position_codec.client_num_units
    return types.Hover(
        contents=types.MarkupContent(kind, render_hover(target, span, markdown)),
        range=span_range(units, document.source, span, whole=True),
    )


# -- diagnostics and quick fixes ---------------------------------------------------------------


def link_problems(vault: VaultSession, rel: str, text: str) -> list[LinkProblem]:
    """Blocking: the link problems of a buffer, or none while the index cannot answer."""
    try:
        return vault.engram.link_problems(rel, text)
    except IndexUnavailable:
        return []


def link_diagnostics(
    problems: list[LinkProblem], text: str, units: Units
) -> list[types.Diagnostic]:
    out: list[types.Diagnostic] = []
    for problem in problems:
        data: dict[str, Any] | None = None
        if problem.suggested_path:
            data = {"path": problem.suggested_path}
        elif problem.candidates:
            data = {"candidates": list(problem.candidates)}
        out.append(
            types.Diagnostic(
                range=span_range(units, text, problem.span, whole=True),
                message=problem.message,
                severity=types.DiagnosticSeverity.Information
                if problem.code == "broken-anchor"
                else types.DiagnosticSeverity.Warning,
                code=problem.code,
                source="engram",
                data=data,
            )
        )
    return out


async def diagnose(ls: EngramLanguageServer, check: Check) -> list[types.Diagnostic]:
    """Diagnostics contributor: broken and ambiguous links, anchors naming no heading."""
    found = await ls.run(link_problems, check.vault, check.rel, check.text)
    return link_diagnostics(found, check.text, check.doc.position_codec.client_num_units)


async def create_note_actions(
    ls: EngramLanguageServer, document: Document, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """Code action contributor: "Create note" for each broken-link diagnostic in the request
    that names a path."""
    vault = document.vault
    if not (
        ls.supports("workspace", "workspace_edit", "document_changes")
        and types.ResourceOperationKind.Create in (_resource_ops(ls) or ())
    ):
        return []
    actions: list[types.CodeAction] = []
    seen: set[str] = set()
    for diagnostic in params.context.diagnostics:
        if diagnostic.code != "broken-link" or not isinstance(diagnostic.data, dict):
            continue
        raw = diagnostic.data.get("path")
        if not isinstance(raw, str) or raw in seen:
            continue
        try:
            rel = vault.engram.vault.rel(raw)
            vault.engram.vault.resolve_inside(rel)
        except EngramError:
            continue
        if not vault.engram.vault.filter.is_note(rel) or (vault.root / rel).exists():
            continue
        seen.add(rel)
        uri = uri_of(vault, rel)
        title = Path(rel).stem
        edit = types.WorkspaceEdit(
            document_changes=[
                types.CreateFile(
                    uri=uri, options=types.CreateFileOptions(overwrite=False, ignore_if_exists=True)
                ),
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=None
                    ),
                    edits=[
                        types.TextEdit(
                            range=types.Range(
                                start=types.Position(line=0, character=0),
                                end=types.Position(line=0, character=0),
                            ),
                            new_text=f"# {title}\n",
                        )
                    ],
                ),
            ]
        )
        actions.append(
            types.CodeAction(
                title=f"{CREATE_TITLE} {rel}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=edit,
            )
        )
    return actions


def _resource_ops(ls: EngramLanguageServer) -> Any:
    ws = ls.client_capabilities.workspace
    edit = ws.workspace_edit if ws else None
    return edit.resource_operations if edit else None


# -- willRenameFiles ---------------------------------------------------------------------------


def rename_edit(plan: MovePlan, vault: VaultSession, units: Units) -> types.WorkspaceEdit | None:
    changes: dict[str, list[types.TextEdit]] = {}
    for file in plan.files:
        lines = file.text.split("\n")
        edits: list[types.TextEdit] = []
        for edit in file.edits:
            line = lines[edit.line].rstrip("\r") if edit.line < len(lines) else ""
            edits.append(
                types.TextEdit(
                    range=line_range(units, edit.line, line, edit.start, edit.end),
                    new_text=edit.new_text,
                )
            )
        changes[uri_of(vault, file.path)] = edits
    return types.WorkspaceEdit(changes=changes) if changes else None


async def will_rename(
    ls: EngramLanguageServer, params: types.RenameFilesParams
) -> types.WorkspaceEdit | None:
    await ls.ready()
    by_vault: dict[int, tuple[VaultSession, list[tuple[str, str]]]] = {}
    for rename in params.files:
        old = ls.vault_for_uri(rename.old_uri)
        new = ls.vault_for_uri(rename.new_uri)
        if old is None or new is None or new[0] is not old[0] or not old[1] or not new[1]:
            continue  # outside the vaults, or between vaults: links are not rewritten
        by_vault.setdefault(id(old[0]), (old[0], []))[1].append((old[1], new[1]))
    units = units_of(ls)
    changes: dict[str, list[types.TextEdit]] = {}
    for vault, moves in by_vault.values():
        await vault.settled()
        read = buffers(ls, vault, strict=True)  # the notes it plans to edit
        try:
            plan = await ls.run(lambda v=vault, m=moves, r=read: v.engram.plan_move(m, read_text=r))
        except IndexUnavailable as exc:
            ls.message(f"Engram: links were not updated for this rename: {exc.message}")
            continue
        except EngramError as exc:
            raise convert.to_jsonrpc_error(exc) from None
        edit = rename_edit(plan, vault, units)
        if edit is not None and edit.changes:
            for uri, edits in edit.changes.items():
                changes[uri] = list(edits)
    return types.WorkspaceEdit(changes=changes) if changes else None

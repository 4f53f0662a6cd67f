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
- Diagnostics ``broken-link``, ``ambiguous-link``, ``broken-anchor`` (``link_diagnostics``,
  called by the diagnostics feature) and the quick fix that creates a missing note.
- ``workspace/willRenameFiles``: a ``WorkspaceEdit`` that rewrites every link to the renamed
  notes and folders (and relative links inside them), computed before the rename happens.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.workspace import TextDocument

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
from engram_ls.core.parse import parse_note
from engram_ls.lsp import convert
from engram_ls.lsp.features.completion import (
    _in_code,
    _in_fence,
    client_range,
    locate,
    open_document,
    to_column,
)
from engram_ls.lsp.features.files import FILE_OPERATIONS

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import Vault

log = logging.getLogger(__name__)

MAX_ITEMS = 50
"""Most link candidates in one completion answer (then ``isIncomplete``)."""
MAX_PREFIX_CHARS = 200
MAX_REFERENCES = 1000
LINK_CODES = frozenset({"broken-link", "ambiguous-link", "broken-anchor"})
CREATE_TITLE = "Create note"

_MD_OPEN_RE = re.compile(r"\]\((<?)([^()\s<>]*)$")
_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_HEADING_LINE_RE = re.compile(r"#{2,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
"""A level 2-6 heading: references to it. On a level-1 heading (the title) they are the note's."""


# -- shared helpers ------------------------------------------------------------------------------


def _units(ls: EngramLanguageServer) -> Callable[[str], int]:
    return ls.workspace.position_codec.client_num_units


def _span_range(
    units: Callable[[str], int], text: str, span: LinkSpan, *, whole: bool
) -> types.Range:
    lines = text.split("\n")
    line = lines[span.line] if span.line < len(lines) else ""
    line = line[:-1] if line.endswith("\r") else line
    start, end = (span.start, span.end) if whole else (span.target_start, span.target_end)
    return types.Range(
        start=types.Position(line=span.line, character=units(line[:start])),
        end=types.Position(line=span.line, character=units(line[:end])),
    )


def buffers(ls: EngramLanguageServer, vault: Vault) -> Callable[[str], str | None]:
    """A ``read_text`` for the core: the editor's buffer of a note when it is open, else the
    file. The buffers are copied now (on the event loop), so the core may run in a thread."""
    open_texts: dict[str, str] = {}
    for doc in list(ls.workspace.text_documents.values()):
        path = convert.uri_to_path(doc.uri)
        found = ls.vaults.for_path(path) if path is not None else None
        if found is not None and found[0] is vault:
            open_texts[found[1]] = doc.source
    engram = vault.engram

    def read(rel: str) -> str | None:
        text = open_texts.get(rel)
        return text if text is not None else engram.read_text(rel)

    return read


def _uri(vault: Vault, rel: str) -> str:
    return convert.path_to_uri(vault.root / rel)


async def _link_under_cursor(
    ls: EngramLanguageServer, uri: str, position: types.Position
) -> tuple[Vault, str, TextDocument, str, LinkSpan] | None:
    opened = open_document(ls, uri)
    if opened is None:
        return None
    vault, rel, doc, source = opened
    lines = source.split("\n")
    if position.line >= len(lines):
        return None
    col = to_column(doc, lines[position.line].rstrip("\r"), position.character)
    span = await ls.run(link_at, source, position.line, col)
    if span is None:
        return None
    return vault, rel, doc, source, span


async def _resolve(
    ls: EngramLanguageServer, vault: Vault, rel: str, span: LinkSpan
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
    vault: Vault, rel: str, slot: LinkSlot, typed: str, closing: str, edit_range: types.Range
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
    vault: Vault,
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


async def complete_link(
    ls: EngramLanguageServer, params: types.CompletionParams
) -> types.CompletionList | None:
    """Link completion, or None when the cursor is not in a link (topic completion runs)."""
    opened = open_document(ls, params.text_document.uri)
    if opened is None:
        return None
    vault, rel, doc, source = opened
    where = locate(source, params.position.line)
    if where is None or where.kind != "body":
        return None
    col = to_column(doc, where.line, params.position.character)
    slot = link_slot(where.line, col)
    if slot is None or len(slot.typed) > MAX_PREFIX_CHARS:
        return None
    if _in_code(where.line, slot.start) or _in_fence(where):
        return None
    closing = _closing(where.line, col, slot)
    target, hash_, anchor = slot.typed.partition("#")
    start = slot.start + (len(target) + 1 if hash_ else 0)
    edit_range = client_range(doc, params.position.line, where.line, start, col)
    if vault.building and not await ls.run(_servable, vault):
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


def _servable(vault: Vault) -> bool:
    return vault.engram.status().state in ("ready", "stale")


# -- definition, references, hover ----------------------------------------------------------------


def _location(vault: Vault, path: str, line: int | None) -> types.Location:
    pos = types.Position(line=max((line or 1) - 1, 0), character=0)
    return types.Location(uri=_uri(vault, path), range=types.Range(start=pos, end=pos))


async def definition(
    ls: EngramLanguageServer, params: types.DefinitionParams
) -> list[types.Location] | None:
    found = await _link_under_cursor(ls, params.text_document.uri, params.position)
    if found is None:
        return None
    vault, rel, _doc, _source, span = found
    target = await _resolve(ls, vault, rel, span)
    if target is None or not target.resolution.notes:
        return None
    if target.resolution.note is not None:
        return [_location(vault, target.resolution.note.path, target.heading_line)]
    return [_location(vault, n.path, None) for n in target.resolution.notes]


def _heading_at(source: str, line: int) -> str | None:
    lines = source.split("\n")
    if line >= len(lines):
        return None
    match = _HEADING_LINE_RE.fullmatch(lines[line].rstrip("\r"))
    return match.group(1).strip() if match else None


async def references(
    ls: EngramLanguageServer, params: types.ReferenceParams
) -> list[types.Location] | None:
    uri = params.text_document.uri
    opened = open_document(ls, uri)
    if opened is None:
        return None
    vault, rel, _doc, source = opened
    await ls.ready()
    await vault.settled()
    found = await _link_under_cursor(ls, uri, params.position)
    path, heading = rel, _heading_at(source, params.position.line)
    if found is not None:
        target = await _resolve(ls, vault, rel, found[4])
        if target is None or target.resolution.note is None:
            return None
        path, heading = target.resolution.note.path, target.heading
    read = buffers(ls, vault)
    try:
        links: list[Backlink] = await ls.run(
            lambda: vault.engram.backlinks(path, heading, read_text=read, limit=MAX_REFERENCES)
        )
    except IndexUnavailable:
        return None
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    units = _units(ls)
    out: list[types.Location] = []
    texts: dict[str, str] = {}
    for link in links:
        text = texts.get(link.source)
        if text is None:
            text = texts[link.source] = read(link.source) or ""
        out.append(
            types.Location(
                uri=_uri(vault, link.source), range=_span_range(units, text, link.span, whole=True)
            )
        )
    return out


def _escape(text: str) -> str:
    return re.sub(r"([\\`*_{}\[\]()#+\-.!<>|~])", r"\\\1", text)


def render_hover(target: Target, span: LinkSpan, markdown: bool) -> str:
    resolution = target.resolution
    note = resolution.note
    esc = _escape if markdown else (lambda s: s)
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


async def hover_link(ls: EngramLanguageServer, params: types.HoverParams) -> types.Hover | None:
    found = await _link_under_cursor(ls, params.text_document.uri, params.position)
    if found is None:
        return None
    vault, rel, doc, source, span = found
    target = await _resolve(ls, vault, rel, span)
    if target is None:
        return None
    caps = ls.client_capabilities.text_document
    formats = caps.hover.content_format if caps and caps.hover else None
    markdown = not formats or types.MarkupKind.Markdown in formats
    kind = types.MarkupKind.Markdown if markdown else types.MarkupKind.PlainText
    return types.Hover(
        contents=types.MarkupContent(kind, render_hover(target, span, markdown)),
        range=_span_range(doc.position_codec.client_num_units, source, span, whole=True),
    )


# -- diagnostics and quick fixes ---------------------------------------------------------------


def link_problems(vault: Vault, rel: str, text: str) -> list[LinkProblem]:
    """Blocking: the link problems of a buffer, or none while the index cannot answer."""
    try:
        return vault.engram.link_problems(rel, text)
    except IndexUnavailable:
        return []


def link_diagnostics(
    problems: list[LinkProblem], text: str, units: Callable[[str], int]
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
                range=_span_range(units, text, problem.span, whole=True),
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


def create_note_actions(
    ls: EngramLanguageServer, vault: Vault, params: types.CodeActionParams
) -> list[types.CodeAction]:
    """ "Create note" for each broken-link diagnostic in the request that names a path."""
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
        uri = _uri(vault, rel)
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


def rename_edit(
    plan: MovePlan, vault: Vault, units: Callable[[str], int]
) -> types.WorkspaceEdit | None:
    changes: dict[str, list[types.TextEdit]] = {}
    for file in plan.files:
        lines = file.text.split("\n")
        edits: list[types.TextEdit] = []
        for edit in file.edits:
            line = lines[edit.line].rstrip("\r") if edit.line < len(lines) else ""
            edits.append(
                types.TextEdit(
                    range=types.Range(
                        start=types.Position(line=edit.line, character=units(line[: edit.start])),
                        end=types.Position(line=edit.line, character=units(line[: edit.end])),
                    ),
                    new_text=edit.new_text,
                )
            )
        changes[_uri(vault, file.path)] = edits
    return types.WorkspaceEdit(changes=changes) if changes else None


async def will_rename(
    ls: EngramLanguageServer, params: types.RenameFilesParams
) -> types.WorkspaceEdit | None:
    await ls.ready()
    by_vault: dict[int, tuple[Vault, list[tuple[str, str]]]] = {}
    for rename in params.files:
        old = ls.vault_for_uri(rename.old_uri)
        new = ls.vault_for_uri(rename.new_uri)
        if old is None or new is None or new[0] is not old[0] or not old[1] or not new[1]:
            continue  # outside the vaults, or between vaults: links are not rewritten
        by_vault.setdefault(id(old[0]), (old[0], []))[1].append((old[1], new[1]))
    units = _units(ls)
    changes: dict[str, list[types.TextEdit]] = {}
    for vault, moves in by_vault.values():
        await vault.settled()
        read = buffers(ls, vault)
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


def register(server: EngramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    async def on_definition(
        ls: EngramLanguageServer, params: types.DefinitionParams
    ) -> list[types.Location] | None:
        return await definition(ls, params)

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    async def on_references(
        ls: EngramLanguageServer, params: types.ReferenceParams
    ) -> list[types.Location] | None:
        return await references(ls, params)

    @server.feature(types.WORKSPACE_WILL_RENAME_FILES, FILE_OPERATIONS)
    async def on_will_rename(
        ls: EngramLanguageServer, params: types.RenameFilesParams
    ) -> types.WorkspaceEdit | None:
        return await will_rename(ls, params)

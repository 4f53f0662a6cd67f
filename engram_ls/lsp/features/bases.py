"""Obsidian bases in the editor: the ``engram/query`` request, and diagnostics, completion and
hover in ``.base`` files (and, for diagnostics, in a note's ```` ```base ```` blocks).

Diagnostics: the first error that keeps the base from being answered (YAML, an unknown or
unsupported function, key or construct), on its line and column (code ``base-invalid`` or
``base-unsupported``), and a warning on each property no note of the vault has
(``unknown-property``: its column would be empty). Completion where an expression is written
(under ``filters``, a formula) or a property is named (``order``, ``property:``): the vault's
properties most used first, ``file.`` fields and functions, ``formula.`` names of the base,
the global functions, and methods after another ``.``. Hover on a property: its kind and
counts in the vault (as in the frontmatter), a file property's meaning.

Params ``{uri, view?, block?, line?, format?}`` (a ``.base`` file of a vault, or a note with
```` ```base ```` blocks: ``block`` from 1, else the one at ``line``, an editor's cursor, from 0;
its open buffer when the editor has it open, unsaved edits included)
or ``{text, uri?, view?, format?}`` (the base as text; ``uri`` picks the vault). The result is
``Engram.query``'s (docs/queries.md), each row with the ``uri`` of its note; with ``format``
``markdown`` also ``markdown``, the view as the table ``engram query`` prints, each row's first
cell a link to its note (what the editors' "run base" commands show). An error in the
base is ``-32602`` whose ``data`` names the part, line, column and unsupported construct.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from engram_ls.core.bases.expr import GLOBALS, BaseError
from engram_ls.core.bases.spec import Base, Ref, base_blocks, load_base
from engram_ls.core.bases.table import markdown_table
from engram_ls.core.bases.values import METHOD_TYPES
from engram_ls.core.errors import EngramError
from engram_ls.core.search.where import FILE_PROPS
from engram_ls.lsp import convert
from engram_ls.lsp.diagnostics import Check
from engram_ls.lsp.document import Document, client_range, index_ready, to_column, wants_markdown

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer

QUERY = "engram/query"


def _bad(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message, data={"code": "ENGRAM_INVALID_REQUEST"})


async def query(ls: EngramLanguageServer, params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise _bad("engram/query needs {uri, view?, block?} or {text, uri?, view?}")
    uri, text = params.get("uri"), params.get("text")
    view, block = params.get("view"), params.get("block")
    if uri is not None and not isinstance(uri, str):
        raise _bad("uri is text")
    if text is not None and not isinstance(text, str):
        raise _bad("text is the base as text")
    if uri is None and text is None:
        raise _bad("engram/query needs the uri of a base or its text")
    if view is not None and not isinstance(view, str):
        raise _bad("view is the name of a view")
    if block is not None and (not isinstance(block, int) or isinstance(block, bool)):
        raise _bad("block is the number of a ```base block, from 1")
    line = params.get("line")
    if line is not None and (not isinstance(line, int) or isinstance(line, bool) or line < 0):
        raise _bad("line is a line of the note, from 0: its ```base block is the one run")
    form = params.get("format", "json")
    if form not in ("json", "markdown"):
        raise _bad("format is json (the default) or markdown")
    await ls.ready()
    vault, rel = ls.request_vault(uri)
    source: dict[str, Any] = {"text": text} if text is not None else {"path": rel}
    if text is None and uri is not None:
        opened = ls.workspace.text_documents.get(unquote(uri))
        if opened is not None:  # the buffer, with its unsaved edits, named by its path
            source["text"] = opened.source
    await vault.settled()
    cancel = threading.Event()
    try:
        out = await ls.run(
            lambda: vault.engram.query(**source, view=view, block=block, line=line, cancel=cancel)
        )
    except asyncio.CancelledError:
        cancel.set()
        raise
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    for row in out["rows"]:
        row["uri"] = vault.engram.vault.uri(row["path"])
    if form == "markdown":  # what an editor shows as it is: the CLI's table, rows linked
        out["markdown"] = markdown_table(out, links=True)
    return out


# -- editing a base: diagnostics, completion, hover -------------------------------------------

FILE_DOCS = {
    "file.path": "the note's path in the vault",
    "file.name": "the file's name, with its extension",
    "file.basename": "the file's name without its extension",
    "file.ext": "the file's extension (md)",
    "file.folder": "the folder the note is in",
    "file.size": "the file's size in bytes",
    "file.mtime": "when the file was last modified",
    "file.ctime": "when the file was created",
    "file.tags": "the note's tags: frontmatter and inline, nested ones as written",
    "file.links": "the notes it links to",
}
"""What each file property is (hover and completion details)."""
FILE_CALLS = {
    "hasTag": "file.hasTag(tag, ...): has one of the tags (or a tag nested under one)",
    "inFolder": "file.inFolder(folder): is in the folder or below it",
    "hasLink": "file.hasLink(note): links to the note",
    "hasProperty": "file.hasProperty(name): has the property in its frontmatter",
}
MAX_BASE_ITEMS = 100

_KEY_RE = re.compile(
    r"^([ \t]*)(?:-[ \t]+)?([^\s:#'\"\[\]{},-][^:#]*?|\"[^\"]*\"|'[^']*')[ \t]*:(?:[ \t]|$)"
)
_ITEM_RE = re.compile(r"^([ \t]*)-(?:[ \t]|$)")
_WORD_BEFORE_RE = re.compile(r"(?:\b(\w+)\.)?(\w*)$")


@dataclass(frozen=True, slots=True)
class BaseSpot:
    """What is being written at a position of a base."""

    context: Literal["expression", "property"]
    scope: str
    """The name before a ``.`` (``file``, ``note``, ``formula``; another: a method), or ``""``."""
    start: int
    """Where the typed word starts (its code-point column)."""
    word: str


def _keys_above(lines: Sequence[str], line: int) -> list[str]:
    """The keys the line is under, nearest first (by indentation)."""
    text = lines[line]
    indent = len(text) - len(text.lstrip(" \t"))
    out: list[str] = []
    for above in range(line - 1, -1, -1):
        row = lines[above]
        if not row.strip() or row.lstrip().startswith("#"):
            continue
        depth = len(row) - len(row.lstrip(" \t"))
        if depth >= indent:
            continue
        key = _KEY_RE.match(row)
        if key is not None:
            out.append(key.group(2).strip("\"'"))
        indent = depth
        if depth == 0:
            break
    return out


def base_spot(lines: Sequence[str], line: int, col: int) -> BaseSpot | None:
    """Whether an expression or a property name is being written at ``(line, col)`` of a base's
    text, and the word typed so far; None elsewhere (a key, a view's name, a comment, a text
    inside an expression)."""
    if line >= len(lines) or col > len(lines[line]):
        return None
    text = lines[line]
    before = text[:col]
    key = _KEY_RE.match(text)
    item = _ITEM_RE.match(text)
    if key is not None and col < key.end():
        return None  # on the key itself
    start = key.end() if key is not None else item.end() if item is not None else 0
    value = before[start:].lstrip()
    if value.startswith("#"):
        return None
    own = key.group(2).strip("\"'") if key is not None else ""
    above = _keys_above(lines, line)
    context: Literal["expression", "property"]
    if own in ("property", "order") or (not own and item is not None and above[:1] == ["order"]):
        context = "property"
    elif "filters" in (own, *above) or (own and above[-1:] == ["formulas"]):
        context = "expression"
    elif not own and above[-1:] == ["formulas"]:
        context = "expression"  # a formula's continued lines
    else:
        return None
    body = value[1:] if value[:1] in ("'", '"') else value
    if context == "expression" and (body.count('"') % 2 or body.count("'") % 2):
        return None  # inside a text literal of the expression
    found = _WORD_BEFORE_RE.search(before)
    if found is None:
        return None
    return BaseSpot(context, (found.group(1) or ""), found.start(2), found.group(2))


def _formula_names(lines: Sequence[str]) -> list[str]:
    """The formulas a base defines, read leniently (the base may not parse while typed)."""
    names: list[str] = []
    inside, indent = False, -1
    for row in lines:
        if not row.strip() or row.lstrip().startswith("#"):
            continue
        depth = len(row) - len(row.lstrip(" \t"))
        key = _KEY_RE.match(row)
        if depth == 0:
            inside = key is not None and key.group(2) == "formulas"
            indent = -1
            continue
        if inside and key is not None and (indent < 0 or depth == indent):
            indent = depth
            names.append(key.group(2).strip("\"'"))
    return names


# -- diagnostics ---------------------------------------------------------------------------------

Finding = tuple[int, int, int, types.DiagnosticSeverity, str, str]
"""(line, start column, end column, severity, code, message); columns in code points."""


def _pieces(rel: str, text: str) -> list[tuple[str, int]]:
    """The bases written in a document: the whole ``.base`` file, or a note's blocks."""
    if rel.lower().endswith(".base"):
        return [(text, 0)]
    return base_blocks(text) if "base" in text else []


def base_findings(rel: str, text: str) -> tuple[list[Finding], list[tuple[Ref, str]]]:
    """The errors of each base in the document, and the property references to check against
    the index (with their line's text)."""
    lines = text.splitlines()
    found: list[Finding] = []
    refs: list[tuple[Ref, str]] = []
    for body, first in _pieces(rel, text):
        try:
            base = load_base(body, first)
        except BaseError as err:
            line = err.line if err.line is not None else first
            row = lines[line] if line < len(lines) else ""
            column = min(err.column or 0, len(row))
            code = "base-unsupported" if err.construct else "base-invalid"
            message = err.message + (f" ({err.at})" if err.at else "")
            found.append((line, column, len(row), types.DiagnosticSeverity.Error, code, message))
            continue
        for ref in base.refs:
            if not ref.name.startswith(("file.", "formula.")):
                refs.append((ref, lines[ref.line] if ref.line < len(lines) else ""))
    return found, refs


def _check_base(check: Check) -> list[Finding]:
    found, refs = base_findings(check.rel, check.text)
    if not refs or not index_ready(check.vault):
        return found
    names = sorted({ref.name for ref, _ in refs})
    have = {p.name for p in check.vault.engram.properties(limit=10_000, names=names)}
    for ref, _row in refs:
        if ref.name not in have:
            message = f"no note has the property {ref.name!r}: its values are empty"
            end = ref.column + max(ref.length, 1)
            warning = types.DiagnosticSeverity.Warning
            found.append((ref.line, ref.column, end, warning, "unknown-property", message))
    return found


async def diagnose(ls: EngramLanguageServer, check: Check) -> list[types.Diagnostic]:
    """Diagnostics contributor: the bases of a ``.base`` file or of a note's blocks."""
    if not _pieces(check.rel, check.text):
        return []
    found = await ls.run(_check_base, check)
    lines = check.text.splitlines()
    units = check.doc.position_codec.client_num_units
    out = []
    for line, start, end, severity, code, message in found:
        row = lines[line] if line < len(lines) else ""
        out.append(
            types.Diagnostic(
                range=types.Range(
                    types.Position(line, units(row[:start])), types.Position(line, units(row[:end]))
                ),
                message=message,
                severity=severity,
                code=code,
                source="engram",
            )
        )
    return out


# -- completion ----------------------------------------------------------------------------------

Candidate = tuple[str, types.CompletionItemKind, str, str]
"""(label, kind, detail, text written)."""


def _property_candidates(vault: Any, spot: BaseSpot) -> list[Candidate] | None:
    if not index_ready(vault):
        return None
    out: list[Candidate] = []
    for prop in vault.engram.properties(spot.word, MAX_BASE_ITEMS):
        detail = f"{prop.kind}, {prop.notes} note{'s' if prop.notes != 1 else ''}"
        plain = re.fullmatch(r"[^\W\d]\w*", prop.name) is not None
        if spot.scope == "note" and not plain:
            continue
        text = prop.name
        if spot.context == "expression" and not spot.scope and not plain:
            text = f'note["{prop.name}"]'
        out.append((prop.name, types.CompletionItemKind.Property, detail, text))
    return out


def candidates(vault: Any, spot: BaseSpot, lines: Sequence[str]) -> tuple[list[Candidate], bool]:
    """What may be written at ``spot``, and whether the index could not say yet."""
    field, func = types.CompletionItemKind.Field, types.CompletionItemKind.Function
    scope = spot.scope.lower()
    out: list[Candidate] = []
    waiting = False
    if scope == "file":
        out += [(n[5:], field, FILE_DOCS[n], n[5:]) for n in FILE_DOCS]
        if spot.context == "expression":
            out += [(n, func, doc, n) for n, doc in FILE_CALLS.items()]
    elif scope == "formula":
        out += [(n, field, "formula of this base", n) for n in _formula_names(lines)]
    elif scope == "note" or not scope:
        props = _property_candidates(vault, spot)
        waiting = props is None
        out += props or []
        if not scope and spot.context == "expression":
            out += [(n, func, "function", n) for n in sorted(GLOBALS)]
            out += [
                (n, types.CompletionItemKind.Module, f"{n}.…", n)
                for n in ("file", "formula", "note")
            ]
        elif not scope:
            out += [(n, field, FILE_DOCS[n], n) for n in FILE_DOCS]
            out += [
                (f"formula.{n}", field, "formula", f"formula.{n}") for n in _formula_names(lines)
            ]
    elif spot.context == "expression":  # a method of a value
        out += [
            (n, types.CompletionItemKind.Method, f"{' / '.join(t)} method", n)
            for n, t in METHOD_TYPES.items()
        ]
    word = spot.word.casefold()
    return [c for c in out if c[0].casefold().startswith(word)], waiting


async def complete(
    ls: EngramLanguageServer, document: Document, params: types.CompletionParams
) -> types.CompletionList | None:
    """Completion in a ``.base`` file: properties, functions and methods where they go."""
    lines = document.source.splitlines()
    position = params.position
    row = lines[position.line] if position.line < len(lines) else ""
    col = to_column(document.doc, row, position.character)
    spot = base_spot(lines, position.line, col) if position.line < len(lines) else None
    if spot is None:
        return None
    found, waiting = await ls.run(candidates, document.vault, spot, lines)
    edit_range = client_range(document.doc, position.line, row, spot.start, col)
    items = [
        types.CompletionItem(
            label=label,
            kind=kind,
            detail=detail,
            sort_text=f"{i:05d}",
            text_edit=types.TextEdit(range=edit_range, new_text=text),
        )
        for i, (label, kind, detail, text) in enumerate(found[:MAX_BASE_ITEMS])
    ]
    return types.CompletionList(is_incomplete=waiting or len(found) > MAX_BASE_ITEMS, items=items)


# -- hover ---------------------------------------------------------------------------------------

_NAME_AROUND_RE = re.compile(r"(?:(?:file|note|formula)\.)?\w+")


def ref_at(text: str, line: int, col: int) -> Ref | None:
    """The property named at ``(line, col)`` of a base's text: from the parsed base, else (it
    does not parse) the name there."""
    base: Base | None
    try:
        base = load_base(text)
    except BaseError:
        base = None
    if base is not None:
        for ref in base.refs:
            if ref.line == line and ref.column <= col < ref.column + max(ref.length, 1):
                return ref
        return None
    lines = text.splitlines()
    row = lines[line] if line < len(lines) else ""
    for m in _NAME_AROUND_RE.finditer(row):
        if m.start() <= col < m.end():
            name = m.group().removeprefix("note.")
            return Ref(name if name.startswith(("file.", "formula.")) else name.casefold(),
                       line, m.start(), len(m.group()))  # fmt: skip
    return None


def _hover_text(vault: Any, ref: Ref) -> str:
    if ref.name in FILE_DOCS:
        return f"**{ref.name}** ({FILE_PROPS[ref.name]}): {FILE_DOCS[ref.name]}"
    if ref.name.startswith("formula."):
        return f"**{convert.escape_markdown(ref.name)}**: a formula of this base"
    if ref.name.startswith("file."):
        return f"**{convert.escape_markdown(ref.name)}**: not a file property Engram knows"
    if not index_ready(vault):
        return f"**Property {convert.escape_markdown(ref.name)}**\n\nThe index is being built."
    return convert.property_markdown(ref.name, *vault.engram.property_values(ref.name))


async def hover(
    ls: EngramLanguageServer, document: Document, params: types.HoverParams
) -> types.Hover | None:
    """Hover in a ``.base`` file: what a property named there holds in the vault."""
    position = params.position
    lines = document.source.splitlines()
    row = lines[position.line] if position.line < len(lines) else ""
    col = to_column(document.doc, row, position.character)
    ref = await ls.run(ref_at, document.source, position.line, col)
    if ref is None:
        return None
    text = await ls.run(_hover_text, document.vault, ref)
    kind = types.MarkupKind.Markdown if wants_markdown(ls) else types.MarkupKind.PlainText
    content = types.MarkupContent(kind, text if wants_markdown(ls) else convert.plain_text(text))
    end = ref.column + max(ref.length, 1)
    return types.Hover(content, client_range(document.doc, position.line, row, ref.column, end))

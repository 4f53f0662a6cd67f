"""Frontmatter properties where they are written: completion and hover contributors.

``complete`` (``textDocument/completion``), in a note's frontmatter:

* at the start of a line (``sta|``, or an empty line asked explicitly): the vault's property
  names, most used first, with their note counts and kind; those the frontmatter already has
  are left out, and so are nested names (``review.next``). Picking one writes ``status: ``
  (just the name when the line already has its colon).
* in the value of a key that is not a topic key (topics are ``features/topics.py``'s), in any
  YAML style (``status: d|``, ``aliases: [a, |]``, ``- |`` under the key): the values the
  property takes in the vault, most used first with their counts, when it takes at most
  ``prop_stats.MAX_DISTINCT`` of them and they repeat (fewer values than notes: ``status``
  yes, ``title`` or ``summary`` no). A value is written as
  its kind needs: ``true``, ``3``, ``2024-05-01`` plain, a text quoted when YAML would read it
  as something else (``"2"``, ``"yes"``).

``hover`` on a top-level key: how many notes have the property, of which kinds, and its most
used values.

Everything comes from the index (``Engram.properties``, ``Engram.property_values``): while the
first build runs, completion is an empty incomplete list and hover says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types

from engram_ls.core import fmscan
from engram_ls.core.index.prop_stats import PropertyCount, ValueCount
from engram_ls.lsp.convert import escape_markdown, plain_text, property_markdown
from engram_ls.lsp.document import (
    Document,
    Where,
    client_range,
    index_ready,
    locate,
    next_line,
    to_column,
    wants_markdown,
)
from engram_ls.lsp.slots import Slot, render, yaml_slot

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

MAX_ITEMS = 100
MAX_VALUE_CHARS = 200
"""Longer values are not offered (a sentence is not a value to pick)."""

_NAME_TYPED_RE = re.compile(r"[^\W][\w.\- ]*|")
_CLOSING_RE = re.compile(r"(?:---|\.\.\.)[ \t]*")


# -- where ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NameSlot:
    """A property name being typed at the start of a frontmatter line."""

    start: int
    end: int
    text: str
    has_colon: bool
    present: frozenset[str]
    """Case-folded keys the frontmatter already has (the typed line's aside)."""


def name_slot(where: Where, col: int) -> NameSlot | None:
    """The name typed at the start of a frontmatter line up to ``col``, or None."""
    if where.kind != "yaml" or col > len(where.line):
        return None
    line, typed = where.line, where.line[:col]
    if not _NAME_TYPED_RE.fullmatch(typed) or (not typed and line.strip()):
        return None
    if ":" in typed or typed != typed.lstrip():
        return None
    present = {_key_name(text) for text in where.above[1:]}
    source, end = where.source, where.line_end
    for _ in range(5000):  # the keys after the cursor line, up to the closing fence
        if end >= len(source):
            break
        text, end, _nxt = next_line(source, end + 1)
        if _CLOSING_RE.fullmatch(text):
            break
        present.add(_key_name(text))
    present.discard("")
    return NameSlot(0, col, typed.strip(), ":" in line[col:], frozenset(present))


def _key_name(text: str) -> str:
    key = fmscan.key_at(text)
    return "" if key is None or key.name is None else key.name.casefold()


def value_slot(document: Document, where: Where, col: int, *, whole: bool) -> Slot | None:
    """The value being written of a key that is not a topic key, or None."""
    topic_keys = {k.casefold() for k in document.vault.config.topic_keys}

    def accept(key: fmscan.Key) -> bool:
        return key.name is not None and key.name.casefold() not in topic_keys

    if where.kind != "yaml":
        return None
    return yaml_slot(where, col, accept, whole=whole, split=False)


# -- completion ----------------------------------------------------------------------------------


def _names(vault: VaultSession, prefix: str, limit: int) -> list[PropertyCount] | None:
    return vault.engram.properties(prefix, limit) if index_ready(vault) else None


def _values(
    vault: VaultSession, name: str
) -> tuple[PropertyCount | None, list[ValueCount] | None] | None:
    return vault.engram.property_values(name) if index_ready(vault) else None


def _plural(count: int) -> str:
    return f"{count} note" if count == 1 else f"{count} notes"


def _detail(found: PropertyCount) -> str:
    return f"{found.kind}, {_plural(found.notes)}"


async def complete(
    ls: EngramLanguageServer, document: Document, params: types.CompletionParams
) -> types.CompletionList | None:
    """Completion contributor: property names at a line's start, values after a key."""
    where = locate(document.source, params.position.line)
    if where is None or where.kind != "yaml":
        return None
    col = to_column(document.doc, where.line, params.position.character)
    named = name_slot(where, col)
    if named is not None:
        return await _complete_name(ls, document, params, where, named)
    slot = value_slot(document, where, col, whole=False)
    if slot is None or len(slot.text) > MAX_VALUE_CHARS:
        return None
    context = params.context
    triggered = (
        context is not None and context.trigger_kind == types.CompletionTriggerKind.TriggerCharacter
    )
    if triggered and slot.style == "plain" and not slot.text.strip():
        return None  # typing ``key: `` then Enter must stay a newline (a block list to come)
    return await _complete_value(ls, document, params, where, slot, col)


async def _complete_name(
    ls: EngramLanguageServer,
    document: Document,
    params: types.CompletionParams,
    where: Where,
    slot: NameSlot,
) -> types.CompletionList | None:
    context = params.context
    if context is not None and context.trigger_kind == types.CompletionTriggerKind.TriggerCharacter:
        return None  # a space or ``-`` at a line's start is not a name being typed
    limit = min(MAX_ITEMS + 1 + len(slot.present), 10_000)
    found = await ls.run(_names, document.vault, slot.text, limit)
    if found is None:
        return types.CompletionList(is_incomplete=True, items=[])
    more = len(found) >= limit
    edit_range = client_range(document.doc, params.position.line, where.line, slot.start, slot.end)
    items: list[types.CompletionItem] = []
    for prop in found:
        if prop.name in slot.present or "." in prop.name or fmscan.key_at(prop.name + ":") is None:
            continue
        if len(items) == MAX_ITEMS:
            more = True
            break
        items.append(
            types.CompletionItem(
                label=prop.name,
                kind=types.CompletionItemKind.Property,
                detail=_detail(prop),
                sort_text=f"{len(items):05d}",
                text_edit=types.TextEdit(
                    range=edit_range, new_text=prop.name if slot.has_colon else f"{prop.name}: "
                ),
            )
        )
    return types.CompletionList(is_incomplete=more, items=items)


def repeats(about: PropertyCount, values: list[ValueCount]) -> bool:
    """Whether the values are ones to pick from: fewer than the notes that have them (a title
    or a summary, different on every note, is not)."""
    return len(values) < about.notes


def written(slot: Slot, value: ValueCount) -> tuple[str, str] | None:
    """(new text, filter text) of a value in this slot, kept of its kind, or None."""
    text = value.text
    if "\n" in text or "\r" in text or len(text) > MAX_VALUE_CHARS:
        return None
    if value.kind == "text":
        return render(slot, text)
    return None if slot.quote else (text, text)  # a quote would make it text


async def _complete_value(
    ls: EngramLanguageServer,
    document: Document,
    params: types.CompletionParams,
    where: Where,
    slot: Slot,
    col: int,
) -> types.CompletionList | None:
    found = await ls.run(_values, document.vault, slot.key)
    if found is None:
        return types.CompletionList(is_incomplete=True, items=[])
    about, values = found
    if not values or about is None or not repeats(about, values):
        return None
    typed = slot.text.strip().casefold()
    start = slot.start - len(slot.quote) if slot.style in ("flow", "block") else slot.start
    edit_range = client_range(document.doc, params.position.line, where.line, start, col)
    items: list[types.CompletionItem] = []
    for value in values:
        rendered = written(slot, value)
        if rendered is None or value.text.casefold() in slot.siblings:
            continue
        if not value.text.casefold().startswith(typed):
            continue
        new_text, filter_text = rendered
        items.append(
            types.CompletionItem(
                label=value.text,
                kind=types.CompletionItemKind.EnumMember,
                detail=f"{value.kind}, {_plural(value.notes)}",
                sort_text=f"{len(items):05d}",
                filter_text=None if filter_text == value.text else filter_text,
                text_edit=types.TextEdit(range=edit_range, new_text=new_text),
            )
        )
    return types.CompletionList(is_incomplete=False, items=items[:MAX_ITEMS])


# -- hover ---------------------------------------------------------------------------------------


async def hover(
    ls: EngramLanguageServer, document: Document, params: types.HoverParams
) -> types.Hover | None:
    """Hover contributor: on a top-level frontmatter key, what the vault holds under it."""
    where = locate(document.source, params.position.line)
    if where is None or where.kind != "yaml":
        return None
    key = fmscan.key_at(where.line)
    col = to_column(document.doc, where.line, params.position.character)
    if key is None or key.name is None or col >= key.end or not key.name.strip():
        return None
    await document.vault.settled()
    found = await ls.run(_values, document.vault, key.name)
    if found is None:
        text = f"**Property {escape_markdown(key.name)}**\n\nThe index is still being built."
    else:
        text = property_markdown(key.name.casefold(), *found)
    if wants_markdown(ls):
        content = types.MarkupContent(types.MarkupKind.Markdown, text)
    else:
        content = types.MarkupContent(types.MarkupKind.PlainText, plain_text(text))
    end = len(key.raw)
    hover_range = client_range(document.doc, params.position.line, where.line, 0, end)
    return types.Hover(contents=content, range=hover_range)

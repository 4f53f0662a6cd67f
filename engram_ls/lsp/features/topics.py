"""Topics where they are written: completion and hover contributors.

``complete`` (``textDocument/completion``) offers the vault's topics where a topic is being
written; ``hover`` (``textDocument/hover``) tells how many notes use the topic under the
cursor and lists the most recent ones. Both find the topic item at a position the same way
(``topic_at``: ``locate`` + ``find_slot``).

Four places take a topic (``lsp/slots.py`` finds them): a flow list under a topic key in the
frontmatter (``tags: [a, b, pyt|]``), a block list item under one (``- pyt|``), a plain value
of one, which the core splits on commas, else on whitespace (``tags: a, pyt|``), and an inline
``#pyt|`` tag in the body when the config reads inline tags.

Topic keys are the config's ``topic_keys``, matched case-insensitively. Nothing is offered
anywhere else: other keys, body text, code, YAML comments, the YAML styles after the
frontmatter. The candidates come from ``Engram.topics(prefix, limit)`` (the index, in the
thread pool), most used first, with their note counts; topics the list or line already has
are left out; each item's ``text_edit`` replaces the typed prefix (quoted for YAML when the
topic needs it); the list is ``is_incomplete`` when capped, so the client asks again as the
prefix grows. While the first build of the index runs (and it cannot answer yet) the answer is
an empty incomplete list rather than a scan of every note. Typing the space of ``tags: `` does
not pop a list up (Enter must still start a block list); asking explicitly does.

Only the frontmatter lines up to the cursor and the cursor line are parsed; the body above the
cursor is only skipped over (and searched for code fences when the cursor follows a ``#``).

Hover: the answer comes from ``Engram.search({"tags": [topic], "limit": 5})`` (newest first,
``total`` is the note count) as Markdown when the client renders it: the count, then title,
date and vault-relative path of each recent note, with links.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lsprotocol import types

from engram_ls.core import fmscan
from engram_ls.core.search import SearchResponse
from engram_ls.core.service import TopicCount
from engram_ls.lsp.convert import escape_markdown
from engram_ls.lsp.document import (
    Document,
    Where,
    client_range,
    index_ready,
    locate,
    to_column,
    wants_markdown,
)
from engram_ls.lsp.slots import Slot, find_slot, render

__all__ = ["complete", "find_slot", "hover", "render", "topic_at"]

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

MAX_ITEMS = 100
"""Most candidates in one answer; more makes the list ``is_incomplete``."""
MAX_PREFIX_CHARS = 200
RECENT = 5
"""Recent notes listed in a hover."""

# --- the requests ------------------------------------------------------------------------------


@dataclass(slots=True)
class TopicAt:
    """Where a topic is written at a client position: what completion and hover work on."""

    where: Where
    col: int
    """The position's code-point column in ``where.line``."""
    slot: Slot


def topic_at(document: Document, position: types.Position, *, whole: bool) -> TopicAt | None:
    """The topic slot at ``position`` of a note (outside fences), or None."""
    where = locate(document.source, position.line)
    if where is None or where.kind == "fence":
        return None
    col = to_column(document.doc, where.line, position.character)
    slot = find_slot(where, col, document.vault.config, whole=whole)
    return None if slot is None else TopicAt(where, col, slot)


def _topics(vault: VaultSession, prefix: str, limit: int) -> list[TopicCount] | None:
    if not index_ready(vault):
        return None
    return vault.engram.topics(prefix, limit)


def _plural(count: int) -> str:
    return f"{count} note" if count == 1 else f"{count} notes"


def _first_plain_item(where: Where, col: int) -> bool:
    key = fmscan.key_at(where.line)
    return key is not None and not where.line[key.end : col].strip()


async def complete(
    ls: EngramLanguageServer, document: Document, params: types.CompletionParams
) -> types.CompletionList | None:
    """Completion contributor: the vault's topics where a topic is being written."""
    at = topic_at(document, params.position, whole=False)
    if at is None or len(at.slot.text) > MAX_PREFIX_CHARS:
        return None
    vault, doc, where, col, slot = document.vault, document.doc, at.where, at.col, at.slot
    context = params.context
    if (
        slot.style == "plain"
        and context is not None
        and context.trigger_kind == types.CompletionTriggerKind.TriggerCharacter
        and _first_plain_item(where, col)
    ):
        return None  # typing ``tags: `` then Enter must stay a newline (a block list to come)
    limit = min(MAX_ITEMS + 1 + len(slot.siblings), 10_000)
    found = await ls.run(_topics, vault, slot.text.strip(), limit)
    if found is None:  # the first build is still running: ask again later
        return types.CompletionList(is_incomplete=True, items=[])
    more = len(found) >= limit
    start = slot.start - len(slot.quote) if slot.style in ("flow", "block") else slot.start
    edit_range = client_range(doc, params.position.line, where.line, start, col)
    items: list[types.CompletionItem] = []
    for topic in found:
        if topic.name.casefold() in slot.siblings:
            continue
        rendered = render(slot, topic.name)
        if rendered is None:
            continue
        if len(items) == MAX_ITEMS:
            more = True
            break
        new_text, filter_text = rendered
        items.append(
            types.CompletionItem(
                label=topic.name,
                kind=types.CompletionItemKind.Value,
                detail=_plural(topic.notes)
                + (f", {topic.nested} with nested topics" if topic.nested != topic.notes else ""),
                sort_text=f"{len(items):05d}",
                filter_text=None if filter_text == topic.name else filter_text,
                text_edit=types.TextEdit(range=edit_range, new_text=new_text),
            )
        )
    return types.CompletionList(is_incomplete=more, items=items)


# --- hover: how many notes use a topic, and the most recent ones -------------------------------


def _code(text: str) -> str:
    ticks = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _lookup(vault: VaultSession, topic: str, cancel: threading.Event) -> SearchResponse | None:
    if not index_ready(vault):
        return None
    return vault.engram.search({"tags": [topic], "limit": RECENT}, cancel=cancel)


def render_markdown(topic: str, response: SearchResponse | None) -> str:
    """The hover text: the count and the most recent notes."""
    head = f"**Topic {escape_markdown(topic)}**"
    if response is None:
        return f"{head}\n\nThe index is still being built; counts appear once it is ready."
    if response.total == 0:
        return f"{head}: used by no note yet."
    noun = "note" if response.total == 1 else "notes"
    lines = [f"{head}: {response.total} {noun}", ""]
    if response.results:
        lines.append("Most recent:" if response.total > len(response.results) else "Notes:")
        lines.append("")
        for hit in response.results:
            date = hit.created_at or "undated"
            title = escape_markdown(hit.title)
            lines.append(f"- [{title}]({hit.uri}) · {date} · {_code(hit.path)}")
    return "\n".join(lines)


def render_plain(topic: str, response: SearchResponse | None) -> str:
    if response is None:
        return f"Topic {topic}: the index is still being built."
    if response.total == 0:
        return f"Topic {topic}: used by no note yet."
    noun = "note" if response.total == 1 else "notes"
    lines = [f"Topic {topic}: {response.total} {noun}"]
    lines.extend(f"- {h.title} ({h.created_at or 'undated'}) {h.path}" for h in response.results)
    return "\n".join(lines)


async def hover(
    ls: EngramLanguageServer, document: Document, params: types.HoverParams
) -> types.Hover | None:
    """Hover contributor: on a topic, how many notes use it and the most recent ones."""
    at = topic_at(document, params.position, whole=True)
    if at is None:
        return None
    vault, where, slot = document.vault, at.where, at.slot
    topic = slot.text.strip().lstrip("#").strip()
    if not topic or topic.startswith("-") or len(topic) > 200:
        return None  # a leading '-' would read as "exclude" in a search
    await vault.settled()
    cancel = threading.Event()
    try:
        response = await ls.run(_lookup, vault, topic, cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise
    if wants_markdown(ls):
        content = types.MarkupContent(types.MarkupKind.Markdown, render_markdown(topic, response))
    else:
        content = types.MarkupContent(types.MarkupKind.PlainText, render_plain(topic, response))
    hover_range = client_range(document.doc, params.position.line, where.line, slot.start, slot.end)
    return types.Hover(contents=content, range=hover_range)

"""``textDocument/hover`` on a topic: how many notes use it and the most recent ones.

A topic is an item of a frontmatter topic list (flow, block or plain string under one of the
config's ``topic_keys``) or an inline ``#tag`` in the body, found exactly as completion finds
where a topic is written (``completion.find_slot``). The answer comes from
``Engram.search({"tags": [topic], "limit": 5})`` (newest first, ``total`` is the note count)
as Markdown when the client renders it: the count, then title, date and vault-relative path
of each recent note, with links. Anything else gets no hover.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from typing import TYPE_CHECKING

from lsprotocol import types

from engram_ls.core.errors import EngramError
from engram_ls.core.search import SearchResponse
from engram_ls.core.service import Engram
from engram_ls.lsp.features.completion import (
    client_range,
    index_ready,
    topic_at,
)

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)

RECENT = 5
"""Recent notes listed in a hover."""
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!<>|~])")


def _escape(text: str) -> str:
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _code(text: str) -> str:
    ticks = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _lookup(
    engram: Engram, topic: str, building: bool, cancel: threading.Event
) -> SearchResponse | None:
    if not index_ready(engram, building):
        return None
    return engram.search({"tags": [topic], "limit": RECENT}, cancel=cancel)


def render_markdown(topic: str, response: SearchResponse | None) -> str:
    """The hover text: the count and the most recent notes."""
    head = f"**Topic {_escape(topic)}**"
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
            lines.append(f"- [{_escape(hit.title)}]({hit.uri}) · {date} · {_code(hit.path)}")
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


def _wants_markdown(ls: EngramLanguageServer) -> bool:
    caps = ls.client_capabilities.text_document
    formats = caps.hover.content_format if caps and caps.hover else None
    return not formats or types.MarkupKind.Markdown in formats


async def hover_topic(ls: EngramLanguageServer, params: types.HoverParams) -> types.Hover | None:
    at = topic_at(ls, params.text_document.uri, params.position, whole=True)
    if at is None:
        return None
    vault, doc, where, slot = at.vault, at.doc, at.where, at.slot
    topic = slot.text.strip().lstrip("#").strip()
    if not topic or topic.startswith("-") or len(topic) > 200:
        return None  # a leading '-' would read as "exclude" in a search
    await vault.settled()
    cancel = threading.Event()
    try:
        response = await ls.run(_lookup, vault.engram, topic, vault.building, cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise
    except EngramError as exc:
        log.warning("hover on topic %r failed: %s", topic, exc)
        return None
    if _wants_markdown(ls):
        content = types.MarkupContent(types.MarkupKind.Markdown, render_markdown(topic, response))
    else:
        content = types.MarkupContent(types.MarkupKind.PlainText, render_plain(topic, response))
    hover_range = client_range(doc, params.position.line, where.line, slot.start, slot.end)
    return types.Hover(contents=content, range=hover_range)


def register(server: EngramLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: EngramLanguageServer, params: types.HoverParams) -> types.Hover | None:
        from engram_ls.lsp.features.links import hover_link

        found = await hover_link(ls, params)
        return found if found is not None else await hover_topic(ls, params)

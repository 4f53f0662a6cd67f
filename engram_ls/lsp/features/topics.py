"""Topics where they are written: completion and hover contributors.

``complete`` (``textDocument/completion``) offers the vault's topics where a topic is being
written; ``hover`` (``textDocument/hover``) tells how many notes use the topic under the
cursor and lists the most recent ones. Both find the topic item at a position the same way
(``topic_at``: ``locate`` + ``find_slot``).

Four places take a topic:

* a flow list under a topic key in the frontmatter: ``tags: [a, b, pyt|]`` (also when the
  list continues on the next lines);
* a block list item under a topic key: ``- pyt|``;
* a plain value of a topic key, which the core splits on commas (else on whitespace):
  ``tags: a, pyt|``;
* an inline ``#pyt|`` tag in the body (not in fenced code, not in an inline code span, not a
  link anchor ``](#x)``), when the config reads inline tags.

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
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from lsprotocol import types

from engram_ls.core import fmscan
from engram_ls.core.config import EngramConfig
from engram_ls.core.parse import TAG_RE, in_code_span, is_tag_text
from engram_ls.core.search import SearchResponse
from engram_ls.core.service import TopicCount
from engram_ls.lsp.convert import escape_markdown
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

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

MAX_ITEMS = 100
"""Most candidates in one answer; more makes the list ``is_incomplete``."""
MAX_PREFIX_CHARS = 200
RECENT = 5
"""Recent notes listed in a hover."""

Style = Literal["flow", "block", "plain", "tag"]

# --- finding the topic slot at a position (pure) -----------------------------------------------

_TAG_BEFORE_CURSOR_RE = re.compile(r"#(?<![^\s(]#)(?<!\]\(#)([\w/-]*)$")
_TAG_TEXT_RE = re.compile(r"[\w/-]+")
_SAFE_PLAIN_RE = re.compile(r"[^\W\d_][\w./ -]*(?<! )")
_YAML_WORDS = frozenset({"null", "true", "false", "yes", "no", "on", "off", "y", "n", "nan", "inf"})


@dataclass(frozen=True, slots=True)
class Slot:
    """A topic item on the cursor line. Columns are code points of ``line``."""

    style: Style
    start: int
    """Where the item's text starts (after an opening quote or the ``#``)."""
    end: int
    """The cursor (completion) or the end of the item (hover)."""
    text: str
    """``line[start:end]``: the typed prefix, or the whole topic."""
    quote: str = ""
    """The quote typed before ``start`` (``"``, ``'`` or nothing)."""
    separator: str = ","
    """For ``plain``: what the core splits the value on (``,`` or whitespace)."""
    siblings: frozenset[str] = field(default_factory=frozenset)
    """Case-folded topics already in the same list (or on the same body line)."""


def find_slot(where: Where, col: int, config: EngramConfig, *, whole: bool) -> Slot | None:
    """The topic item at column ``col`` of the located line, or None.

    ``whole=False`` (completion): the item up to the cursor; ``whole=True`` (hover): the
    item around the column.
    """
    if where.kind == "yaml":
        return _yaml_slot(where, col, config, whole=whole)
    if where.kind == "body" and config.inline_tags:
        return _tag_slot(where, col, whole=whole)
    return None


def _is_topic_key(key: fmscan.Key, config: EngramConfig) -> bool:
    folded = key.name.casefold() if key.name is not None else None
    return any(folded == name.casefold() for name in config.topic_keys)


def _clean(raw: str) -> str:
    """An item's text as the core reads it: trimmed, unquoted, without a leading ``#``."""
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    elif text[:1] in ("'", '"'):
        text = text[1:]
    return text.strip().lstrip("#").strip()


def _pick(
    style: Style,
    line: str,
    spans: list[tuple[int, int]],
    col: int,
    *,
    whole: bool,
    separator: str = ",",
) -> Slot | None:
    for index, (start, end) in enumerate(spans):
        if not start <= col <= end:
            continue
        others = frozenset(
            _clean(line[s:e]).casefold() for j, (s, e) in enumerate(spans) if j != index
        ) - {""}
        stop = end if whole else col
        while start < stop and line[start] in " \t":
            start += 1
        quote = ""
        if start < stop and line[start] in "\"'":
            quote = line[start]
            start += 1
            if quote in line[start:stop]:
                if not whole:
                    return None  # the cursor is after the closing quote
                stop = line.index(quote, start)
        if whole:
            while stop > start and line[stop - 1] in " \t":
                stop -= 1
        return Slot(style, start, stop, line[start:stop], quote, separator, others)
    return None


def _yaml_slot(where: Where, col: int, config: EngramConfig, *, whole: bool) -> Slot | None:
    line = where.line
    if col > len(line):
        return None
    key = fmscan.key_at(line)
    if key is not None:
        if not _is_topic_key(key, config):
            return None
        return _value_slot(line, key.end, col, whole=whole)
    owner = _owner(where.above)
    if owner is None or not _is_topic_key(owner[0], config):
        return None
    owner_value = owner[1].strip()
    item = fmscan.ITEM_RE.match(line)
    if item is not None:
        if owner_value and not owner_value.startswith("#"):
            return None  # ``key: value`` then ``- x``: not this key's list
        value_start = item.end()
        if value_start == len(item.group(1)) + 1 or col < value_start:
            return None  # ``-|`` (no space yet) or the cursor before the item
        if line[value_start : value_start + 1] in ("[", "{", "|", ">", "&", "*", "!"):
            return None
        end = fmscan.comment_start(line, value_start)
        found = _pick("block", line, [(value_start, end)], col, whole=whole)
        if found is None:
            return None
        siblings = _block_siblings(where, owner[2], len(item.group(1)))
        return Slot("block", found.start, found.end, found.text, found.quote, ",", siblings)
    # a continuation line of a flow list opened on the key's line: ``tags: [a,\n  b, c|``
    if not owner_value.startswith("[") or "]" in owner_value:
        return None
    if any("]" in text for text in where.above[owner[2] + 1 :]):
        return None
    end = fmscan.comment_start(line, 0, flow=True)
    closing = line.find("]")
    if 0 <= closing < end:
        end = closing
    return _pick("flow", line, fmscan.split_items(line, 0, end), col, whole=whole)


def _value_slot(line: str, colon_end: int, col: int, *, whole: bool) -> Slot | None:
    """A topic key's value on the key's own line: a flow list or a plain (split) string."""
    if col <= colon_end:
        return None
    start = colon_end
    while start < len(line) and line[start] in " \t":
        start += 1
    head = line[start : start + 1]
    if head == "[":
        end = fmscan.comment_start(line, start)
        closing = line.find("]", start + 1)
        if 0 <= closing < end:
            end = closing
        spans = fmscan.split_items(line, start + 1, end)
        return _pick("flow", line, spans, col, whole=whole)
    if head and head in "{|>&*!%@`":
        return None
    if col < start:
        return None  # in the blanks before a value
    if head and head in "\"'":  # the whole string is quoted: its inside is split
        closing = line.find(head, start + 1)
        end = closing if closing >= 0 else len(line)
        if col <= start or col > end:
            return None
        start += 1
    else:
        head = ""
        end = fmscan.comment_start(line, start)
    separator = "," if "," in line[start:end] else " "
    spans = fmscan.split_items(line, start, end, separator, quotes=False)
    found = _pick("plain", line, spans, col, whole=whole, separator=separator)
    if found is None:
        return None
    return Slot("plain", found.start, found.end, found.text, head, separator, found.siblings)


def _owner(above: Sequence[str]) -> tuple[fmscan.Key, str, int] | None:
    """The top-level key the lines above belong to: (key, its value text, line index)."""
    for index in range(len(above) - 1, 0, -1):
        text = above[index]
        stripped = text.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        if text[0] in " \t" or fmscan.ITEM_RE.match(text):
            continue
        key = fmscan.key_at(text)
        if key is None:
            return None
        return key, text[key.end :], index
    return None


def _item_topic(text: str) -> str | None:
    item = fmscan.ITEM_RE.match(text)
    if item is None:
        return None
    return _clean(text[item.end() : fmscan.comment_start(text, item.end())]).casefold()


def _block_siblings(where: Where, owner_index: int, indent: int) -> frozenset[str]:
    """Items of the block list above the cursor line, and right after it."""
    found = {_item_topic(text) for text in where.above[owner_index + 1 :]}
    source, end = where.source, where.line_end
    for _ in range(MAX_ITEMS):
        if end >= len(source):
            break
        text, end, _nxt = next_line(source, end + 1)
        item = fmscan.ITEM_RE.match(text)
        if item is None or len(item.group(1)) != indent:
            break
        found.add(_item_topic(text))
    return frozenset(t for t in found if t)


def _tag_slot(where: Where, col: int, *, whole: bool) -> Slot | None:
    line = where.line
    if col > len(line) or "#" not in line:
        return None
    if whole:
        hit = None
        for match in TAG_RE.finditer(line):
            if match.start() <= col <= match.end():
                hit = match
                break
        if hit is None or in_code_span(line, hit.start()) or where.in_fence():
            return None
        start, end = hit.start(1), hit.end(1)
        text = line[start:end].rstrip("/-")
        lead = len(text) - len(text.lstrip("/"))
        text = text.lstrip("/")
        if not is_tag_text(text):
            return None
        start += lead
        return Slot("tag", start, start + len(text), text, siblings=_line_tags(line, hit.start()))
    typed = _TAG_BEFORE_CURSOR_RE.search(line, 0, col)
    if typed is None or in_code_span(line, typed.start()) or where.in_fence():
        return None
    start = typed.start(1)
    return Slot("tag", start, col, line[start:col], siblings=_line_tags(line, typed.start()))


def _line_tags(line: str, skip: int) -> frozenset[str]:
    return frozenset(
        m.group(1).strip("/-").casefold() for m in TAG_RE.finditer(line) if m.start() != skip
    ) - {""}


# --- rendering candidates ----------------------------------------------------------------------


def _yaml_plain_ok(topic: str) -> bool:
    return bool(_SAFE_PLAIN_RE.fullmatch(topic)) and topic.casefold() not in _YAML_WORDS


def _quoted(topic: str, quote: str) -> str:
    if quote == "'":
        return "'" + topic.replace("'", "''") + "'"
    return json.dumps(topic, ensure_ascii=False)


def render(slot: Slot, topic: str) -> tuple[str, str] | None:
    """(new text, filter text) for a candidate in this slot, or None when it cannot go there."""
    if slot.style == "tag":
        ok = _TAG_TEXT_RE.fullmatch(topic) and is_tag_text(topic)
        if not ok or topic[0] == "/" or topic[-1] in "/-":
            return None
        return topic, topic
    if slot.style == "plain":
        if "," in topic or (slot.separator == " " and any(c.isspace() for c in topic)):
            return None
        if slot.quote:
            return None if slot.quote in topic or "\\" in topic else (topic, topic)
        return (topic, topic) if _yaml_plain_ok(topic) else None
    if "\n" in topic or "\r" in topic:
        return None
    if slot.quote:
        return _quoted(topic, slot.quote), slot.quote + topic
    if _yaml_plain_ok(topic):
        return topic, topic
    return _quoted(topic, '"'), topic


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

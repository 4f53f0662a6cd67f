"""Where a value is being written in a note's frontmatter (or a ``#tag`` in its body): the slot
at a position, found the same way for completion and hover, and how a candidate is written
there.

Three YAML styles take a value of a key:

* a flow list: ``key: [a, b, pyt|]`` (also when the list continues on the next lines);
* a block list item under the key: ``- pyt|``;
* a plain value on the key's line: ``key: pyt|``. For a topic key the core splits it on commas
  (else on whitespace), so each part is a slot (``split``); for another key the whole value is.

And a body line takes an inline ``#pyt|`` tag (not in fenced code, not in an inline code span,
not a link anchor ``](#x)``). ``find_slot`` finds topics (the config's ``topic_keys`` and inline
tags); ``yaml_slot`` any key a caller accepts. ``render`` writes a candidate for its slot
(quoted for YAML when it needs to be), or says it cannot go there.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engram_ls.core import fmscan
from engram_ls.core.config import EngramConfig
from engram_ls.core.inline import TAG_RE, is_tag_text
from engram_ls.core.parse import in_code_span
from engram_ls.core.serialize import json_text
from engram_ls.lsp.document import Where, next_line

MAX_ITEMS = 100
"""Most siblings of a block list read after the cursor line."""

Style = Literal["flow", "block", "plain", "tag"]


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
    """For ``plain``: what the core splits the value on (``,`` or whitespace; ``""``: not
    split)."""
    siblings: frozenset[str] = field(default_factory=frozenset)
    """Case-folded items already in the same list (or tags on the same body line)."""
    key: str = ""
    """The name of the key whose value this is, as written (``""`` for an inline tag)."""


def find_slot(where: Where, col: int, config: EngramConfig, *, whole: bool) -> Slot | None:
    """The topic item at column ``col`` of the located line, or None.

    ``whole=False`` (completion): the item up to the cursor; ``whole=True`` (hover): the
    item around the column.
    """
    if where.kind == "yaml":
        return yaml_slot(where, col, lambda key: _is_topic_key(key, config), whole=whole)
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


def yaml_slot(
    where: Where,
    col: int,
    accept: Callable[[fmscan.Key], bool],
    *,
    whole: bool,
    split: bool = True,
) -> Slot | None:
    """The value item at column ``col`` of a frontmatter line, when it belongs to a top-level
    key ``accept`` takes; ``split``: a plain value is split as topics are."""
    line = where.line
    if col > len(line):
        return None
    key = fmscan.key_at(line)
    if key is not None:
        if not accept(key):
            return None
        found = _value_slot(line, key.end, col, whole=whole, split=split)
        return None if found is None else _keyed(found, key)
    owner = _owner(where.above)
    if owner is None or not accept(owner[0]):
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
        slot = Slot("block", found.start, found.end, found.text, found.quote, ",", siblings)
        return _keyed(slot, owner[0])
    # a continuation line of a flow list opened on the key's line: ``tags: [a,\n  b, c|``
    if not owner_value.startswith("[") or "]" in owner_value:
        return None
    if any("]" in text for text in where.above[owner[2] + 1 :]):
        return None
    end = fmscan.comment_start(line, 0, flow=True)
    closing = line.find("]")
    if 0 <= closing < end:
        end = closing
    found = _pick("flow", line, fmscan.split_items(line, 0, end), col, whole=whole)
    return None if found is None else _keyed(found, owner[0])


def _keyed(slot: Slot, key: fmscan.Key) -> Slot:
    return dataclasses.replace(slot, key=key.name or "")


def _value_slot(
    line: str, colon_end: int, col: int, *, whole: bool, split: bool = True
) -> Slot | None:
    """A key's value on the key's own line: a flow list or a plain string (split as topics
    are when ``split``)."""
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
    if not split:
        separator = ""
        spans = [(start, end)]
    else:
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


def _yaml_plain_ok(topic: str) -> bool:
    return bool(_SAFE_PLAIN_RE.fullmatch(topic)) and topic.casefold() not in _YAML_WORDS


def _quoted(topic: str, quote: str) -> str:
    if quote == "'":
        return "'" + topic.replace("'", "''") + "'"
    return json_text(topic)


def render(slot: Slot, topic: str) -> tuple[str, str] | None:
    """(new text, filter text) for a candidate in this slot, or None when it cannot go there."""
    if slot.style == "tag":
        ok = _TAG_TEXT_RE.fullmatch(topic) and is_tag_text(topic)
        if not ok or topic[0] == "/" or topic[-1] in "/-":
            return None
        return topic, topic
    if slot.style == "plain":
        if slot.separator and "," in topic:
            return None
        if slot.separator == " " and any(c.isspace() for c in topic):
            return None
        if slot.quote:
            return None if slot.quote in topic or "\\" in topic else (topic, topic)
        if _yaml_plain_ok(topic):
            return topic, topic
        return None if slot.separator else (_quoted(topic, '"'), topic)  # a part, or the whole
    if "\n" in topic or "\r" in topic:
        return None
    if slot.quote:
        return _quoted(topic, slot.quote), slot.quote + topic
    if _yaml_plain_ok(topic):
        return topic, topic
    return _quoted(topic, '"'), topic

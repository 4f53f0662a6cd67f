"""The byte-preserving topic edit: set a note's topics by replacing only its topic entry.

``topic_edit`` and ``add_topics_edit`` work on the decoded text of one note and return a
:class:`TopicEdit`: a range of whole lines and their replacement. Only the lines of the topic
entry (the ``topics:`` / ``tags:`` key line and its continuation lines) are replaced; every
other line, the key order, comments, quoting, line endings and the body stay as they are. The
lines are found with the frontmatter scanner (:mod:`engram_ls.core.fmscan`). Before an edit is
returned, the edited text is parsed again with the project's own parser
(:func:`~engram_ls.core.parse.parse_note`): the other frontmatter keys must load to the same
values, the body must be the same, and the note's frontmatter topics must be exactly the ones
asked for. An edit that fails this check is never returned (a different rendering is tried,
else :class:`~engram_ls.core.errors.InvalidRequest` is raised). A note whose frontmatter YAML
rejects is never edited.

Lines are the pieces of the text split on ``\\n`` (each keeps its ``\\r\\n`` or ``\\n``; a lone
``\\r`` is an ordinary character, as in the parser). A leading BOM (``\\ufeff``) is not part of
any line: line numbers and edits ignore it and :meth:`TopicEdit.apply` keeps it, which is what
an LSP client that strips the BOM from its document model expects.

Rendering rules (see docs/librarian.md):

* The entry keeps its style: a flow list ``[a, b]`` stays a flow list (spacing kept), a block
  list keeps its item indentation and the lines (quoting, comments) of the items it keeps; a
  string value (``tags: a, b``) stays a comma- (or space-) separated string when that string
  reads back as exactly the topics, else it becomes a flow list. ``tags:`` with no value gets
  block items; ``tags: null`` / ``~`` becomes a flow list.
* With no topic key, one line ``<first topic_keys entry>: [a, b]`` is added just before the
  closing fence. A note without frontmatter gets ``---`` / ``topics: [a, b]`` / ``---``
  prepended, in the note's line ending.
* Topics are plain where YAML reads them back as the same string, else double-quoted.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from engram_ls.core import fmscan
from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import InvalidRequest
from engram_ls.core.frontmatter import SafeYamlLoader, parse_frontmatter, split_frontmatter
from engram_ls.core.parse import BINARY_SNIFF_BYTES, clean_topic, dedupe_topics, parse_note

__all__ = ["BOM", "TopicEdit", "add_topics_edit", "topic_edit"]

BOM = "\ufeff"
_NO_CAP = 1 << 40


@dataclass(frozen=True, slots=True)
class TopicEdit:
    """Replace lines ``start``..``end`` (0-based, end exclusive) of a note by ``text``.

    Lines are split on ``\\n``; a leading BOM is not counted (it stays in front of line 0).
    ``start == end`` is a pure insertion before line ``start``. ``text`` is whole lines, each
    with its line ending. ``topics`` are the note's frontmatter topics after the edit, in the
    order the parser reports them. For an LSP ``TextEdit`` the range is
    ``(start, 0)``–``(end, 0)``.
    """

    start: int
    end: int
    text: str
    topics: tuple[str, ...]

    def apply(self, text: str) -> str:
        """The full note text with this edit applied (a leading BOM is kept)."""
        bom = BOM if text.startswith(BOM) else ""
        lines = _split_lines(text[len(bom) :])
        if not 0 <= self.start <= self.end <= len(lines):
            raise InvalidRequest("the topic edit does not fit this text (has the note changed?)")
        head = "".join(lines[: self.start])
        return bom + head + self.text + "".join(lines[self.end :])


def topic_edit(text: str, topics: Sequence[str], config: EngramConfig) -> TopicEdit | None:
    """The edit that makes the note's frontmatter topics exactly ``topics``; None if they are.

    ``topics`` are cleaned as the parser cleans them (surrounding space and a leading ``#``
    dropped, empty ones skipped) and deduplicated case-insensitively, first spelling kept.
    The edited key is the first of ``config.topic_keys`` the note has (``tags:`` in a note
    that uses ``tags:``), else the first of ``config.topic_keys``. Raises InvalidRequest when
    the frontmatter cannot be edited safely (malformed YAML, the key holds a mapping, another
    topic key holds topics that are not asked for, ...).
    """
    wanted = _clean_topics(topics)
    doc = _Doc.read(text, config)
    if doc.current == wanted:
        return None
    wanted_folded = {t.casefold() for t in wanted}
    for key, held in doc.secondary_topics():
        extra = [t for t in held if t.casefold() not in wanted_folded]
        if extra:
            raise InvalidRequest(
                f"the frontmatter key '{key}' also holds topics ({', '.join(extra)}) that are "
                "not in the requested list; edit it by hand",
                data={"key": key, "topics": extra},
            )
    return doc.edit(wanted, wanted)


def add_topics_edit(text: str, add: Sequence[str], config: EngramConfig) -> TopicEdit | None:
    """The edit that appends the topics of ``add`` the note does not have yet; None if none.

    Existing topics keep their order and spelling; a topic counts as present when any topic
    key of the frontmatter has it (case-insensitively). Inline ``#tags`` in the body are not
    frontmatter topics and do not count. Raises as :func:`topic_edit`.
    """
    doc = _Doc.read(text, config)
    have = {t.casefold() for t in doc.current}
    missing = [t for t in _clean_topics(add) if t.casefold() not in have]
    if not missing:
        return None
    primary = [*doc.primary_topics(), *missing]
    expected = dedupe_topics([*primary, *doc.current])
    return doc.edit(primary, expected)


# --- text internals ------------------------------------------------------------------------

_YAML_BREAKS = frozenset("\n\r\x85\u2028\u2029")
_PLAIN_BAD_START = frozenset("-?:,[]{}#&*!|>'\"%@` \t")


def _split_lines(text: str) -> list[str]:
    """Lines split on ``\\n``, each keeping its ending; no empty piece after a final break."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _content(line: str) -> str:
    """A line without its ``\\n`` / ``\\r\\n``."""
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    return line


def _ending(line: str, default: str = "\n") -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith("\n"):
        return "\n"
    return default


def _clean_topics(topics: Sequence[str]) -> tuple[str, ...]:
    if isinstance(topics, str):
        raise InvalidRequest("topics must be a list of strings, not one string")
    cleaned: list[str] = []
    for topic in topics:
        if not isinstance(topic, str):
            raise InvalidRequest(f"a topic must be a string, got {type(topic).__name__}")
        item = clean_topic(topic)
        if any(ch in _YAML_BREAKS for ch in item):
            raise InvalidRequest(f"a topic cannot contain a line break: {item!r}")
        cleaned.append(item)
    return dedupe_topics(cleaned)


def _printable(ch: str) -> bool:
    code = ord(ch)
    return (
        0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
        or 0x10000 <= code <= 0x10FFFF
    ) and ch not in _YAML_BREAKS


def _double_quoted(value: str) -> str:
    out = ['"']
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif _printable(ch):
            out.append(ch)
        elif ch == "\t":
            out.append("\\t")
        else:
            code = ord(ch)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _single_quoted(value: str) -> str | None:
    if not all(_printable(ch) or ch == "\t" for ch in value):
        return None
    return "'" + value.replace("'", "''") + "'"


def _loads_as(source: str, expected: Any) -> bool:
    try:
        return bool(yaml.load(source, Loader=SafeYamlLoader) == expected)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):
        return False


def _plain_ok(value: str, *, flow: bool) -> bool:
    """Whether ``value`` can be written unquoted and read back as the same string."""
    if not value or value[0] in _PLAIN_BAD_START or value != value.strip():
        return False
    if not all(_printable(ch) for ch in value):
        return False
    if ": " in value or " #" in value or value.endswith(":"):
        return False
    if flow and any(ch in value for ch in ",[]{}"):
        return False
    return _loads_as(f"[{value}]" if flow else f"- {value}", [value])


def _scalar(value: str, *, flow: bool) -> str:
    return value if _plain_ok(value, flow=flow) else _double_quoted(value)


def _same(a: Any, b: Any) -> bool:
    """Equal values, where NaN equals NaN (``x: .nan`` must not fail the check)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(type(a) is type(b) and a == b)


def _topics_config(config: EngramConfig, keys: Sequence[str]) -> EngramConfig:
    limits = config.limits.model_copy(update={"max_note_bytes": _NO_CAP})
    return config.model_copy(
        update={"topic_keys": tuple(keys), "inline_tags": False, "limits": limits}
    )


def _parsed_topics(front: str, keys: Sequence[str], config: EngramConfig) -> tuple[str, ...]:
    """The frontmatter topics the parser reads from ``front`` under ``keys``."""
    if not keys:
        return ()
    note = parse_note(
        "", front.encode("utf-8", errors="surrogatepass"), _topics_config(config, keys)
    )
    return note.topics


def _lookup(data: dict[Any, Any], key: str) -> str | None:
    """The parser's lookup: the exact key, else the first key equal ignoring case."""
    if key in data:
        return key
    folded = key.casefold()
    for name in data:
        if isinstance(name, str) and name.casefold() == folded:
            return name
    return None


@dataclass(slots=True)
class _Entry:
    """The topic entry: the key line and its continuation lines, ``lines[first:end]``."""

    key: str
    first: int
    end: int
    prefix: str
    """The key as written, up to and including the colon."""
    gap: str
    """Whitespace between the colon and the value (" " when there is no value)."""
    value: str
    """The value source on the key line, without a comment."""
    comment: str
    """Trailing comment (and whitespace) of the key line."""


class _Doc:
    """A note's text, analysed for a topic edit."""

    def __init__(
        self,
        text: str,
        config: EngramConfig,
        lines: list[str],
        close: int | None,
        data: dict[Any, Any],
        front: str,
        body: str,
    ) -> None:
        self.text = text
        self.config = config
        self.lines = lines
        self.close = close
        """0-based line of the closing fence; None when the note has no frontmatter."""
        self.data = data
        self.front = front
        """The normalised frontmatter block (fences included), for the parser."""
        self.body = body
        """The normalised text after the frontmatter."""
        keys = [k for k in (_lookup(data, key) for key in config.topic_keys) if k is not None]
        self.keys: list[str] = list(dict.fromkeys(keys))
        self.primary: str | None = self.keys[0] if self.keys else None
        self.current = _parsed_topics(front, config.topic_keys, config) if data else ()

    @classmethod
    def read(cls, text: str, config: EngramConfig) -> _Doc:
        if not config.topic_keys:
            raise InvalidRequest("no topic_keys are configured, so a note cannot have topics")
        head = text[:BINARY_SNIFF_BYTES].encode("utf-8", "surrogatepass")
        if b"\x00" in head[:BINARY_SNIFF_BYTES]:
            raise InvalidRequest("the note contains NUL bytes (binary); it is not edited")
        plain = text[1:] if text.startswith(BOM) else text
        lines = _split_lines(plain)
        norm = plain.replace("\r\n", "\n") if "\r" in plain else plain
        block = split_frontmatter(norm) if norm.startswith("---") else None
        if block is None:
            return cls(text, config, lines, None, {}, "", norm)
        if not block.closed or block.close_line is None:
            raise InvalidRequest(
                "the frontmatter opened on line 1 has no closing '---' line; close it first"
            )
        loaded = parse_frontmatter(block)
        if loaded.problems:
            problem = loaded.problems[0]
            where = f" (line {problem.line})" if problem.line else ""
            raise InvalidRequest(
                f"cannot edit the topics safely: {problem.message}{where}",
                data={"code": problem.code, "line": problem.line},
            )
        front = norm[: block.end]
        return cls(text, config, lines, block.close_line - 1, dict(loaded.data), front, block.body)

    # -- reading -------------------------------------------------------------------------

    def primary_topics(self) -> tuple[str, ...]:
        return _parsed_topics(self.front, [self.primary], self.config) if self.primary else ()

    def secondary_topics(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(key, _parsed_topics(self.front, [key], self.config)) for key in self.keys[1:]]

    def entry(self) -> _Entry | None:
        """The primary key's lines, or None when the note has no topic key."""
        if self.primary is None or self.close is None:
            return None
        key = self.primary
        value = self.data[key]
        if isinstance(value, dict):
            raise InvalidRequest(
                f"the frontmatter key '{key}' holds a mapping, not a list of topics",
                data={"key": key},
            )
        contents = [_content(line) for line in self.lines[1 : self.close]]
        found = fmscan.key_lines(contents, key)
        if len(found) != 1:
            why = "appears more than once" if found else "is not written as a plain 'key:' line"
            raise InvalidRequest(
                f"the frontmatter key '{key}' {why}; edit its topics by hand",
                data={"key": key},
            )
        first, colon_end = 1 + found[0][0], found[0][1].end
        key_text = contents[first - 1]
        end = first + 1
        probe = first + 1
        while probe < self.close:
            content = _content(self.lines[probe])
            stripped = content.strip(" \t")
            if not stripped or stripped.startswith("#"):
                probe += 1  # blank or comment: part of the entry only if more follows
                continue
            if content[0] in " \t" or fmscan.ITEM_RE.match(content):
                probe += 1
                end = probe
                continue
            break
        source, comment = fmscan.split_value(key_text[colon_end:])
        stripped_value = source.lstrip(" \t")
        gap = source[: len(source) - len(stripped_value)] or " "
        return _Entry(key, first, end, key_text[:colon_end], gap, stripped_value, comment)

    # -- editing -------------------------------------------------------------------------

    def edit(self, primary: Sequence[str], expected: Sequence[str]) -> TopicEdit:
        """Set the primary key's list to ``primary``; the parse must give ``expected``."""
        expected_t = tuple(expected)
        candidates = self._candidates(list(primary))
        for start, end, new_lines in candidates:
            old = self.lines[start:end]
            head = 0
            while head < min(len(old), len(new_lines)) and old[head] == new_lines[head]:
                head += 1
            tail = 0
            while (
                tail < min(len(old), len(new_lines)) - head
                and old[len(old) - 1 - tail] == new_lines[len(new_lines) - 1 - tail]
            ):
                tail += 1
            edit = TopicEdit(
                start=start + head,
                end=end - tail,
                text="".join(new_lines[head : len(new_lines) - tail]),
                topics=expected_t,
            )
            if self._verified(edit, expected_t):
                return edit
        raise InvalidRequest(
            "the topics could not be written without changing other frontmatter; edit them by hand",
            data={"topics": list(expected_t)},
        )

    def _verified(self, edit: TopicEdit, expected: tuple[str, ...]) -> bool:
        """Parse the edited text again: same body, same other keys, exactly ``expected``."""
        new_text = edit.apply(self.text)
        plain = new_text[1:] if new_text.startswith(BOM) else new_text
        norm = plain.replace("\r\n", "\n") if "\r" in plain else plain
        block = split_frontmatter(norm) if norm.startswith("---") else None
        if block is None or not block.closed or block.body != self.body:
            return False
        loaded = parse_frontmatter(block)
        if loaded.problems or not isinstance(loaded.data, dict):
            return False
        key = self.primary or self.config.topic_keys[0]
        before = {k: v for k, v in self.data.items() if k != key}
        after = {k: v for k, v in loaded.data.items() if k != key}
        if not _same(before, after) or key not in loaded.data:
            return False
        front = norm[: block.end]
        return _parsed_topics(front, self.config.topic_keys, self.config) == expected

    def _candidates(self, topics: list[str]) -> list[tuple[int, int, list[str]]]:
        """(start, end, replacement lines) to try, the preferred rendering first."""
        if self.close is None:
            nl = _ending(self.lines[0]) if self.lines else "\n"
            key = self.config.topic_keys[0]
            line = f"{_render_key(key)}: {_flow(topics, None)}{nl}"
            return [(0, 0, [f"---{nl}", line, f"---{nl}"])]
        entry = self.entry()
        if entry is None:
            nl = _ending(self.lines[self.close - 1])
            key = self.config.topic_keys[0]
            return [(self.close, self.close, [f"{_render_key(key)}: {_flow(topics, None)}{nl}"])]
        value = self.data[entry.key]
        old = self.lines[entry.first : entry.end]
        nl = _ending(old[0])
        flow_line = f"{entry.prefix}{entry.gap}{_flow(topics, None)}{entry.comment}{nl}"
        out: list[list[str]] = []
        if isinstance(value, list):
            if entry.value.startswith("["):
                source = entry.value if entry.end == entry.first + 1 else None
                line = _flow(topics, (source, value) if source is not None else None)
                out.append([f"{entry.prefix}{entry.gap}{line}{entry.comment}{nl}"])
            elif not entry.value:
                out.append(self._block(entry, topics, value))
        elif value is None and not entry.value:
            out.append(self._block(entry, topics, []))
        elif value is not None and entry.end == entry.first + 1:
            rendered = _string(topics, entry.value, value)
            if rendered is not None:
                out.append([f"{entry.prefix}{entry.gap}{rendered}{entry.comment}{nl}"])
        out.append([flow_line])
        return [(entry.first, entry.end, lines) for lines in out]

    def _block(self, entry: _Entry, topics: list[str], value: list[Any]) -> list[str]:
        """The entry as a block list: kept item lines reused, new items in the same indent."""
        key_line = self.lines[entry.first]
        body = self.lines[entry.first + 1 : entry.end]
        items: list[tuple[int, str]] = []  # (index in body, topic or "")
        simple = True
        for index, line in enumerate(body):
            content = _content(line)
            stripped = content.strip(" \t")
            if not stripped or stripped.startswith("#"):
                continue
            if fmscan.ITEM_RE.match(content):
                items.append((index, ""))
            else:
                simple = False  # a multi-line item: rebuild the list
        if not simple or len(items) != len(value):
            comments = [line for line in body if _content(line).strip(" \t").startswith("#")]
            prefix = self._item_prefix(None)
            nl = _ending(key_line)
            return [key_line, *comments, *(f"{prefix}{_scalar(t, flow=False)}{nl}" for t in topics)]
        items = [(index, _item_topic(item)) for (index, _), item in zip(items, value, strict=True)]
        prefix = self._item_prefix(body[items[0][0]] if items else None)
        wanted = set(topics)
        kept: dict[str, int] = {}
        drop: set[int] = set()
        for index, topic in items:
            if topic and (topic not in wanted or topic in kept):
                drop.add(index)
            elif topic:
                kept[topic] = index
        kept_order = [topic for index, topic in items if topic and index not in drop]
        if kept_order != [t for t in topics if t in kept]:
            # reordered: comments first (in order), then the items as asked, then the rest
            comments = [
                line
                for index, line in enumerate(body)
                if index not in {i for i, _ in items} and _content(line).strip(" \t")
            ]
            nl = _ending(key_line)
            lines = [key_line, *comments]
            for topic in topics:
                lines.append(
                    _with_ending(body[kept[topic]], nl)
                    if topic in kept
                    else f"{prefix}{_scalar(topic, flow=False)}{nl}"
                )
            lines.extend(_with_ending(body[i], nl) for i, topic in items if not topic)
            return lines
        slots: list[list[str]] = [[line] if i not in drop else [] for i, line in enumerate(body)]
        head: list[str] = []  # new items before every kept item
        tail: list[str] = []  # new items when there is no kept item before them
        last_item = max((i for i, _ in items if i not in drop), default=None)
        anchor: int | None = None  # the body index the next new item follows
        for topic in topics:
            if topic in kept:
                anchor = kept[topic]
                continue
            if anchor is not None:
                nl = _ending(slots[anchor][-1])
                slots[anchor].append(f"{prefix}{_scalar(topic, flow=False)}{nl}")
            elif kept:
                head.append(topic)
            else:
                tail.append(topic)
        lines = [key_line]
        first_kept = min(kept.values()) if kept else None
        for i, group in enumerate(slots):
            if i == first_kept:
                nl = _ending(group[0])
                lines.extend(f"{prefix}{_scalar(t, flow=False)}{nl}" for t in head)
            lines.extend(group)
        if tail:
            nl = _ending(lines[-1])
            new = [f"{prefix}{_scalar(t, flow=False)}{nl}" for t in tail]
            if last_item is not None:  # after the last remaining (non-topic) item
                position = 1 + sum(len(group) for group in slots[: last_item + 1])
                lines[position:position] = new
            else:
                lines.extend(new)
        return lines

    def _item_prefix(self, line: str | None) -> str:
        """``indent + '-' + gap`` of new block items: the list's own, the note's, or ``  - ``."""
        if line is not None:
            match = fmscan.ITEM_RE.match(_content(line))
            if match is not None and match.group(2):
                return f"{match.group(1)}-{match.group(2)}"
        for other in self.lines[1 : self.close]:
            content = _content(other)
            found = fmscan.ITEM_RE.match(content)
            if found and found.group(2) and found.end() < len(content) and "\t" not in found[0]:
                return f"{found.group(1)}-{found.group(2)}"
        return "  - "


def _with_ending(line: str, nl: str) -> str:
    return line if line.endswith("\n") else line + nl


def _item_topic(value: Any) -> str:
    """The topic the parser reads from one list item ("" for none)."""
    if isinstance(value, str):
        return clean_topic(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        try:
            return clean_topic(str(value))
        except ValueError:
            return ""
    if isinstance(value, dt.date):
        return value.isoformat()
    return ""


def _render_key(key: str) -> str:
    return key if _plain_ok(key, flow=False) and ":" not in key else _double_quoted(key)


def _flow(topics: Sequence[str], original: tuple[str, list[Any]] | None) -> str:
    """``[a, b]``, reusing the item sources and the spacing of ``original`` where it can."""
    separator, pad = ", ", ""
    reuse: dict[str, str] = {}
    if original is not None:
        source, values = original
        inner = source[1:-1]
        if "," in inner and ", " not in inner:
            separator = ","
        if inner.startswith(" ") and inner.strip():
            pad = " "
        tokens = fmscan.flow_tokens(source)
        if tokens is not None and len(tokens) == len(values):
            for token, value in zip(tokens, values, strict=True):
                reuse.setdefault(_item_topic(value), token)
    items = [reuse.get(t) or _scalar(t, flow=True) for t in topics]
    if not items:
        return "[]"
    return f"[{pad}{separator.join(items)}{pad}]"


def _string(topics: Sequence[str], source: str, value: Any) -> str | None:
    """The topics as one string in the style of ``source``; None when it cannot be one."""
    if not topics or any("," in t for t in topics):
        return None
    spaced = isinstance(value, str) and "," not in value and len(value.split()) > 1
    if spaced and any(ch.isspace() for t in topics for ch in t):
        spaced = False
    joined = (" " if spaced else ", ").join(topics)
    if source[:1] == "'":
        return _single_quoted(joined)
    if source[:1] == '"':
        return _double_quoted(joined)
    return _scalar(joined, flow=False)

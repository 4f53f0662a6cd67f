"""The frontmatter scanner: where YAML sees keys, list items, quotes and comments on a line.

One scanner for every place that reads frontmatter text line by line instead of loading it:
the fast reader and the key lines of :mod:`engram_ls.core.frontmatter`, topic completion and
hover in the language server, and the byte-preserving topic edit
(:mod:`engram_ls.core.topic_edit`). It only finds *where* things are; what a value means is
YAML's business (the fast reader resolves scalars with YAML's own resolvers, the others load
the block with YAML first).

The rules are YAML's, for one line of a block mapping at the top level:

* a **key line** starts at column 0 with a plain, single- or double-quoted key followed by
  ``:`` and a space, a tab or the end of the line (``a:b: c`` has the key ``a:b``);
* a **block list item** is ``-`` followed by a space, a tab or the end of the line, after
  any indentation;
* a quote starts a **quoted scalar** only where a scalar starts (``a "b`` is a plain scalar
  with a quote in it); ``''`` inside single quotes and ``\\"`` inside double quotes do not
  close them;
* a **comment** is a ``#`` at the start of the line or after a space or tab, outside quotes;
* a **flow list** ``[a, "b, c", d]`` splits on the commas outside quotes.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "ITEM_RE",
    "Key",
    "comment_start",
    "flow_tokens",
    "key_at",
    "key_lines",
    "plain_key_colon",
    "quoted_end",
    "split_items",
    "split_value",
]

ITEM_RE = re.compile(r"([ \t]*)-([ \t]+|$)")
"""A block list item: group 1 is the indentation, group 2 the gap after ``-`` (empty at the
end of the line); ``match.end()`` is where the item's value starts."""

_PLAIN_KEY_BAD_START = frozenset("-?:,[]{}#&*!|>'\"%@` \t")
_BLANK = ("", " ", "\t")
"""What may follow an indicator: a blank or the end of the line."""


class Key(NamedTuple):
    """A top-level ``key:`` at the start of a line."""

    raw: str
    """The key as written (quotes included)."""
    name: str | None
    """The key as YAML reads it (unquoted), or None for a double-quoted key with escapes."""
    end: int
    """The column just past the colon, where the value (if any) starts."""


def key_at(line: str) -> Key | None:
    """The top-level key of ``line`` (a line without its line break), or None."""
    first = line[:1]
    if first not in ("'", '"'):
        colon = plain_key_colon(line)
        if colon < 0:
            return None
        raw = line[:colon].rstrip(" \t")
        return Key(raw, raw, colon + 1)
    close = quoted_end(line, 0)
    colon = close
    while 0 < colon < len(line) and line[colon] in " \t":
        colon += 1
    if close < 0 or line[colon : colon + 1] != ":" or line[colon + 1 : colon + 2] not in _BLANK:
        return None
    raw = line[:close]
    if first == "'":
        return Key(raw, raw[1:-1].replace("''", "'"), colon + 1)
    return Key(raw, None if "\\" in raw else raw[1:-1], colon + 1)


def plain_key_colon(line: str) -> int:
    """Where the colon after the plain top-level key of ``line`` is, else -1 (also for a
    quoted key, which :func:`key_at` reads). The fast reader calls this once a line."""
    first = line[:1]
    if not first or (first in _PLAIN_KEY_BAD_START and (first not in "-?:" or line[1:2] in _BLANK)):
        return -1
    colon = line.find(":", 1)  # the first ``:`` followed by a blank or the end ends the key
    while colon >= 0 and line[colon + 1 : colon + 2] not in _BLANK:
        colon = line.find(":", colon + 1)
    if line.find("#", 1, colon) > 0 and (
        line.find(" #", 0, colon) >= 0 or line.find("\t#", 0, colon) >= 0
    ):
        return -1  # a comment starts before the colon
    return colon


def key_lines(lines: list[str], key: str) -> list[tuple[int, Key]]:
    """The lines (index and key) whose top-level key is exactly ``key`` as YAML reads it."""
    found: list[tuple[int, Key]] = []
    for index, line in enumerate(lines):
        if key in line:
            hit = key_at(line)
            if hit is not None and hit.name == key:
                found.append((index, hit))
    return found


def quoted_end(text: str, start: int) -> int:
    """Just past the quoted scalar opened by the quote at ``start``; -1 when it stays open."""
    quote = text[start]
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == "\\" and quote == '"':
            i += 2
            continue
        if ch == quote:
            if quote == "'" and text[i + 1 : i + 2] == "'":
                i += 2
                continue
            return i + 1
        i += 1
    return -1


def comment_start(line: str, start: int = 0, *, flow: bool = False) -> int:
    """Where a comment starts on ``line`` at or after ``start`` (a value's start), else its length.

    ``flow`` says that ``line`` continues a flow collection opened on an earlier line. A
    quoted scalar left open at the end of the line has no comment after it.
    """
    depth = 1 if flow else 0
    at_start = True  # where a scalar may start, so a quote opens a quoted scalar
    i, n = start, len(line)
    while i < n:
        ch = line[i]
        if ch in " \t":
            i += 1
            continue
        if ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return i
        if at_start and ch in "\"'":
            i = quoted_end(line, i)
            if i < 0:
                return n
            at_start = False
            continue
        if at_start and ch in "!&":  # a tag or an anchor: the scalar starts after it
            while i < n and line[i] not in " \t":
                i += 1
            continue
        if ch in "[{" and (at_start or depth):
            depth += 1
            at_start = True
        elif depth and ch in "]}":
            depth -= 1
            at_start = False
        elif depth and ch == ",":
            at_start = True
        else:  # after ``- ``, ``? `` and a flow ``: `` a scalar starts
            indicator = ch in "-?:" and line[i + 1 : i + 2] in _BLANK
            at_start = indicator and (at_start or (depth > 0 and ch == ":"))
        i += 1
    return n


def split_value(rest: str) -> tuple[str, str]:
    """The text after ``key:`` → (value source, trailing comment with the blanks before it)."""
    hash_at = comment_start(rest)
    value = rest[:hash_at].rstrip(" \t")
    return value, rest[len(value) :]


def split_items(
    line: str, start: int, end: int, sep: str = ",", *, quotes: bool = True
) -> list[tuple[int, int]]:
    """Spans of the items of ``line[start:end]`` separated by ``sep`` (``,``, or ``" "`` for
    any run of blanks). With ``quotes``, an item that starts with a quote runs to its closing
    quote (or to ``end`` while it is open), separators included."""
    spans: list[tuple[int, int]] = []
    item = i = start
    if sep == "," and not (quotes and ('"' in line[start:end] or "'" in line[start:end])):
        while (comma := line.find(",", item, end)) >= 0:  # the common case: no quotes
            spans.append((item, comma))
            item = comma + 1
        spans.append((item, end))
        return spans
    while i < end:
        ch = line[i]
        if quotes and ch in "\"'" and not line[item:i].strip(" \t"):
            close = quoted_end(line[:end], i)
            i = end if close < 0 else close
            continue
        if ch == sep or (sep == " " and ch in " \t"):
            spans.append((item, i))
            item = i + 1
        i += 1
    spans.append((item, end))
    return spans


def flow_tokens(source: str) -> list[str] | None:
    """The item sources of a one-line flow list ``[a, "b", c]``; None when not that simple
    (nested collections, a comment, an open quote, an empty item)."""
    if not (source.startswith("[") and source.endswith("]")):
        return None
    end = len(source) - 1
    tokens: list[str] = []
    for start, stop in split_items(source, 1, end):
        token = source[start:stop].strip(" \t")
        if token[:1] in ("'", '"'):
            if quoted_end(token, 0) != len(token):
                return None
        elif any(ch in token for ch in "[]{}#"):
            return None
        tokens.append(token)
    if tokens == [""]:
        return []
    if len(tokens) > 1 and not tokens[-1]:
        tokens.pop()  # a trailing comma
    return None if any(not token for token in tokens) else tokens

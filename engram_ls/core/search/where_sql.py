"""A ``where`` tree (``core.search.where``) as SQL over the index, meaning what ``matches``
means over a parsed note.

Each condition is one SELECT of the notes passing it (``condition_notes``), which
``where_bits`` reads as a bitmap and combines. A condition on a frontmatter property is one
range of the ``props_by_value`` index (``key, kind, value, item``; the note is in the row id).
File properties read ``notes`` (``file.path``, ``file.size`` from their columns; the others
through ``engram_file``, the same ``file_value`` the scan path uses), ``note_topics``
(``file.tags``) and ``links`` (``file.links``).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from engram_ls.core.index.schema import PROP_NOTE
from engram_ls.core.properties import CODES
from engram_ls.core.search.where import (
    FILE_PROPS,
    FOLDED,
    ORDER_OPS,
    Cond,
    file_value,
)

_TEXT = CODES["text"]
_DATE = CODES["date"]
_COLUMNS = {"file.path": "path", "file.size": "size"}


def register(conn: sqlite3.Connection) -> None:
    """The SQL functions the conditions call, on a connection that answers searches."""
    conn.create_function("engram_file", 5, file_value, deterministic=True)


ALL_NOTES = "SELECT id FROM notes"
"""Every note."""


def condition_notes(c: Cond) -> tuple[str, list[Any]]:
    """The notes passing one condition in its positive form (not ``!=`` nor ``missing``:
    ``where_bits`` takes those as the others), as a SELECT of ``id`` (a note may come more
    than once: one row a list item)."""
    assert c.op not in ("!=", "missing")
    if c.prop in FOLDED:
        return _listed(c)
    if c.prop in FILE_PROPS:
        return _file(c)
    return _props(c)


def _props(c: Cond) -> tuple[str, list[Any]]:
    """The notes with a frontmatter value passing ``c``."""
    select = f"SELECT {PROP_NOTE} AS id FROM props WHERE key = ?"
    params: list[Any] = [c.prop]
    if c.single and c.op != "exists":
        select += " AND item = 0"
    if c.op == "exists":
        return select, params
    assert c.kind is not None
    if c.op == "starts_with":
        cond, p = _prefix("value", c.text)
        return (
            f"{select} AND kind IN ('{_TEXT}', '{_DATE}') AND {cond}",
            [*params, *p],
        )
    if c.op == "contains" and c.kind == "text":
        return (
            f"{select} AND kind = '{_TEXT}' AND ((item > 0 AND value = ?)"
            " OR (item = 0 AND instr(value, ?) > 0))",
            [*params, c.value, c.text],
        )
    if c.op in ORDER_OPS:
        return (
            f"{select} AND kind = ? AND value {c.op} ?",
            [*params, CODES[c.kind], c.value],
        )
    return f"{select} AND kind = ? AND value = ?", [*params, CODES[c.kind], c.value]


def _listed(c: Cond) -> tuple[str, list[Any]]:
    """The notes with a topic (``file.tags``) or a link (``file.links``) passing ``c``: each
    value is an item, compared case-folded."""
    if c.prop == "file.tags":
        select = "SELECT note_id AS id FROM note_topics"
        key = "topic_id IN (SELECT id FROM topics WHERE {})"
    else:
        select = "SELECT note_id AS id FROM links"
        key = "{}"
    if c.op == "exists":
        return select, []
    if c.kind != "text":
        return f"{select} WHERE 0", []
    if c.op == "starts_with":
        cond, params = _prefix("key", c.text)
    elif c.op in ORDER_OPS:
        cond, params = f"key {c.op} ?", [c.value]
    else:  # = and contains: an item equal to the value
        cond, params = "key = ?", [c.value]
    return f"{select} WHERE {key.format(cond)}", params


def _file(c: Cond) -> tuple[str, list[Any]]:
    """A single-valued file property: a condition on the note's ``notes`` row."""
    if c.op == "exists":
        return ALL_NOTES, []
    kind = FILE_PROPS[c.prop]
    # The name is one of FILE_PROPS (checked above), never the request's text.
    column = _COLUMNS.get(c.prop) or f"engram_file('{c.prop}', path, size, mtime_ns, born_ns)"
    if c.op == "starts_with":
        if kind not in ("text", "date"):
            return f"{ALL_NOTES} WHERE 0", []
        cond, params = _prefix(column, c.text)
    elif c.kind != kind:
        return f"{ALL_NOTES} WHERE 0", []
    elif c.op == "contains" and kind == "text":
        cond, params = f"instr({column}, ?) > 0", [c.text]
    else:
        op = c.op if c.op in ORDER_OPS else "="
        cond, params = f"{column} {op} ?", [c.value]
    return f"{ALL_NOTES} WHERE {cond}", params


def _prefix(column: str, text: str) -> tuple[str, list[Any]]:
    """``column`` starts with ``text`` (by code point): a range of the index where the next
    string after the prefix can be written, and the exact check."""
    cond = f"{column} >= ? AND substr({column}, 1, ?) = ?"
    params: list[Any] = [text, len(text), text]
    last = ord(text[-1])
    if last < 0x10FFFF and not 0xD7FF <= last <= 0xDFFF:
        cond = f"{column} >= ? AND {column} < ? AND substr({column}, 1, ?) = ?"
        params = [text, text[:-1] + chr(last + 1), len(text), text]
    return cond, params


__all__ = ["ALL_NOTES", "condition_notes", "register"]

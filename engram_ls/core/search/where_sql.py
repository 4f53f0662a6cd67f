"""A ``where`` tree (``core.search.where``) as SQL over the index, meaning what ``matches``
means over a parsed note.

Each condition becomes ``note IN (SELECT note_id FROM props WHERE key = ? AND kind = ? AND
value ...)``: one range of the ``props`` key, which SQLite reads once per statement (an
uncorrelated ``IN``), and which drives the query when it is a condition of its own
(``conjuncts``). File properties read ``notes`` (``file.path``, ``file.size`` from their
columns; the others through ``engram_file``, the same ``file_value`` the scan path uses),
``note_topics`` (``file.tags``) and ``links`` (``file.links``).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from engram_ls.core.properties import CODES
from engram_ls.core.search.where import (
    FILE_PROPS,
    FOLDED,
    ORDER_OPS,
    All,
    AnyOf,
    Cond,
    Node,
    Not,
    file_value,
)

_TEXT = CODES["text"]
_DATE = CODES["date"]
_COLUMNS = {"file.path": "path", "file.size": "size"}


def register(conn: sqlite3.Connection) -> None:
    """The SQL functions the conditions call, on a connection that answers searches."""
    conn.create_function("engram_file", 4, file_value, deterministic=True)


def conjuncts(node: Node, note: str) -> tuple[list[str], list[Any]]:
    """The tree as SQL conditions on the note id expression ``note``, all of which must hold
    (an ``and`` at the top gives one each: each can drive the query)."""
    items = node.items if isinstance(node, All) else (node,)
    out: list[str] = []
    params: list[Any] = []
    for item in items:
        sql, p = expression(item, note)
        out.append(sql)
        params += p
    return out, params


def expression(node: Node, note: str) -> tuple[str, list[Any]]:
    """The tree as one SQL boolean expression on the note id expression ``note``."""
    if isinstance(node, All | AnyOf):
        parts = [expression(item, note) for item in node.items]
        joiner = " AND " if isinstance(node, All) else " OR "
        return (
            "(" + joiner.join(sql for sql, _ in parts) + ")",
            [p for _, params in parts for p in params],
        )
    if isinstance(node, Not):
        sql, params = expression(node.item, note)
        return f"NOT {sql}", params
    return _condition(node, note)


def _condition(c: Cond, note: str) -> tuple[str, list[Any]]:
    if c.op == "!=":
        sql, params = _condition(Cond(c.prop, "=", c.kind, c.value, c.text), note)
        return f"NOT {sql}", params
    if c.op == "missing":
        sql, params = _condition(Cond(c.prop, "exists"), note)
        return f"NOT {sql}", params
    if c.prop in FOLDED:
        select, params = _listed(c)
    elif c.prop in FILE_PROPS:
        return _file(c, note)
    else:
        select, params = _props(c)
    return f"({note} IN ({select}))", params


def _props(c: Cond) -> tuple[str, list[Any]]:
    """The notes with a frontmatter value passing ``c`` (any op but != and missing)."""
    sql = "SELECT note_id FROM props WHERE key = ?"
    params: list[Any] = [c.prop]
    if c.op == "exists":
        return sql, params
    assert c.kind is not None
    if c.op == "starts_with":
        cond, p = _prefix("value", c.text)
        return f"{sql} AND kind IN ('{_TEXT}', '{_DATE}') AND {cond}", [*params, *p]
    if c.op == "contains" and c.kind == "text":
        return (
            f"{sql} AND kind = '{_TEXT}' AND ((item = 1 AND value = ?)"
            " OR (item = 0 AND instr(value, ?) > 0))",
            [*params, c.value, c.text],
        )
    op = c.op if c.op in ORDER_OPS else "="
    return f"{sql} AND kind = ? AND value {op} ?", [*params, CODES[c.kind], c.value]


def _listed(c: Cond) -> tuple[str, list[Any]]:
    """The notes with a topic (``file.tags``) or a link (``file.links``) passing ``c``: each
    value is an item, compared case-folded."""
    if c.prop == "file.tags":
        select = "SELECT note_id FROM note_topics"
        key = "topic_id IN (SELECT id FROM topics WHERE {})"
    else:
        select, key = "SELECT note_id FROM links", "{}"
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


def _file(c: Cond, note: str) -> tuple[str, list[Any]]:
    """A single-valued file property: a condition on the note's ``notes`` row."""
    if c.op == "exists":
        return "1", []
    kind = FILE_PROPS[c.prop]
    # The name is one of FILE_PROPS (checked above), never the request's text.
    column = _COLUMNS.get(c.prop) or f"engram_file('{c.prop}', n.path, n.size, n.mtime_ns)"
    if c.op == "starts_with":
        if kind not in ("text", "date"):
            return "0", []
        cond, params = _prefix(column, c.text)
    elif c.kind != kind:
        return "0", []
    elif c.op == "contains" and kind == "text":
        cond, params = f"instr({column}, ?) > 0", [c.text]
    else:
        op = c.op if c.op in ORDER_OPS else "="
        cond, params = f"{column} {op} ?", [c.value]
    return f"({note} IN (SELECT n.id FROM notes n WHERE {cond}))", params


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


__all__ = ["conjuncts", "expression", "register"]

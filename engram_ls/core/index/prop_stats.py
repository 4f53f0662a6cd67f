"""How many notes have each property, of which kinds, and with which values: what completion
and hover tell about properties.

Table ``prop_stats (key, kind, notes)``: for each property (its case-folded name, as in
``props``), the row of kind ``ANY`` counts the notes that have it at all, the row of a kind's
letter (``properties.CODES``) the notes with a value of that kind, and ``LIST`` the notes where
it is a list. The counts are kept exact by the writes themselves: a note's rows that go in add
one to each of its (key, kind) pairs, those that go out take one away (``Batch``), so no commit
reads ``props`` again, and a cold build pays a few dictionary updates a note.

The values of one property are read from ``props`` when asked (``values``): only for a property
with at most ``MAX_DISTINCT`` distinct values, found by reading that many of them in key order,
so that a property of free text (a summary on every note) costs a short range, not a count.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engram_ls.core.errors import InvalidRequest
from engram_ls.core.index.schema import PROP_NOTE, prop_range
from engram_ls.core.properties import CODES, Kind

ANY = "*"
LIST = "l"
MAX_DISTINCT = 50
"""A property with more distinct values than this has no values to offer (free text)."""

KIND_OF_CODE: dict[str, Kind] = {code: kind for kind, code in CODES.items()}

Delta = Counter[tuple[str, str]]


def note_pairs(rows: Iterable[tuple[str, str, Any, int]]) -> set[tuple[str, str]]:
    """The (key, kind) pairs one note counts in, from its ``props`` rows (key, kind letter,
    value, item)."""
    out: set[tuple[str, str]] = set()
    add = out.add
    for key, kind, _value, item in rows:
        add((key, ANY))
        add((key, kind))
        if item:
            add((key, LIST))
    return out


def stored_pairs(conn: sqlite3.Connection, note_id: int) -> set[tuple[str, str]]:
    """The pairs of a note as the index holds them (before its rows are deleted)."""
    rows = conn.execute(
        "SELECT key, kind, '', max(item) FROM props WHERE id BETWEEN ? AND ? GROUP BY key, kind",
        prop_range(note_id),
    )
    return note_pairs(rows)


def apply(conn: sqlite3.Connection, delta: Delta) -> None:
    """Add a batch's changes to the counts; a count that reaches 0 goes."""
    changed = [(key, kind, n) for (key, kind), n in delta.items() if n]
    if not changed:
        return
    conn.executemany(
        "INSERT INTO prop_stats (key, kind, notes) VALUES (?, ?, ?)"
        " ON CONFLICT (key, kind) DO UPDATE SET notes = notes + excluded.notes",
        changed,
    )
    conn.executemany(
        "DELETE FROM prop_stats WHERE key = ? AND kind = ? AND notes <= 0",
        [(key, kind) for key, kind, n in changed if n < 0],
    )


def recount(conn: sqlite3.Connection) -> None:
    """The counts again from ``props`` (what ``apply`` keeps; for checks and repairs)."""
    conn.execute("DELETE FROM prop_stats")
    notes = f"count(DISTINCT {PROP_NOTE})"
    conn.execute(
        "INSERT INTO prop_stats (key, kind, notes)"
        f" SELECT key, ?, {notes} FROM props GROUP BY key"
        f" UNION ALL SELECT key, kind, {notes} FROM props GROUP BY key, kind"
        f" UNION ALL SELECT key, ?, {notes} FROM props WHERE item > 0 GROUP BY key",
        (ANY, LIST),
    )


# -- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PropertyCount:
    """A property of the vault: how many notes have it, and of which kinds."""

    name: str
    notes: int
    kinds: dict[str, int] = field(default_factory=dict)
    """Notes with a value of each kind (``text``, ``number``, ``bool``, ``date``, ``null``)."""
    lists: int = 0
    """Notes where it is a list."""

    @property
    def kind(self) -> str:
        """What most notes hold: ``text``, ``number``, ... (``list of text`` when most are
        lists), ``mixed`` when no kind is on most notes that have a value."""
        valued = {k: n for k, n in self.kinds.items() if k != "null"}
        if not valued:
            return "null"
        top, n = max(valued.items(), key=lambda kv: (kv[1], kv[0]))
        if n * 2 <= sum(valued.values()) and len(valued) > 1:
            top = "mixed"
        return f"list of {top}" if self.lists * 2 > self.notes else top


@dataclass(frozen=True, slots=True)
class ValueCount:
    """A value a property takes, and on how many notes."""

    kind: Kind
    value: str | int | float
    notes: int

    @property
    def text(self) -> str:
        """The value as it is written in YAML (``true``, ``3``, ``2024-03-05``, ``done``)."""
        if self.kind == "bool":
            return "true" if self.value else "false"
        return str(self.value)


def listed(
    conn: sqlite3.Connection, *, prefix: str, limit: int, names: Sequence[str] | None
) -> list[PropertyCount]:
    """Properties whose name starts with ``prefix`` (any case), most used first, or those of
    ``names`` the vault has; at most ``limit`` (1 to 10,000)."""
    if limit < 1 or limit > 10_000:
        raise InvalidRequest("limit must be between 1 and 10000")
    if names is not None:
        return list(describe(conn, [n.strip().casefold() for n in names[:limit]]).values())
    return by_use(conn, prefix.strip().casefold(), limit)


def by_use(conn: sqlite3.Connection, prefix: str, limit: int) -> list[PropertyCount]:
    """Properties whose name starts with ``prefix`` (case-folded), most used first."""
    if prefix:
        rows = conn.execute(
            "SELECT key, notes FROM prop_stats WHERE key >= ? AND key < ? AND kind = ?"
            " ORDER BY notes DESC, key LIMIT ?",
            (prefix, prefix + "\U0010ffff", ANY, limit),
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT key, notes FROM prop_stats WHERE kind = ? ORDER BY notes DESC, key LIMIT ?",
            (ANY, limit),
        ).fetchall()
    found = describe(conn, [str(k) for k, _n in rows])
    return [found[str(k)] for k, _n in rows if str(k) in found]


def describe(conn: sqlite3.Connection, keys: Sequence[str]) -> dict[str, PropertyCount]:
    """Each of ``keys`` the vault has, with its counts."""
    out: dict[str, PropertyCount] = {}
    for key in dict.fromkeys(keys):
        rows = conn.execute("SELECT kind, notes FROM prop_stats WHERE key = ?", (key,)).fetchall()
        counts = {str(kind): int(n) for kind, n in rows}
        if ANY not in counts:
            continue
        kinds: dict[str, int] = {KIND_OF_CODE[c]: n for c, n in counts.items() if c in KIND_OF_CODE}
        out[key] = PropertyCount(key, counts[ANY], kinds, counts.get(LIST, 0))
    return out


def values(conn: sqlite3.Connection, key: str, most: int = MAX_DISTINCT) -> list[ValueCount] | None:
    """The values of property ``key`` with their note counts, most used first; None when it
    has more than ``most`` distinct values. Empty (null) values are left out."""
    distinct = conn.execute(
        "SELECT DISTINCT kind, value FROM props WHERE key = ? LIMIT ?", (key, most + 2)
    ).fetchall()
    if sum(1 for kind, _v in distinct if kind != CODES["null"]) > most:
        return None
    out = []
    for kind, value in distinct:
        if kind == CODES["null"]:
            continue
        (n,) = conn.execute(
            "SELECT count(*) FROM props WHERE key = ? AND kind = ? AND value = ?",
            (key, kind, value),
        ).fetchone()
        out.append(ValueCount(KIND_OF_CODE[kind], value, int(n)))
    out.sort(key=lambda v: (-v.notes, v.text.casefold()))
    return out


def about(
    conn: sqlite3.Connection, key: str
) -> tuple[PropertyCount | None, list[ValueCount] | None]:
    """Property ``key``'s counts (None: no note has it) and its values (``values``)."""
    found = describe(conn, [key]).get(key)
    return found, (values(conn, key) if found is not None else [])

"""Index queries for links: notes by stem, title, alias and path; candidate backlinks by key;
prefix completion of note names; headings; notes sharing topics. Every query is an index
lookup or an index range (never a scan of all notes)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from engram_ls.core.index.rows import folder_range
from engram_ls.core.links import NoteRef

_NOTE_COLS = "n.id, n.path, n.title, n.summary, n.topics"
_TOP = "\U0010ffff"


def _ref(row: tuple[object, ...]) -> NoteRef:
    topics: tuple[str, ...] = ()
    raw = row[4]
    if isinstance(raw, str) and raw:
        try:
            topics = tuple(str(t) for t in json.loads(raw))
        except ValueError:
            topics = ()
    summary = row[3]
    return NoteRef(
        int(row[0]),  # type: ignore[call-overload]
        str(row[1]),
        str(row[2]),
        summary if isinstance(summary, str) else None,
        topics,
    )


@dataclass(frozen=True, slots=True)
class LinkRow:
    """A stored link with the note it is in."""

    source: str
    source_id: int
    line: int
    """1-based."""
    kind: str
    target: str
    anchor: str | None
    label: str | None


@dataclass(frozen=True, slots=True)
class NameMatch:
    """A completion candidate: the note and the name that matched (title, stem or alias)."""

    note: NoteRef
    name: str
    how: str
    """``title``, ``stem`` or ``alias``."""
    target: str = ""
    """What a wiki-link writes to name the note: its file stem, or its path without ``.md``
    when other notes share the stem."""


class LinkQueries:
    """Link lookups on one connection (``Lookup`` for ``core.links.Resolver``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _notes(self, sql: str, params: tuple[object, ...]) -> list[NoteRef]:
        return [_ref(r) for r in self.conn.execute(sql, params)]

    def by_stem(self, key: str) -> list[NoteRef]:
        return self._notes(
            f"SELECT {_NOTE_COLS} FROM notes n WHERE n.stem_key = ? ORDER BY n.path", (key,)
        )

    def by_title(self, key: str) -> list[NoteRef]:
        return self._notes(
            f"SELECT {_NOTE_COLS} FROM notes n WHERE n.title_key = ? ORDER BY n.path", (key,)
        )

    def by_alias(self, key: str) -> list[NoteRef]:
        return self._notes(
            f"SELECT {_NOTE_COLS} FROM aliases a CROSS JOIN notes n ON n.id = a.note_id"
            " WHERE a.key = ? ORDER BY n.path",
            (key,),
        )

    def by_path(self, path: str) -> NoteRef | None:
        found = self._notes(f"SELECT {_NOTE_COLS} FROM notes n WHERE n.path = ?", (path,))
        return found[0] if found else None

    def under(self, folder: str) -> list[NoteRef]:
        lo, hi = folder_range(folder)
        return self._notes(
            f"SELECT {_NOTE_COLS} FROM notes n WHERE n.path >= ? AND n.path < ? ORDER BY n.path",
            (lo, hi),
        )

    def aliases_of(self, note_id: int) -> list[str]:
        return [
            str(r[0])
            for r in self.conn.execute(
                "SELECT name FROM aliases WHERE note_id = ? ORDER BY name", (note_id,)
            )
        ]

    def headings(self, note_id: int) -> list[tuple[int, int, str]]:
        """(line, level, text) of a note's headings, in order."""
        return [
            (int(line), int(level), str(text))
            for line, level, text in self.conn.execute(
                "SELECT line, level, text FROM headings WHERE note_id = ? ORDER BY line",
                (note_id,),
            )
        ]

    def links_with_keys(self, keys: Iterable[str]) -> list[LinkRow]:
        """Stored links whose key is one of ``keys`` (candidate backlinks), by source."""
        wanted = sorted(set(keys))
        out: list[LinkRow] = []
        for i in range(0, len(wanted), 500):
            part = wanted[i : i + 500]
            marks = ",".join("?" * len(part))
            out.extend(
                LinkRow(str(p), int(sid), int(line), str(kind), str(t), anchor, label)
                for p, sid, line, kind, t, anchor, label in self.conn.execute(
                    "SELECT n.path, n.id, l.line, l.kind, l.target, l.anchor, l.label"
                    " FROM links l CROSS JOIN notes n ON n.id = l.note_id"
                    f" WHERE l.key IN ({marks})",
                    part,
                )
            )
        out.sort(key=lambda r: (r.source, r.line))
        return out

    def outgoing(self, note_id: int) -> list[LinkRow]:
        return [
            LinkRow(str(p), int(sid), int(line), str(kind), str(t), anchor, label)
            for p, sid, line, kind, t, anchor, label in self.conn.execute(
                "SELECT n.path, n.id, l.line, l.kind, l.target, l.anchor, l.label"
                " FROM links l CROSS JOIN notes n ON n.id = l.note_id"
                " WHERE l.note_id = ? ORDER BY l.line, l.seq",
                (note_id,),
            )
        ]

    def stem_counts(self, keys: Iterable[str]) -> dict[str, int]:
        wanted = sorted(set(keys))
        out: dict[str, int] = {}
        for i in range(0, len(wanted), 500):
            part = wanted[i : i + 500]
            marks = ",".join("?" * len(part))
            out.update(
                (str(k), int(c))
                for k, c in self.conn.execute(
                    f"SELECT stem_key, count(*) FROM notes WHERE stem_key IN ({marks})"
                    " GROUP BY stem_key",
                    part,
                )
            )
        return out

    def complete(self, prefix: str, limit: int) -> list[NameMatch]:
        """Notes whose title, file stem or an alias starts with ``prefix`` (case-folded),
        at most ``limit`` per kind of name: three index range scans."""
        lo, hi = prefix, prefix + _TOP
        out: list[NameMatch] = []
        for how, sql in (
            (
                "title",
                f"SELECT {_NOTE_COLS}, n.title FROM notes n"
                " WHERE n.title_key >= ? AND n.title_key < ? ORDER BY n.title_key LIMIT ?",
            ),
            (
                "stem",
                f"SELECT {_NOTE_COLS}, n.path FROM notes n"
                " WHERE n.stem_key >= ? AND n.stem_key < ? ORDER BY n.stem_key LIMIT ?",
            ),
            (
                "alias",
                f"SELECT {_NOTE_COLS}, a.name FROM aliases a CROSS JOIN notes n"
                " ON n.id = a.note_id WHERE a.key >= ? AND a.key < ? ORDER BY a.key LIMIT ?",
            ),
        ):
            for row in self.conn.execute(sql, (lo, hi, limit)):
                name = str(row[5])
                if how == "stem":
                    name = name.rpartition("/")[2][:-3]
                out.append(NameMatch(_ref(row), name, how))
        return out

    def sharing_topics(
        self, note_id: int, limit: int, per_topic: int = 200
    ) -> list[tuple[NoteRef, list[str]]]:
        """Other notes with topics of this note: most shared topics first, then newest.

        Bounded work: for each topic of the note only its ``per_topic`` newest notes are
        looked at (an index range of ``note_topics``), so a topic on half the vault is cheap.
        """
        mine = self.conn.execute(
            "SELECT t.id, t.name FROM note_topics nt CROSS JOIN topics t ON t.id = nt.topic_id"
            " WHERE nt.note_id = ?",
            (note_id,),
        ).fetchall()
        shared: dict[int, list[str]] = {}
        newest: dict[int, str] = {}
        for topic_id, name in mine:
            for other, day in self.conn.execute(
                "SELECT note_id, created_at FROM note_topics WHERE topic_id = ?"
                " ORDER BY created_at DESC, note_id DESC LIMIT ?",
                (topic_id, per_topic + 1),
            ):
                if other == note_id:
                    continue
                shared.setdefault(int(other), []).append(str(name))
                newest[int(other)] = max(newest.get(int(other), ""), str(day))
        ranked = list(shared)
        ranked.sort(key=lambda o: (-len(shared[o]), _desc(newest[o])))
        out: list[tuple[NoteRef, list[str]]] = []
        for other in ranked[:limit]:
            found = self._notes(f"SELECT {_NOTE_COLS} FROM notes n WHERE n.id = ?", (other,))
            if found:
                out.append((found[0], sorted(shared[other], key=str.casefold)))
        return out


def _desc(day: str) -> tuple[int, ...]:
    """Sort key putting later ISO days first."""
    return tuple(-ord(c) for c in day)


def title_lines(conn: sqlite3.Connection, note_ids: list[int]) -> dict[int, int]:
    """The 1-based line each note's title is written on (``Note.title_line``), by note id."""
    if not note_ids:
        return {}
    rows = conn.execute(
        "SELECT id, title_line FROM notes WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(note_ids),),
    )
    return dict(rows.fetchall())

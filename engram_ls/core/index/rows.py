"""Typed write batches: a parsed note as the rows the index stores (``note_rows``, cheap to
send between processes) and ``Batch``, the writes of one transaction (``Index.batch`` opens and
commits it).
"""

from __future__ import annotations

import calendar
import json
import sqlite3
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Literal, NamedTuple

from engram_ls.core.index import db, prop_stats
from engram_ls.core.index.schema import (
    BUILT_LAST,
    INDEXES_BUILT_LAST,
    NO_DATE,
    PROP_BITS,
    TASK_BITS,
    prop_range,
    task_range,
)
from engram_ls.core.index.symbol_match import char_mask, name_keys
from engram_ls.core.index.trigram import TABLES
from engram_ls.core.links import link_key, stem_key
from engram_ls.core.model import Note
from engram_ls.core.properties import CODES
from engram_ls.core.serialize import json_text
from engram_ls.core.tasks.store import COLUMNS, TaskRow, task_rows

State = Literal["empty", "building", "ready", "stale", "failed"]
STATES: tuple[State, ...] = ("empty", "building", "ready", "stale", "failed")


ISO_SECONDS = "%Y-%m-%dT%H:%M:%SZ"
"""How the index stamps its changes (``meta.updated_at``): UTC, whole seconds."""


def now_iso() -> str:
    return time.strftime(ISO_SECONDS, time.gmtime())


def iso_epoch(stamp: str) -> float:
    """Seconds since the epoch of a stamp written by ``now_iso``; ValueError otherwise."""
    return float(calendar.timegm(time.strptime(stamp, ISO_SECONDS)))


def folder_range(folder: str) -> tuple[str, str]:
    """Bounds such that ``lo <= path < hi`` selects every path under ``folder/``."""
    return folder + "/", folder + "0"  # '0' is the character after '/'


class NoteRows(NamedTuple):
    """A parsed note as the rows the index stores, without the note id.

    Plain values only: cheap to send from a parse process to the writing process (a parsed
    ``Note`` of frozen dataclasses costs more to pickle than to parse).
    """

    path: str
    values: tuple[Any, ...]
    """mtime_ns, size, hash, title, created_at, created_ts, summary, topics JSON, body_line,
    problems JSON, title_key, stem_key, born_ns, title_line: the ``notes`` columns in insert
    order."""
    topics: tuple[str, ...]
    day: str
    headings: tuple[tuple[int, int, str], ...]
    links: tuple[tuple[int, int, str, str, str | None, str | None, str], ...]
    aliases: tuple[tuple[str, str], ...]
    """(key, name) of each alias."""
    names: tuple[tuple[int, int, str], ...]
    """(line, mask, name) of each ``names`` row: the title (line 0), then each heading that
    is a name of its own (the first of its line, not repeating the title in any case: the
    note stands for it), with its ``symbol_match.char_mask``."""
    keys: tuple[tuple[str, int], ...]
    """(key, line) of each ``name_keys`` row of those names (``symbol_match.name_keys``):
    computed where the note is parsed, so that the writing process, which a build waits on,
    only inserts them."""
    fts: tuple[str, str, str, str]
    has_problems: bool
    props: tuple[tuple[str, str, Any, int], ...] = ()
    """(key, kind letter, value, item) of each ``props`` row."""
    prop_pairs: Collection[tuple[str, str]] = ()
    """``prop_stats.note_pairs`` of ``props``: computed where the note is parsed."""
    tasks: tuple[TaskRow, ...] = ()
    """The ``tasks`` rows of the note's tasks, without their ids (``tasks.store.task_rows``)."""
    task_tags: tuple[tuple[int, str, int], ...] = ()
    """(the task's place, its tag case-folded, whether it is open) of each ``task_tags`` row."""
    trigram: str | None = ""
    """The file's text for the trigram index; None when it cannot hold it (the note is then
    a candidate of every literal search), ``""`` for no rows (trigram index off)."""


def note_rows(
    note: Note,
    mtime_ns: int,
    size: int,
    digest: bytes,
    trigram: str | None = "",
    born_ns: int = 0,
) -> NoteRows:
    problems_json = (
        json.dumps(
            [{"code": p.code, "message": p.message, "line": p.line} for p in note.problems],
            ensure_ascii=False,
        )
        if note.problems
        else None
    )
    values = (
        mtime_ns,
        size,
        digest,
        note.title,
        note.created_at,
        note.created_ts,
        note.summary,
        json_text(list(note.topics)),
        note.body_line,
        problems_json,
        note.title.casefold(),  # title_key, also the folded name of names.mask
        stem_key(note.path),
        born_ns,
        note.title_line,
    )
    names = _names(note, values[10])
    props = _props(note)
    tasks, task_tags = task_rows(note.tasks) if note.tasks else ((), ())
    return NoteRows(
        path=note.path,
        values=values,
        topics=note.topics,
        day=note.created_at or NO_DATE,
        headings=tuple((h.line, h.level, h.text) for h in note.headings),
        links=tuple(
            (link.line, seq, link.kind, link.target, link.anchor, link.label, link_key(link.target))
            for seq, link in enumerate(note.links)
        ),
        aliases=tuple((name.casefold(), name) for name in note.aliases),
        names=names,
        keys=tuple((key, line) for line, _mask, name in names for key in name_keys(name)),
        fts=(note.title, note.summary or "", " ".join(note.topics), note.body),
        has_problems=bool(note.problems),
        trigram=trigram,
        props=props,
        prop_pairs=prop_stats.note_pairs(props),
        tasks=tasks,
        task_tags=task_tags,
    )


def _props(note: Note) -> tuple[tuple[str, str, Any, int], ...]:
    """(key, kind letter, value, item) of each ``props`` row: ``item`` is 0 for a single
    value, else the item's place in its list from 1 (so a list reads back in its order). A
    value a note repeats (``tags: [a, a]``) is one row, at its first place: a row is a note
    that has the value."""
    seen: dict[str, int] = {}
    out: dict[tuple[str, str, Any], int] = {}
    for name, kind, value, listed in note.properties:
        item = 0
        if listed:
            item = seen[name] = seen.get(name, 0) + 1
        # equal as SQLite compares them: 1 and 1.0 (true is another kind), text exactly
        row = (name, CODES[kind], value)
        if out.get(row, item) >= item:
            out[row] = item  # the first place (a single value before the items)
    return tuple((key, kind, value, item) for (key, kind, value), item in out.items())


def _names(note: Note, title_key: str) -> tuple[tuple[int, int, str], ...]:
    """The ``NoteRows.names`` of a note whose folded title is ``title_key``."""
    names = [(0, char_mask(title_key), note.title)]
    lines: set[int] = set()
    for h in note.headings:
        if h.line in lines:  # the first heading of a line, as in ``headings``
            continue
        lines.add(h.line)
        folded = h.text.casefold()
        mask = 0 if folded == title_key else char_mask(folded)
        if mask:  # 0 also for an empty heading: no name
            names.append((h.line, mask, h.text))
    return tuple(names)


@dataclass(slots=True)
class _ChildRows:
    topics: list[tuple[Any, ...]] = field(default_factory=list)
    headings: list[tuple[Any, ...]] = field(default_factory=list)
    links: list[tuple[Any, ...]] = field(default_factory=list)
    aliases: list[tuple[Any, ...]] = field(default_factory=list)
    names: list[tuple[Any, ...]] = field(default_factory=list)
    name_keys: list[tuple[Any, ...]] = field(default_factory=list)
    fts: list[tuple[Any, ...]] = field(default_factory=list)
    tri: list[tuple[Any, ...]] = field(default_factory=list)
    unindexed: list[tuple[Any, ...]] = field(default_factory=list)
    props: list[tuple[Any, ...]] = field(default_factory=list)
    tasks: list[tuple[Any, ...]] = field(default_factory=list)
    task_tags: list[tuple[Any, ...]] = field(default_factory=list)


_CHILD_INSERTS = {
    "topics": "INSERT INTO note_topics (topic_id, created_at, note_id, spelling)"
    " VALUES (?, ?, ?, ?)",
    "headings": "INSERT OR IGNORE INTO headings (note_id, line, level, text) VALUES (?, ?, ?, ?)",
    "links": "INSERT INTO links (note_id, line, seq, kind, target, anchor, label, key)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    "aliases": "INSERT OR IGNORE INTO aliases (key, note_id, name) VALUES (?, ?, ?)",
    "names": "INSERT OR IGNORE INTO names (day, note_id, line, mask, name) VALUES (?, ?, ?, ?, ?)",
    "name_keys": "INSERT OR IGNORE INTO name_keys (key, day, note_id, line) VALUES (?, ?, ?, ?)",
    "fts": "INSERT INTO notes_fts (rowid, title, summary, topics, body) VALUES (?, ?, ?, ?, ?)",
    "tri": "INSERT INTO notes_tri (rowid, text) VALUES (?, ?)",
    "unindexed": "INSERT OR IGNORE INTO tri_unindexed (note_id) VALUES (?)",
    "props": "INSERT INTO props (id, key, kind, value, item) VALUES (?, ?, ?, ?, ?)",
    "tasks": f"INSERT INTO tasks ({COLUMNS}) VALUES ({', '.join('?' * 13)})",
    "task_tags": "INSERT INTO task_tags (task, tag, open) VALUES (?, ?, ?)",
}
"""How each list of ``_ChildRows`` is written (one statement per table, in this order)."""


_FIRST = itemgetter(0)
FTS_PENDING_BYTES = 16 << 20
"""The postings FTS5 holds in memory before it writes a segment (its ``hashsize``; 1 MB by
default), set by a cold build: a build's commits (every few seconds) write them out, in fewer,
larger segments that need less merging. Kept in the index's FTS5 configuration; the server's
own writes commit long before they hold that much."""


class Batch:
    """Writes inside one transaction. Never commits itself; ``Index.batch`` does."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._topic_ids: dict[str, int] = {}
        self._touched_topics: set[int] = set()
        self._refresh_all_topics = False
        self.changed = 0
        self.notes_delta = 0
        self.problems_delta = 0
        self._recount = False
        self._state: State | None = None
        self._meta: dict[str, Any] = {}
        self._prop_delta: prop_stats.Delta = prop_stats.Delta()

    # notes ------------------------------------------------------------------------------

    def upsert(self, rows: NoteRows) -> int:
        """Insert or replace a note's rows (keeps its id when the path already exists)."""
        c = self.conn
        row = c.execute(
            "SELECT id, problems IS NOT NULL FROM notes WHERE path = ?", (rows.path,)
        ).fetchone()
        if row is None:
            note_id = int(
                c.execute(
                    "INSERT INTO notes (mtime_ns, size, hash, title, created_at, created_ts,"
                    " summary, topics, body_line, problems, title_key, stem_key, born_ns,"
                    " title_line, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*rows.values, rows.path),
                ).lastrowid
                or 0
            )
            self.notes_delta += 1
        else:
            note_id = int(row[0])
            self.problems_delta -= int(row[1])
            self._clear_children(note_id)  # while the row holds the old date (names)
            c.execute(
                "UPDATE notes SET mtime_ns = ?, size = ?, hash = ?, title = ?, created_at = ?,"
                " created_ts = ?, summary = ?, topics = ?, body_line = ?, problems = ?,"
                " title_key = ?, stem_key = ?, born_ns = ?, title_line = ? WHERE id = ?",
                (*rows.values, note_id),
            )
        children = _ChildRows()
        self._child_rows(note_id, rows, children)
        self._write_children(children)
        self.problems_delta += rows.has_problems
        self.changed += 1
        return note_id

    def insert_new(self, items: list[NoteRows]) -> None:
        """Insert notes whose paths are not in the index yet, with one statement per table.

        The bulk path of a build. If a path turns out to exist (another process added it
        meanwhile), falls back to ``upsert`` for the whole list: the notes inserted before it
        are the ones from ``first`` on (this transaction is the only writer), deleted again.
        No savepoint: opening one makes FTS5 write out the postings it holds in memory
        (its ``xSavepoint``), so a build's full-text index would be written a chunk at a
        time, in many small segments, and merged again and again.
        """
        if not items:
            return
        c = self.conn
        first = int(c.execute("SELECT coalesce(max(id), 0) + 1 FROM notes").fetchone()[0])
        try:
            c.executemany(
                "INSERT INTO notes (id, mtime_ns, size, hash, title, created_at, created_ts,"
                " summary, topics, body_line, problems, title_key, stem_key, born_ns,"
                " title_line, path) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(first + i, *rows.values, rows.path) for i, rows in enumerate(items)],
            )
        except sqlite3.IntegrityError:
            c.execute("DELETE FROM notes WHERE id >= ?", (first,))
            for rows in items:
                self.upsert(rows)
            return
        children = _ChildRows()
        for i, rows in enumerate(items):
            self._child_rows(first + i, rows, children)
            self.problems_delta += rows.has_problems
        self._write_children(children)
        self.notes_delta += len(items)
        self.changed += len(items)

    def _child_rows(self, note_id: int, rows: NoteRows, out: _ChildRows) -> None:
        seen: set[int] = set()
        for spelling in rows.topics:
            tid = self._topic_id(spelling)
            if tid in seen:
                continue
            seen.add(tid)
            out.topics.append((tid, rows.day, note_id, spelling))
        self._touched_topics.update(seen)
        # list comprehensions: a generator's every row resumes a frame (a build writes ~30
        # rows a note here)
        out.headings.extend([(note_id, *h) for h in rows.headings])
        out.links.extend([(note_id, *link) for link in rows.links])
        out.aliases.extend([(key, note_id, name) for key, name in rows.aliases])
        day = rows.day
        out.names.extend([(day, note_id, line, mask, name) for line, mask, name in rows.names])
        out.name_keys.extend([(key, day, note_id, line) for key, line in rows.keys])
        out.fts.append((note_id, *rows.fts))
        if rows.trigram is None:
            out.unindexed.append((note_id,))
        elif rows.trigram:
            out.tri.append((note_id, rows.trigram))
        first = note_id << PROP_BITS
        out.props.extend([(first + n, *row) for n, row in enumerate(rows.props)])
        self._prop_delta.update(rows.prop_pairs)
        if rows.tasks:
            first = note_id << TASK_BITS
            out.tasks.extend([(first + n, *row) for n, row in enumerate(rows.tasks)])
            out.task_tags.extend([(first + n, tag, o) for n, tag, o in rows.task_tags])

    def _write_children(self, rows: _ChildRows) -> None:
        # In key order: fewer pages touched in a large batch. By the first column alone (0.35
        # against 0.6 s in a 100k build): names come in note and line order already, the rest
        # of their key; a key's places stay in the order of their notes.
        rows.names.sort(key=_FIRST)
        rows.name_keys.sort(key=_FIRST)
        for kind, sql in _CHILD_INSERTS.items():
            values = getattr(rows, kind)
            if values:
                self.conn.executemany(sql, values)

    def _clear_children(self, note_id: int) -> None:
        """Delete a note's child rows; before its ``notes`` row changes (``names`` is found
        by the note's date)."""
        c = self.conn
        where = (
            " WHERE day = (SELECT coalesce(created_at, ?) FROM notes WHERE id = ?) AND note_id = ?"
        )
        old = c.execute("SELECT day, line, name FROM names" + where, (NO_DATE, note_id, note_id))
        c.executemany(
            "DELETE FROM name_keys WHERE key = ? AND day = ? AND note_id = ? AND line = ?",
            [(key, day, note_id, line) for day, line, name in old for key in name_keys(name)],
        )
        c.execute("DELETE FROM names" + where, (NO_DATE, note_id, note_id))
        for (tid,) in c.execute(
            "SELECT topic_id FROM note_topics WHERE note_id = ?", (note_id,)
        ).fetchall():
            self._touched_topics.add(int(tid))
        c.execute("DELETE FROM note_topics WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM headings WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM links WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM aliases WHERE note_id = ?", (note_id,))
        c.execute("DELETE FROM notes_fts WHERE rowid = ?", (note_id,))
        c.execute("DELETE FROM notes_tri WHERE rowid = ?", (note_id,))
        c.execute("DELETE FROM tri_unindexed WHERE note_id = ?", (note_id,))
        self._prop_delta.subtract(prop_stats.stored_pairs(c, note_id))
        c.execute("DELETE FROM props WHERE id BETWEEN ? AND ?", prop_range(note_id))
        tasks = task_range(note_id)
        c.execute("DELETE FROM tasks WHERE id BETWEEN ? AND ?", tasks)
        c.execute("DELETE FROM task_tags WHERE task BETWEEN ? AND ?", tasks)

    def clear(self) -> None:
        """Remove every note (a full rebuild that other processes can watch happen)."""
        c = self.conn
        for table in (
            "note_topics",
            "headings",
            "names",
            "name_keys",
            "links",
            "aliases",
            "props",
            "tasks",
            "task_tags",
            "prop_stats",
            "notes_fts",
            *TABLES,
            "embedded",
            "notes",
            "topics",
        ):
            c.execute(f"DELETE FROM {table}")
        # Every chunk's note id is given again: keep their vectors (orphans, found by their
        # text's key) for the embedding pass after the build.
        c.execute("UPDATE chunks SET note_id = 0 WHERE note_id != 0")
        self._topic_ids.clear()
        self._touched_topics.clear()
        self._prop_delta.clear()
        self._recount = True
        self.changed += 1

    def touch(self, path: str, mtime_ns: int, size: int, born_ns: int = 0) -> None:
        """Same content, new mtime/size (e.g. ``touch``, a checkout, a save that replaced the
        file): no re-parse."""
        self.conn.execute(
            "UPDATE notes SET mtime_ns = ?, size = ?, born_ns = ? WHERE path = ?",
            (mtime_ns, size, born_ns, path),
        )

    def delete(self, path: str) -> bool:
        row = self.conn.execute("SELECT id FROM notes WHERE path = ?", (path,)).fetchone()
        if row is None:
            return False
        self._delete_ids([int(row[0])])
        return True

    def delete_folder(self, folder: str) -> int:
        lo, hi = folder_range(folder)
        ids = [
            int(r[0])
            for r in self.conn.execute(
                "SELECT id FROM notes WHERE path >= ? AND path < ?", (lo, hi)
            ).fetchall()
        ]
        self._delete_ids(ids)
        return len(ids)

    def delete_paths(self, paths: Iterable[str]) -> int:
        n = 0
        for path in paths:
            n += self.delete(path)
        return n

    def _delete_ids(self, ids: list[int]) -> None:
        for note_id in ids:
            self._clear_children(note_id)
            # A deleted note's id may be given to the next note added: its chunks leave it
            # (orphans, whose vectors a note saying the same can take; core/semantic/store.py).
            self.conn.execute("UPDATE chunks SET note_id = 0 WHERE note_id = ?", (note_id,))
            self.conn.execute("DELETE FROM embedded WHERE note_id = ?", (note_id,))
            row = self.conn.execute(
                "DELETE FROM notes WHERE id = ? RETURNING problems IS NOT NULL", (note_id,)
            ).fetchone()
            if row is not None:
                self.notes_delta -= 1
                self.problems_delta -= int(row[0])
        self.changed += len(ids)

    def move(self, old: str, new: str) -> bool:
        """Rename one note's row (the caller decides whether to re-parse)."""
        c = self.conn
        if old == new:
            return c.execute("SELECT 1 FROM notes WHERE path = ?", (old,)).fetchone() is not None
        self.delete(new)
        cur = c.execute("UPDATE notes SET path = ? WHERE path = ?", (new, old))
        self.changed += cur.rowcount
        return cur.rowcount > 0

    def move_folder(self, old: str, new: str) -> list[str]:
        """Rename every row under ``old/`` to ``new/`` without re-parsing; returns new paths."""
        c = self.conn
        lo, hi = folder_range(old)
        nlo, nhi = folder_range(new)
        # Rows already under the destination are replaced by the moved ones.
        moved_names = [
            r[0]
            for r in c.execute(
                "SELECT path FROM notes WHERE path >= ? AND path < ?", (lo, hi)
            ).fetchall()
        ]
        new_paths = [new + "/" + p[len(old) + 1 :] for p in moved_names]
        existing = {
            r[0]
            for r in c.execute(
                "SELECT path FROM notes WHERE path >= ? AND path < ?", (nlo, nhi)
            ).fetchall()
        }
        self.delete_paths(p for p in new_paths if p in existing)
        c.execute(
            "UPDATE notes SET path = ? || substr(path, ?) WHERE path >= ? AND path < ?",
            (new + "/", len(old) + 2, lo, hi),
        )
        self.changed += len(new_paths)
        return new_paths

    # topics -----------------------------------------------------------------------------

    def _topic_id(self, spelling: str) -> int:
        key = spelling.casefold()
        tid = self._topic_ids.get(key)
        if tid is not None:
            return tid
        row = self.conn.execute("SELECT id FROM topics WHERE key = ?", (key,)).fetchone()
        if row is None:
            cur = self.conn.execute(
                "INSERT INTO topics (key, name, notes) VALUES (?, ?, 0)", (key, spelling)
            )
            tid = int(cur.lastrowid or 0)
        else:
            tid = int(row[0])
        self._topic_ids[key] = tid
        return tid

    def refresh_all_topics(self) -> None:
        """Recompute every topic's count and spelling, and the status counters, exactly."""
        self._refresh_all_topics = True
        self._recount = True

    def _refresh_topics(self) -> None:
        c = self.conn
        if self._refresh_all_topics:
            where, params = "", ()
        elif self._touched_topics:
            if self._building():
                # Counted once, exactly, by the transaction that ends the build (it refreshes
                # every topic); recounting here would read every row of a growing table at
                # each commit of a cold build, and nothing serves topics while it builds.
                return
            c.execute("CREATE TEMP TABLE IF NOT EXISTS touched (id INTEGER PRIMARY KEY)")
            c.execute("DELETE FROM temp.touched")
            c.executemany(
                "INSERT INTO temp.touched (id) VALUES (?)", [(t,) for t in self._touched_topics]
            )
            where, params = " WHERE id IN (SELECT id FROM temp.touched)", ()
        else:
            return
        c.execute(
            "UPDATE topics SET"
            " notes = (SELECT count(*) FROM note_topics nt WHERE nt.topic_id = topics.id),"
            " name = coalesce((SELECT spelling FROM note_topics nt WHERE nt.topic_id = topics.id"
            "   GROUP BY spelling ORDER BY count(*) DESC, spelling LIMIT 1), name)" + where,
            params,
        )
        c.execute("DELETE FROM topics WHERE notes = 0")

    def _building(self) -> bool:
        """Whether the index stays in the ``building`` state after this transaction."""
        if self._state is not None:
            return self._state == "building"
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'state'").fetchone()
        return row is not None and row[0] == "building"

    # meta -------------------------------------------------------------------------------

    def set_state(self, state: State) -> None:
        self._state = state

    def set_meta(self, key: str, value: Any) -> None:
        self._meta[key] = value

    def defer_indexes(self) -> None:
        """Drop the indexes of ``schema.BUILT_LAST`` until the build ends (``finish`` of the
        transaction that says ``ready`` makes them again): a cold build appends rows to their
        tables and sorts each index once (``props``' values at 20,000 notes: 0.36 s and 0.29 s,
        against 1.0 s kept in order row by row; sorted in files beside the index,
        ``db.sorting_on_disk``). Nothing needs them meanwhile: a note's rows are found by its
        id, and searches are answered by scanning the files while the index builds. Also lets
        FTS5 hold up to ``FTS_PENDING_BYTES`` of postings in memory."""
        for name in BUILT_LAST:
            self.conn.execute(f"DROP INDEX IF EXISTS {name}")
        self.conn.execute(
            "INSERT INTO notes_fts (notes_fts, rank) VALUES ('hashsize', ?)", (FTS_PENDING_BYTES,)
        )

    def _missing_indexes(self) -> bool:
        """Whether an index of ``schema.BUILT_LAST`` is not there (``defer_indexes`` dropped
        them for a cold build)."""
        marks = ",".join("?" * len(BUILT_LAST))
        (there,) = self.conn.execute(
            f"SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name IN ({marks})",
            list(BUILT_LAST),
        ).fetchone()
        return int(there) < len(BUILT_LAST)

    def finish(self) -> None:
        c = self.conn
        if self._state == "ready" and self._missing_indexes():  # after a cold build
            with db.sorting_on_disk(c):
                for statement in INDEXES_BUILT_LAST.split(";\n"):
                    c.execute(statement)
        self._refresh_topics()
        prop_stats.apply(c, self._prop_delta)
        self._prop_delta.clear()
        meta = dict(self._meta)
        if self._state is not None:
            meta["state"] = self._state
        if self.changed or self._state is not None or self._meta or self._recount:
            if self._recount:
                notes = c.execute("SELECT count(*) FROM notes").fetchone()[0]
                problems = c.execute(
                    "SELECT count(*) FROM notes WHERE problems IS NOT NULL"
                ).fetchone()[0]
                meta.update(notes=notes, problems=problems)
            else:
                c.execute(
                    "UPDATE meta SET value = value + ? WHERE key = 'notes'", (self.notes_delta,)
                )
                c.execute(
                    "INSERT INTO meta (key, value) VALUES ('problems', ?) ON CONFLICT (key)"
                    " DO UPDATE SET value = value + excluded.value",
                    (self.problems_delta,),
                )
            topics = c.execute("SELECT count(*) FROM topics").fetchone()[0]
            meta.update(topics=topics, updated_at=now_iso())
            c.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
        if meta:
            c.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                list(meta.items()),
            )

"""Folders and notes by the start of their vault-relative path, from the index: what completes
a path (the MCP server's ``engram://{vault}/{+path}``).

The index has no table of folders: a folder is the common start of its notes' paths. The
children of a folder are read from the paths' index (``notes.path``, in byte order) in
batches, and each child folder is jumped over once it is seen (its notes are one range of that
index: counted, never read), so that the work is the folder's own notes plus a seek and a range
count per child folder. At 100,000 notes in 32 folders of 8 folders each, the top level is 32
seeks and counts. A folder with more than ``SCAN_BUDGET`` notes of its own that match is read
that far, and the answer then says that its total is unknown.

Case does not matter: the typed name is looked up in the spellings of it that the index holds,
found letter by letter (``spellings``), and a typed folder that does not exist as written is
looked up in any case. Letters that fold to others of a different length (``ß`` and ``ss``) or
to another letter (the Kelvin sign and ``k``) are not taken as the same.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from engram_ls.core.index.rows import folder_range

SCAN_BUDGET = 5_000
"""Rows of the paths' index read at most for one folder (about 10 ms)."""
MAX_SPELLINGS = 16
"""Spellings of a typed name (``Notes``, ``notes``, ...) looked up at most."""
MAX_FOLDERS = 4
"""Folders a typed folder path may name in different cases (``Notes/`` and ``notes/``)."""
_BATCH = (32, 1024)
"""Rows read at a time: the first after each seek, the most (doubling while no child folder
interrupts a run of notes)."""
_TOP = "\U0010ffff"


@dataclass(frozen=True, slots=True)
class PathChoice:
    """A folder (``path`` ending in ``/``, with the notes under it) or a note (with its date)."""

    path: str
    notes: int
    """Notes under a folder, at any depth; 1 for a note."""
    created_at: str | None = None

    @property
    def folder(self) -> bool:
        return self.path.endswith("/")


@dataclass(frozen=True, slots=True)
class PathChoices:
    choices: list[PathChoice]
    """Folders first, most notes first; then notes, newest first (undated last)."""
    total: int | None
    """Every folder and note matching; None when more were there than could be read."""


def path_choices(conn: sqlite3.Connection, typed: str, limit: int) -> PathChoices:
    """The folders and notes whose vault-relative path starts with ``typed`` (any case) one
    level below its last ``/``: ``meet`` gives ``meetings/``; ``meetings/2024/`` the folders
    and notes in that folder. At most ``limit``."""
    typed = typed.lstrip("/")
    while typed.startswith("./"):
        typed = typed[2:].lstrip("/")
    folder, _, name = typed.rpartition("/")
    folders: list[PathChoice] = []
    notes: list[tuple[str, str]] = []
    complete = True
    for parent in _folders(conn, folder):
        complete = _children(conn, parent, name, SCAN_BUDGET, folders, notes) and complete
    folders.sort(key=lambda c: (-c.notes, c.path.casefold()))
    notes.sort(key=lambda n: n[1])
    notes.sort(key=lambda n: n[0], reverse=True)  # newest first (undated last), then by path
    page = folders[:limit] + [PathChoice(p, 1, d or None) for d, p in notes[: limit - len(folders)]]
    return PathChoices(page, len(folders) + len(notes) if complete else None)


def _folders(conn: sqlite3.Connection, folder: str) -> list[str]:
    """The folders (``""`` or ending in ``/``) that ``folder`` names, in any case."""
    out = [""]
    for part in (p for p in folder.split("/") if p):
        below: list[str] = []
        for parent in out:
            exact = parent + part
            if _has_paths(conn, exact + "/"):
                below.append(exact + "/")
                continue
            key = part.casefold()
            got: list[PathChoice] = []
            _children(conn, parent, part, SCAN_BUDGET, got, [])
            below += [c.path for c in got if c.path[len(parent) : -1].casefold() == key]
        out = below[:MAX_FOLDERS]
    return out


def spellings(conn: sqlite3.Connection, parent: str, name: str) -> list[str]:
    """The spellings of ``name`` (the same letters in any case) that start the name of a
    child of ``parent``: the ranges of the paths' index to read. Found letter by letter, a
    seek for each case of each letter of each spelling still found (one, nearly always)."""
    starts = [""]
    for ch in name:
        forms = _forms(ch)
        if len(forms) == 1:
            starts = [s + ch for s in starts]
            continue
        starts = [s + f for s in starts for f in forms if _has_paths(conn, parent + s + f)]
        starts = starts[:MAX_SPELLINGS]
        if not starts:
            break
    return starts


def _forms(ch: str) -> list[str]:
    """``ch`` in each of its cases (one character each)."""
    key = ch.casefold()
    found = {ch, ch.lower(), ch.upper(), ch.title()}
    return sorted(f for f in found if len(f) == 1 and f.casefold() == key)


def _has_paths(conn: sqlite3.Connection, start: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM notes WHERE path >= ? AND path < ? LIMIT 1", (start, start + _TOP)
    )
    return row.fetchone() is not None


def _children(
    conn: sqlite3.Connection,
    parent: str,
    name: str,
    budget: int,
    folders: list[PathChoice],
    notes: list[tuple[str, str]],
) -> bool:
    """Add the child folders and notes (``(date or "", path)``) of ``parent`` whose name starts
    with ``name`` (any case); whether every one was read within ``budget`` rows."""
    key = name.casefold()
    at = len(parent)
    for start in spellings(conn, parent, name):
        hi = parent + start + _TOP
        cursor, op, batch = parent + start, ">=", _BATCH[0]
        while True:
            if budget <= 0:
                return False
            ask = min(batch, budget)
            rows = conn.execute(
                f"SELECT path, created_at FROM notes WHERE path {op} ? AND path < ?"
                " ORDER BY path LIMIT ?",
                (cursor, hi, ask),
            ).fetchall()
            budget -= len(rows)
            jumped = False
            for path, created_at in rows:
                child, sep, _ = path[at:].partition("/")
                if sep:  # a folder: count its notes, then jump past them
                    first, last = folder_range(parent + child)
                    if child.casefold().startswith(key):
                        (count,) = conn.execute(
                            "SELECT count(*) FROM notes WHERE path >= ? AND path < ?",
                            (first, last),
                        ).fetchone()
                        folders.append(PathChoice(parent + child + "/", int(count)))
                    cursor, op, batch, jumped = last, ">=", _BATCH[0], True
                    break
                if child.casefold().startswith(key):
                    notes.append((created_at or "", path))
            if not jumped and len(rows) < ask:
                break  # the end of the range
            if not jumped:
                cursor, op, batch = rows[-1][0], ">", min(batch * 2, _BATCH[1])
    return True


__all__ = ["SCAN_BUDGET", "PathChoice", "PathChoices", "path_choices", "spellings"]

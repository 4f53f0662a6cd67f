"""The reliability oracle: after any sequence of events and faults, the index equals the one a
fresh build of the vault gives, and every file is byte-identical unless a write was asked for.

``contents`` reads what an index says about the vault, independent of row ids and timings;
``fresh`` builds the same vault into a temporary index; ``snapshot`` records every file's bytes.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

from engram_ls.core.index.schema import PROP_NOTE
from engram_ls.core.service import Engram

Contents = dict[str, Any]


def contents(index_file: Path) -> Contents:
    """Notes (path, stat, hash, title, date, topics …), topics, note↔topic rows, headings,
    symbol names, aliases, links, properties, full-text rows and the status counters, keyed by
    path rather than row id."""
    conn = sqlite3.connect(f"file:{index_file}?mode=ro", uri=True, timeout=30)
    try:
        path_of = dict(conn.execute("SELECT id, path FROM notes"))
        key_of = dict(conn.execute("SELECT id, key FROM topics"))
        return {
            "notes": sorted(
                conn.execute(
                    "SELECT path, mtime_ns, size, hash, title, created_at, created_ts, summary,"
                    " topics, body_line, problems, title_key, stem_key FROM notes"
                )
            ),
            "topics": sorted(conn.execute("SELECT key, name, notes FROM topics")),
            "note_topics": sorted(
                (key_of.get(t), d, path_of.get(n), s)
                for t, d, n, s in conn.execute("SELECT * FROM note_topics")
            ),
            "headings": sorted(
                (path_of.get(n), *rest) for n, *rest in conn.execute("SELECT * FROM headings")
            ),
            "names": sorted(
                (path_of.get(n), day, line, mask, name)
                for day, n, line, mask, name in conn.execute(
                    "SELECT day, note_id, line, mask, name FROM names"
                )
            ),
            "aliases": sorted(
                (k, path_of.get(n), name)
                for k, n, name in conn.execute("SELECT key, note_id, name FROM aliases")
            ),
            "links": sorted(
                (path_of.get(n), *rest) for n, *rest in conn.execute("SELECT * FROM links")
            ),
            "props": sorted(
                (path_of.get(n), k, kind, str(v), item)
                for k, kind, v, n, item in conn.execute(
                    f"SELECT key, kind, value, {PROP_NOTE}, item FROM props"
                )
            ),
            "fts": sorted(
                (path_of.get(r), *rest)
                for r, *rest in conn.execute(
                    "SELECT rowid, title, summary, topics, body FROM notes_fts"
                )
            ),
            "trigram": sorted(
                (path_of.get(r), text)
                for r, text in conn.execute("SELECT rowid, text FROM notes_tri")
            ),
            "tri_unindexed": sorted(
                path_of.get(n) for (n,) in conn.execute("SELECT note_id FROM tri_unindexed")
            ),
            "meta": {
                k: v
                for k, v in conn.execute("SELECT key, value FROM meta")
                if k in ("notes", "problems", "topics", "state")
            },
            "integrity": conn.execute("PRAGMA integrity_check").fetchone()[0],
        }
    finally:
        conn.close()


def fresh(root: Path, tmp: Path) -> Contents:
    """What a fresh build of the vault as it is now gives."""
    idx = tmp / f"fresh-{time.monotonic_ns()}.sqlite"
    with Engram(root, index_path=idx) as engram:
        engram.sync(workers=1)
    return contents(idx)


def diff(got: Contents, want: Contents) -> str:
    """A short account of how two index contents differ (for assertion messages)."""
    out = []
    for key in want:
        if got.get(key) == want[key]:
            continue
        if isinstance(want[key], list):
            g, w = set(got.get(key, [])), set(want[key])
            out.append(f"{key}: {len(g - w)} unexpected {sorted(g - w)[:3]!r}")
            out.append(f"{key}: {len(w - g)} missing {sorted(w - g)[:3]!r}")
        else:
            out.append(f"{key}: got {got.get(key)!r}, want {want[key]!r}")
    return "\n".join(out)


def assert_index_matches_vault(index_file: Path, root: Path, tmp: Path) -> Contents:
    """The oracle: the index holds exactly what a fresh build of the vault gives."""
    got, want = contents(index_file), fresh(root, tmp)
    assert got["integrity"] == "ok"
    assert got["meta"].get("state") == "ready", got["meta"]
    assert got == want, diff(got, want)
    return got


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the vault (not Engram's own folder) and its bytes; symlinks as targets."""
    out: dict[str, bytes] = {}
    for folder, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(folder, root)
        dirs[:] = [d for d in dirs if not (rel_dir == "." and d == ".engram")]
        for name in files:
            path = os.path.join(folder, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = b"-> " + os.fsencode(os.readlink(path))
            elif not stat.S_ISREG(st.st_mode):
                out[rel] = f"<mode {st.st_mode:o}>".encode()
            else:
                with open(path, "rb") as fh:
                    out[rel] = fh.read()
    return out


def assert_files_unchanged(root: Path, before: dict[str, bytes]) -> None:
    after = snapshot(root)
    assert sorted(after) == sorted(before)
    changed = [p for p in before if after[p] != before[p]]
    assert not changed, f"files changed without a write being asked for: {changed[:5]}"


def note_ids(index: Path, under: str) -> dict[str, int]:
    """Row id of every note under a folder, by its path relative to the folder."""
    conn = sqlite3.connect(index)
    try:
        rows = conn.execute(
            "SELECT path, id FROM notes WHERE path >= ? AND path < ?", (under + "/", under + "0")
        ).fetchall()
    finally:
        conn.close()
    return {path[len(under) + 1 :]: note_id for path, note_id in rows}

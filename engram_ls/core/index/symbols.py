"""Workspace symbols from the index: note titles, headings and topics, fuzzy-matched and ranked
(``symbol_match.py`` has the matching tiers and the ranking).

A heading with the note's own title is not listed again: the note stands for it. An empty
query lists the most recent notes.

Scope. Tiers 0-2 are searched in the whole vault. Loose matches (tier 3) are searched among
the :data:`LOOSE_HORIZON` newest notes, which is every note of all but very large vaults:
beyond that, proving that no older note matches loosely means reading every name (about
40 ms at 100,000 notes, on every keystroke) for the weakest matches. Queries of one or two
characters match thousands of names: outside small vaults (:data:`SMALL_VAULT`) they are
searched among the newest notes (the probe window below, grown up to :data:`EXTEND_NOTES` when
that promises enough matches), plus the titles equal to the query anywhere.

How it stays fast at 100,000 notes (~500,000 names). The ``names`` table holds every title and
heading (but those repeating their note's title) clustered by the note's date, each with a
mask of the characters of its folded text (:func:`char_mask`): a name can match only when its
mask holds every bit of the query's, so a read by date goes through one compact range and
looks at the text (``LIKE``, then Python) of only those names; ``idxq`` leaves about 1 % of
them. Each tier is filled only as far as the result needs, best tier first:

- A *probe* reads a tier's matches newest note first (``names`` by day), within a window of
  about the :data:`PROBE_NOTES` newest notes (closed on a day boundary, so every note outside
  it is strictly older), and stops at the end of the day on which it has enough. Recency being
  the first tie break, those are exactly the tier's best matches: short queries and common
  words stop here, after a few hundred notes. When the window holds some matches but too few,
  and a window of at most :data:`EXTEND_NOTES` notes should hold enough, it grows once.
- Exact, prefix and word-start matches all start at a word. When they are too few in the
  window, ``name_keys`` (every name's start and word starts, cut to a few characters) gives
  every name of the tier as one or two ranges, whatever characters the names are made of
  (the masks pass nearly every name of a vault whose names share a small alphabet); with too
  many keys there, the full-text index gives every note whose title or body holds the query's
  words as a phrase (a superset: headings are part of the body), and their names are read;
  with too many such notes, one scan of every title and heading (two threads when the caller
  provides a second connection) completes the tier, and the next tiers that look sparse too.
- Loose matches short in the window are read from a window grown to the horizon (its older
  half on a second thread), or, in a vault within the horizon, by one scan with
  ``LIKE '%a%b%c%'`` (which SQLite gives up on at the first character it cannot find).

A scan returns at most :data:`SCAN_MAX` rows per table; past that, its tiers are ranked among
those rows.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from engram_ls.core.index import db
from engram_ls.core.index.snapshot_cache import generation
from engram_ls.core.index.symbol_match import (
    EXACT,
    FTS_MIN_CHARS,
    FUZZY,
    PREFIX,
    TIERS,
    WORD,
    Patterns,
    Rank,
    SymbolHit,
    char_mask,
    day_number,
    fts_phrase,
    key_ranges,
    match_tier,
    normalize,
    tier_of,
)

if TYPE_CHECKING:
    from engram_ls.core.index.store import Index

MAX_QUERY_CHARS = 256
"""Longer queries match nothing (no name is that long in practice; it bounds the patterns)."""
PROBE_NOTES = 2000
"""Newest notes whose matches a probe reads first."""
EXTEND_NOTES = 12_000
"""A probe window may grow once, up to this many notes (reading a note's names in date order
costs about 1.4 µs: less than scanning every name of a 100,000-note vault)."""
EXTEND_MARGIN = 1.3
"""How much larger than the estimate a grown window is made."""
LOOSE_HORIZON = 12_000
"""Loose matches (tier 3) are searched among this many newest notes."""
WIDE_PROBE_CHARS = 4
"""From this query length on, a probe for tier 2 or 3 reads every tier at once."""
SMALL_VAULT = 2 * PROBE_NOTES
"""Vaults up to this many notes are read whole by one scan."""
FTS_MAX_NOTES = 6000
"""Full-text candidates are read up to this many notes (about 2 µs a note)."""
KEYS_MAX = 4000
"""Exact, prefix and word-start tiers are read from ``name_keys`` up to this many keys (not
yet tuned at 100k); negative: never (tests and benchmarks compare both ways)."""
KEYS_FEW = 500  # up to this many, the keys of tiers 0-2 are read at once
SCAN_MAX = 20_000
"""Rows one scan of a table returns at most."""
SPLIT_MIN_NOTES = 5000
"""Below this many notes a scan is too short to be worth a second thread."""
SCAN_CHUNKS = 8
"""Note id ranges that two threads scanning the headings take in turn."""
PROGRESS_STEPS = 100_000
"""SQLite virtual machine steps between two checks for cancellation and the deadline: rarely
(about every half millisecond), as each check takes the GIL, which a scan running on a second
thread would otherwise wait for."""

Row = tuple[int, int, str, str | None, str, str]
"""(note id, line — 0 for the title —, name, note date, note title, note path)."""
_COLS = "n.created_at, n.title, n.path"
_KEYED = (
    f"SELECT s.note_id, s.line, s.name, {_COLS} FROM name_keys k CROSS JOIN names s"
    " ON s.day = k.day AND s.note_id = k.note_id AND s.line = k.line"
    " CROSS JOIN notes n ON n.id = s.note_id WHERE k.key BETWEEN ? AND ?"
)
"""The names whose keys lie in one range of ``name_keys``, as :data:`Row` s."""

# -- a second connection for scans -------------------------------------------------------------


Job = Callable[[sqlite3.Connection], list[tuple[int, list[Row]]]]
"""Work for a second thread: given its connection, (chunk number, rows) pairs."""
Runner = Callable[[Job], "Future[tuple[int, list[tuple[int, list[Row]]]]]"]
"""Runs a :data:`Job` on another thread's connection, in its own read snapshot, and returns
(the generation that snapshot saw, the job's result)."""


def second_thread(
    index: Index,
    cancel: threading.Event | None = None,
    deadline: float | None = None,
) -> Runner:
    """A :data:`Runner` on the index's helper thread (``Index.submit``: its lifetime is the
    index's), which reads with its own connection (``Index.conn`` is per thread)."""

    def work(job: Job) -> tuple[int, list[tuple[int, list[Row]]]]:
        conn = index.conn()
        with db.interruptible(conn, cancel, deadline, PROGRESS_STEPS), db.read_tx(conn):
            return generation(conn), job(conn)

    def submit(job: Job) -> Future[tuple[int, list[tuple[int, list[Row]]]]]:
        return index.submit(work, job)

    return submit


# -- search ------------------------------------------------------------------------------------

_Entry = tuple[Rank, "Row | SymbolHit"]


class SymbolSearch:
    """One query against one index, run inside the caller's read snapshot; ``runner`` lets a
    scan use a second thread."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        query: str,
        limit: int,
        *,
        runner: Runner | None = None,
    ) -> None:
        self.conn = conn
        self.raw = query.strip()
        self.q = normalize(query)
        self.limit = limit
        self.patterns = Patterns.of(self.raw)
        self.like = "LIKE ?" + self.patterns.escape
        self.mask = char_mask(self.q)
        self.runner = runner
        self.hits: list[dict[tuple[int, int, int], _Entry]] = [{} for _ in TIERS]
        self.topics: list[list[tuple[int, str, int]]] = [[] for _ in TIERS]
        """Matching topics whose dates are not read yet: (id, name, notes), per tier."""
        self.complete = [False for _ in TIERS]
        self.notes: int | None = None
        self.window_open = False
        self.window: str | None = None
        """Lowest day of the probe window ('' = every dated note); None: no window."""
        self.window_notes = 0
        self.cover: list[str | None] = [None for _ in TIERS]
        """Per pattern level: every note of the window dated on or after this day was read
        with a pattern of this tier or a wider one (None: none yet)."""
        self.extended = False
        self._days: dict[str | None, int] = {}
        self.stats: dict[str, int] = {}

    # -- public ---------------------------------------------------------------------------

    def run(self) -> list[SymbolHit]:
        if self.limit < 1 or len(self.raw) > MAX_QUERY_CHARS:
            return []
        if not self.q:
            return self.recent()
        self._topics()
        out: list[SymbolHit] = []
        for t in TIERS:
            need = self.limit - len(out)
            if need <= 0:
                break
            self._topic_days(t)
            if not self.complete[t]:
                self._fill(t, need)
            best = sorted(self.hits[t].values(), key=lambda e: e[0])[:need]
            out.extend(self._hit(t, payload) for _, payload in best)
        return out

    def recent(self) -> list[SymbolHit]:
        rows = self.conn.execute(
            f"SELECT n.id, 0, n.title, {_COLS} FROM notes n"
            " ORDER BY n.created_at DESC, n.id DESC LIMIT ?",
            (self.limit,),
        ).fetchall()
        return [_note_hit(r, EXACT) for r in rows]

    # -- filling a tier -------------------------------------------------------------------

    def _fill(self, t: int, need: int) -> None:
        self._open_window()
        if self.complete[t] or self._read(t, need):
            return
        if self._extend(t, need) and self._read(t, need):
            return
        if len(self.q) < FTS_MIN_CHARS:
            # One or two characters: the (grown) window is the scope, plus equal titles.
            self.stats["scoped"] = 1
            if t == EXACT:
                self._equal_titles()
            return
        self.stats[f"whole_{t}"] = 1
        if t == FUZZY:
            self._loose()
        elif self._words_from_keys(t) or self._words_from_fts():
            return
        else:
            self._scan(self._scan_level(t, need))

    def _scan_level(self, t: int, need: int) -> int:
        """The widest tier (up to 2) worth completing with the scan that tier ``t`` needs:
        the next tiers too, while the window suggests that the ones before will not fill the
        result."""
        level, expected = t, self._estimate(t)
        if level < WORD and expected < need:
            self._read(WORD, self.limit)  # how the next tiers look in the window
        while level < WORD and expected < need and self._known(level + 1) < need - expected:
            level += 1
            expected += self._estimate(level)
        return level

    def _estimate(self, t: int) -> float:
        """Hits of tier ``t`` in the whole vault, extrapolated from the window."""
        if self.window is None or not self.window_notes:
            return 0.0
        return self._known(t) * self._note_count() / self.window_notes

    def _loose(self) -> None:
        """Tier 3 beyond the window: the whole vault when it is within the horizon, else the
        horizon's newest notes (read on two threads when a runner is given)."""
        self.complete[FUZZY] = True
        if self._at_most(LOOSE_HORIZON):
            self._scan(FUZZY)
            return
        self.stats["horizon"] = 1
        found = self._boundary(LOOSE_HORIZON)
        hi = self.cover[FUZZY]
        if found is None or hi is None:
            self._scan(FUZZY)  # days holding thousands of notes: no window to read by
        elif found[0] < hi:
            self._read_days(found[0], hi)

    def _read_days(self, lo: str, hi: str) -> None:
        """Every loose match in notes dated ``lo <= day < hi``; the newer half of those notes
        on a second thread when a runner is given."""
        pattern = self.patterns.subsequence

        def job(a: str, b: str) -> Job:
            def run(conn: sqlite3.Connection) -> list[tuple[int, list[Row]]]:
                return [(0, self._names(conn, a, b, pattern).fetchall())]

            return run

        mid = None
        if self.runner is not None:
            newer = int(
                self.conn.execute(
                    "SELECT count(*) FROM notes WHERE created_at >= ?", (hi,)
                ).fetchone()[0]
            )
            older = int(
                self.conn.execute(
                    "SELECT count(*) FROM notes WHERE created_at >= ? AND created_at < ?",
                    (lo, hi),
                ).fetchone()[0]
            )
            row = self.conn.execute(
                "SELECT created_at FROM notes ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET ?",
                (newer + older // 2,),
            ).fetchone()
            if row is not None and row[0] is not None and lo < row[0] < hi:
                mid = str(row[0])
        if mid is None or self.runner is None:
            parts = job(lo, hi)(self.conn)
        else:
            other = self.runner(job(mid, hi))
            parts = job(lo, mid)(self.conn)
            seen, theirs = other.result()
            if seen != generation(self.conn):
                theirs = job(mid, hi)(self.conn)  # a write came between the two snapshots
            parts += theirs
        rows = [row for _, part in parts for row in part]
        self.stats["window_rows"] = self.stats.get("window_rows", 0) + len(rows)
        self._add(rows)

    def _hit(self, tier: int, payload: Row | SymbolHit) -> SymbolHit:
        if isinstance(payload, SymbolHit):
            return payload
        ref, line, name, day, title, path = payload
        if line:
            return SymbolHit("heading", name, path, line, title, tier, day, ref)
        return _note_hit(payload, tier)

    def _day(self, day: str | None) -> int:
        n = self._days.get(day)
        if n is None:
            n = self._days[day] = day_number(day)
        return n

    def _add(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self._add_one(row)

    def _add_one(self, row: Row) -> int | None:
        """Record a name that the SQL prefilter let through; its tier, None if no match."""
        ref, line, name, day, title, path = row
        folded = name.casefold()
        if line and folded == title.casefold():
            return None  # the note's title as its heading: the note stands for it
        tier = tier_of(folded, self.q)
        if tier is None:
            return None
        d = self._days.get(day)
        if d is None:
            d = self._day(day)
        kind = 1 if line else 0
        self.hits[tier][(kind, ref, line)] = ((tier, -d, len(name), folded, kind, path, line), row)
        return tier

    # -- topics ---------------------------------------------------------------------------

    def _topics(self) -> None:
        """Every matching topic (topics are few: always complete). Their dates are read per
        tier, when a tier is needed (a short query matches most topics loosely)."""
        rows = self.conn.execute(
            f"SELECT t.id, t.name, t.notes FROM topics t WHERE t.name {self.like}",
            (self.patterns.subsequence,),
        ).fetchall()
        for tid, name, count in rows:
            tier = match_tier(name, self.q)
            if tier is not None:
                self.topics[tier].append((tid, name, count))

    def _topic_days(self, t: int) -> None:
        found, self.topics[t] = self.topics[t], []
        days: dict[int, str | None] = {}
        for i in range(0, len(found), 500):
            ids = [tid for tid, _, _ in found[i : i + 500]]
            marks = ",".join("?" * len(ids))
            days.update(
                self.conn.execute(
                    "SELECT t.id, (SELECT max(nt.created_at) FROM note_topics nt"
                    f" WHERE nt.topic_id = t.id) FROM topics t WHERE t.id IN ({marks})",
                    ids,
                ).fetchall()
            )
        for tid, name, count in found:
            noun = "note" if count == 1 else "notes"
            day = days.get(tid) or None
            hit = SymbolHit("topic", name, "", 0, f"{count} {noun}", t, day, tid)
            self.hits[t][(2, tid, 0)] = (hit.rank, hit)

    # -- the probe window -----------------------------------------------------------------

    def _note_count(self) -> int:
        if self.notes is None:
            self.notes = int(self.conn.execute("SELECT count(*) FROM notes").fetchone()[0])
        return self.notes

    def _at_most(self, notes: int) -> bool:
        """Whether the index holds at most ``notes`` notes (counting no further: a count of
        every note takes milliseconds in a large vault)."""
        if self.notes is not None:
            return self.notes <= notes
        sql = "SELECT count(*) FROM (SELECT 1 FROM notes LIMIT ?)"
        return int(self.conn.execute(sql, (notes + 1,)).fetchone()[0]) <= notes

    def _boundary(self, notes: int) -> tuple[str, int] | None:
        """(lowest day, size) of the window holding at least the ``notes`` newest notes and
        every note of the same days; None when it would hold too many."""
        row = self.conn.execute(
            "SELECT n.created_at FROM notes n ORDER BY n.created_at DESC, n.id DESC"
            " LIMIT 1 OFFSET ?",
            (notes - 1,),
        ).fetchone()
        day = "" if row is None or row[0] is None else str(row[0])
        size = int(
            self.conn.execute(
                "SELECT count(*) FROM notes WHERE created_at >= ?", (day,)
            ).fetchone()[0]
        )
        return (day, size) if size <= 2 * notes else None

    def _open_window(self) -> None:
        """Choose the window; a small vault is read whole at once, completing every tier."""
        if self.window_open:
            return
        self.window_open = True
        if self._at_most(SMALL_VAULT):
            self._add(self._scan_rows(FUZZY, None))
            self.complete = [True for _ in TIERS]
            return
        found = self._boundary(PROBE_NOTES)
        if found is not None:
            self.window, self.window_notes = found

    def _read(self, t: int, need: int) -> bool:
        """Read tier ``t``'s matches in the window, newest notes first, from where earlier
        reads stopped, until ``need`` of them are known; whether they are."""
        lo = self.window
        if lo is None:
            return False
        level = FUZZY if t >= WORD and len(self.q) >= WIDE_PROBE_CHARS else t
        hi = self.cover[level]
        if hi is not None and hi <= lo:
            return self._known(t) >= need
        # hits of tier t in notes dated `hi` or later are all known; this read sees the rest
        count = 0 if hi is None else self._count_from(t, hi)
        pattern = self.patterns.for_tier(level)
        cursor = self._names(self.conn, lo, hi, pattern, " ORDER BY s.day DESC, s.note_id DESC")
        reached = lo
        day: str | None = None
        rows = 0
        try:
            for row in cursor:
                if row[3] != day:
                    if day is not None and count >= need:
                        reached = day  # every note dated `day` or later has been read
                        break
                    day = row[3]
                rows += 1
                if self._add_one(row) == t:
                    count += 1
        finally:
            cursor.close()
        self.stats["window_rows"] = self.stats.get("window_rows", 0) + rows
        for u in TIERS[: level + 1]:
            cover = self.cover[u]
            if cover is None or reached < cover:
                self.cover[u] = reached
        return self._known(t) >= need

    def _names(
        self, conn: sqlite3.Connection, lo: str, hi: str | None, pattern: str, order: str = ""
    ) -> sqlite3.Cursor:
        """Names of the notes dated ``lo <= day < hi`` (``lo`` '': every dated note; ``hi``
        None: no upper bound) that hold every character of the query (``names.mask``; the
        text of no other name is looked at) and match ``pattern``, as :data:`Row` s."""
        where, args = ("s.day > ''", []) if not lo else ("s.day >= ?", [lo])
        if hi is not None:
            where += " AND s.day < ?"
            args.append(hi)
        return conn.execute(
            f"SELECT s.note_id, s.line, s.name, {_COLS}"
            " FROM names s CROSS JOIN notes n ON n.id = s.note_id"
            f" WHERE {where} AND s.mask & ? = ? AND s.name {self.like}{order}",
            (*args, self.mask, self.mask, pattern),
        )

    def _extend(self, t: int, need: int) -> bool:
        """Grow the window once, when the hits of tier ``t`` found so far say that a window of
        at most :data:`EXTEND_NOTES` notes should hold ``need`` of them."""
        if self.window is None or self.extended:
            return False
        have = self._known(t)
        if have == 0:
            return False
        wanted = int(self.window_notes * EXTEND_MARGIN * need / have)
        if wanted > EXTEND_NOTES:
            return False
        found = self._boundary(max(wanted, self.window_notes + 1))
        if found is None or found[0] >= self.window:
            return False
        self.window, self.window_notes = found
        self.extended = True
        self.stats["window_extended"] = self.window_notes
        return True

    def _count_from(self, t: int, day: str) -> int:
        lo = self._day(day) or 1  # '' = every dated note
        return sum(1 for r, _ in self.hits[t].values() if -r[1] >= lo)

    def _known(self, t: int) -> int:
        """Hits of tier ``t`` known to rank above every hit not read yet."""
        cover = self.cover[t]
        return 0 if cover is None or self.window is None else self._count_from(t, cover)

    # -- reading a tier whole -------------------------------------------------------------

    def _words_from_keys(self, t: int) -> bool:
        """Complete tiers 0-2 from ``name_keys`` (``symbol_match.key_ranges``) when they have
        up to :data:`KEYS_FEW` keys, else tiers 0-``t`` up to :data:`KEYS_MAX`; or False."""
        sql = "SELECT count(*) FROM (SELECT 1 FROM name_keys WHERE key BETWEEN ? AND ? LIMIT ?)"
        for level, most in [(WORD, KEYS_FEW), (t, KEYS_MAX)] if KEYS_MAX >= 0 else ():
            ranges = key_ranges(self.q, level)
            keys = sum(self.conn.execute(sql, (*r, most + 1)).fetchone()[0] for r in ranges)
            self.stats["key_rows"] = self.stats.get("key_rows", 0) + keys
            if keys <= most:
                for r in ranges:
                    self._add(self.conn.execute(_KEYED, r).fetchall())
                for u in TIERS[: level + 1]:
                    self.complete[u] = True
                return True
        return False

    def _words_from_fts(self) -> bool:
        """Every exact, prefix and word-start match, through the full-text index, completing
        tiers 0-2; False when it cannot serve (:func:`fts_phrase`) or would give too many notes."""
        phrase = fts_phrase(self.raw)
        if phrase is None:
            return False
        body, title = f"body : {phrase}", f"title : {phrase}"
        try:
            # the phrase is matched once (a phrase of common words costs milliseconds)
            ids = [
                r[0]
                for r in self.conn.execute(
                    "SELECT rowid FROM notes_fts WHERE notes_fts MATCH ? LIMIT ?",
                    (body, FTS_MAX_NOTES + 1),
                )
            ]
            self.stats["fts_notes"] = len(ids)
            if len(ids) > FTS_MAX_NOTES:
                return False
            pattern = self.patterns.substring
            rows = self.conn.execute(
                f"SELECT h.note_id, h.line, h.text, {_COLS}"
                " FROM headings h CROSS JOIN notes n ON n.id = h.note_id"
                f" WHERE h.note_id IN (SELECT value FROM json_each(?)) AND h.text {self.like}"
                f" UNION ALL SELECT n.id, 0, n.title, {_COLS}"
                " FROM notes_fts f CROSS JOIN notes n ON n.id = f.rowid"
                f" WHERE notes_fts MATCH ? AND n.title {self.like}",
                (json.dumps(ids), pattern, title, pattern),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if "fts5" in text or "syntax" in text:
                return False
            raise
        self._add(rows)
        for u in TIERS[: WORD + 1]:
            self.complete[u] = True
        return True

    def _equal_titles(self) -> None:
        """Titles equal to the query, anywhere (one exact phrase in the title column)."""
        words = "".join(ch if ch.isalnum() else " " for ch in self.raw).split()
        if not words:
            return
        phrase = 'title : "' + " ".join(words) + '"'
        with contextlib.suppress(sqlite3.OperationalError):
            self._add(
                self.conn.execute(
                    f"SELECT n.id, 0, n.title, {_COLS}"
                    " FROM notes_fts f CROSS JOIN notes n ON n.id = f.rowid"
                    f" WHERE notes_fts MATCH ? AND n.title {self.like}",
                    (phrase, self.patterns.exact),
                ).fetchall()
            )

    def _scan(self, t: int) -> None:
        """Read every name of tier ``t`` and better ones with one scan."""
        rows = self._scan_rows(t, SCAN_MAX)
        self.stats["scan_rows"] = self.stats.get("scan_rows", 0) + len(rows)
        self._add(rows)
        for u in TIERS[: t + 1]:
            self.complete[u] = True

    def _predicate(self, t: int, column: str) -> tuple[str, list[Any]]:
        """SQL matching the names of tier ``t`` and better: NOCASE comparisons (cheaper than
        LIKE) for exact and prefix matches of ASCII queries, else the tier's LIKE pattern."""
        if t == EXACT and self.raw.isascii():
            return f"{column} = ? COLLATE NOCASE", [self.raw]
        if t == PREFIX and self.raw.isascii():
            return (
                f"{column} >= ? COLLATE NOCASE AND {column} < ? COLLATE NOCASE",
                [self.raw, self.raw + "\U0010ffff"],
            )
        return f"{column} {self.like}", [self.patterns.for_tier(t)]

    def _scan_rows(self, t: int, cap: int | None) -> list[Row]:
        """Titles and headings of tier ``t`` and better. Headings: one pass over the table,
        in chunks of note ids that this thread and, when a runner is given, a second one take
        in turn. Titles: for tiers 0-2, the full-text index's title column when the query
        makes a phrase (titles are short: a title phrase is cheap), else a pass over the
        notes."""
        limit = "" if cap is None else f" LIMIT {int(cap)}"
        where, args = self._predicate(t, "h.text")
        sql = (
            f"SELECT h.note_id, h.line, h.text, {_COLS}"
            f" FROM headings h CROSS JOIN notes n ON n.id = h.note_id WHERE {where}"
            f" AND h.note_id >= ? AND h.note_id < ?{limit}"
        )
        chunks = self._chunks() if self.runner is not None else [(0, 2**63 - 1)]
        todo = deque(enumerate(chunks))
        lock = threading.Lock()

        def job(conn: sqlite3.Connection) -> list[tuple[int, list[Row]]]:
            done: list[tuple[int, list[Row]]] = []
            while True:
                with lock:
                    if not todo:
                        return done
                    number, (lo, hi) = todo.popleft()
                done.append((number, conn.execute(sql, [*args, lo, hi]).fetchall()))

        other = self.runner(job) if self.runner is not None and len(chunks) > 1 else None
        parts = job(self.conn)
        if other is not None:
            seen, theirs = other.result()
            if seen != generation(self.conn):
                # a write committed between the two snapshots: read their chunks here
                theirs = [
                    (i, self.conn.execute(sql, [*args, *chunks[i]]).fetchall()) for i, _ in theirs
                ]
            parts += theirs
        rows = [row for _, part in sorted(parts) for row in part]
        return rows + self._title_rows(t, limit)

    def _chunks(self) -> list[tuple[int, int]]:
        """Note id ranges splitting the headings in about :data:`SCAN_CHUNKS` equal parts
        (ids are spread evenly enough over their range)."""
        lo, hi = self.conn.execute(
            "SELECT (SELECT min(id) FROM notes), (SELECT max(id) FROM notes)"
        ).fetchone()
        if lo is None or self._at_most(SPLIT_MIN_NOTES - 1):
            return [(0, 2**63 - 1)]
        step = max(1, (hi - lo + 1) // SCAN_CHUNKS + 1)
        bounds = [*range(lo, hi + 1, step), hi + 1]
        return list(pairwise(bounds))

    def _title_rows(self, t: int, limit: str) -> list[Row]:
        phrase = fts_phrase(self.raw) if t <= WORD else None
        if phrase is not None:
            with contextlib.suppress(sqlite3.OperationalError):
                return self.conn.execute(
                    f"SELECT n.id, 0, n.title, {_COLS}"
                    " FROM notes_fts f CROSS JOIN notes n ON n.id = f.rowid"
                    f" WHERE notes_fts MATCH ? AND n.title {self.like}{limit}",
                    (f"title : {phrase}", self.patterns.for_tier(t)),
                ).fetchall()
        where, args = self._predicate(t, "n.title")
        return self.conn.execute(
            f"SELECT n.id, 0, n.title, {_COLS} FROM notes n WHERE {where}{limit}", args
        ).fetchall()


def _note_hit(row: Row, tier: int) -> SymbolHit:
    ref, _line, name, day, _title, path = row
    folder = path.rpartition("/")[0]
    return SymbolHit("note", name, path, 0, folder or None, tier, day, ref)


# -- topics: where to jump ---------------------------------------------------------------------


def topic_note(conn: sqlite3.Connection, topic_id: int) -> str | None:
    """Path of the newest note using a topic, or None."""
    row = conn.execute(
        "SELECT n.path FROM note_topics nt JOIN notes n ON n.id = nt.note_id"
        " WHERE nt.topic_id = ? ORDER BY nt.created_at DESC, nt.note_id DESC LIMIT 1",
        (topic_id,),
    ).fetchone()
    return str(row[0]) if row else None


__all__ = [
    "Job",
    "Row",
    "Runner",
    "SymbolSearch",
    "second_thread",
    "topic_note",
]

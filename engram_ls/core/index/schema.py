"""DDL of the index. The index is a derived cache: a version mismatch means rebuild, not migrate.

Layout:

- ``notes``: one row per note with freshness data (mtime, size, content hash) and metadata.
- ``topics`` / ``note_topics``: normalized, case-insensitive topics. ``note_topics`` carries the
  note's date so that a tag filter plus a date range, ordered by date, is one index range scan.
- ``headings``, ``links``: outline and links with their lines. ``links.key`` is the link's
  lookup key (``core.links.link_key``: the case-folded last path part of the target, without
  ``.md``), so the backlinks of a note are an index lookup of its stem, title and alias keys.
- ``aliases``: frontmatter aliases by case-folded key (wiki-link resolution and completion).
- ``notes.title_key`` / ``notes.stem_key``: case-folded title and file stem, indexed, for link
  resolution and prefix completion.
- ``names``: every name a workspace-symbol search matches: a note's title (line 0) and its
  headings (but those repeating the title, in any case), clustered by the note's date (``''``
  when undated), with ``mask``, the set of characters of the case-folded name as bits
  (``core.index.symbol_match.char_mask``), so that a search reads the names of the newest notes in
  date order from one compact range and looks at the text of only those that hold every
  character of the query.
- ``name_keys``: the places a name of ``names`` can match a query at a word: its start
  (``core.index.symbol_match.START`` and the folded name's first characters) and every word
  start after it (the folded text from there), each cut to ``symbol_match.KEY_CHARS``
  characters, so that the exact, prefix and word-start matches of the whole vault are a range
  of this table, whatever the names' characters.
- ``notes_fts``: FTS5 over title, summary, topics and body (rowid = ``notes.id``).
- ``notes_tri``: FTS5 ``trigram`` (``detail=none``) over each note file's whole text, what
  ripgrep searches (rowid = ``notes.id``); ``tri_unindexed``: the notes whose bytes it cannot
  hold (``core.index.trigram``), candidates of every literal search. Both stay empty when the
  config turns the trigram index off.
- ``chunks``, ``chunk_vectors``, ``embedded``: search by meaning (``core/semantic``). A chunk is
  a piece of a note (its line, its snippet, the sign bits of its vector: ``code``) keyed by the
  hash of the model and the text embedded (``key``); its vector (float16) is in
  ``chunk_vectors`` under the same id, so that re-ranking reads vectors by rowid; ``embedded``
  says which content of each note (its ``notes.hash``) its chunks are of. Written in the
  background after the main index, never by a build. Chunks whose note is gone, was re-embedded
  or rebuilt have ``note_id`` 0: their vectors are found by key until the end of the next
  embedding pass, so that an unchanged text is not embedded again, then deleted.
- ``props``: every frontmatter value of every note, typed (``core.properties``): the property's
  case-folded name, its kind's letter (``properties.CODES``), the value (text, number, 0/1,
  ISO date, ``''`` for null) and whether it is a list item, once per note and value. A row's
  id is its note's id shifted by ``PROP_BITS`` plus its place among the note's values, so that
  a note's values are one range of the table (read, replaced and deleted without an index,
  and a cold build appends them); ``props_by_value`` makes a condition on one property and
  kind (``status = done``, ``priority >= 2``) one range of an index, the note's id read from
  the row id (``PROP_NOTE``). A cold build fills the table without the index and makes it
  at the end (``Batch.defer_prop_index``): sorted once rather than kept in order row by row.
- ``tasks``, ``task_tags``: every checkbox item of every note (``core.tasks``), clustered by
  note as ``props`` is (row id: the note's id shifted by ``TASK_BITS`` plus the task's place),
  its dates, priority and open state in columns (indexed by due date and by priority for the
  open ones), the rest as JSON; its own ``#tags``, case-folded, in ``task_tags``.
- ``prop_stats``: how many notes have each property, and of each kind (``core.index.prop_stats``),
  kept exact by every write: property completion and hover.
- ``meta``: state, generation counter, timestamps, config fingerprint; ``semantic_*``: the
  model of the vectors and a counter of their changes (the main generation does not move).
"""

from __future__ import annotations

SCHEMA_VERSION = 18
"""Stored in ``PRAGMA user_version``. Bump on any change below: old indexes are rebuilt."""

PROP_BITS = 10
"""Bits of a ``props`` row id below its note's id: room for ``properties.MAX_ROWS`` values."""
PROP_NOTE = f"id >> {PROP_BITS}"
"""SQL: the note id of a ``props`` row."""
BUILT_LAST = {
    "notes_by_date": "notes (created_at)",
    "notes_by_title": "notes (title_key)",
    "notes_by_stem": "notes (stem_key)",
    "links_by_key": "links (key)",
    "props_by_value": "props (key, kind, value, item)",
    "tasks_by_due": "tasks (open, ifnull(due, '~'), priority DESC)",
    "tasks_by_priority": "tasks (open, priority DESC, ifnull(due, '~'))",
    "task_tags_by_tag": "task_tags (tag, open)",
}
"""The indexes a cold build makes at its end (``Batch.defer_indexes``), by name: each keeps
rows in an order their notes do not come in (dates, titles, link targets, values), so that
kept in order row by row they cost more than sorted once."""
INDEXES_BUILT_LAST = ";\n".join(
    f"CREATE INDEX IF NOT EXISTS {name} ON {what}" for name, what in BUILT_LAST.items()
)


def prop_range(note_id: int) -> tuple[int, int]:
    """The first and last ``props`` row id a note's values can have."""
    first = note_id << PROP_BITS
    return first, first + (1 << PROP_BITS) - 1


TASK_BITS = 12
"""Bits of a ``tasks`` row id below its note's id: room for ``tasks.grammar.MAX_TASKS``."""
TASK_NOTE = f"id >> {TASK_BITS}"
"""SQL: the note id of a ``tasks`` row."""


def task_range(note_id: int) -> tuple[int, int]:
    """The first and last ``tasks`` row id a note's tasks can have."""
    first = note_id << TASK_BITS
    return first, first + (1 << TASK_BITS) - 1


NO_DATE = ""
"""``note_topics.created_at`` for undated notes (a primary key column cannot be NULL)."""

DDL = f"""
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value ANY
) STRICT, WITHOUT ROWID;

CREATE TABLE notes (
    id          INTEGER PRIMARY KEY,
    path        TEXT NOT NULL UNIQUE,
    mtime_ns    INTEGER NOT NULL,
    size        INTEGER NOT NULL,
    hash        BLOB NOT NULL,
    title       TEXT NOT NULL,
    created_at  TEXT,
    created_ts  TEXT,
    summary     TEXT,
    topics      TEXT NOT NULL,
    body_line   INTEGER NOT NULL,
    problems    TEXT,
    title_key   TEXT NOT NULL,
    stem_key    TEXT NOT NULL,
    born_ns     INTEGER NOT NULL DEFAULT 0, -- when the file was created (file.ctime)
    title_line  INTEGER NOT NULL DEFAULT 1  -- where the title is written (Note.title_line)
) STRICT;


CREATE TABLE aliases (
    key      TEXT NOT NULL,
    note_id  INTEGER NOT NULL,
    name     TEXT NOT NULL,
    PRIMARY KEY (key, note_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX aliases_by_note ON aliases (note_id);

CREATE TABLE props (
    id       INTEGER PRIMARY KEY,  -- note id << PROP_BITS | the value's place in the note
    key      TEXT NOT NULL,
    kind     TEXT NOT NULL,
    value    ANY NOT NULL,
    item     INTEGER NOT NULL  -- 0 for a single value, n for the nth item of a list
) STRICT;

CREATE TABLE tasks (
    id         INTEGER PRIMARY KEY,  -- note id << TASK_BITS | the task's place in the note
    line       INTEGER NOT NULL,
    status     TEXT NOT NULL,
    open       INTEGER NOT NULL,     -- 0 done or cancelled, else 1
    priority   INTEGER NOT NULL,     -- model.PRIORITIES' rank: 0 lowest .. 5 highest
    due        TEXT,
    scheduled  TEXT,
    start      TEXT,
    created    TEXT,
    done       TEXT,
    cancelled  TEXT,
    text       TEXT NOT NULL,
    data       TEXT NOT NULL         -- JSON: the rest of the task (tasks/store.py)
) STRICT;

CREATE TABLE task_tags (
    task  INTEGER NOT NULL,
    tag   TEXT NOT NULL,             -- case-folded
    open  INTEGER NOT NULL,          -- the task's tasks.open: a tag's open tasks counted alone
    PRIMARY KEY (task, tag)
) STRICT, WITHOUT ROWID;

CREATE TABLE prop_stats (
    key    TEXT NOT NULL,
    kind   TEXT NOT NULL,  -- '*' any value, a kind letter, or 'l' a list
    notes  INTEGER NOT NULL,
    PRIMARY KEY (key, kind)
) STRICT, WITHOUT ROWID;

CREATE TABLE topics (
    id     INTEGER PRIMARY KEY,
    key    TEXT NOT NULL UNIQUE,
    name   TEXT NOT NULL,
    notes  INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX topics_by_use ON topics (notes DESC, key);

CREATE TABLE note_topics (
    topic_id    INTEGER NOT NULL,
    created_at  TEXT NOT NULL,
    note_id     INTEGER NOT NULL,
    spelling    TEXT NOT NULL,
    PRIMARY KEY (topic_id, created_at, note_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX note_topics_by_note ON note_topics (note_id, topic_id);

CREATE TABLE headings (
    note_id  INTEGER NOT NULL,
    line     INTEGER NOT NULL,
    level    INTEGER NOT NULL,
    text     TEXT NOT NULL,
    PRIMARY KEY (note_id, line)
) STRICT, WITHOUT ROWID;

CREATE TABLE names (
    day      TEXT NOT NULL,
    note_id  INTEGER NOT NULL,
    line     INTEGER NOT NULL,
    mask     INTEGER NOT NULL,
    name     TEXT NOT NULL,
    PRIMARY KEY (day, note_id, line)
) STRICT, WITHOUT ROWID;

CREATE TABLE name_keys (
    key      TEXT NOT NULL,
    day      TEXT NOT NULL,
    note_id  INTEGER NOT NULL,
    line     INTEGER NOT NULL,
    PRIMARY KEY (key, day, note_id, line)
) STRICT, WITHOUT ROWID;

CREATE TABLE links (
    note_id  INTEGER NOT NULL,
    line     INTEGER NOT NULL,
    seq      INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    target   TEXT NOT NULL,
    anchor   TEXT,
    label    TEXT,
    key      TEXT NOT NULL,
    PRIMARY KEY (note_id, line, seq)
) STRICT, WITHOUT ROWID;


CREATE VIRTUAL TABLE notes_fts USING fts5 (
    title, summary, topics, body,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE VIRTUAL TABLE notes_tri USING fts5 (
    text,
    tokenize = 'trigram',
    detail = none,
    columnsize = 0
);

CREATE TABLE tri_unindexed (
    note_id  INTEGER PRIMARY KEY
) STRICT;

CREATE TABLE chunks (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    note_id  INTEGER NOT NULL,
    line     INTEGER NOT NULL,
    key      BLOB NOT NULL,
    code     BLOB NOT NULL,
    snippet  TEXT NOT NULL
) STRICT;

CREATE INDEX chunks_by_note ON chunks (note_id);
CREATE INDEX chunks_by_key ON chunks (key);

CREATE TABLE chunk_vectors (
    id   INTEGER PRIMARY KEY,
    vec  BLOB NOT NULL
) STRICT;

CREATE TABLE embedded (
    note_id  INTEGER PRIMARY KEY,
    hash     BLOB NOT NULL
) STRICT;

{INDEXES_BUILT_LAST};
"""

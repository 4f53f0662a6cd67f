"""Workspace symbols in the core: matching tiers, ranking, caps, case, and the large-vault
strategies (probe window, full-text phrases, scans, the horizon of loose matches) checked
against a brute force ranking of every name."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.config import EngramConfig, Limits
from engram_ls.core.index import db
from engram_ls.core.index import rows as rows_module
from engram_ls.core.index import symbol_match as match
from engram_ls.core.index import symbols as sym
from engram_ls.core.index.symbol_match import (
    EXACT,
    FUZZY,
    PREFIX,
    WORD,
    Patterns,
    SymbolHit,
    match_tier,
    rank,
)
from engram_ls.core.index.symbols import SymbolSearch
from engram_ls.core.service import Engram
from engram_ls.core.sync import Syncer


@pytest.fixture
def example(vault_copy: Callable[[str], Path]) -> Iterator[Engram]:
    with Engram(vault_copy("example")) as engram:
        engram.sync()
        yield engram


def names(hits: list[SymbolHit]) -> list[tuple[str, str]]:
    return [(h.kind, h.name) for h in hits]


# -- the tiers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "query", "tier"),
    [
        ("SQLite", "sqlite", EXACT),
        ("sqlite", "SQLITE", EXACT),
        ("SQLite field notes", "sqlite", PREFIX),
        ("SQLite field notes", "SQLite f", PREFIX),
        ("Incident review", "review", WORD),
        ("write-ahead log", "ahead", WORD),
        ("snake_case_name", "case", WORD),
        ("area/topic", "topic", WORD),
        ("Notes (draft)", "draft", WORD),
        ("SQLite field notes", "field n", WORD),
        ("reviewer", "view", FUZZY),  # a substring, but not at a word start
        ("SQLite field notes", "sfn", FUZZY),
        ("Index query notes", "idxq", FUZZY),
        ("Write-ahead log", "wal", FUZZY),
        ("Café notes", "CAFÉ", PREFIX),
        ("Straße", "STRASSE", EXACT),  # Unicode case folding
        ("SQLite", "sqlites", None),
        ("abc", "cba", None),
        ("field notes", "notes field", None),
    ],
)
def test_match_tier(name: str, query: str, tier: int | None) -> None:
    assert match_tier(name, match.normalize(query)) == tier


def test_like_patterns_escape_wildcards_and_widen_non_ascii() -> None:
    p = Patterns.of(" 50%_a\\b ")
    assert p.exact == "50\\%\\_a\\\\b"
    assert p.prefix == p.exact + "%"
    assert p.substring == "%" + p.exact + "%"
    assert p.subsequence == "%5%0%\\%%\\_%a%\\\\%b%"
    assert p.escape == " ESCAPE '\\'"
    plain = Patterns.of("café")
    assert plain.exact == "caf_" and plain.escape == ""


@pytest.mark.parametrize(
    ("query", "phrase"),
    [
        ("meeting", '"meeting" *'),
        ("Meeting notes", '"Meeting notes" *'),
        ("meeting no", '"meeting"'),
        ("meeting ", '"meeting" *'),  # queries are stripped
        ("meeting: ", '"meeting"'),
        ("meeting (x", '"meeting"'),
        ("write-ahead log", '"write ahead log" *'),
        ('say "hi" there', '"say hi there" *'),
        ("ab", None),
        ("a b", None),
        ("-flag", None),
        ("#tag", None),
        ("", None),
    ],
)
def test_fts_phrase(query: str, phrase: str | None) -> None:
    assert match.fts_phrase(query) == phrase


def test_rank_orders_tier_then_recency_then_length() -> None:
    ranked = sorted(
        [
            rank(FUZZY, "2026-01-01", "x", "note", "a.md", 0),
            rank(PREFIX, None, "short", "note", "b.md", 0),
            rank(PREFIX, "2020-01-01", "a much longer name", "heading", "c.md", 3),
            rank(PREFIX, "2020-01-01", "shorter name", "heading", "c.md", 9),
            rank(EXACT, None, "x", "topic", "", 0),
        ]
    )
    assert [(r[0], r[2]) for r in ranked] == [(0, 1), (1, 12), (1, 18), (1, 5), (3, 1)]


# -- the example vault ---------------------------------------------------------------------------


def test_ranking_on_the_example_vault(example: Engram) -> None:
    hits = example.symbols("sqlite")
    assert names(hits)[:2] == [("topic", "sqlite"), ("heading", "SQLite")]
    assert [h.tier for h in hits] == [EXACT, EXACT, PREFIX, PREFIX, PREFIX]
    # prefix matches: the most recent note first
    assert [h.name for h in hits[2:]] == ["SQLite upgrade", "SQLite review", "SQLite field notes"]
    days = [h.day or "" for h in hits[2:]]
    assert days == sorted(days, reverse=True)


@pytest.mark.parametrize("query", ["SQLITE", "sqlite", "SqLiTe", "  sqlite  "])
def test_case_and_surrounding_spaces_do_not_matter(example: Engram, query: str) -> None:
    assert names(example.symbols(query)) == names(example.symbols("sqlite"))


def test_non_ascii_names_match_in_any_case(example: Engram) -> None:
    for query in ("café", "CAFÉ", "Café notes"):
        assert ("note", "Café notes — reading list") in names(example.symbols(query))


def test_headings_carry_their_note(example: Engram) -> None:
    (hit,) = [h for h in example.symbols("write-ahead log") if h.kind == "heading"]
    assert (hit.name, hit.path, hit.line, hit.container) == (
        "Write-ahead log",
        "reference/sqlite.md",
        12,
        "SQLite field notes",
    )


def test_a_heading_repeating_the_title_is_listed_once(example: Engram) -> None:
    hits = example.symbols("SQLite field notes")
    assert names(hits) == [("note", "SQLite field notes")]
    # The note points at its frontmatter's title: line (line 2 of reference/sqlite.md).
    assert hits[0].line == 2 and hits[0].container == "reference"


def test_a_note_points_at_the_line_its_title_is_written_on(example: Engram) -> None:
    """title: in the frontmatter, else the # heading the title comes from, else line 1 (the
    title is the file name); the example vault has notes of each kind."""
    root = example.vault.root
    kinds = set()
    for hit in [h for h in example.symbols("", limit=1000) if h.kind == "note"]:
        shown = (root / hit.path).read_text(encoding="utf-8").split("\n")[hit.line - 1]
        if shown.startswith("title:"):
            kinds.add("frontmatter")
            assert hit.name in shown, (hit.path, shown, hit.name)
        elif shown.startswith("# "):
            kinds.add("heading")
            assert shown[2:].strip() == hit.name, (hit.path, shown, hit.name)
        else:
            kinds.add("file name")
            assert hit.line == 1 and hit.name == Path(hit.path).stem, (hit.path, hit.line)
    assert kinds >= {"frontmatter", "heading"}, kinds


def test_topics_point_at_the_newest_note_naming_them(example: Engram) -> None:
    hits = {h.name: h for h in example.symbols("memory") if h.kind == "topic"}
    assert set(hits) == {"memory", "Memory Leak", "memory-leak"}
    memory = hits["memory"]
    assert (memory.path, memory.line, memory.day, memory.container) == (
        "journal/2026-02-14.md",
        2,
        "2026-02-14",
        "2 notes",
    )
    leak = hits["memory-leak"]
    assert (leak.path, leak.container) == ("projects/memory-leak-hunt.md", "1 note")
    text = (example.vault.root / leak.path).read_text(encoding="utf-8").split("\n")
    assert "memory-leak" in text[leak.line - 1]
    # an inline #tag in the body
    (neovim,) = [h for h in example.symbols("neovim") if h.kind == "topic"]
    line = (example.vault.root / neovim.path).read_text(encoding="utf-8").split("\n")
    assert "#neovim" in line[neovim.line - 1]


def test_fuzzy_subsequence(example: Engram) -> None:
    hits = example.symbols("sfn")
    assert ("note", "SQLite field notes") in names(hits)
    assert all(h.tier == FUZZY for h in hits)
    assert example.symbols("zzzz") == []


def test_caps_and_the_empty_query(example: Engram) -> None:
    every = example.symbols("e", limit=1000)
    assert 100 < len(every) < 1000  # more names than the default cap match "e"
    assert len(example.symbols("e")) == 100  # limits.workspace_symbols
    assert example.symbols("e", limit=3) == every[:3]
    assert example.symbols("e", limit=0) == []
    recent = example.symbols("", limit=4)
    assert [h.name for h in recent] == [
        "Saturday notes",
        "November wrap-up",
        "SQLite upgrade",
        "Café notes — reading list",
    ]
    assert all(h.kind == "note" for h in recent)
    assert example.symbols("x" * 1000) == []


def test_the_configured_cap(vault_copy: Callable[[str], Path]) -> None:
    config = EngramConfig(limits=Limits(workspace_symbols=2))
    with Engram(vault_copy("tags"), config=config) as engram:
        engram.sync()
        assert len(engram.symbols("m")) == 2
        assert len(engram.symbols("")) == 2


def test_no_index_no_symbols(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("tags")
    blocker = root / "not-a-folder"
    blocker.write_text("a file where the index folder should be", encoding="utf-8")
    with Engram(root, index_path=blocker / "index.sqlite") as engram:
        assert engram.unavailable is not None
        assert engram.symbols("memory") == []


def test_cancelled_search_returns_nothing(example: Engram) -> None:
    cancel = threading.Event()
    cancel.set()
    assert example.symbols("sqlite", cancel=cancel) == []


# -- the large-vault strategies, against brute force ---------------------------------------------


def brute_force_hits(
    conn: sqlite3.Connection, query: str
) -> dict[tuple[str, int, int], tuple[int, str | None]]:
    """(tier, day) of every matching name, by (kind, ref, line)."""
    q = match.normalize(query)
    out: dict[tuple[str, int, int], tuple[int, str | None]] = {}
    titles = {}
    for nid, title, day in conn.execute("SELECT id, title, created_at FROM notes"):
        titles[nid] = (title, day)
        tier = match_tier(title, q)
        if tier is not None:
            out[("note", nid, 0)] = (tier, day)
    for nid, line, text in conn.execute("SELECT note_id, line, text FROM headings"):
        title, day = titles[nid]
        tier = match_tier(text, q)
        if tier is not None and text.casefold() != title.casefold():
            out[("heading", nid, line)] = (tier, day)
    return out


def brute_force(conn: sqlite3.Connection, query: str, limit: int) -> list[tuple[str, int, int]]:
    """Every name of the index, matched and ranked in Python."""
    q = match.normalize(query)
    entries: list[tuple[tuple[int, int, int, str, int, str, int], tuple[str, int, int]]] = []
    titles = {}
    for nid, title, day, path in conn.execute("SELECT id, title, created_at, path FROM notes"):
        titles[nid] = (title, day, path)
        tier = match_tier(title, q)
        if tier is not None:
            entries.append((rank(tier, day, title, "note", path, 0), ("note", nid, 0)))
    for nid, line, text in conn.execute("SELECT note_id, line, text FROM headings"):
        title, day, path = titles[nid]
        tier = match_tier(text, q)
        if tier is not None and text.casefold() != title.casefold():
            entries.append((rank(tier, day, text, "heading", path, line), ("heading", nid, line)))
    for tid, name in conn.execute("SELECT id, name FROM topics"):
        (day,) = conn.execute(
            "SELECT max(created_at) FROM note_topics WHERE topic_id = ?", (tid,)
        ).fetchone()
        tier = match_tier(name, q)
        if tier is not None:
            entries.append((rank(tier, day or None, name, "topic", "", 0), ("topic", tid, 0)))
    entries.sort()
    return [key for _, key in entries[:limit]]


def check(conn: sqlite3.Connection, search: SymbolSearch, query: str, limit: int) -> None:
    """Queries of 3+ characters: exactly the brute-force ranking. Shorter ones are searched in
    the newest notes only: their hits are correct, ranked, and the best of what is known."""
    hits = search.run()
    got = [(h.kind, h.ref, h.line) for h in hits]
    everything = brute_force(conn, query, 10**9)
    if len(match.normalize(query)) >= match.FTS_MIN_CHARS or not search.stats.get("scoped"):
        assert got == everything[:limit], (query, limit, search.stats)
        return
    assert len(set(got)) == len(got)
    assert [h.rank for h in hits] == sorted(h.rank for h in hits)
    assert set(got) <= set(everything)
    for h in hits:
        assert match_tier(h.name, match.normalize(query)) == h.tier


def set_windows(
    monkeypatch: pytest.MonkeyPatch,
    probe: int,
    small: int,
    extend: int,
    fts: int,
    split: int,
    keys: int = 150,
) -> None:
    """Scale the symbol search's thresholds down (the loose horizon off)."""
    for name, value in (
        ("PROBE_NOTES", probe),
        ("SMALL_VAULT", small),
        ("EXTEND_NOTES", extend),
        ("LOOSE_HORIZON", 10**6),
        ("FTS_MAX_NOTES", fts),
        ("SPLIT_MIN_NOTES", split),
        ("KEYS_MAX", keys),
        ("KEYS_FEW", keys // 5),
    ):
        monkeypatch.setattr(sym, name, value)


def tiny_windows(monkeypatch: pytest.MonkeyPatch, keys: int = 10) -> None:
    """Windows of a few notes, so that the example vault takes every path."""
    set_windows(monkeypatch, probe=2, small=3, extend=6, fts=3, split=1, keys=keys)


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scale the thresholds down so that a few hundred notes take every path."""
    set_windows(monkeypatch, probe=25, small=50, extend=60, fts=40, split=10)


NO_KEYS = -1
"""``KEYS_MAX`` that never reads ``name_keys``: the full-text and scan paths of before it."""
KEY_MODES = [pytest.param(150, id="name-keys"), pytest.param(NO_KEYS, id="no-keys")]


QUERIES = [
    "r",
    "re",
    "index",
    "Index Query",
    "idxq",
    "ing",
    "que",
    "sqlite",
    "python",
    "memory leak",
    "zqx",
    "e e",
    "data",
    "tion",
    "a-",
    "100%",
]


LOW_ALPHABET_QUERIES = [
    "t",
    "ta",
    "tot",
    "toton",
    "Toton kin",
    "kalo",
    "lima",
    "mon",
    "nontami",
    "ktmn",
    "kmlt",
    "oooo",
    "kkkkkk",
    "tinanmo",
    "ni na",
    "qu",
    "kal-",
]
"""Queries of the eight letters of the low-alphabet shape (and two of others)."""


def run_queries(root: Path, index: Path, queries: list[str], parallel: bool) -> set[str]:
    """Every query at three caps, checked against brute force; the strategies taken."""
    with Engram(root, index_path=index) as engram:
        engram.sync()
        conn = engram.index.conn()
        runner = sym.second_thread(engram.index) if parallel else None
        paths_seen: set[str] = set()
        for query in queries:
            for limit in (1, 7, 40):
                with db.read_tx(conn):
                    search = SymbolSearch(conn, query, limit, runner=runner)
                    check(conn, search, query, limit)
                paths_seen.update(search.stats)
    return paths_seen


@pytest.mark.usefixtures("small_windows")
@pytest.mark.parametrize("keys", KEY_MODES)
@pytest.mark.parametrize("parallel", [False, True], ids=["one-thread", "two-threads"])
@pytest.mark.parametrize("shape", ["standard", "low-alphabet"])
def test_strategies_agree_with_brute_force(
    generated: Callable[..., Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    parallel: bool,
    keys: int,
    shape: str,
) -> None:
    """Every strategy, with and without ``name_keys``, ranks exactly like brute force; on the
    low-alphabet shape too (names over eight letters: every mask alike)."""
    monkeypatch.setattr(sym, "KEYS_MAX", keys)
    queries = QUERIES if shape == "standard" else LOW_ALPHABET_QUERIES
    paths_seen = run_queries(generated(400, shape=shape), tmp_path / "ix.sqlite", queries, parallel)
    # every strategy was exercised
    assert {"window_rows", "scoped", "whole_0"} <= paths_seen
    assert ("key_rows" in paths_seen) == (keys != NO_KEYS)
    if shape == "standard":
        assert "window_extended" in paths_seen
        assert {"whole_0", "whole_1", "whole_2", "whole_3"} & paths_seen
        if keys == NO_KEYS:
            assert {"fts_notes", "scan_rows"} <= paths_seen


@pytest.mark.parametrize(
    "query",
    ["e", "no", "CAFÉ", "café", "sqlite", "SQL", "memory", "mem leak", "wal", "é", "2024", "-"],
)
@pytest.mark.parametrize("limit", [1, 3, 10])
@pytest.mark.parametrize("keys", [10, NO_KEYS], ids=["name-keys", "no-keys"])
def test_tiny_windows_on_the_example_vault(
    vault_copy: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    query: str,
    limit: int,
    keys: int,
) -> None:
    """Undated notes, non-ASCII names, days shared by several notes: with windows of a few
    notes, every strategy still ranks exactly like brute force."""
    tiny_windows(monkeypatch, keys)
    with Engram(vault_copy("example")) as engram:
        engram.sync()
        conn = engram.index.conn()
        for runner in (None, sym.second_thread(engram.index)):
            with db.read_tx(conn):
                check(conn, SymbolSearch(conn, query, limit, runner=runner), query, limit)


@pytest.mark.usefixtures("small_windows")
def test_loose_matches_of_a_large_vault_come_from_its_newest_notes(
    generated: Callable[..., Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sym, "LOOSE_HORIZON", 100)
    root = generated(400)
    with Engram(root, index_path=tmp_path / "ix.sqlite") as engram:
        engram.sync()
        conn = engram.index.conn()
        with db.read_tx(conn):
            (horizon,) = conn.execute(
                "SELECT created_at FROM notes ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET 99"
            ).fetchone()
            for query in ("zqj", "idxq", "memory leak", "qqq"):
                search = SymbolSearch(conn, query, 1000)
                hits = search.run()
                everything = brute_force_hits(conn, query)
                loose = {
                    k for k, h in everything.items() if h[0] == FUZZY and (h[1] or "") >= horizon
                }
                strict = {k for k, h in everything.items() if h[0] < FUZZY}
                got = {(h.kind, h.ref, h.line) for h in hits if h.kind != "topic"}
                assert got == loose | strict, (query, search.stats)
                assert search.stats.get("horizon") or not loose


def test_deadline_interrupts(example: Engram) -> None:
    conn = example.index.conn()
    with pytest.raises(db.Interrupted), db.interruptible(conn, None, 0.0):
        conn.execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 10000000)"
            " SELECT count(*) FROM c"
        ).fetchone()


# -- the names table and its character masks ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("Index query notes", "idxq"),
        ("SQLite field notes", "SFN"),
        ("Ärger über Öl", "ÄÜÖ"),
        ("Straße", "STRASSE"),
        ("STRASSE", "ß"),
        ("İstanbul notes", "i̇st"),
        ("Ωμέγα plan", "ΩΜΈ"),
        ("write-ahead log (WAL)", "-(wal)"),
        ("100% done_now", "0%_"),
        ("emoji 🙂 day", "🙂d"),
        ("tab\there", "\th"),
    ],
)
def test_a_name_holds_the_mask_of_every_query_it_matches(name: str, query: str) -> None:
    q = match.normalize(query)
    assert match_tier(name, q) is not None
    name_mask, query_mask = match.char_mask(name.casefold()), match.char_mask(q)
    assert name_mask & query_mask == query_mask
    assert 0 < name_mask < 2**63  # a positive SQLite integer


def test_masks_tell_characters_apart() -> None:
    letters = [match.char_mask(c) for c in "abcdefghijklmnopqrstuvwxyz0123456789 "]
    assert len(set(letters)) == len(letters)
    assert all(m & (m - 1) == 0 for m in letters)  # one bit each
    assert match.char_mask("") == 0
    assert match.char_mask("abc") == match.char_mask("cab") == match.char_mask("aabbcc")
    assert match.char_mask("zephyr") & match.char_mask("idxq") != match.char_mask("idxq")
    # characters sharing a bit (ASCII punctuation, non-ASCII) still give that one bit
    text = "".join(chr(o) for o in range(128)) + "äöüßéΩ🙂"
    want = 0
    for ch in text:
        want |= match.char_mask(ch)
    assert match.char_mask(text) == want
    assert match.char_mask("!)") == match.char_mask("!") == match.char_mask(")")


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("Toton kin", {"\x01toton ki", "kin"}),
        ("Write-ahead log (WAL)", {"\x01write-ah", "ahead lo", "log (wal", "(wal)", "wal)"}),
        ("Straße", {"\x01strasse"}),
        ("a", {"\x01a"}),
        ("x  y", {"\x01x  y", " y", "y"}),
    ],
)
def test_name_keys(name: str, keys: set[str]) -> None:
    assert match.name_keys(name) == keys


NAMES = [
    "Toton kin",
    "SQLite field notes",
    "Write-ahead log (WAL)",
    "snake_case_name",
    "Straße Ärger über",
    "İstanbul notes",
    "Ωμέγα plan",
    "100% done_now",
    "emoji 🙂 day",
    "tab\there",
    "a\x01b \x01c",
    "very-long-name-of-a-heading-beyond-eight-characters and more",
    "\U0010ffff\U0010ffffz end",
]


def test_every_tier_0_2_match_is_in_its_key_range() -> None:
    """For every substring of these names that matches them in tier 0-2 (and for queries
    longer than a key), a key of the name lies in the range the search reads."""
    for name in NAMES:
        folded = name.casefold()
        keys = match.name_keys(name)
        for i in range(len(folded)):
            for j in range(i + 1, len(folded) + 1):
                q = folded[i:j]
                tier = match.tier_of(folded, q)
                if tier is None or tier > WORD:
                    continue
                for t in range(tier, WORD + 1):  # the ranges of tier t hold tier t and better
                    ranges = match.key_ranges(q, t)
                    assert any(lo <= k <= hi for k in keys for lo, hi in ranges), (name, q, t)


def names_rows(conn: sqlite3.Connection) -> set[tuple[str, str, int, int, str]]:
    """The names table, by path."""
    return set(
        conn.execute(
            "SELECT n.path, s.day, s.line, s.mask, s.name FROM names s"
            " JOIN notes n ON n.id = s.note_id"
        )
    )


def expected_names(conn: sqlite3.Connection) -> set[tuple[str, str, int, int, str]]:
    """What the names table must hold: every note's title (line 0) and headings (but those
    repeating the title), by the note's date ('' when undated), with the masks of their
    folded text."""
    out = set()
    for path, day, title in conn.execute("SELECT path, created_at, title FROM notes"):
        out.add((path, day or "", 0, match.char_mask(title.casefold()), title))
    for path, day, title, line, text in conn.execute(
        "SELECT n.path, n.created_at, n.title, h.line, h.text FROM headings h JOIN notes n"
        " ON n.id = h.note_id"
    ):
        if text.casefold() != title.casefold():  # the note stands for such a heading
            out.add((path, day or "", line, match.char_mask(text.casefold()), text))
    return out


def keys_rows(conn: sqlite3.Connection) -> set[tuple[str, str, int, int]]:
    return set(conn.execute("SELECT key, day, note_id, line FROM name_keys"))


def expected_keys(conn: sqlite3.Connection) -> set[tuple[str, str, int, int]]:
    """What ``name_keys`` must hold: the keys of every row of ``names``."""
    return {
        (key, day, nid, line)
        for day, nid, line, name in conn.execute("SELECT day, note_id, line, name FROM names")
        for key in match.name_keys(name)
    }


def test_the_names_table_follows_every_write(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    note = root / "projects" / "renamed-often.md"
    with Engram(root) as engram:
        engram.sync()
        conn = engram.index.conn()
        assert names_rows(conn) == expected_names(conn)
        assert keys_rows(conn) == expected_keys(conn)
        before = len(names_rows(conn))
        note.write_text(
            "---\ntitle: Über plan\ncreated: 2021-03-04\n---\n# Über plan\n\n## Ärger\n"
            "## Zephyr idx query\n",
            encoding="utf-8",
        )
        engram.sync()
        assert names_rows(conn) == expected_names(conn)
        assert keys_rows(conn) == expected_keys(conn)
        assert len(names_rows(conn)) == before + 3  # the title, two headings (# Über plan: no)
        # a new date, title and headings: the rows of the old date go
        note.write_text(
            "---\ntitle: Later plan\ncreated: 2025-06-07\n---\n## Only heading\n",
            encoding="utf-8",
        )
        engram.sync()
        got = names_rows(conn)
        assert got == expected_names(conn)
        assert keys_rows(conn) == expected_keys(conn)
        mine = sorted(r for r in got if r[0] == "projects/renamed-often.md")
        assert [(d, line, name) for _, d, line, _, name in mine] == [
            ("2025-06-07", 0, "Later plan"),
            ("2025-06-07", 5, "Only heading"),
        ]
        # undated
        note.write_text("# Undated idea\n\ntext\n", encoding="utf-8")
        engram.sync()
        assert names_rows(conn) == expected_names(conn)
        assert keys_rows(conn) == expected_keys(conn)
        assert ("projects/renamed-often.md", "", 0) in {r[:3] for r in names_rows(conn)}
        note.unlink()
        engram.sync()
        assert names_rows(conn) == expected_names(conn)
        assert keys_rows(conn) == expected_keys(conn)
        assert len(names_rows(conn)) == before


def test_the_writer_only_inserts_the_names_and_keys_parsing_computed(
    vault_copy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build computes the ``names`` masks and ``name_keys`` keys where notes are parsed
    (a parse process in a large build), not in the writing process that the build waits on:
    no key is computed while rows are written, and the tables hold exactly what they must
    (headings repeating the title, several on one line, empty ones, non-ASCII names)."""
    root = vault_copy("example")
    (root / "odd.md").write_text(
        "---\ntitle: Twice\ncreated: 2024-02-03\n---\n# TWICE\n\n## Ärger <a>\n\n#\n"
        "## Straße-idx_2\n",
        encoding="utf-8",
    )
    writing: list[int] = []
    while_writing: list[str] = []
    real_keys = rows_module.name_keys

    def keys(name: str) -> set[str]:
        if writing:
            while_writing.append(name)
        return real_keys(name)

    real_write = Syncer._write

    def write(self: Syncer, *args: Any) -> None:
        writing.append(1)
        try:
            real_write(self, *args)
        finally:
            writing.pop()

    monkeypatch.setattr(rows_module, "name_keys", keys)
    monkeypatch.setattr(Syncer, "_write", write)
    with Engram(root) as engram:
        engram.sync()
        conn = engram.index.conn()
        assert names_rows(conn) == expected_names(conn)
        assert keys_rows(conn) == expected_keys(conn)
        assert ("odd.md", "2024-02-03", 7) in {r[:3] for r in names_rows(conn)}
    assert while_writing == []


@pytest.mark.parametrize("query", ["über", "ÜBER", "ärg", "ÄRGER", "ωμ", "ΩΜΈΓΑ", "uber", "ßtr"])
def test_non_ascii_and_folded_queries_through_the_window(
    vault_copy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch, query: str
) -> None:
    """Non-ASCII names read through the names table (tiny windows: every path) rank exactly
    like brute force, in any case; with a tiny horizon, the loose matches are exactly those
    of the newest notes."""
    tiny_windows(monkeypatch)
    root = vault_copy("example")
    extra = {
        "a1.md": "---\ncreated: 2026-03-01\n---\n# Über Ärger\n\n## Ωμέγα plan\n",
        "a2.md": "---\ncreated: 2026-03-02\n---\n# Straße notes\n\n## ÄRGERLICH über\n",
        "a3.md": "---\ncreated: 2026-03-02\n---\n# ωμέγα\n\n## uber ärger\n",
        "a4.md": "# Undated über\n\n## Ωmega ärger\n",
    }
    for name, text in extra.items():
        (root / name).write_text(text, encoding="utf-8")
    with Engram(root) as engram:
        engram.sync()
        conn = engram.index.conn()
        assert engram.symbols(query, limit=1000)
        for runner in (None, sym.second_thread(engram.index)):
            for limit in (1, 3, 50):
                with db.read_tx(conn):
                    check(conn, SymbolSearch(conn, query, limit, runner=runner), query, limit)
        if len(match.normalize(query)) < match.FTS_MIN_CHARS:
            return  # searched among the newest notes only (see check)
        monkeypatch.setattr(sym, "LOOSE_HORIZON", 8)
        with db.read_tx(conn):
            (horizon,) = conn.execute(
                "SELECT created_at FROM notes ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET 7"
            ).fetchone()
            for runner in (None, sym.second_thread(engram.index)):
                search = SymbolSearch(conn, query, 1000, runner=runner)
                got = {(h.kind, h.ref, h.line) for h in search.run() if h.kind != "topic"}
                everything = brute_force_hits(conn, query)
                want = {
                    k
                    for k, (tier, day) in everything.items()
                    if tier < FUZZY or (day or "") >= horizon
                }
                assert got == want, search.stats
                assert search.stats.get("horizon")

"""Search by meaning in the core, with the real shipped model and a real index."""

from __future__ import annotations

import json
import math
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram_ls.core.config import EngramConfig, load_config
from engram_ls.core.errors import UnsupportedMode
from engram_ls.core.search import semantic_path
from engram_ls.core.semantic import chunks as chunking
from engram_ls.core.semantic.model import load_model, model_files
from engram_ls.core.service import Engram

NOTES = {
    "bikes/fixing-a-puncture.md": """---
topics: [bikes, repair]
created_at: 2024-03-02
---
# Fixing a puncture

## Tools
Tyre levers, a patch kit, some sandpaper and a pump. A spare inner tube saves time by the road.

## Steps
Take the wheel off the frame, lever one side of the tyre off the rim and pull the inner tube
out. Pump a little air in and listen for the hiss to find the hole. Roughen the rubber, spread
the glue, wait a minute and press the patch on. Put the tube back and inflate it.
""",
    "kitchen/sourdough.md": """---
topics: [cooking]
created_at: 2023-11-20
---
# Sourdough loaf

A starter of flour and water, fed daily, raises the dough. Knead, let it prove overnight in the
fridge, then bake in a hot cast iron pot with the lid on for the first twenty minutes.
""",
    "money/taxes.md": """---
topics: [finance]
created_at: 2024-04-10
---
# Yearly return

Collect the receipts, the salary statements and the bank interest. Deductions for the home office
and commuting lower what is owed to the revenue service. File before the end of July.
""",
    "garden/tomatoes.md": """---
topics: [garden]
created_at: 2024-05-01
---
# Tomatoes on the balcony

They want six hours of sun, a deep pot and water every evening in summer. Pinch the side shoots.
""",
    "travel/packing.md": """---
topics: [travel]
created_at: 2022-07-15
---
# Packing list

Passport, charger, a light rain jacket, and clothes for a week rolled tightly in the suitcase.
""",
}


def _write(root: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    _write(root, NOTES)
    return root


def _engram(root: Path, index: Path, config: EngramConfig | None = None) -> Engram:
    e = Engram(root, index_path=index, config=config)
    e.open()
    e.sync()
    return e


@pytest.fixture
def engram(vault: Path, tmp_path: Path) -> Engram:
    e = _engram(vault, tmp_path / "index.sqlite")
    e.embed()
    yield e
    e.close()


def _paths(res: object) -> list[str]:
    return [h.path for h in res.results]  # type: ignore[attr-defined]


def test_the_default_model_is_wordllama_s_own() -> None:
    """The vectors equal those of the wordllama package's own loader and embed()."""
    import logging

    wordllama = pytest.importorskip("wordllama")
    root_level = logging.getLogger().level
    try:
        wl = wordllama.WordLlama.load(
            cache_dir=os.path.dirname(wordllama.__file__), disable_download=True
        )
    finally:
        logging.getLogger().setLevel(root_level)
    model = load_model(None)
    texts = [
        "how to fix a flat tyre",
        "Die Steuererklärung 🧾",
        "東京の天気",
        "the of and",
        "x" * 5,
    ]
    ours = model.embed(texts)
    theirs = wl.embed(texts, norm=True)
    assert model.dims == 256 and model.name == "wordllama/l2_supercat_256"
    assert np.allclose(ours, theirs, atol=1e-5)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_the_default_model_s_table_is_read_from_its_file_a_row_at_a_time(tmp_path: Path) -> None:
    """The shipped model's token table stays in its file: a query reads its words' rows (the
    file is not mapped, so no page of it counts in the process's memory), and the vectors equal
    the table read into memory, in bulk too and after it; a file whose table is not float16 as
    safetensors lays it out, or whose header is damaged, is read into memory (and a folder's
    model always is)."""
    import dataclasses

    from engram_ls.core.semantic import model as model_mod

    files = model_files(None)
    assert files.shipped and not model_files(str(tmp_path)).shipped
    on_file = load_model(None)
    assert isinstance(on_file.table, model_mod.TableFile)
    read = model_mod.StaticModel(dataclasses.replace(files, shipped=False))
    assert isinstance(read.table, np.ndarray) and read.table.flags.writeable
    texts = ["how to fix a flat tyre", "Die Steuererklärung 🧾", "東京の天気", "", "x" * 5]
    want = read.embed(texts)
    assert np.array_equal(on_file.embed(texts), want)
    with on_file.bulk():
        assert np.array_equal(on_file.embed(texts), want)
    assert np.array_equal(on_file.embed(texts), want)
    maps = Path("/proc/self/maps")
    if maps.exists():
        assert str(files.weights) not in maps.read_text()

    raw = files.weights.read_bytes()
    length = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + length])
    header[files.tensor]["dtype"] = "BF16"
    other = json.dumps(header).encode()
    bf16 = tmp_path / "bf16.safetensors"
    bf16.write_bytes(len(other).to_bytes(8, "little") + other + raw[8 + length :])
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes((1 << 40).to_bytes(8, "little") + raw[8:100])
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(raw[: len(raw) // 2])
    header[files.tensor]["dtype"] = "F16"
    begin, end = header[files.tensor]["data_offsets"]
    header[files.tensor]["data_offsets"] = [begin - 64, end - 64]  # before the data
    text = json.dumps(header).encode()
    negative = tmp_path / "negative.safetensors"
    negative.write_bytes(len(text).to_bytes(8, "little") + text + raw[8 + length :])
    for weights in (bf16, damaged, cut, negative):
        assert model_mod._table_file(dataclasses.replace(files, weights=weights)) is None


def test_a_model_file_cut_short_under_a_running_model_is_an_error_not_a_crash(
    tmp_path: Path,
) -> None:
    """The shipped model's file truncated while a model reads from it (a package upgrade gone
    wrong): the rows past the cut give a ModelError, never a SIGBUS (a map of the file would
    kill the process on the first such row); the rows before it still read."""
    import dataclasses

    from engram_ls.core.semantic import model as model_mod

    files = model_files(None)
    copy = tmp_path / "weights.safetensors"
    copy.write_bytes(files.weights.read_bytes())
    model = model_mod.StaticModel(dataclasses.replace(files, weights=copy))
    rows = model.table.shape[0]
    before = model.table[np.array([0, rows - 1])]
    with open(copy, "r+b") as f:
        f.truncate(copy.stat().st_size // 2)
    assert np.array_equal(model.table[np.array([0])], before[:1])
    with pytest.raises(model_mod.ModelError, match="changed while in use"):
        model.table[np.array([rows - 1])]
    with pytest.raises(model_mod.ModelError), model.bulk():
        pass


def test_a_query_is_answered_by_meaning_where_text_finds_nothing(engram: Engram) -> None:
    query = "how do I repair a flat tire on my bicycle"
    assert engram.search({"query": query}).total == 0
    res = engram.search({"query": query, "mode": "semantic", "limit": 3})
    assert _paths(res)[0] == "bikes/fixing-a-puncture.md"
    top = res.results[0]
    assert top.line == 5  # the chunk that matched starts there (its short sections merged)
    assert "Tyre levers" in top.snippet or "inner tube" in top.snippet
    for h in res.results:
        assert math.isfinite(h.score) and 0.0 <= h.score <= 1.0
    assert [h.score for h in res.results] == sorted((h.score for h in res.results), reverse=True)
    assert res.index.served_by == "index" and res.index.semantic == "ready"
    assert engram.search({"query": query}).index.semantic is None  # said by meaning only
    hybrid = engram.search({"query": query, "mode": "hybrid", "limit": 3})
    assert _paths(hybrid)[0] == "bikes/fixing-a-puncture.md"
    assert all(0.0 <= h.score <= 1.0 for h in hybrid.results)


def test_hybrid_keeps_what_the_words_find(engram: Engram) -> None:
    res = engram.search({"query": "passport", "mode": "hybrid"})
    assert _paths(res)[0] == "travel/packing.md"
    assert res.results[0].score == pytest.approx(1.0)  # first in both rankings


@pytest.mark.parametrize(
    ("filters", "allowed"),
    [
        pytest.param({"tags": ["garden"]}, {"garden/tomatoes.md"}, id="one-tag"),
        pytest.param(
            {"tags": ["-bikes", "-finance"]},
            set(NOTES) - {"bikes/fixing-a-puncture.md", "money/taxes.md"},
            id="excluded",
        ),
        pytest.param(
            {"date_from": "2024-01-01"},
            {"bikes/fixing-a-puncture.md", "money/taxes.md", "garden/tomatoes.md"},
            id="dates",
        ),
        pytest.param({"path": "kitchen"}, {"kitchen/sourdough.md"}, id="folder"),
        pytest.param({"path": "*/t*.md"}, {"money/taxes.md", "garden/tomatoes.md"}, id="glob"),
        pytest.param({"tags": ["nosuchtopic"]}, set(), id="no-note"),
        pytest.param(
            {"where": ["created_at >= 2024-01-01"]},
            {"bikes/fixing-a-puncture.md", "money/taxes.md", "garden/tomatoes.md"},
            id="where",
        ),
        pytest.param(
            {"where": ["created_at < 2024-01-01"], "tags": ["-travel"]},
            {"kitchen/sourdough.md"},
            id="where-and-tag",
        ),
        pytest.param(
            {"where": ["created_at >= 2023-01-01"], "date_to": "2024-03-31"},
            {"kitchen/sourdough.md", "bikes/fixing-a-puncture.md"},
            id="where-and-dates",
        ),
        pytest.param(
            {"where": ["created_at >= 2024-01-01"], "path": "*/t*.md"},
            {"money/taxes.md", "garden/tomatoes.md"},
            id="where-and-glob",
        ),
        pytest.param(
            {"path": "garden", "tags": ["garden"]}, {"garden/tomatoes.md"}, id="folder-tag"
        ),
        pytest.param(
            {"path": "*/t*.md", "tags": ["-finance"]}, {"garden/tomatoes.md"}, id="glob-and-tag"
        ),
        pytest.param({"where": ["topics contains travel"]}, {"travel/packing.md"}, id="where-list"),
        pytest.param({"where": ["no_such_property exists"]}, set(), id="where-no-note"),
    ],
)
@pytest.mark.parametrize("way", ["listed", "checked"])
@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_filters_never_leak(
    engram: Engram,
    mode: str,
    filters: dict,
    allowed: set,
    way: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both ways a filter is applied: its notes listed first (only their chunks ranked), and
    for a broad filter (more than ``LIST_MOST`` notes: here every filter) the best chunks of
    all checked until enough pass. In this small vault every chunk is within the depth looked
    at, so a filtered search ranks the passing notes exactly as the unfiltered one does."""
    if way == "checked":
        monkeypatch.setattr(semantic_path, "LIST_MOST", 0)
    query = "how do I repair a flat tire on my bicycle"
    res = engram.search({"query": query, "mode": mode, **filters})
    assert set(_paths(res)) <= allowed
    if allowed:
        assert res.results, "a note that passes is found, however far its meaning"
    if mode == "semantic":
        everything = engram.search({"query": query, "mode": mode, "limit": 200})
        assert _paths(res) == [p for p in _paths(everything) if p in allowed]


@pytest.mark.parametrize(
    "extra",
    [{}, {"date_from": "2020-01-01", "date_to": "2024-12-31"}],
    ids=["alone", "with-dates"],
)
def test_a_where_filter_is_answered_from_its_bitmap(
    engram: Engram, extra: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``where`` conditions are read into a bitmap to resolve the filter: the chunks ranked are
    those of its notes, however many pass, and dates from memory narrow them further (never
    the best chunks of all checked in SQL: ~29 ms for 22,000 passing notes at 100,000, against
    ~6). A rest of the filter that is neither in memory nor listed is still checked in SQL,
    among the chunks of the notes the conditions pass (``test_filters_never_leak``)."""
    _days_in_memory(engram)
    monkeypatch.setattr(semantic_path, "LIST_MOST", 0)  # every filter is broad
    monkeypatch.setattr(semantic_path.SemanticSearcher, "_checked", None)  # called: TypeError
    query = "how do I repair a flat tire"
    filters = {"where": ["created_at >= 2023-01-01"], **extra}
    allowed = set(_paths(engram.search({"limit": 50, **filters})))  # listed by the text path
    everything = _paths(engram.search({"query": query, "mode": "semantic", "limit": 200}))
    got = _paths(engram.search({"query": query, "mode": "semantic", "limit": 50, **filters}))
    assert got and got == [p for p in everything if p in allowed]
    assert "travel/packing.md" not in allowed  # 2022: the conditions leave a note out


@pytest.mark.parametrize(
    "extra",
    [
        {"tags": ["-bikes"]},
        {"tags": ["-bikes", "-finance"]},
        {"tags": ["-bikes"], "where": ["created_at >= 2023-01-01"]},
        {"tags": ["-bikes"], "date_from": "2023-01-01"},
    ],
    ids=["one", "two", "with-where", "with-dates"],
)
def test_topics_left_out_are_taken_from_their_notes(
    engram: Engram, extra: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A topic left out passes most notes: its own notes (from memory, else listed) are taken
    away from the chunks ranked, never the best chunks of all checked in SQL (22-25 ms at
    100,000 notes, against ~6-9); the ranking is the unfiltered one, filtered."""
    _days_in_memory(engram)
    monkeypatch.setattr(semantic_path, "LIST_MOST", 0)  # every filter is broad
    monkeypatch.setattr(semantic_path.SemanticSearcher, "_checked", None)  # called: TypeError
    query = "how do I repair a flat tire on my bicycle"
    req = {"query": query, "mode": "semantic", "limit": 50, **extra}
    allowed = set(_paths(engram.search({"limit": 50, **extra})))  # listed by the text path
    everything = _paths(engram.search({"query": query, "mode": "semantic", "limit": 200}))
    assert _paths(engram.search(req)) == [p for p in everything if p in allowed]
    assert "bikes/fixing-a-puncture.md" not in allowed


@pytest.mark.parametrize(
    "extra",
    [
        {"path": "*/t*.md"},
        {"path": "garden", "tags": ["garden"]},
        {"path": "*/t*.md", "tags": ["-bikes"]},
        {"path": "*/*.md", "date_from": "2024-01-01"},
        {"path": "*/*.md", "where": ["created_at >= 2024-01-01"]},
    ],
    ids=["glob", "folder-and-tag", "glob-and-topic-left-out", "glob-and-dates", "glob-and-where"],
)
def test_a_path_filter_is_answered_from_its_notes(
    engram: Engram, extra: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder or a glob is a mask of its notes, read once an index state (a glob tests every
    path: 64 ms at 100,000 notes; a folder with a tag, listed together in SQL, 28 ms): the
    chunks ranked are those of its notes, with what the rest of the filter gives from memory,
    never the best chunks of all checked in SQL; the ranking is the unfiltered one, filtered."""
    from engram_ls.core.index import topic_sets
    from engram_ls.core.search import filters as filters_mod

    monkeypatch.setattr(topic_sets, "MIN_NOTES", 1)  # every topic counts as large
    _days_in_memory(engram)
    query = "how do I repair a flat tire on my bicycle"
    req = {"query": query, "mode": "semantic", "limit": 50, **extra}
    for tag in extra.get("tags", []):
        _topic_in_memory(engram, tag.lstrip("-"), req)
    allowed = set(_paths(engram.search({"limit": 50, **extra})))  # listed by the text path
    everything = _paths(engram.search({"query": query, "mode": "semantic", "limit": 200}))
    assert _paths(engram.search(req)) == [p for p in everything if p in allowed]
    monkeypatch.setattr(semantic_path, "LIST_MOST", 0)  # every filter is broad
    monkeypatch.setattr(semantic_path.SemanticSearcher, "_checked", None)  # called: TypeError
    monkeypatch.setattr(filters_mod, "_glob_match", None)  # a glob tested again: TypeError
    assert _paths(engram.search(req)) == [p for p in everything if p in allowed]


@pytest.mark.parametrize("way", ["listed", "checked"])
def test_a_page_of_notes_whose_chunks_are_near_together_is_full(
    tmp_path: Path, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Notes of several sections each, all near the query: a filtered page holds as many
    notes as asked for (the candidates are counted in notes, two chunks a note at most, not in
    chunks), both when the filter's notes are listed and when the best are checked."""

    def section(i: int, j: int) -> str:  # a note's sections alike, less like the query further on
        return f"## Part {j}\nPatch the inner tube of the bicycle tyre. {'Tomato soil. ' * i}\n\n"

    notes = {
        f"n/{i:02d}.md": f"---\ntopics: [{'bikes' if i % 3 else 'other'}]\n---\n# Note {i}\n\n"
        + "".join(section(i, j) for j in range(4))
        for i in range(60)
    }
    _write(tmp_path / "v", notes)
    e = _engram(tmp_path / "v", tmp_path / "index.sqlite")
    e.embed()
    monkeypatch.setattr(semantic_path, "CANDIDATES", 4)
    monkeypatch.setattr(semantic_path, "NEED_MARGIN", 0)
    if way == "checked":
        monkeypatch.setattr(semantic_path, "LIST_MOST", 0)
    req = {"query": "fix a flat bicycle tyre", "mode": "semantic", "tags": ["bikes"], "limit": 20}
    res = e.search(req)
    assert len(res.results) == 20 and len(set(_paths(res))) == 20
    assert all(int(p[2:4]) % 3 for p in _paths(res))
    e.close()


def test_the_checked_way_takes_candidates_as_deep_as_the_filter_s_own_notes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broad filter not yet in memory (the checked way) takes its candidates as deep among
    all chunks as its own notes' mask would take them among theirs, scaled by the share of
    notes that pass: the same page as the mask's, full. Taken at the depth of an unfiltered
    search, a topic on a tenth of the notes had a tenth of the candidates: a short page."""
    from engram_ls.core.index import topic_sets
    from engram_ls.core.semantic import vectors

    words = ["garden", "bicycle", "harbour", "violin", "kettle"]
    words += ["orbit", "ledger", "canyon", "tulip", "anchor"]
    notes = {}
    for i in range(300):
        topic = "rare" if i % 10 == 0 else "common"
        body = " ".join(words[(i * 7 + j) % len(words)] for j in range(5 + i % 4))
        notes[f"n{i:03d}.md"] = f"---\ntopics: [{topic}]\n---\n# Note {i}\n\n{body}\n"
    root = tmp_path / "many"
    _write(root, notes)
    e = _engram(root, tmp_path / "many.sqlite")
    e.embed()
    try:
        monkeypatch.setattr(semantic_path, "DEPTH", 24)  # a deep table, as at 100,000 notes
        monkeypatch.setattr(semantic_path, "CANDIDATES", 6)
        monkeypatch.setattr(semantic_path, "NEED_MARGIN", 0)
        monkeypatch.setattr(vectors, "SECOND", 12)
        monkeypatch.setattr(semantic_path, "LIST_MOST", 0)  # broad: the checked way
        monkeypatch.setattr(topic_sets, "MIN_NOTES", 10**9)  # never read into memory
        req = {"query": "violin kettle orbit", "mode": "semantic", "tags": ["rare"], "limit": 6}
        checked = _paths(e.search(req))
        monkeypatch.setattr(topic_sets, "MIN_NOTES", 1)
        _topic_in_memory(e, "rare", req)
        monkeypatch.setattr(semantic_path.SemanticSearcher, "_checked", None)  # TypeError
        masked = _paths(e.search(req))
        assert len(masked) == 6 and all(int(p[1:4]) % 10 == 0 for p in masked)
        assert checked == masked
    finally:
        e.close()


def test_a_topic_broader_than_a_list_is_not_listed_to_find_out(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A filter of one topic whose size (known from the topics table) is above ``LIST_MOST``
    goes the checked way at once: its notes are neither listed nor counted in SQL (at 100,000
    notes, listing 20,001 of a topic's notes to find it broad cost the first search ~4 ms)."""
    from engram_ls.core.search import filters as filters_mod

    monkeypatch.setattr(semantic_path, "LIST_MOST", 0)  # every topic is broad
    query = "how do I repair a flat tire on my bicycle"
    everything = _paths(engram.search({"query": query, "mode": "semantic", "limit": 200}))
    monkeypatch.setattr(filters_mod.Filters, "ids_query", None)  # listed or counted: TypeError
    got = _paths(engram.search({"query": query, "mode": "semantic", "tags": ["bikes"]}))
    assert got and got == [p for p in everything if p.startswith("bikes/")]


def test_the_checked_way_checks_only_what_no_mask_holds(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broad rest of a filter (a topic neither in memory nor listed) is checked in SQL among
    the chunks of the notes the path's mask passes: the glob is not tested again on each
    candidate, and the ranking is still the unfiltered one, filtered."""
    from engram_ls.core.search import filters as filters_mod

    monkeypatch.setattr(semantic_path, "LIST_MOST", 0)  # every filter is broad
    query = "how do I repair a flat tire on my bicycle"
    req = {"query": query, "mode": "semantic", "limit": 50, "path": "*/t*.md", "tags": ["garden"]}
    engram.search(req)  # the glob's notes read once, for this index state
    monkeypatch.setattr(filters_mod, "_glob_match", None)  # a glob tested again: TypeError
    everything = _paths(engram.search({"query": query, "mode": "semantic", "limit": 200}))
    assert _paths(engram.search(req)) == [p for p in everything if p == "garden/tomatoes.md"]


def test_a_topic_left_out_is_taken_from_its_set_in_memory(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large topic left out, once its notes are in memory, is taken from there."""
    from engram_ls.core.index import topic_sets

    monkeypatch.setattr(topic_sets, "MIN_NOTES", 1)  # every topic counts as large
    req = {"query": "how do I repair a flat tire", "mode": "semantic", "tags": ["-bikes"]}
    _topic_in_memory(engram, "bikes", req)
    monkeypatch.setattr(semantic_path, "LIST_MOST", 0)
    monkeypatch.setattr(semantic_path.SemanticSearcher, "_checked", None)  # called: TypeError
    monkeypatch.setattr(topic_sets, "read_topic", None)  # nor read again: TypeError
    everything = _paths(engram.search({**req, "tags": [], "limit": 200}))
    assert _paths(engram.search(req)) == [p for p in everything if not p.startswith("bikes/")]


def _topic_in_memory(e: Engram, key: str, req: dict) -> None:
    """Search with ``req`` until the notes of topic ``key`` are in memory (read in the
    background, wanted by the searches that use the topic)."""
    with e.health.reading() as r:
        topic = r.conn.execute("SELECT id FROM topics WHERE key = ?", (key,)).fetchone()[0]
    deadline = time.monotonic() + 10
    while True:
        with e.health.reading() as r:
            if e.index.topic_notes.current(r.conn, topic) is not None:
                return
        assert time.monotonic() < deadline, "the topic's notes were never read"
        e.search(req)
        time.sleep(0.05)


def _days_in_memory(e: Engram) -> None:
    """Search with a date filter until the notes' dates are read into memory (in the
    background, from the second such search on)."""
    deadline = time.monotonic() + 10
    dates = {"date_from": "2000-01-01", "date_to": "2099-12-31"}
    while time.monotonic() < deadline:
        e.search({"query": "tires", "mode": "semantic", **dates})
        with e.health.reading() as r:
            if e.semantic.days().current(r.conn, 0) is not None:
                return
        time.sleep(0.05)
    raise AssertionError("the notes' dates were never read into memory")


@pytest.mark.parametrize(
    ("lo", "hi"),
    [
        ("2024-03-02", "2024-04-10"),  # both ends on a note's date: both in
        ("2024-03-03", "2024-04-09"),  # just inside: none of them
        ("2000-01-01", "2023-11-20"),
        ("2024-05-02", "2099-12-31"),  # after every note
        ("2024-04-10", "2024-04-10"),
    ],
)
@pytest.mark.parametrize("tags", [[], ["-bikes"]])
def test_dates_from_memory_pass_the_notes_sql_passes(
    engram: Engram, lo: str, hi: str, tags: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A date filter answered from the notes' dates in memory passes exactly the notes that
    the SQL condition passes, ends included (a topic to leave out is then checked in SQL)."""
    req = {"query": "how do I repair a flat tire", "mode": "semantic", "limit": 50}
    req |= {"date_from": lo, "date_to": hi, "tags": tags}
    _days_in_memory(engram)
    from_memory = _paths(engram.search(req))
    monkeypatch.setattr(semantic_path.SemanticSearcher, "_dated", lambda self, f: None)
    assert from_memory == _paths(engram.search(req))


def test_a_date_changed_is_filtered_by_at_once(engram: Engram, vault: Path) -> None:
    """The dates in memory are of one index state: after an edit moves a note's date, the next
    search passes it by its new date, then the dates are read again."""
    req = {"query": "bicycle tire", "mode": "semantic", "date_from": "2022-01-01"}
    req |= {"date_to": "2022-12-31"}
    _days_in_memory(engram)
    assert _paths(engram.search(req)) == ["travel/packing.md"]
    note = vault / "bikes/fixing-a-puncture.md"
    note.write_text(note.read_text().replace("created_at: 2024-03-02", "created_at: 2022-03-02"))
    engram.sync()
    assert set(_paths(engram.search(req))) == {"travel/packing.md", "bikes/fixing-a-puncture.md"}
    _days_in_memory(engram)
    assert set(_paths(engram.search(req))) == {"travel/packing.md", "bikes/fixing-a-puncture.md"}


def test_a_server_s_pass_leaves_the_notes_dates_in_memory(engram: Engram, vault: Path) -> None:
    """After each embedding pass the servers prepare search by meaning (``prepare_semantic``):
    the notes' dates are then in memory for that state of the index, so that even the first
    search with dates is answered from them, and read again after a change."""

    def in_memory() -> bool:
        with engram.health.reading() as r:
            return engram.semantic.days().current(r.conn, 0) is not None

    assert not in_memory()
    engram.prepare_semantic()
    assert in_memory()
    note = vault / "bikes/fixing-a-puncture.md"
    note.write_text(note.read_text().replace("created_at: 2024-03-02", "created_at: 2022-03-02"))
    engram.sync()
    assert not in_memory()
    engram.embed()
    engram.prepare_semantic()
    assert in_memory()
    req = {"query": "bicycle tire", "mode": "semantic", "date_from": "2022-01-01"}
    res = engram.search(req | {"date_to": "2022-12-31"})
    assert set(_paths(res)) == {"travel/packing.md", "bikes/fixing-a-puncture.md"}


def test_a_server_s_pass_reads_again_the_topic_sets_searches_used(
    engram: Engram, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large topic's notes kept for searches are of one index state: after a change, the
    servers' pass reads again those that searches used, so that the next search with that
    topic is answered from memory at once, with the change in it."""
    from engram_ls.core.index import topic_sets

    monkeypatch.setattr(topic_sets, "MIN_NOTES", 1)  # every topic counts as large
    cache = engram.index.topic_notes
    with engram.health.reading() as r:
        garden = r.conn.execute("SELECT id FROM topics WHERE key = 'garden'").fetchone()[0]

    def current() -> frozenset[int] | None:
        with engram.health.reading() as r:
            found = cache.current(r.conn, garden)
        return found.ids if found is not None else None

    req = {"query": "bicycle tire", "mode": "semantic", "tags": ["garden"]}
    deadline = time.monotonic() + 10
    while current() is None:  # read in the background from the second search
        assert time.monotonic() < deadline, "the topic's notes were never read"
        engram.search(req)
        time.sleep(0.05)
    note = vault / "bikes/fixing-a-puncture.md"
    note.write_text(note.read_text().replace("topics: [bikes, repair]", "topics: [garden]"))
    engram.sync()
    assert current() is None
    engram.embed()
    engram.prepare_semantic()
    assert current() is not None and len(current() or ()) == 2
    assert set(_paths(engram.search(req))) == {"garden/tomatoes.md", "bikes/fixing-a-puncture.md"}


def test_a_search_says_when_notes_wait_to_be_embedded(vault: Path, tmp_path: Path) -> None:
    e = _engram(vault, tmp_path / "index.sqlite")
    e.embed()
    _write(vault, {f"more/n{i}.md": f"# Note {i}\n\nText number {i}.\n" for i in range(100)})
    e.sync()  # 100 new notes: more than a search embeds before it reads
    res = e.search({"query": "repair a flat tire on my bicycle", "mode": "semantic"})
    assert res.index.semantic == "pending"
    e.embed()
    res = e.search({"query": "repair a flat tire on my bicycle", "mode": "semantic"})
    assert res.index.semantic == "ready"
    e.close()


def test_an_edit_re_embeds_only_what_changed(vault: Path, tmp_path: Path) -> None:
    long_note = "# Long\n\n" + "\n\n".join(
        f"## Part {i}\n" + f"Paragraph {i} about sailing boats and wind. " * 25 for i in range(4)
    )
    _write(vault, {"sea/long.md": long_note})
    e = _engram(vault, tmp_path / "index.sqlite")
    first = e.embed()
    assert first.notes == len(NOTES) + 1
    assert first.embedded == first.chunks
    n_chunks = len(chunking.chunk_note(e.read_note("sea/long.md")))  # type: ignore[arg-type]
    assert n_chunks >= 3
    (vault / "sea/long.md").write_text(long_note.replace("Paragraph 2 about", "Paragraph 2 on"))
    e.sync()
    again = e.embed()
    assert (again.notes, again.embedded, again.reused) == (1, 1, n_chunks - 1)
    e.close()
    # A warm start of the unchanged vault embeds nothing, and does not even read a note.
    e = _engram(vault, tmp_path / "index.sqlite")
    assert e.embed().notes == 0
    # A renamed folder keeps its notes' rows: nothing to embed.
    os.rename(vault / "bikes", vault / "cycling")
    e.sync()
    moved = e.embed()
    assert moved.embedded == 0
    res = e.search({"query": "repair a flat tire on my bicycle", "mode": "semantic", "limit": 1})
    assert _paths(res) == ["cycling/fixing-a-puncture.md"]
    # A full rebuild re-makes the chunks from the vectors it has: no text is embedded again.
    e.sync(full=True)
    rebuilt = e.embed()
    assert rebuilt.notes == len(NOTES) + 1 and rebuilt.embedded == 0
    e.close()


def test_an_edit_is_found_by_the_next_search(engram: Engram, vault: Path) -> None:
    """A search by meaning embeds a few changed notes before it reads: no waiting."""
    (vault / "garden/tomatoes.md").write_text(
        "# Tomatoes\n\nA colony of bees lives in the hive at the end of the garden;"
        " honey in June.\n"
    )
    engram.sync()
    res = engram.search({"query": "beekeeping and collecting honey", "mode": "semantic"})
    assert _paths(res)[0] == "garden/tomatoes.md"


def test_a_deleted_note_leaves_nothing_behind(engram: Engram, vault: Path) -> None:
    """Note ids are reused: the next note added must not inherit the deleted note's chunks."""
    ids = dict(engram.index.conn().execute("SELECT path, id FROM notes").fetchall())
    last = max(ids, key=ids.get)
    engram.search({"query": "anything", "mode": "semantic"})  # the code table is read now
    (vault / last).unlink()
    engram.sync()
    _write(vault, {"new/empty-ish.md": "# Shopping\n\nMilk and eggs.\n"})
    engram.sync()
    conn = engram.index.conn()
    new_id = conn.execute("SELECT id FROM notes WHERE path = 'new/empty-ish.md'").fetchone()[0]
    assert new_id == ids[last]  # the id was given again
    snippets = [
        r[0] for r in conn.execute("SELECT snippet FROM chunks WHERE note_id = ?", (new_id,))
    ]
    assert all("Milk" in s for s in snippets)
    # Before the new note is embedded, the deleted note's chunks (under its reused id) are
    # never found for it: a search by the deleted note's words does not give the new note.
    deleted = NOTES[last].split("\n---\n", 1)[1]
    engram.semantic.synced = engram.semantic._now()  # no catch-up: the table as it was
    res = engram.search({"query": deleted[:200], "mode": "semantic"})
    assert "new/empty-ish.md" not in _paths(res)
    engram.embed()
    assert engram.status().semantic.embedded == len(NOTES)


def test_odd_notes_and_queries(vault: Path, tmp_path: Path) -> None:
    _write(
        vault,
        {
            "odd/empty.md": "",
            "odd/emoji.md": "# 🚲\n\n🚲🚲🚲 🔧\n",
            "odd/german.md": "# Fahrrad\n\nWie man einen platten Reifen am Fahrrad flickt.\n",
            "odd/japanese.md": "# 自転車\n\n自転車のパンクを直す方法。\n",
            "odd/frontmatter-only.md": "---\ntopics: [x]\n---\n",
        },
    )
    (vault / "odd/huge.md").write_bytes(b"# Huge\n\n" + b"sailing boats and wind. " * 2_200_000)
    e = _engram(vault, tmp_path / "index.sqlite")
    report = e.embed()
    assert report.notes == len(NOTES) + 6
    conn = e.index.conn()
    huge = conn.execute(
        "SELECT count(*) FROM chunks c JOIN notes n ON n.id = c.note_id"
        " WHERE n.path = 'odd/huge.md'"
    ).fetchone()[0]
    assert huge == chunking.MAX_CHUNKS
    for query in ("🙂🙂", "the of and to", "自転車", "Reifen flicken", "x"):
        for mode in ("semantic", "hybrid"):
            res = e.search({"query": query, "mode": mode})
            assert all(0.0 <= h.score <= 1.0 for h in res.results), (query, mode)
    assert _paths(e.search({"query": "🚲", "mode": "semantic"}))[0] == "odd/emoji.md"
    assert e.search({"query": "the of and to", "mode": "semantic"}).total > 0
    e.close()


def test_an_empty_query_with_a_filter_is_a_listing(engram: Engram) -> None:
    res = engram.search({"query": "", "mode": "semantic", "tags": ["travel"]})
    assert _paths(res) == ["travel/packing.md"]


def test_a_model_that_cannot_load_fails_semantic_only(vault: Path, tmp_path: Path) -> None:
    (vault / ".engram").mkdir()
    (vault / ".engram/config.yaml").write_text("semantic:\n  model: models/none-here\n")
    config, warnings = load_config(vault)
    assert not warnings
    e = _engram(vault, tmp_path / "index.sqlite", config)
    with pytest.raises(UnsupportedMode, match=r"could not be loaded.*model\.safetensors"):
        e.search({"query": "flat tire", "mode": "semantic"})
    st = e.status()
    assert st.semantic.state == "failed" and "model.safetensors" in st.semantic.error
    assert st.capabilities == {"semantic": False, "model": None, "dims": None}
    assert e.search({"query": "patch kit"}).total == 1  # the other modes keep working
    e.close()


def test_semantic_turned_off_says_so(vault: Path, tmp_path: Path) -> None:
    config = EngramConfig.model_validate({"semantic": {"enabled": False}})
    e = _engram(vault, tmp_path / "index.sqlite", config)
    with pytest.raises(UnsupportedMode, match=r"semantic\.enabled") as info:
        e.search({"query": "flat tire", "mode": "hybrid"})
    assert info.value.code == "ENGRAM_UNSUPPORTED_MODE"
    assert "pip install" not in info.value.message  # installed, only turned off
    assert e.status().capabilities["semantic"] is False
    e.close()


def test_a_model2vec_folder_is_read_and_replaces_the_vectors(vault: Path, tmp_path: Path) -> None:
    """A model2vec folder (``model.safetensors`` with ``embeddings``, ``tokenizer.json``) made
    from the default model's own numbers gives the same vectors under another key; switching
    to it re-makes every chunk."""
    from safetensors.numpy import save_file

    files = model_files(None)
    default = load_model(None)
    folder = vault / "models" / "my-static"
    folder.mkdir(parents=True)
    save_file({"embeddings": default.table.astype(np.float16)}, str(folder / "model.safetensors"))
    shutil.copy(files.tokenizer, folder / "tokenizer.json")
    (folder / "config.json").write_text(json.dumps({"normalize": True}))
    mine = load_model("models/my-static", vault)
    assert mine.key != default.key and mine.dims == 256
    assert np.allclose(mine.embed(["a flat tyre"]), default.embed(["a flat tyre"]), atol=1e-6)
    index = tmp_path / "index.sqlite"
    e = _engram(vault, index)
    e.embed()
    e.close()
    config = EngramConfig.model_validate({"semantic": {"model": "models/my-static"}})
    e = _engram(vault, index, config)
    report = e.embed()
    assert report.notes == len(NOTES) and report.embedded > 0  # another model: new vectors
    res = e.search({"query": "repair a flat tire on my bicycle", "mode": "semantic"})
    assert _paths(res)[0] == "bikes/fixing-a-puncture.md"
    assert e.status().semantic.model == "my-static"
    e.close()


_CHILD = """
import sys
from collections.abc import Callable
from pathlib import Path
from engram_ls.core.service import Engram
e = Engram(Path(sys.argv[1]), index_path=Path(sys.argv[2]))
e.open()
e.sync()
print("synced", flush=True)
e.embed(progress=lambda done, total: print(done, total, flush=True))
print("finished", flush=True)
"""


def _semantic_rows(index: Path) -> tuple[list[tuple], list[tuple], list[tuple]]:
    import sqlite3

    conn = sqlite3.connect(index)
    try:
        chunks = conn.execute(
            "SELECT n.path, c.line, c.key, c.code, c.snippet FROM chunks c"
            " JOIN notes n ON n.id = c.note_id ORDER BY n.path, c.id"
        ).fetchall()
        vectors = conn.execute(
            "SELECT DISTINCT c.key, v.vec FROM chunks c JOIN chunk_vectors v ON v.id = c.id"
            " ORDER BY 1"
        ).fetchall()
        embedded = conn.execute(
            "SELECT n.path, e.hash FROM embedded e JOIN notes n ON n.id = e.note_id ORDER BY 1"
        ).fetchall()
    finally:
        conn.close()
    return chunks, vectors, embedded


@pytest.mark.slow
def test_sigkill_during_embedding_then_resume_equals_a_fresh_build(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    import signal
    import subprocess
    import sys

    root = generated(2000)
    index = tmp_path / "killed.sqlite"
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), str(index)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    done = 0
    for line in proc.stdout:
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            done = int(parts[0])
            if done >= 256:  # several batches committed, many to go
                proc.send_signal(signal.SIGKILL)
                break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the child was killed while embedding"
    assert 256 <= done < 2000
    resumed = Engram(root, index_path=index)
    resumed.open()
    resumed.sync()
    report = resumed.embed()
    assert 0 < report.notes <= 2000 - done  # it went on from where it was killed
    resumed.close()
    fresh_index = tmp_path / "fresh.sqlite"
    fresh = Engram(root, index_path=fresh_index)
    fresh.open()
    fresh.sync()
    assert fresh.embed().notes == 2000
    fresh.close()
    assert _semantic_rows(index) == _semantic_rows(fresh_index)


def test_searches_while_notes_are_embedded_see_one_state(vault: Path, tmp_path: Path) -> None:
    """The code table is swapped whole: searches running while passes write chunks never
    fail, and their filters hold."""
    import threading

    e = _engram(vault, tmp_path / "index.sqlite")
    e.embed()
    errors: list[BaseException] = []
    done = threading.Event()

    def writer() -> None:
        try:
            for i in range(5):
                _write(
                    vault, {f"more/b{i}-{j}.md": f"# B {i} {j}\n\nbread {j}\n" for j in range(20)}
                )
                e.sync()
                e.embed()
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            done.set()

    t = threading.Thread(target=writer)
    t.start()
    searches = 0
    while not done.is_set() or searches < 20:
        res = e.search({"query": "sourdough bread", "mode": "semantic", "tags": ["cooking"]})
        assert _paths(res) == ["kitchen/sourdough.md"]
        searches += 1
    t.join()
    assert not errors
    e.close()


def test_a_model2vec_folder_with_a_mapping_and_weights(vault: Path, tmp_path: Path) -> None:
    """Tokens sharing rows (``mapping``) with a weight each: the vector of a text is the mean
    of its tokens' weighted rows; a mapping naming rows the model lacks is a load error."""
    from safetensors.numpy import save_file

    files = model_files(None)
    default = load_model(None)
    table = default.table.astype(np.float32)
    rows = table[:500].copy()
    mapping = (np.arange(len(table)) % 500).astype(np.int32)
    weights = np.linspace(0.5, 1.5, len(table)).astype(np.float32)
    folder = vault / "models" / "quantized"
    folder.mkdir(parents=True)
    save_file(
        {"embeddings": rows, "mapping": mapping, "weights": weights},
        str(folder / "model.safetensors"),
    )
    shutil.copy(files.tokenizer, folder / "tokenizer.json")
    model = load_model("models/quantized", vault)
    ids = np.asarray(model.tokenizer.encode("a flat tyre", add_special_tokens=False).ids)
    want = (rows[mapping[ids]] * weights[ids][:, None]).mean(axis=0)
    want /= np.linalg.norm(want)
    assert np.allclose(model.embed(["a flat tyre"])[0], want, atol=1e-3)
    config = EngramConfig.model_validate({"semantic": {"model": "models/quantized"}})
    e = _engram(vault, tmp_path / "index.sqlite", config)
    assert e.embed().notes == len(NOTES)
    assert e.search({"query": "bicycle", "mode": "semantic"}).results
    e.close()
    bad = vault / "models" / "bad"
    bad.mkdir()
    save_file({"embeddings": rows, "mapping": mapping + 1000}, str(bad / "model.safetensors"))
    shutil.copy(files.tokenizer, bad / "tokenizer.json")
    config = EngramConfig.model_validate({"semantic": {"model": "models/bad"}})
    e = _engram(vault, tmp_path / "bad.sqlite", config)
    with pytest.raises(UnsupportedMode, match="names rows the model does not have"):
        e.search({"query": "bicycle", "mode": "semantic"})
    assert e.status().semantic.state == "failed"
    e.close()


def test_nearest_chunks_by_hamming_distance_among_some_notes() -> None:
    """The in-memory table on its own: distances up to 256 (all bits differ), ties in table
    order, and the chunks of given notes only (the path of a narrow filter)."""
    from engram_ls.core.semantic.vectors import Codes, CodeTable

    words = np.zeros((4, 6), dtype=np.uint64)
    words[:, 1] = np.iinfo(np.uint64).max  # all 256 bits differ from the zero code
    words[0, 2] = 1  # one bit
    words[0, 3] = 3  # two bits
    words[0, 4] = 1
    table = CodeTable()
    table.codes = Codes(
        np.arange(10, 16, dtype=np.int64), np.array([1, 2, 3, 4, 5, 6], np.int32), words
    )
    zero = bytes(32)
    assert table.distances(zero).tolist() == [0, 256, 1, 2, 1, 0]
    ids, notes = table.nearest(zero, 6)
    assert ids.tolist() == [10, 15, 12, 14, 13, 11]
    ids, notes = table.nearest(zero, 3, among=[2, 4, 6])
    assert notes.tolist() == [6, 4, 2] and ids.tolist() == [15, 13, 11]
    ids, _ = table.nearest(zero, 10, among=[])
    assert ids.tolist() == []


def test_the_closest_chunks_are_re_scored_by_the_query_s_values() -> None:
    """``closest`` re-scores the chunks nearest by Hamming distance with the query's own
    values against their bits as ±1: a chunk two bits further away but agreeing with the
    query's one large value ranks first, where the distance alone ranks it last."""
    from engram_ls.core.semantic.bits import code_of
    from engram_ls.core.semantic.vectors import Codes, CodeTable

    q = np.full(256, -0.01, dtype=np.float32)
    q[0] = 0.9
    q /= np.linalg.norm(q)
    near = np.zeros(256, dtype=np.float32) - 1  # every sign negative: differs from q at 0
    far = near.copy()
    far[[0, 1, 2]] = 1  # agrees at 0, differs at 1 and 2
    codes = [code_of(v[None, :])[0] for v in (near, far)]
    words = np.frombuffer(b"".join(codes), dtype=">u8").reshape(-1, 4).T.astype(np.uint64)
    table = CodeTable()
    table.codes = Codes(np.array([7, 8], np.int64), np.array([1, 2], np.int32), words)
    assert table.distances(code_of(q[None, :])[0]).tolist() == [1, 2]
    assert table.nearest(code_of(q[None, :])[0], 2)[0].tolist() == [7, 8]
    assert table.closest(q, 2, depth=2)[0].tolist() == [8, 7]
    assert table.closest(q, 1, depth=2)[0].tolist() == [8]
    assert table.closest(q, 2, depth=2, among=np.array([1]))[0].tolist() == [7]
    assert table.closest(q, 2, depth=2, among=np.zeros(0, np.int64))[0].tolist() == []
    topic = frozenset({2})  # a large topic's notes: their chunks' mask is kept for the set
    assert table.closest(q, 2, depth=2, among=topic)[0].tolist() == [8]
    assert table.closest(q, 2, depth=2, among=topic)[0].tolist() == [8]
    grown = np.concatenate([words, words[:, :1]], axis=1)  # the table moved on: a third chunk
    table.codes = Codes(np.array([7, 8, 9], np.int64), np.array([1, 2, 3], np.int32), grown)
    assert table.closest(q, 3, depth=3, among=frozenset({2, 3}))[0].tolist() == [8, 9]
    # two chunks a note at most, of k notes: chunk 9 (as near as 7) of note 2 comes after 7
    table.codes = Codes(np.array([7, 8, 9], np.int64), np.array([1, 2, 2], np.int32), grown)
    assert table.closest(q, 3, depth=3)[0].tolist() == [8, 7, 9]
    assert table.closest(q, 1, depth=3)[0].tolist() == [8, 9]
    assert table.closest(q, 3, depth=3, among=topic)[0].tolist() == [8, 9]
    grown = np.concatenate([words, words[:, :1], words[:, :1]], axis=1)
    table.codes = Codes(np.array([7, 8, 9, 10], np.int64), np.array([2, 2, 2, 1], np.int32), grown)
    assert table.closest(q, 2, depth=4)[0].tolist() == [8, 7, 10]  # 9: a third of note 2


@pytest.mark.parametrize("seed", range(4))
def test_a_note_gives_its_first_chunks_of_the_first_notes(seed: int) -> None:
    """``_per_note``: of a ranking of chunks by note, the places of the first ``most`` chunks of
    each of the first ``k`` notes, in order (against a loop over the ranking)."""
    from engram_ls.core.semantic.vectors import _per_note

    rng = np.random.default_rng(seed)
    for _ in range(50):
        notes = rng.integers(1, 40, int(rng.integers(1, 300))).astype(np.int32)
        k, most = int(rng.integers(1, 50)), int(rng.integers(1, 4))
        first: list[int] = list(dict.fromkeys(notes.tolist()))[:k]
        seen: dict[int, int] = {}
        want = []
        for place, note in enumerate(notes.tolist()):
            seen[note] = seen.get(note, 0) + 1
            if note in first and seen[note] <= most:
                want.append(place)
        assert _per_note(notes, k, most).tolist() == want


def test_an_index_of_short_codes_is_searched_alike_and_lengthened_once(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index written before the magnitude bits (codes of 32 bytes, no ``semantic_codes``):
    the table makes the bits from the stored vectors, so searches answer as on a new index;
    an embedding pass lengthens the codes from the vectors (no note embedded), a batch at a
    time, and a pass stopped midway is finished by the next."""
    from engram_ls.core.semantic import engine, store
    from engram_ls.core.semantic.bits import chunk_codes

    _write(
        vault,
        {f"more/{i}.md": f"# Note {i}\n\nWheels, gears and chains, part {i}.\n" for i in range(9)},
    )
    index = tmp_path / "index.sqlite"
    e = _engram(vault, index)
    e.embed()
    queries = ["fixing a bicycle tyre", "money and taxes", "bread dough"]
    want = [_paths(e.search({"query": q, "mode": "semantic"})) for q in queries]
    conn = e.index.conn()
    rows = conn.execute(
        "SELECT c.id, c.code, v.vec FROM chunks c JOIN chunk_vectors v ON v.id = c.id"
    ).fetchall()
    assert all(len(code) == 64 for _, code, _ in rows)
    from engram_ls.core.semantic.bits import from_blobs

    assert [bytes(c) for _, c, _ in rows] == chunk_codes(from_blobs([v for _, _, v in rows]))
    with conn:
        conn.execute("UPDATE chunks SET code = substr(code, 1, 32)")
        conn.execute("DELETE FROM meta WHERE key = ?", (store.CODES_KEY,))
    e.close()

    e = Engram(vault, index_path=index)
    e.open()
    assert [_paths(e.search({"query": q, "mode": "semantic"})) for q in queries] == want
    # the bits the table holds are those of the codes it would have written (a vault this
    # small is re-ranked whole by its vectors: the answers alone could not tell)
    codes = e.semantic.table().codes
    by_id = {int(i): bytes(c) for i, c, _ in rows}
    long = np.frombuffer(b"".join(by_id[int(i)] for i in codes.ids), dtype=">u8")
    assert codes.mags is not None
    assert (codes.mags == long.reshape(-1, 2, 4)[:, 1].T).all()
    conn = e.index.conn()
    assert not store.codes_long(conn)
    monkeypatch.setattr(engine, "CODES_BATCH", 4)
    stop = threading.Event()
    real = store.set_codes

    def set_then_stop(c: Any, codes: Any) -> None:
        real(c, codes)
        stop.set()

    monkeypatch.setattr(store, "set_codes", set_then_stop)
    report = e.embed(stop=stop)
    assert report.stopped and report.embedded == 0
    lengths = [n for (n,) in conn.execute("SELECT length(code) FROM chunks")]
    assert lengths.count(64) == 4 and not store.codes_long(conn)
    monkeypatch.setattr(store, "set_codes", real)
    report = e.embed()
    assert not report.stopped and report.embedded == 0
    assert {n for (n,) in conn.execute("SELECT length(code) FROM chunks")} == {64}
    assert store.codes_long(conn)
    rows = conn.execute(
        "SELECT c.code, v.vec FROM chunks c JOIN chunk_vectors v ON v.id = c.id"
    ).fetchall()
    assert [bytes(c) for c, _ in rows] == chunk_codes(from_blobs([v for _, v in rows]))
    e.close()
    e = Engram(vault, index_path=index)
    e.open()
    assert [_paths(e.search({"query": q, "mode": "semantic"})) for q in queries] == want
    e.close()


def test_magnitude_bits_mark_the_values_far_from_zero() -> None:
    """A magnitude bit is set where a value is further from 0 than ``BIG`` root mean squares
    of its row, in the space of the sign bits (a 64-dimension model's: its projection)."""
    from engram_ls.core.semantic import bits

    rng = np.random.default_rng(3)
    for dims in (256, 64):
        v = rng.standard_normal((40, dims)).astype(np.float32)
        signed = v if dims == 256 else v @ bits.directions(dims)
        rms = np.sqrt(np.mean(signed**2, axis=1, keepdims=True))
        want = np.abs(signed) > bits.BIG * rms
        got = np.unpackbits(bits.magnitude_of(v), axis=1).astype(bool)
        assert (got == want).all()
        assert 0.4 < want.mean() < 0.6  # about half, as the levels assume
    assert bits.magnitude_of(np.zeros((0, 256), np.float32)).shape == (0, 32)


def test_the_second_ranking_is_the_cosine_with_what_the_bits_stand_for() -> None:
    """``_levels`` (bits looked up a byte at a time) equals the cosine of the query with the
    vector of ±``SMALL_LEVEL``/±``BIG_LEVEL`` that each chunk's bits stand for; ``closest``
    ranks by it: a chunk whose large values agree with the query's comes first, where the
    signs alone rank it last."""
    from engram_ls.core.semantic import bits
    from engram_ls.core.semantic.bits import code_of, magnitude_of
    from engram_ls.core.semantic.vectors import Codes, CodeTable

    rng = np.random.default_rng(5)
    v = rng.standard_normal((300, 256)).astype(np.float32)
    words = np.frombuffer(b"".join(code_of(v)), dtype=">u8").reshape(-1, 4).T.astype(np.uint64)
    mags = magnitude_of(v).view(">u8").reshape(-1, 4).T.astype(np.uint64)
    q = rng.standard_normal(256).astype(np.float32)
    q /= np.linalg.norm(q)
    sign = np.where(v > 0, 1.0, -1.0)
    big = np.unpackbits(magnitude_of(v), axis=1).astype(bool)
    stand = sign * np.where(big, bits.BIG_LEVEL, bits.SMALL_LEVEL)
    want = stand @ q / np.linalg.norm(stand, axis=1)
    table = bits.byte_sums(q)
    got = bits.levels(words, mags, q, bits.scores(words, q), table)
    assert np.allclose(got, want, atol=1e-5)
    # two chunks with the same signs (q's but at one dimension): the one whose large values
    # are where q's are ranks first with its magnitudes, the other one without them
    base = np.where(q > 0, 1.0, -1.0).astype(np.float32)
    base[int(np.argmin(np.abs(q)))] *= -1
    large = np.abs(q) > np.median(np.abs(q))
    agree, disagree = base * np.where(large, 3.0, 0.3), base * np.where(large, 0.3, 3.0)
    two = np.stack([disagree, agree])
    w2 = np.frombuffer(b"".join(code_of(two)), dtype=">u8").reshape(-1, 4).T.astype(np.uint64)
    m2 = magnitude_of(two).view(">u8").reshape(-1, 4).T.astype(np.uint64)
    t = CodeTable()
    t.codes = Codes(np.array([1, 2], np.int64), np.array([1, 2], np.int32), w2, mags=m2)
    assert t.closest(q, 2, depth=2)[0].tolist() == [2, 1]
    t.codes = Codes(np.array([1, 2], np.int64), np.array([1, 2], np.int32), w2)
    assert t.closest(q, 2, depth=2)[0].tolist() == [1, 2]  # the signs tie: table order


def test_the_table_holds_the_magnitude_bits_of_the_stored_vectors(
    engram: Engram, vault: Path
) -> None:
    """The in-memory table's magnitude bits are those of each chunk's vector in the index."""
    from engram_ls.core.semantic import store
    from engram_ls.core.semantic.bits import magnitude_of

    def check() -> list[int]:
        engram.search({"query": "bicycle", "mode": "semantic"})
        codes = engram.semantic.table().codes
        live = codes.notes != 0
        assert codes.mags is not None and int(live.sum()) >= len(NOTES)
        found, vecs = store.vectors_in(engram.index.conn(), codes.ids[live].tolist())
        assert found == codes.ids[live].tolist()
        want = magnitude_of(vecs).view(">u8").reshape(-1, 4).T.astype(np.uint64)
        assert (codes.mags[:, live] == want).all()
        return codes.ids[live].tolist()

    before = check()
    # chunks written since the table was read are read with their bits
    note = vault / "garden/tomatoes.md"
    note.write_text(note.read_text() + "\n## Pests\nAphids and whitefly on the leaves.\n")
    engram.sync()
    engram.embed()
    assert max(check()) > max(before)


def test_embedding_reads_nothing_it_should_not(vault: Path, tmp_path: Path) -> None:
    """Notes swapped after indexing for a FIFO (would block a reader), for a symlink leaving
    the vault (would read outside it), and a note of bytes that are not UTF-8: the pass ends,
    reads nothing outside the vault, and a search by the outside file's words never finds it;
    a hostile glob scope is answered at once."""
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\nThe launch codes of the zeppelin fleet.\n")
    _write(vault, {"odd/fifo.md": "# Fifo\n\nplain\n", "odd/link.md": "# Link\n\nplain\n"})
    (vault / "odd/bytes.md").write_bytes(b"# Bytes\n\ncaf\xe9 \xff\xfe broken \xc3( text\n")
    e = _engram(vault, tmp_path / "index.sqlite")
    (vault / "odd/fifo.md").unlink()
    os.mkfifo(vault / "odd/fifo.md")
    (vault / "odd/link.md").unlink()
    (vault / "odd/link.md").symlink_to(outside)
    report = e.embed()  # returns: the FIFO is not opened for a blocking read
    assert report.notes == len(NOTES) + 1  # the two swapped notes are not embedded
    conn = e.index.conn()
    snippets = " ".join(r[0] for r in conn.execute("SELECT snippet FROM chunks"))
    assert "zeppelin" not in snippets and "broken" in snippets
    res = e.search({"query": "zeppelin launch codes", "mode": "semantic"})
    assert not {"odd/link.md", "odd/fifo.md"} & set(_paths(res))
    glob = "/".join(["**"] * 200) + "/*a*a*a*a*a*a*a*a*a*a*b.md"
    assert e.search({"query": "bicycle", "mode": "semantic", "path": glob}).total == 0
    e.close()


@pytest.mark.parametrize("seed", range(6))
def test_the_nearest_chunks_equal_a_full_sort_of_the_distances(seed: int) -> None:
    """The chunks taken by Hamming distance are the ``k`` nearest of a stable sort of every
    distance (ties in table order), whether the bound guessed from a sample holds or not:
    codes of few distinct bits (many ties), masks, a ``k`` near the table's size; and the
    re-scoring by table lookup equals the bits unpacked and multiplied."""
    from engram_ls.core.semantic import bits
    from engram_ls.core.semantic.bits import code_of
    from engram_ls.core.semantic.vectors import Codes, CodeTable

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60_000))
    flips = rng.random((n, 256)) < rng.choice([0.02, 0.2, 0.5])
    words = np.packbits(flips, axis=1).view(">u8").reshape(n, 4).T.astype(np.uint64)
    table = CodeTable()
    table.codes = Codes(
        np.arange(1, n + 1, dtype=np.int64), rng.integers(1, 500, n).astype(np.int32), words
    )
    zero = bytes(32)
    d = table.distances(zero)
    among = rng.choice(500, 250, replace=False) if seed % 2 else None
    passing = np.ones(n, bool) if among is None else np.isin(table.codes.notes, among)
    for k in (1, 50, 4096, n):
        want = np.flatnonzero(passing)[np.argsort(d[passing], kind="stable")][:k]
        ids, _ = table.nearest(zero, k, among=among)
        assert ids.tolist() == (want + 1).tolist()
        taken = table._hamming(table.codes, zero, k, among, ordered=False)
        assert sorted(taken.tolist()) == sorted(want.tolist())
    q = rng.standard_normal(256).astype(np.float32)
    q /= np.linalg.norm(q)
    unpacked = np.unpackbits(words[:, :300].T.astype(">u8").view(np.uint8), axis=1)
    looked_up = bits.scores(words[:, :300], q)
    assert np.allclose(looked_up, unpacked.astype(np.float32) @ q, atol=1e-5)
    # closest (no magnitude bits): of the chunks nearest q's signs, the best two of each of
    # the 10 notes best by that score, best first
    depth = min(4096, n)
    taken = table._hamming(table.codes, code_of(q[None, :])[0], depth, None, ordered=False)
    raw = words[:, taken].T.astype(">u8").view(np.uint8)
    score = np.unpackbits(raw, axis=1).astype(np.float32) @ q
    best: dict[int, float] = {}
    for place, value in zip(taken.tolist(), score.tolist(), strict=True):
        note = int(table.codes.notes[place])
        best[note] = max(best.get(note, -np.inf), value)
    want = sorted(best.values(), reverse=True)[:10]
    got, notes = table.closest(q, 10, depth=4096)
    assert set((got - 1).tolist()) <= set(taken.tolist())
    firsts = np.sort(np.unique(notes, return_index=True)[1])
    assert len(firsts) == len(want) and max(np.unique(notes, return_counts=True)[1]) <= 2
    assert np.allclose(want, [score[taken == c - 1][0] for c in got[firsts].tolist()], atol=1e-5)


def test_a_bound_guessed_from_a_sample_that_misleads_falls_back_to_every_distance() -> None:
    """The sample holds every near chunk (one in eight of the table, at its sampled places):
    its bound holds too few, and the histogram of every distance gives the ``k`` nearest."""
    from engram_ls.core.semantic.vectors import SAMPLE_STEP, Codes, CodeTable

    n = 40_000
    words = np.full((4, n), np.iinfo(np.uint64).max, dtype=np.uint64)
    words[:, : 20 * SAMPLE_STEP : SAMPLE_STEP] = 0  # 20 chunks at distance 0, all sampled
    words[0, 1:4000:SAMPLE_STEP] = np.iinfo(np.uint64).max >> 1  # 500 at 255, none sampled
    table = CodeTable()
    table.codes = Codes(np.arange(n, dtype=np.int64), np.ones(n, np.int32), words)
    d = table.distances(bytes(32))
    ids, _ = table.nearest(bytes(32), 50)
    assert ids.tolist() == np.argsort(d, kind="stable")[:50].tolist()
    assert d[ids[19]] == 0 and d[ids[20]] == 255


@pytest.mark.parametrize("seed", range(4))
def test_a_narrow_filter_s_chunks_found_by_note_equal_the_mask_over_the_table(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunks of a filter of few notes are found by note (binary search in the chunks
    sorted by note) rather than by a mask over the whole table: the same chunks, in the same
    order, for each form a filter's notes take (ids, a set, by note id, both at once), with
    dead chunks (note 0), notes without chunks, repeated ids and chunks of one note scattered
    over the table (a note re-embedded later)."""
    from engram_ls.core.semantic import vectors
    from engram_ls.core.semantic.vectors import Codes, CodeTable

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2_000, 30_000))
    notes = np.sort(rng.integers(1, 3_000, n)).astype(np.int32)
    moved = rng.choice(n, n // 10, replace=False)
    notes[moved] = rng.integers(1, 3_000, len(moved))  # re-embedded: later in the table
    notes[rng.choice(n, n // 20, replace=False)] = 0  # dead
    flips = rng.random((n, 256)) < 0.1
    words = np.packbits(flips, axis=1).view(">u8").reshape(n, 4).T.astype(np.uint64)
    table = CodeTable()
    table.codes = Codes(
        np.arange(1, n + 1, dtype=np.int64), notes, words, dead=int((notes == 0).sum())
    )
    listed = rng.choice(3_500, 300, replace=False)  # some above every note of the table
    by_note = np.zeros(3_100, dtype=bool)
    by_note[rng.choice(3_100, 400, replace=False)] = True
    forms = {
        "ids": np.concatenate([listed, listed[:20]]),
        "list": listed.tolist(),
        "set": frozenset(int(x) for x in listed),
        "by note": by_note,
        "both": (frozenset(int(x) for x in listed), by_note),
        "none": np.zeros(0, dtype=np.int64),
    }
    code = bytes(rng.integers(0, 256, 32, dtype=np.uint8))
    for name, among in forms.items():
        for k in (1, 37, 4096):
            for ordered in (True, False):
                monkeypatch.setattr(vectors, "NARROW_NOTES", 10**6)
                assert table._narrow(table.codes, among)[0] is not None
                narrow = table._hamming(table.codes, code, k, among, ordered=ordered)
                monkeypatch.setattr(vectors, "NARROW_NOTES", 0)
                assert table._narrow(table.codes, among)[0] is None or name == "none"
                broad = table._hamming(table.codes, code, k, among, ordered=ordered)
                assert narrow.tolist() == broad.tolist(), (name, k, ordered)
                assert not (table.codes.notes[narrow] == 0).any()


@pytest.mark.parametrize("seed", range(6))
def test_a_broad_filter_s_chunks_taken_among_the_nearest_equal_the_mask_s(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broad filter's ``k`` nearest chunks are looked for among the nearest of all (as many
    as the share of notes passing says should hold ``k`` of theirs): the same chunks as a stable
    sort of the passing chunks' distances, ties included, for each form a filter's notes take,
    with dead chunks and few distinct bits; and a filter whose notes are all far (the share
    misleads) falls back to the mask and gives them too."""
    from engram_ls.core.semantic import vectors
    from engram_ls.core.semantic.vectors import Codes, CodeTable

    monkeypatch.setattr(vectors, "NARROW_NOTES", 0)  # every filter broad
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3_000, 80_000))
    notes = rng.integers(1, 4_000, n).astype(np.int32)
    notes[rng.choice(n, n // 30, replace=False)] = 0  # dead
    flips = rng.random((n, 256)) < rng.choice([0.02, 0.1, 0.3])
    far = rng.choice(4_000, 200, replace=False)
    flips[np.isin(notes, far)] = True  # these notes' chunks: all at 256
    words = np.packbits(flips, axis=1).view(">u8").reshape(n, 4).T.astype(np.uint64)
    table = CodeTable()
    table.codes = Codes(
        np.arange(1, n + 1, dtype=np.int64), notes, words, dead=int((notes == 0).sum())
    )
    top = int(notes.max()) + 1
    broad = np.zeros(top, dtype=bool)
    broad[rng.choice(top, top // int(rng.integers(2, 12)), replace=False)] = True
    only_far = np.zeros(top, dtype=bool)
    only_far[far[far < top]] = True
    forms = {
        "by note": broad,
        "set": frozenset(np.flatnonzero(broad).tolist()),
        "both": (frozenset(np.flatnonzero(broad).tolist()), np.ones(top, dtype=bool)),
        "every note": np.ones(top, dtype=bool),
        "far notes only": only_far,
    }
    calls: list[bool] = []
    original = CodeTable._nearest_passing

    def spy(self: CodeTable, *args: Any, **kwargs: Any) -> Any:
        found = original(self, *args, **kwargs)
        calls.append(found is not None)
        return found

    monkeypatch.setattr(CodeTable, "_nearest_passing", spy)
    zero = bytes(32)
    d = table.distances(zero)
    for name, among in forms.items():
        by_note = table._by_note(table.codes, among)
        passing = by_note[notes] & (notes != 0)
        for k in (1, 50, 700):
            want = np.flatnonzero(passing)[np.argsort(d[passing], kind="stable")][:k]
            ids, _ = table.nearest(zero, k, among=among)
            assert ids.tolist() == (want + 1).tolist(), (name, k)
            taken = table._hamming(table.codes, zero, k, among, ordered=False)
            assert sorted(taken.tolist()) == sorted(want.tolist()), (name, k)
    assert any(calls) and not all(calls)  # both ways were taken


@pytest.mark.parametrize("compiled", [False, True])
def test_a_long_hamming_pass_shared_with_the_helper_equals_one_pass(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By numpy (no compiled loops), over more than ``SPLIT_ROWS`` codes the pass is split
    with a helper thread; the distances equal the bits counted directly, whether the helper
    takes its half or is busy (then the searching thread does both halves: it never waits for
    a helper that has not begun), and searches on several threads at once each get their own.
    The compiled loop (one pass, no helper) gives the same."""
    import threading

    from engram_ls.core.semantic import bits as bits_module
    from engram_ls.core.semantic import vectors
    from engram_ls.core.semantic.vectors import Codes, CodeTable

    if compiled and bits_module.kernels is None:
        pytest.skip("built without a C compiler")
    if not compiled:
        monkeypatch.setattr(bits_module, "kernels", None)

    rng = np.random.default_rng(3)
    n = vectors.SPLIT_ROWS * 2 + 7
    bits = rng.random((n, 256)) < 0.5
    words = np.packbits(bits, axis=1).view(">u8").reshape(n, 4).T.astype(np.uint64)
    table = CodeTable()
    table.codes = Codes(np.arange(1, n + 1, dtype=np.int64), np.ones(n, np.int32), words)
    queries = [bytes(rng.integers(0, 256, 32, dtype=np.uint8)) for _ in range(4)]

    def direct(code: bytes) -> list[int]:
        q = np.unpackbits(np.frombuffer(code, dtype=np.uint8)).astype(bool)
        return (bits != q).sum(axis=1).tolist()

    assert table.distances(queries[0]).tolist() == direct(queries[0])
    release = threading.Event()
    busy = vectors._helper().submit(release.wait)  # the helper taken up until released
    alone: list[list[int]] = []
    searching = threading.Thread(target=lambda: alone.append(table.distances(queries[1]).tolist()))
    try:
        searching.start()
        searching.join(60)  # it does not wait for the helper, which would never come
        assert not searching.is_alive() and alone == [direct(queries[1])]
    finally:
        release.set()
        busy.result()
        searching.join()
    got: dict[int, list[int]] = {}

    def search(i: int) -> None:
        got[i] = table.distances(queries[i]).tolist()

    threads = [threading.Thread(target=search, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[i] == direct(queries[i]) for i in range(4))

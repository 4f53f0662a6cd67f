"""The topic edit: only the topic entry changes, the result parses to exactly the topics asked.

Table tests for every frontmatter form, then property tests over generated notes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import InvalidRequest, OutsideVault
from engram_ls.core.frontmatter import read_frontmatter
from engram_ls.core.librarian import Librarian, NoteChanged, add_topics_to_file, suggest_topics
from engram_ls.core.parse import parse_note
from engram_ls.core.topic_edit import TopicEdit, add_topics_edit, topic_edit

CONFIG = EngramConfig(inline_tags=False)
BOM = "\ufeff"


def topics_of(text: str, config: EngramConfig = CONFIG) -> tuple[str, ...]:
    return parse_note("note.md", text.encode("utf-8"), config).topics


def lines_of(text: str) -> list[str]:
    text = text.removeprefix(BOM)
    pieces = text.split("\n")
    return [p + "\n" for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])


def expected_topics(topics: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    seen: set[str] = set()
    for topic in topics:
        cleaned = topic.strip().lstrip("#").strip()
        if cleaned and cleaned.casefold() not in seen:
            seen.add(cleaned.casefold())
            out.append(cleaned)
    return tuple(out)


def check_outside_unchanged(before: str, after: str, edit: TopicEdit) -> None:
    old, new = lines_of(before), lines_of(after)
    added = len(lines_of(edit.text))
    assert new[: edit.start] == old[: edit.start]
    assert new[edit.start + added :] == old[edit.end :]
    assert after.startswith(BOM) == before.startswith(BOM)


# --- table tests ---------------------------------------------------------------------------

SET = ["sqlite", "Machine Learning"]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            "---\ntitle: T\ntopics: [a, b]\n---\nbody\n",
            "---\ntitle: T\ntopics: [sqlite, Machine Learning]\n---\nbody\n",
            id="flow",
        ),
        pytest.param(
            "---\ntopics: [ sqlite,b ]  # keep me\n---\n",
            "---\ntopics: [ sqlite,Machine Learning ]  # keep me\n---\n",
            id="flow-spacing-and-comment",
        ),
        pytest.param(
            "---\ntopics: ['sqlite', \"b\"]\n---\n",
            "---\ntopics: ['sqlite', Machine Learning]\n---\n",
            id="flow-quoting-kept",
        ),
        pytest.param(
            "---\ntags:\n  - sqlite # the db\n  # a comment\n  - old\ndate: 2024-01-01\n---\nx\n",
            "---\ntags:\n  - sqlite # the db\n  - Machine Learning\n  # a comment\n"
            "date: 2024-01-01\n---\nx\n",
            id="block-with-comments",
        ),
        pytest.param(
            "---\ntags:\n- sqlite\ntitle: x\n---\n",
            "---\ntags:\n- sqlite\n- Machine Learning\ntitle: x\n---\n",
            id="block-no-indent",
        ),
        pytest.param(
            "---\ntags:\n    -   old\n---\n",
            "---\ntags:\n    -   sqlite\n    -   Machine Learning\n---\n",
            id="block-wide-indent",
        ),
        pytest.param(
            "---\ntags: ux, sqlite\n---\n",
            "---\ntags: sqlite, Machine Learning\n---\n",
            id="comma-string",
        ),
        pytest.param(
            "---\ntags: 'a, b'\n---\n",
            "---\ntags: 'sqlite, Machine Learning'\n---\n",
            id="quoted-string",
        ),
        pytest.param(
            "---\ntags: a b\n---\n",
            "---\ntags: sqlite, Machine Learning\n---\n",
            id="space-string-with-spaced-topic",
        ),
        pytest.param(
            "---\ntags:\ntitle: x\n---\n",
            "---\ntags:\n  - sqlite\n  - Machine Learning\ntitle: x\n---\n",
            id="empty-value",
        ),
        pytest.param(
            "---\nauthors:\n    - me\ntags:\n---\n",
            "---\nauthors:\n    - me\ntags:\n    - sqlite\n    - Machine Learning\n---\n",
            id="empty-value-note-indent",
        ),
        pytest.param(
            "---\ntags: null # none yet\n---\n",
            "---\ntags: [sqlite, Machine Learning] # none yet\n---\n",
            id="null",
        ),
        pytest.param(
            "---\ntopics: []\n---\n",
            "---\ntopics: [sqlite, Machine Learning]\n---\n",
            id="empty-flow",
        ),
        pytest.param(
            "---\ntitle: x # c\n# trailing comment\n---\n",
            "---\ntitle: x # c\n# trailing comment\ntopics: [sqlite, Machine Learning]\n---\n",
            id="absent",
        ),
        pytest.param(
            "---\n---\nbody\n",
            "---\ntopics: [sqlite, Machine Learning]\n---\nbody\n",
            id="empty-frontmatter",
        ),
        pytest.param(
            "# Title\n\ntext\n",
            "---\ntopics: [sqlite, Machine Learning]\n---\n# Title\n\ntext\n",
            id="no-frontmatter",
        ),
        pytest.param("", "---\ntopics: [sqlite, Machine Learning]\n---\n", id="empty-note"),
        pytest.param(
            "no newline",
            "---\ntopics: [sqlite, Machine Learning]\n---\nno newline",
            id="no-frontmatter-no-newline",
        ),
        pytest.param(
            "---\r\ntitle: T\r\ntags:\r\n  - old\r\n---\r\nbody\r\n",
            "---\r\ntitle: T\r\ntags:\r\n  - sqlite\r\n  - Machine Learning\r\n---\r\nbody\r\n",
            id="crlf-block",
        ),
        pytest.param(
            "line one\r\nline two\r\n",
            "---\r\ntopics: [sqlite, Machine Learning]\r\n---\r\nline one\r\nline two\r\n",
            id="crlf-no-frontmatter",
        ),
        pytest.param(
            BOM + "---\ntitle: T\n---\nbody\n",
            BOM + "---\ntitle: T\ntopics: [sqlite, Machine Learning]\n---\nbody\n",
            id="bom",
        ),
        pytest.param(
            BOM + "body\n",
            BOM + "---\ntopics: [sqlite, Machine Learning]\n---\nbody\n",
            id="bom-no-frontmatter",
        ),
        pytest.param(
            "---\ntopics: [a]\n---\n---\nnot: frontmatter\n---\n",
            "---\ntopics: [sqlite, Machine Learning]\n---\n---\nnot: frontmatter\n---\n",
            id="body-with-fences",
        ),
        pytest.param(
            '---\n"topics" : [a]\n---\n',
            '---\n"topics" : [sqlite, Machine Learning]\n---\n',
            id="quoted-key",
        ),
        pytest.param(
            "---\nTags: [a]\n---\n",
            "---\nTags: [sqlite, Machine Learning]\n---\n",
            id="key-case",
        ),
        pytest.param(
            "---\ntopics: [a,\n  b]\nx: 1\n---\n",
            "---\ntopics: [sqlite, Machine Learning]\nx: 1\n---\n",
            id="multi-line-flow",
        ),
        pytest.param(
            "---\ntags: |\n  a, b\n---\n",
            "---\ntags: [sqlite, Machine Learning]\n---\n",
            id="block-scalar",
        ),
    ],
)
def test_set_topics(before: str, after: str) -> None:
    edit = topic_edit(before, SET, CONFIG)
    assert edit is not None
    assert edit.apply(before) == after
    assert edit.topics == tuple(SET)
    assert topics_of(after) == tuple(SET)
    check_outside_unchanged(before, after, edit)
    assert topic_edit(after, SET, CONFIG) is None


@pytest.mark.parametrize(
    ("before", "add", "after"),
    [
        pytest.param(
            "---\ntags: ux, design\n---\n", ["sqlite"], "---\ntags: ux, design, sqlite\n---\n"
        ),
        pytest.param(
            "---\ntags: [ux]\n---\n", ["UX", "#new"], "---\ntags: [ux, new]\n---\n", id="case"
        ),
        pytest.param(
            "---\ntags:\n  - ux\n# after\n---\n",
            ["a: b", "true", "1e3", "null"],
            '---\ntags:\n  - ux\n  - "a: b"\n  - "true"\n  - 1e3\n  - "null"\n# after\n---\n',
            id="quoting",
        ),
        pytest.param(
            "---\ntopics: [a]\ntags: [b]\n---\n",
            ["b", "c"],
            "---\ntopics: [a, c]\ntags: [b]\n---\n",
            id="two-keys",
        ),
        pytest.param(
            "---\ntags: [x, 'it''s', \"q\\\"\"]\n---\n",
            ["it's 2"],
            "---\ntags: [x, 'it''s', \"q\\\"\", it's 2]\n---\n",
            id="quotes-kept",
        ),
    ],
)
def test_add_topics(before: str, add: list[str], after: str) -> None:
    edit = add_topics_edit(before, add, CONFIG)
    assert edit is not None
    assert edit.apply(before) == after
    check_outside_unchanged(before, after, edit)
    assert add_topics_edit(after, add, CONFIG) is None
    assert edit.topics == topics_of(after)


def test_nothing_to_do() -> None:
    assert topic_edit("---\ntags: a, b\n---\n", ["a", "b"], CONFIG) is None
    assert topic_edit("---\ntags: [a, b]\n---\n", ["#a", " B ", "a"], CONFIG) is not None
    assert add_topics_edit("---\ntags: [a, b]\n---\n", ["B", "#a"], CONFIG) is None
    assert topic_edit("no frontmatter\n", [], CONFIG) is None
    assert add_topics_edit("no frontmatter\n", [" ", "#"], CONFIG) is None


def test_remove_all_topics() -> None:
    before = "---\ntags:\n  - a\n  - b\ntitle: x\n---\n"
    edit = topic_edit(before, [], CONFIG)
    assert edit is not None
    assert edit.apply(before) == "---\ntags:\ntitle: x\n---\n"
    flow = "---\ntags: [a]\n---\n"
    edit = topic_edit(flow, [], CONFIG)
    assert edit is not None and edit.apply(flow) == "---\ntags: []\n---\n"


def test_reorder_block_keeps_lines() -> None:
    before = "---\ntags:\n  - a # one\n  # note\n  - 'b'\n---\n"
    edit = topic_edit(before, ["b", "a"], CONFIG)
    assert edit is not None
    assert edit.apply(before) == "---\ntags:\n  # note\n  - 'b'\n  - a # one\n---\n"


def test_edit_range_is_minimal_for_lsp() -> None:
    before = "---\ntitle: x\ntags:\n  - a\n---\nbody\n"
    edit = add_topics_edit(before, ["b"], CONFIG)
    assert edit == TopicEdit(start=4, end=4, text="  - b\n", topics=("a", "b"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("---\ntags: [a\n---\n", "not valid YAML", id="malformed"),
        pytest.param("---\ntags:\n  a: 1\n---\n", "holds a mapping", id="mapping"),
        pytest.param("---\ntags: {a: 1}\n---\n", "holds a mapping", id="flow-mapping"),
        pytest.param("---\n- a\n- b\n---\n", "mapping", id="list-frontmatter"),
        pytest.param("---\ntags: [a]\nbody without fence\n", "closing", id="unclosed"),
        pytest.param("---\ntopics: [a]\ntags: [c]\n---\n", "also holds", id="second-key"),
        pytest.param("---\n{topics: [a]}\n---\n", "plain 'key:' line", id="flow-frontmatter"),
        pytest.param("text\x00binary\n", "NUL", id="binary"),
        pytest.param("---\ntags: [a]\ntags: [b]\n---\n", "more than once", id="duplicate-key"),
    ],
)
def test_refuses_unsafe(text: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        topic_edit(text, ["x"], CONFIG)


def test_refuses_line_breaks_in_topics() -> None:
    with pytest.raises(InvalidRequest, match="line break"):
        topic_edit("", ["a\nb"], CONFIG)


def test_anchor_referenced_elsewhere_is_refused() -> None:
    text = "---\ntags: &t [a]\nalso: *t\n---\n"
    with pytest.raises(InvalidRequest, match="without changing other frontmatter"):
        topic_edit(text, ["b"], CONFIG)


def test_uses_configured_topic_key() -> None:
    config = EngramConfig(topic_keys=("keywords",), inline_tags=False)
    edit = topic_edit("---\ntitle: x\n---\n", ["a"], config)
    assert edit is not None and edit.text == "keywords: [a]\n"


# --- suggestions ---------------------------------------------------------------------------

KEYWORDS = EngramConfig(
    keyword_topics={
        "sql": "databases",
        "machine learning": "ml",
        "re:\\bLLMs?\\b": "llm",
        "C++": "cpp",
        "postgres": "databases",
    }
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("I like SQL.\n", ["databases"], id="whole-word-any-case"),
        pytest.param("sqlite only\n", [], id="not-inside-a-word"),
        pytest.param("Machine\n  Learning rocks\n", ["ml"], id="phrase-over-whitespace"),
        pytest.param("LLMs and llms\n", ["llm"], id="regex-case-sensitive"),
        pytest.param("llms only\n", [], id="regex-no-match"),
        pytest.param("in C++, really\n", ["cpp"], id="symbols"),
        pytest.param("---\ntitle: SQL notes\n---\nbody\n", ["databases"], id="title"),
        pytest.param("---\nsummary: sql\n---\nbody\n", [], id="not-other-frontmatter"),
        pytest.param("---\ntags: [Databases]\n---\nsql\n", [], id="already-has"),
        pytest.param("sql #databases\n", [], id="inline-tag-counts"),
        pytest.param("sql and postgres and C++\n", ["databases", "cpp"], id="once-in-map-order"),
    ],
)
def test_suggest_topics(text: str, expected: list[str]) -> None:
    assert suggest_topics(text, KEYWORDS) == expected


def test_bad_regex_is_reported() -> None:
    config = EngramConfig(keyword_topics={"re:(": "x"})
    with pytest.raises(InvalidRequest, match="not a valid regular expression"):
        suggest_topics("x", config)


# --- files ---------------------------------------------------------------------------------


def test_add_topics_to_file_keeps_bytes(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    original = (BOM + "---\r\ntitle: T\r\n---\r\nbody\r\n").encode("utf-8")
    note.write_bytes(original)
    note.chmod(0o640)
    edit = add_topics_to_file(tmp_path, "a.md", ["x"], CONFIG)
    assert edit is not None
    data = note.read_bytes()
    assert data == (BOM + "---\r\ntitle: T\r\ntopics: [x]\r\n---\r\nbody\r\n").encode("utf-8")
    assert note.stat().st_mode & 0o777 == 0o640
    assert add_topics_to_file(tmp_path, "a.md", ["x"], CONFIG) is None
    assert [p.name for p in tmp_path.iterdir()] == ["a.md"]  # no temporary file left


def test_add_topics_to_file_refuses(tmp_path: Path) -> None:
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe text")
    with pytest.raises(OutsideVault):
        add_topics_to_file(tmp_path, "../x.md", ["a"], CONFIG)
    with pytest.raises(InvalidRequest, match="UTF-8"):
        add_topics_to_file(tmp_path, "bad.md", ["a"], CONFIG)
    with pytest.raises(InvalidRequest, match="not a note"):
        add_topics_to_file(tmp_path, "x.txt", ["a"], CONFIG)


def test_changed_between_read_and_write_is_skipped(tmp_path: Path) -> None:
    config = EngramConfig(keyword_topics={"sql": "databases"})
    (tmp_path / "a.md").write_text("about sql\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("more sql\n", encoding="utf-8")

    def meddle(rel: str) -> None:
        if rel == "a.md":
            (tmp_path / rel).write_text("someone else wrote this, about sql\n", encoding="utf-8")

    report = Librarian(tmp_path, config, before_write=meddle).run(apply=True)
    assert report.counts["skipped-changed"] == 1 and report.counts["applied"] == 1
    assert (tmp_path / "a.md").read_text(encoding="utf-8") == "someone else wrote this, about sql\n"
    assert topics_of((tmp_path / "b.md").read_text(encoding="utf-8"), config) == ("databases",)
    again = Librarian(tmp_path, config).run(apply=True)
    assert again.paths("applied") == ["a.md"]
    assert Librarian(tmp_path, config).run(apply=True).notes == ()


def test_skipped_when_same_size_rewrite(tmp_path: Path) -> None:
    note = tmp_path / "a.md"
    note.write_text("about sql\n", encoding="utf-8")
    config = EngramConfig(keyword_topics={"sql": "databases"})

    def same_size(rel: str) -> None:
        st = note.stat()
        note.write_text("ABOUT sql\n", encoding="utf-8")
        os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime

    report = Librarian(tmp_path, config, before_write=same_size).run(apply=True)
    assert report.paths("skipped-changed") == ["a.md"]
    assert note.read_text(encoding="utf-8") == "ABOUT sql\n"


def test_note_changed_is_an_invalid_request() -> None:
    assert issubclass(NoteChanged, InvalidRequest)


# --- properties ----------------------------------------------------------------------------


def quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


WORD = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=12
)
TOPIC = st.one_of(
    WORD,
    TEXT,
    st.sampled_from(
        ["true", "null", "1e3", "0x10", "2024-01-01", "a: b", "# x", "-x", "[y]", "it's", "C++"]
    ),
    st.sampled_from(['say "hi"', "a,b", "Two Words", "~", "*star", "&amp", "%p", "@me", "x #y"]),
)
OTHER_KEYS = ["title", "date", "summary", "author", "aliases", "draft", "weight", "x-y"]


@st.composite
def other_entry(draw: st.DrawFn, key: str) -> list[str]:
    kind = draw(st.sampled_from(["word", "json", "int", "date", "flow", "block", "empty"]))
    comment = draw(st.sampled_from(["", " # note", "  #x"]))
    if kind == "word":
        return [f"{key}: {draw(WORD)}{comment}"]
    if kind == "json":
        return [f"{key}: {quoted(draw(TEXT))}{comment}"]
    if kind == "int":
        return [f"{key}: {draw(st.integers(-1000, 10**6))}{comment}"]
    if kind == "date":
        return [f"{key}: 2024-0{draw(st.integers(1, 9))}-1{draw(st.integers(0, 9))}"]
    words = draw(st.lists(WORD, max_size=3))
    if kind == "flow":
        return [f"{key}: [{', '.join(words)}]{comment}"]
    if kind == "block":
        return [f"{key}:{comment}", *(f"  - {w}" for w in words)]
    return [f"{key}:{comment}"]


@st.composite
def topic_entry(draw: st.DrawFn) -> list[str] | None:
    key = draw(st.sampled_from(["topics", "tags", "Tags"]))
    style = draw(
        st.sampled_from(
            ["absent", "empty", "null", "empty-flow", "flow", "block", "comma", "quoted"]
        )
    )
    words = draw(st.lists(st.one_of(WORD, TOPIC.map(quoted)), min_size=1, max_size=4))
    comment = draw(st.sampled_from(["", " # topics", " "]))
    if style == "absent":
        return None
    if style == "empty":
        return [f"{key}:{comment}"]
    if style == "null":
        return [f"{key}: {draw(st.sampled_from(['null', '~', 'Null']))}{comment}"]
    if style == "empty-flow":
        return [f"{key}: []{comment}"]
    if style == "flow":
        sep = draw(st.sampled_from([", ", ",", " , "]))
        return [f"{key}: [{sep.join(words)}]{comment}"]
    if style == "block":
        indent = draw(st.sampled_from(["", "  ", "    "]))
        gap = draw(st.sampled_from([" ", "   "]))
        lines = [f"{key}:{comment}"]
        for word in words:
            if draw(st.booleans()):
                lines.append(f"{indent}# between")
            lines.append(f"{indent}-{gap}{word}{draw(st.sampled_from(['', ' # c']))}")
        return lines
    plain = draw(st.lists(WORD, min_size=1, max_size=4))
    if style == "comma":
        return [f"{key}: {', '.join(plain)}{comment}"]
    return [f"{key}: {quoted(', '.join(plain))}{comment}"]


BODY_LINE = st.one_of(
    st.sampled_from(["", "---", "...", "# Heading", "tags: [body]", "- item", "text #tag"]),
    st.text(alphabet=st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",))),
)


@st.composite
def note(draw: st.DrawFn) -> dict[str, Any]:
    """A note and where its topic entry is: (first line, end line) or the insertion point."""
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    bom = draw(st.sampled_from(["", BOM]))
    body = draw(st.lists(BODY_LINE, max_size=6))
    if body and body[0].startswith("---"):
        body[0] = "x" + body[0]
    if not draw(st.integers(0, 5)):  # no frontmatter at all
        lines = body
        text = bom + nl.join(lines) + (nl if lines and draw(st.booleans()) else "")
        return {"text": text, "entry": (0, 0)}
    keys = draw(st.lists(st.sampled_from(OTHER_KEYS), unique=True, max_size=4))
    blocks = [draw(other_entry(key)) for key in keys]
    if draw(st.booleans()):
        blocks.insert(draw(st.integers(0, len(blocks))), ["# a comment line"])
    if draw(st.booleans()):
        blocks.insert(draw(st.integers(0, len(blocks))), [""])
    entry = draw(topic_entry())
    position = draw(st.integers(0, len(blocks)))
    front: list[str] = []
    span = (0, 0)
    for index, block in enumerate([*blocks, None]):
        if index == position and entry is not None:
            span = (1 + len(front), 1 + len(front) + len(entry))
            front.extend(entry)
        if block is not None:
            front.extend(block)
    if entry is None:
        span = (1 + len(front), 1 + len(front))
    lines = ["---", *front, "---", *body]
    return {"text": bom + nl.join(lines) + nl, "entry": span}


def check_edit(text: str, entry: tuple[int, int], wanted: tuple[str, ...], edit: TopicEdit) -> str:
    after = edit.apply(text)
    check_outside_unchanged(text, after, edit)
    # the replaced lines lie within the topic entry (or are inserted where it goes)
    assert entry[0] <= edit.start <= edit.end <= entry[1]
    nl = "\r\n" if "\r\n" in text else "\n"
    assert all(line.endswith(nl) for line in lines_of(edit.text))
    before_note = parse_note("n.md", text.encode("utf-8"), CONFIG)
    after_note = parse_note("n.md", after.encode("utf-8"), CONFIG)
    assert after_note.topics == wanted == edit.topics
    assert after_note.body == before_note.body
    assert [p.code for p in after_note.problems] == [p.code for p in before_note.problems]
    old_fm = read_frontmatter(text.removeprefix(BOM).replace("\r\n", "\n"))
    new_fm = read_frontmatter(after.removeprefix(BOM).replace("\r\n", "\n"))
    assert new_fm is not None
    old_data = {k: v for k, v in (old_fm.data if old_fm else {}).items()}
    new_data = dict(new_fm.data)
    for key in ("topics", "tags", "Tags"):
        old_data.pop(key, None)
        new_data.pop(key, None)
    assert new_data == old_data
    return after


PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(note(), st.lists(TOPIC, max_size=5))
def test_property_set_topics(case: dict[str, Any], topics: list[str]) -> None:
    text = case["text"]
    wanted = expected_topics(topics)
    edit = topic_edit(text, topics, CONFIG)
    if edit is None:
        assert topics_of(text) == wanted
        return
    after = check_edit(text, case["entry"], wanted, edit)
    assert topic_edit(after, topics, CONFIG) is None


@PROPERTY
@given(note(), st.lists(TOPIC, min_size=1, max_size=4))
def test_property_add_topics(case: dict[str, Any], add: list[str]) -> None:
    text = case["text"]
    before = topics_of(text)
    have = {t.casefold() for t in before}
    wanted = before + tuple(t for t in expected_topics(add) if t.casefold() not in have)
    edit = add_topics_edit(text, add, CONFIG)
    if edit is None:
        assert wanted == before
        return
    after = check_edit(text, case["entry"], wanted, edit)
    assert add_topics_edit(after, add, CONFIG) is None

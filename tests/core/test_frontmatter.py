"""Frontmatter: finding the block (lines and offsets), loading it safely, locating keys."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_ls.core.frontmatter import (
    MAX_ALIAS_EXPANSION,
    MAX_FRONTMATTER_CHARS,
    FrontmatterBlock,
    parse_frontmatter,
    read_frontmatter,
    split_frontmatter,
)


def split(text: str) -> FrontmatterBlock:
    block = split_frontmatter(text)
    assert block is not None
    return block


# --- split_frontmatter ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "yaml_text", "close_line", "body", "body_line"),
    [
        pytest.param("---\na: 1\n---\nbody\n", "a: 1\n", 3, "body\n", 4, id="lf"),
        pytest.param("---\r\na: 1\r\n---\r\nbody\r\n", "a: 1\r\n", 3, "body\r\n", 4, id="crlf"),
        pytest.param("---\na: 1\n...\nbody", "a: 1\n", 3, "body", 4, id="dots-close"),
        pytest.param("---  \na: 1\n---\t \nbody", "a: 1\n", 3, "body", 4, id="trailing-space"),
        pytest.param("---\n---\nbody", "", 2, "body", 3, id="empty-block"),
        pytest.param("---\na: 1\n---", "a: 1\n", 3, "", 4, id="close-at-eof"),
        pytest.param("---\na: 1\n---\n", "a: 1\n", 3, "", 4, id="close-then-eof"),
        pytest.param(
            "---\na: |\n  x\n  ---\n---\nb", "a: |\n  x\n  ---\n", 5, "b", 6, id="indented-dashes"
        ),
        pytest.param("---\na: 1\n--- \n---\nb", "a: 1\n", 3, "---\nb", 4, id="first-close-wins"),
    ],
)
def test_split_closed(
    text: str, yaml_text: str, close_line: int, body: str, body_line: int
) -> None:
    block = split(text)
    assert block.closed
    assert (block.yaml_text, block.close_line, block.body, block.body_line) == (
        yaml_text,
        close_line,
        body,
        body_line,
    )
    assert block.open_line == 1
    assert block.start == 0
    assert text[block.yaml_start : block.yaml_end] == block.yaml_text
    assert text[block.end :] == block.body
    assert text[block.start : block.end] + block.body == text


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("# Title\n---\na: 1\n---\n", id="not-first-line"),
        pytest.param("----\na: 1\n----\n", id="four-dashes"),
        pytest.param(" ---\na: 1\n---\n", id="indented-open"),
        pytest.param("--- a\n---\n", id="text-after-open"),
        pytest.param("\n---\na: 1\n---\n", id="blank-first-line"),
    ],
)
def test_split_none(text: str) -> None:
    assert split_frontmatter(text) is None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("---", id="only-open"),
        pytest.param("---\n", id="open-newline"),
        pytest.param("---\na: 1\nb: 2\n", id="no-close"),
        pytest.param("---\na: 1\n----\n", id="four-dash-close"),
    ],
)
def test_split_unclosed(text: str) -> None:
    block = split(text)
    assert not block.closed
    assert block.close_line is None
    assert block.body == text
    assert block.body_line == 1
    assert block.yaml_text == ""
    fm = parse_frontmatter(block)
    assert fm.data == {}
    assert [(p.code, p.line) for p in fm.problems] == [("unclosed-frontmatter", 1)]


def test_split_keeps_newline_style() -> None:
    assert split("---\r\na: 1\r\n---\r\n").newline == "\r\n"
    assert split("---\na: 1\n---\n").newline == "\n"


# --- parse_frontmatter ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("yaml_text", "data"),
    [
        pytest.param("", {}, id="empty"),
        pytest.param("# only a comment\n", {}, id="comment-only"),
        pytest.param("title: Hello\n", {"title": "Hello"}, id="plain"),
        pytest.param(
            "tags: [a, 'b', \"c d\"]\nn: 3\nf: 1.5\nok: yes\nnothing:\n",
            {"tags": ["a", "b", "c d"], "n": 3, "f": 1.5, "ok": True, "nothing": None},
            id="scalars",
        ),
        pytest.param("tags:\n  - a\n  - 2\n", {"tags": ["a", 2]}, id="block-list"),
        pytest.param("d: 2024-03-05\n", {"d": dt.date(2024, 3, 5)}, id="yaml-date"),
        pytest.param("d: 2024-13-45\n", {"d": "2024-13-45"}, id="bad-date-stays-string"),
        pytest.param("d: 0000-01-01\n", {"d": "0000-01-01"}, id="year-zero-stays-string"),
        pytest.param(
            "base: &b {a: 1}\nchild:\n  <<: *b\n  c: 2\n",
            {"base": {"a": 1}, "child": {"a": 1, "c": 2}},
            id="small-merge-ok",
        ),
        pytest.param("a: &x hello\nb: *x\n", {"a": "hello", "b": "hello"}, id="small-alias-ok"),
    ],
)
def test_parse_frontmatter_data(yaml_text: str, data: dict[str, Any]) -> None:
    fm = parse_frontmatter(split(f"---\n{yaml_text}---\nbody\n"))
    assert fm.problems == ()
    assert fm.data == data


def test_huge_int_stays_string() -> None:
    digits = "9" * 5000
    fm = parse_frontmatter(split(f"---\nn: {digits}\n---\n"))
    assert fm.problems == ()
    assert fm.data == {"n": digits}


@pytest.mark.parametrize(
    ("yaml_text", "code", "line"),
    [
        pytest.param("tags: [a, b\n", "yaml", 2, id="unclosed-flow-list"),
        pytest.param("title: x\na:\n\tb: 1\n", "yaml", 4, id="tab-indent"),
        pytest.param("title: x\nbad: a: b\n", "yaml", 3, id="colon-in-plain"),
        pytest.param('title: "open\n', "yaml", 2, id="unclosed-quote"),
        pytest.param("a: 1\n  b: 2\n", "yaml", 3, id="bad-indent"),
        pytest.param("a: 1\n - b\nc: [\n", "yaml", 5, id="error-at-closing-fence"),
        pytest.param("- a\n- b\n", "frontmatter-type", 1, id="list"),
        pytest.param("just a sentence\n", "frontmatter-type", 1, id="scalar"),
        pytest.param("a: !!python/object:os.system x\n", "yaml", 2, id="unsafe-tag"),
        pytest.param("a: =\n", "yaml", 2, id="value-tag"),
    ],
)
def test_parse_frontmatter_problems(yaml_text: str, code: str, line: int) -> None:
    fm = parse_frontmatter(split(f"---\n{yaml_text}---\nbody\n"))
    assert fm.data == {}
    assert [(p.code, p.line) for p in fm.problems] == [(code, line)]
    assert fm.problems[0].message


def test_tab_indentation_is_explained() -> None:
    fm = parse_frontmatter(split("---\ntitle: x\na:\n\tb: 1\n---\n"))
    assert "tabs" in fm.problems[0].message


def test_oversized_block_is_not_loaded() -> None:
    lines = "key: value\n" * (MAX_FRONTMATTER_CHARS // 11 + 1)
    fm = parse_frontmatter(split(f"---\n{lines}---\nbody\n"))
    assert fm.data == {}
    assert [(p.code, p.line) for p in fm.problems] == [("too-large", 1)]
    fitting = "key: value\n" * (MAX_FRONTMATTER_CHARS // 11)
    small = parse_frontmatter(split(f"---\n{fitting}---\n"))
    assert small.problems == ()
    assert small.data == {"key": "value"}


def test_yaml_problem_line_counts_from_file_start() -> None:
    text = "---\ntitle: ok\ntags: [a\nnext: 1\n---\n"
    fm = parse_frontmatter(split(text))
    assert fm.problems[0].code == "yaml"
    assert 3 <= (fm.problems[0].line or 0) <= 5
    assert "line 3" in fm.problems[0].message


def _bomb_lists(levels: int) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def _bomb_merges(levels: int) -> str:
    lines = ["m0: &m0 {x: 1}"]
    for i in range(1, levels):
        lines.append(f"m{i}: &m{i}\n  <<: [*m{i - 1}, *m{i - 1}]\n  k{i}: v")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "yaml_text",
    [
        pytest.param(_bomb_lists(9), id="billion-laughs"),
        pytest.param(_bomb_merges(30), id="merge-key-bomb"),
        pytest.param("a: &a [*a]\n", id="self-reference"),
        pytest.param("a: &a\n  b: *a\n", id="self-reference-mapping"),
    ],
)
def test_alias_bombs_are_refused(yaml_text: str) -> None:
    fm = parse_frontmatter(split(f"---\n{yaml_text}---\nbody\n"))
    assert fm.data == {}
    assert [p.code for p in fm.problems] == ["yaml"]
    assert "aliases" in fm.problems[0].message


def test_alias_expansion_below_limit_is_fine() -> None:
    # 3 levels of 9 → 1 + 9 + 81 + 729 nodes: well under the limit
    fm = parse_frontmatter(split(f"---\n{_bomb_lists(3)}---\n"))
    assert fm.problems == ()
    assert len(fm.data["a2"]) == 9
    assert MAX_ALIAS_EXPANSION > 1000


@pytest.mark.parametrize(
    "yaml_text",
    [
        pytest.param("a: " + "[" * 60_000 + "\n", id="flow-lists"),
        pytest.param("a: " + "{a: " * 15_000 + "\n", id="flow-maps"),
        pytest.param("- " * 30_000 + "x\n", id="block-lists"),
        pytest.param("a: " + "[b: " * 15_000 + "\n", id="flow-pairs"),
    ],
)
def test_deep_nesting_is_refused(yaml_text: str) -> None:
    fm = parse_frontmatter(split(f"---\n{yaml_text}---\n"))
    assert fm.data == {}
    assert [p.code for p in fm.problems] == ["yaml"]
    assert "nest" in fm.problems[0].message  # ours, or PyYAML's own depth limit (6.0.4+)


def test_moderate_nesting_is_fine() -> None:
    fm = parse_frontmatter(split("---\na: " + "[" * 20 + "]" * 20 + "\n---\n"))
    assert fm.problems == ()


@pytest.mark.parametrize(
    ("key", "line", "raw"),
    [
        pytest.param("title", 2, "Hello", id="first"),
        pytest.param("date", 5, "<% tp.date.now() %>", id="after-nested"),
        pytest.param("DATE", 5, "<% tp.date.now() %>", id="case-insensitive"),
        pytest.param("quoted", 6, "'{{date}}'", id="quoted-key"),
        pytest.param("nested", None, None, id="only-nested"),
        pytest.param("missing", None, None, id="missing"),
    ],
)
def test_key_line_and_raw_value(key: str, line: int | None, raw: str | None) -> None:
    text = (
        "---\ntitle: Hello\nparent:\n  nested: 1\ndate: <% tp.date.now() %>\n"
        "'quoted': '{{date}}'\n---\n"
    )
    fm = parse_frontmatter(split(text))
    assert fm.key_line(key) == line
    assert fm.raw_value(key) == raw


def test_read_frontmatter() -> None:
    assert read_frontmatter("no block") is None
    fm = read_frontmatter("---\na: 1\n---\n")
    assert fm is not None
    assert fm.data == {"a": 1}


# --- the fast path must agree with the YAML loader -----------------------------------------------

_KEYS = ["title", "tags", "date", "Created At", "a-b", "_x", "yes", "null", "on", "k.v", "Ünï"]
_VALUES = [
    "word",
    "two words",
    "It's fine",
    'say "hi"',
    "a [b] c",
    "a, b, c",
    "#tag",
    "a #comment",
    "a: b",
    "a:b",
    "a:",
    "-5",
    "- x",
    "0x1F",
    "0o17",
    "1_000",
    "1.5",
    "1e3",
    ".inf",
    ".NaN",
    "~",
    "null",
    "Null",
    "yes",
    "No",
    "on",
    "OFF",
    "true",
    "2024-03-05",
    "2024-3-5",
    "2024-03-05 10:00:00",
    "2024-03-05T10:00:00Z",
    "2024-03-05t10:00:00.5+02:00",
    "2024-13-45",
    "0000-01-01",
    "190:20:30",
    '"quoted"',
    '"with \\" escape"',
    '"it\'s"',
    "'single'",
    "'it''s'",
    '""',
    "''",
    "[a, b]",
    "[]",
    "[ ]",
    '[a, "b c", 3, yes, ~]',
    "[a, ]",
    "[a,,b]",
    "[a, [b]]",
    "[a: b]",
    "[it's]",
    "{a: 1}",
    "{}",
    "&x a",
    "*x",
    "|",
    ">",
    "!!str 1",
    "%x",
    "@x",
    "`x`",
    "=",
    "<<",
    "😀 emoji",
    "tab\there",
    "a\u2028b",
    "x\u0085y",
]
_LINES = st.one_of(
    st.tuples(st.sampled_from(_KEYS), st.sampled_from(_VALUES)).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.sampled_from(_KEYS).map(lambda k: f"{k}:"),
    st.sampled_from(_VALUES).map(lambda v: f"  - {v}"),
    st.sampled_from(_VALUES).map(lambda v: f"- {v}"),
    st.sampled_from(["", "# comment", "  # indented comment", "   ", "  continued", "-", "  -"]),
    st.sampled_from(_KEYS).map(lambda k: f"{k} :  spaced  "),
    st.sampled_from(_KEYS).map(lambda k: f"{k}:value"),
)


def _reference(yaml_text: str) -> Any:
    try:
        return yaml.load(yaml_text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, ValueError, TypeError):
        return None


def _typed(value: Any) -> Any:
    """Compare values and their types (1 == 1.0 == True must not pass)."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float) and value != value:
        return ("nan", float)
    return (value, type(value))


@settings(max_examples=600, deadline=None)
@given(st.lists(_LINES, max_size=8))
def test_loading_matches_pyyaml(lines: list[str]) -> None:
    """Whatever the reader, the result is what PyYAML's own safe loader gives."""
    yaml_text = "\n".join(lines) + "\n"
    fm = parse_frontmatter(split(f"---\n{yaml_text}---\n"))
    expected = _reference(yaml_text)
    if not isinstance(expected, dict):
        return  # errors and leniencies are covered by the tables above
    assert fm.problems == ()
    assert _typed(fm.data) == _typed(expected)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parse_frontmatter_never_raises(yaml_text: str) -> None:
    fm = parse_frontmatter(split(f"---\n{yaml_text}\n---\n"))
    assert isinstance(fm.data, dict)
    assert len(fm.problems) <= 1

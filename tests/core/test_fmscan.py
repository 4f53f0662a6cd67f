"""The frontmatter scanner, and the places where the three old copies read a line differently
from YAML (each case here failed on the copy named in its docstring before there was one
scanner)."""

from __future__ import annotations

import pytest
import yaml

from engram_ls.core import fmscan
from engram_ls.core.config import EngramConfig
from engram_ls.core.parse import parse_note
from engram_ls.core.topic_edit import add_topics_edit

CONFIG = EngramConfig(inline_tags=False)


@pytest.mark.parametrize(
    ("line", "raw", "name", "rest"),
    [
        pytest.param("tags: [a]", "tags", "tags", " [a]", id="plain"),
        pytest.param("tags:", "tags", "tags", "", id="no-value"),
        pytest.param("tags :\tx", "tags", "tags", "\tx", id="blank-before-colon"),
        pytest.param('"tags": x', '"tags"', "tags", " x", id="double-quoted"),
        pytest.param("'it''s': x", "'it''s'", "it's", " x", id="single-quoted-escape"),
        pytest.param('"t\\x61gs": x', '"t\\x61gs"', None, " x", id="double-quoted-escape"),
        pytest.param("a:b: c", "a:b", "a:b", " c", id="colon-in-key"),
        pytest.param("a#b: c", "a#b", "a#b", " c", id="hash-in-key"),
        pytest.param("-x: 1", "-x", "-x", " 1", id="dash-start"),
        pytest.param("a[b]: c", "a[b]", "a[b]", " c", id="brackets-inside"),
    ],
)
def test_key_at(line: str, raw: str, name: str | None, rest: str) -> None:
    key = fmscan.key_at(line)
    assert key is not None
    assert (key.raw, key.name, line[key.end :]) == (raw, name, rest)
    if name is not None:  # what YAML reads
        assert list(yaml.safe_load(line.replace("\t", " "))) == [name]


@pytest.mark.parametrize(
    "line",
    ["key:value", "  key: x", "- key: x", "a #b: c", "# key: x", "[a]: b", "&a key: v", "", "---"],
)
def test_no_key_at(line: str) -> None:
    assert fmscan.key_at(line) is None


def test_key_lines_are_exact() -> None:
    lines = ["Date: 1", "date: 2", "date:x: 3", "'date': 4", "  date: 5", "dates: 6"]
    assert [index for index, _key in fmscan.key_lines(lines, "date")] == [1, 3]


@pytest.mark.parametrize(
    ("line", "indent", "value"),
    [
        pytest.param("- a", "", "a", id="plain"),
        pytest.param("  -   a b", "  ", "a b", id="indented"),
        pytest.param("-\ta", "", "a", id="tab-gap"),
        pytest.param("-", "", "", id="empty"),
        pytest.param("  - ", "  ", "", id="empty-with-gap"),
    ],
)
def test_item(line: str, indent: str, value: str) -> None:
    match = fmscan.ITEM_RE.match(line)
    assert match is not None
    assert (match.group(1), line[match.end() :]) == (indent, value)


@pytest.mark.parametrize("line", ["-a", "--- x", "a - b", "#- a"])
def test_no_item(line: str) -> None:
    assert fmscan.ITEM_RE.match(line) is None


@pytest.mark.parametrize(
    ("line", "comment"),
    [
        pytest.param(" a # c", "# c", id="plain"),
        pytest.param(" a#b", "", id="hash-inside-a-word"),
        pytest.param("#x", "#x", id="at-line-start"),
        pytest.param(' "a # b" # c', "# c", id="double-quoted"),
        pytest.param(' "a\\" # b" # c', "# c", id="escaped-double-quote"),
        pytest.param(" 'it'' #s' # c", "# c", id="doubled-single-quote"),
        pytest.param(' a "b # c"', '# c"', id="quote-inside-a-plain-scalar"),
        pytest.param(' [a, "b # c", d] # e', "# e", id="flow-list"),
        pytest.param(' {a: "b # c"} # d', "# d", id="flow-mapping"),
        pytest.param(' !!str "a # b" # c', "# c", id="tag-before-quote"),
        pytest.param(' &x "a # b" # c', "# c", id="anchor-before-quote"),
        pytest.param(' "open # c', "", id="open-quote"),
    ],
)
def test_comment_start(line: str, comment: str) -> None:
    at = fmscan.comment_start(line)
    assert line[at:] == comment
    if line.startswith(" ") and "open" not in line:  # YAML reads the value without it
        assert yaml.safe_load("k:" + line) == yaml.safe_load("k:" + line[:at])


def test_comment_start_on_a_flow_continuation_line() -> None:
    line = '  "b, # x", c]  # d'
    assert line[fmscan.comment_start(line, 0, flow=True) :] == "# d"


def test_split_value() -> None:
    assert fmscan.split_value(" [a, b]  # c") == (" [a, b]", "  # c")
    assert fmscan.split_value(" a  ") == (" a", "  ")


@pytest.mark.parametrize(
    ("text", "sep", "quotes", "items"),
    [
        pytest.param("a, b,c", ",", True, ["a", " b", "c"], id="commas"),
        pytest.param('a, "b, c", d', ",", True, ["a", ' "b, c"', " d"], id="quoted-comma"),
        pytest.param("'x'', y', z", ",", True, ["'x'', y'", " z"], id="doubled-quote"),
        pytest.param('"a\\", b", c', ",", True, ['"a\\", b"', " c"], id="escaped-quote"),
        pytest.param('a, "open, x', ",", True, ["a", ' "open, x'], id="open-quote-runs-on"),
        pytest.param('a "b, c"', ",", True, ['a "b', ' c"'], id="quote-inside-an-item"),
        pytest.param('"a, b"', ",", False, ['"a', ' b"'], id="quotes-off"),
        pytest.param("a b\tc", " ", False, ["a", "b", "c"], id="blanks"),
    ],
)
def test_split_items(text: str, sep: str, quotes: bool, items: list[str]) -> None:
    spans = fmscan.split_items(text, 0, len(text), sep, quotes=quotes)
    assert [text[s:e] for s, e in spans] == items


@pytest.mark.parametrize(
    ("source", "tokens"),
    [
        pytest.param("[]", [], id="empty"),
        pytest.param("[ ]", [], id="blank"),
        pytest.param("[a, 'b c', \"d, e\"]", ["a", "'b c'", '"d, e"'], id="quoted"),
        pytest.param("[a,]", ["a"], id="trailing-comma"),
        pytest.param("[a, , b]", None, id="empty-item"),
        pytest.param("[a, [b]]", None, id="nested"),
        pytest.param("[a #b]", None, id="hash"),
        pytest.param('["a" b]', None, id="text-after-quote"),
        pytest.param('["a]', None, id="open-quote"),
        pytest.param("a, b", None, id="not-a-flow-list"),
    ],
)
def test_flow_tokens(source: str, tokens: list[str] | None) -> None:
    assert fmscan.flow_tokens(source) == tokens


# --- where a copy read a line differently from YAML ----------------------------------------------


@pytest.mark.parametrize(
    ("yaml_text", "line", "shown"),
    [
        pytest.param("Date: 2024-01-01\ndate: someday\n", 3, "someday", id="other-case-first"),
        pytest.param("date: someday\ndate: never\n", 3, "never", id="duplicate-last-wins"),
        pytest.param("date:x: 1\ndate: someday\n", 3, "someday", id="key-with-colon-first"),
    ],
)
def test_date_problem_points_at_the_line_yaml_read(yaml_text: str, line: int, shown: str) -> None:
    """frontmatter.py's key lookup was case-insensitive, took the first of duplicate keys
    (YAML keeps the last) and took ``date:x:`` for ``date:``."""
    note = parse_note("n.md", f"---\n{yaml_text}---\nbody\n".encode(), CONFIG)
    assert [(p.code, p.line) for p in note.problems] == [("date", line)]
    assert note.problems[0].message.endswith(shown)


def test_topic_edit_keeps_a_comment_after_a_plain_value_with_a_quote() -> None:
    """The librarian's comment split opened a quote after any space, so the comment of
    ``tags: a "b # c"`` (YAML: the value ``a "b``) was dropped by the edit."""
    text = '---\ntags: a "b # c"\n---\nbody\n'
    edit = add_topics_edit(text, ["new"], CONFIG)
    assert edit is not None
    assert edit.apply(text) == '---\ntags: a "b new # c"\n---\nbody\n'

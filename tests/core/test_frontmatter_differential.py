"""The fast frontmatter reader answers only where YAML gives the same answer.

Two properties, checked on every note of the shared real vaults, on generated frontmatter and
on a table of hostile blocks:

* wherever the fast line reader (``frontmatter._load_simple``) answers, its data equals what
  the full YAML path of ``parse_frontmatter`` gives with the fast reader switched off (same
  values and types); where that path reports a problem the fast reader does not answer;
* where PyYAML's safe loader rejects a block (a YAML error), ``parse_frontmatter`` reports a
  problem, with or without the fast reader: such a note gets the ``yaml`` diagnostic and is
  not edited by the librarian. The one leniency on purpose: a timestamp that is no real date
  and an int too long to convert stay strings (PyYAML raises ValueError there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_ls.core import frontmatter as fm
from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import InvalidRequest
from engram_ls.core.frontmatter import Frontmatter, parse_frontmatter, split_frontmatter
from engram_ls.core.librarian import Librarian
from engram_ls.core.parse import parse_note
from engram_ls.core.topic_edit import add_topics_edit
from tests.conftest import SHARED_VAULTS

try:
    from yaml import CSafeLoader as Reference
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml import SafeLoader as Reference  # type: ignore[assignment]


def _typed(value: Any) -> Any:
    """Compare values and their types (1 == 1.0 == True must not pass; NaN equals NaN)."""
    if isinstance(value, dict):
        return {_typed(k): _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, float) and value != value:
        return ("nan", float)
    return (value, type(value))


def _full(yaml_text: str) -> Frontmatter:
    """``parse_frontmatter`` of the block with the fast reader switched off: YAML only."""
    block = split_frontmatter(f"---\n{yaml_text}---\n")
    assert block is not None and block.closed
    with mock.patch.object(fm, "_load_simple", return_value=fm._NOT_SIMPLE):
        return parse_frontmatter(block)


def _reference_rejects(yaml_text: str) -> bool:
    try:
        yaml.load(yaml_text, Loader=Reference)
    except yaml.YAMLError:
        return True
    except (ValueError, OverflowError):  # the documented leniency (bad date, huge int)
        return False
    return False


def check(yaml_text: str) -> None:
    """Both properties for one block (``yaml_text``: the lines between the fences)."""
    if not yaml_text.endswith("\n"):
        yaml_text += "\n"
    block = split_frontmatter(f"---\n{yaml_text}---\n")
    if block is None or not block.closed or block.yaml_text != yaml_text:
        return  # a fence line inside: not one block
    answer = fm._load_simple(yaml_text)
    if answer is not fm._NOT_SIMPLE:
        full = _full(yaml_text)
        assert full.problems == (), f"fast reader answered {answer!r}; YAML: {full.problems}"
        assert _typed(answer or {}) == _typed(full.data)
    if _reference_rejects(yaml_text):
        assert parse_frontmatter(block).problems, "PyYAML rejects this block, engram did not"


# --- every note of the shared real vaults ------------------------------------------------------


def _vault_blocks() -> list[tuple[str, str]]:
    out = []
    for path in sorted(SHARED_VAULTS.rglob("*.md")) if SHARED_VAULTS.is_dir() else []:
        text = path.read_bytes().decode("utf-8", "replace").removeprefix("\ufeff")
        block = split_frontmatter(text.replace("\r\n", "\n"))
        if block is not None and block.closed:
            out.append((path.relative_to(SHARED_VAULTS).as_posix(), block.yaml_text))
    return out


def test_every_note_of_the_shared_vaults() -> None:
    blocks = _vault_blocks()
    if not blocks:
        pytest.skip("the shared real vaults are not present")
    answered = 0
    for _rel, yaml_text in blocks:
        check(yaml_text)
        answered += fm._load_simple(yaml_text) is not fm._NOT_SIMPLE
    assert answered > len(blocks) // 2  # the fast reader still serves the common shape


# --- hostile frontmatter -------------------------------------------------------------------------

HOSTILE = [
    pytest.param("date: { { date:YYYY-MM-DD } }\ntags: [a, b]\n", id="spaced-placeholder"),
    pytest.param("date: {{date}}\ntags: [a]\n", id="placeholder"),
    pytest.param("tags: [a, b]\ndate: {{date:YYYY-MM-DD}}\n", id="placeholder-after-tags"),
    pytest.param("meta: {a: 1, b: [x]}\ntags: [a]\n", id="flow-mapping"),
    pytest.param("{a: 1}\n", id="flow-mapping-document"),
    pytest.param("tags: {a, b}\n", id="flow-set"),
    pytest.param("tags:\n\t- a\n", id="tab-indent"),
    pytest.param("tags:\t[a]\n", id="tab-after-colon"),
    pytest.param("tags: [a,\tb]\n", id="tab-in-flow"),
    pytest.param("title: a\tb\n", id="tab-in-value"),
    pytest.param("base: &b [a, b]\ntags: *b\n", id="anchor-alias"),
    pytest.param("tags: *nothing\n", id="unknown-alias"),
    pytest.param("&a tags: [x]\n", id="anchored-key"),
    pytest.param("tags: !!str a\n", id="str-tag"),
    pytest.param("tags: !!python/object:os.system x\n", id="python-tag"),
    pytest.param("!!str tags: [a]\n", id="tagged-key"),
    pytest.param("tags: !custom [a]\n", id="unknown-tag"),
    pytest.param("title: one\n  two\ntags: [a]\n", id="multi-line-plain"),
    pytest.param('title: "one\n  two"\n', id="multi-line-double"),
    pytest.param("title: 'one\n\n  two'\n", id="multi-line-single"),
    pytest.param("summary: |\n  line\n  # not a comment\ntags: [a]\n", id="literal-block"),
    pytest.param("summary: >-\n  folded\n  text\n", id="folded-block"),
    pytest.param("tags: [a, b] # comment\n", id="comment-after-flow"),
    pytest.param("tags: a # comment\n", id="comment-after-plain"),
    pytest.param("tags: a#b\n", id="hash-inside-plain"),
    pytest.param("tags:\n  - a # one\n  # between\n  - b\n", id="comments-in-block"),
    pytest.param("# only\n   # comments\n", id="only-comments"),
    pytest.param("tags: 'it''s'\n", id="single-quote-escape"),
    pytest.param('tags: "a\\"b"\n', id="double-quote-escape"),
    pytest.param('tags: ["a, b", c]\n', id="comma-in-quoted-flow-item"),
    pytest.param('tags: ["a" b]\n', id="text-after-quoted-flow-item"),
    pytest.param("tags: 'a' b\n", id="text-after-quoted"),
    pytest.param('tags: "unclosed\n', id="unclosed-quote"),
    pytest.param("tags: [a, b\n", id="unclosed-flow"),
    pytest.param("tags: [a, b]]\n", id="extra-bracket"),
    pytest.param("tags:value\n", id="no-space-after-colon"),
    pytest.param("tags:[a]\n", id="no-space-before-flow"),
    pytest.param("a:b: c\n", id="colon-in-key"),
    pytest.param("tags: a: b\n", id="colon-in-value"),
    pytest.param("tags: [a]\ntags: [b]\n", id="duplicate-keys"),
    pytest.param("tags:\n  - a\ntags: b\n", id="duplicate-keys-block-then-plain"),
    pytest.param("Tags: [a]\ntags: [b]\n", id="keys-differing-in-case"),
    pytest.param("\ufefftags: [a]\n", id="bom"),
    pytest.param("tags: [a]\r\ntitle: t\r\n", id="crlf"),
    pytest.param("tags: a\rtitle: t\n", id="lone-cr"),
    pytest.param("? tags\n: [a]\n", id="complex-key"),
    pytest.param("? [a, b]\n: c\n", id="complex-flow-key"),
    pytest.param("[a, b]: c\n", id="flow-key"),
    pytest.param("--- x\ntags: [a]\n", id="document-marker-with-text"),
    pytest.param("%YAML 1.1\ntags: [a]\n", id="directive"),
    pytest.param("tags: [a]\n--- \n", id="second-document"),
    pytest.param("tags: ---\n", id="marker-as-value"),
    pytest.param("tags: ...\n", id="dots-as-value"),
    pytest.param("- a\n- b\n", id="list-document"),
    pytest.param("just a string\n", id="scalar-document"),
    pytest.param("tags:\n  - a\n - b\n", id="uneven-items"),
    pytest.param("tags:\n- a\n  - b\n", id="nested-looking-item"),
    pytest.param("tags:\n  - a\n  b: c\n", id="mapping-after-item"),
    pytest.param("tags:\n  a: 1\n", id="nested-mapping"),
    pytest.param("tags:\n  - - a\n", id="nested-sequence"),
    pytest.param("tags:\n  -a\n", id="item-without-space"),
    pytest.param("  tags: [a]\n", id="indented-first-key"),
    pytest.param("tags: [a]\n  title: t\n", id="indented-second-key"),
    pytest.param("a" * 1024 + ": x\ntags: [a]\n", id="key-of-1024"),
    pytest.param("a" * 1025 + ": x\ntags: [a]\n", id="key-of-1025"),
    pytest.param("a b" * 400 + ": x\n", id="long-key-with-spaces"),
    pytest.param("tags: " + "b" * 5000 + "\n", id="long-value"),
    pytest.param("yes: 1\nnull: 2\n1: 3\n", id="non-string-keys"),
    pytest.param("d: 2024-13-45\nn: " + "9" * 5000 + "\n", id="lenient-scalars"),
    pytest.param("d: 2024-02-30\n", id="impossible-date"),
    pytest.param("tags: [.nan, .inf, 0x1F, 1_000, 0o17, 190:20:30]\n", id="numbers"),
    pytest.param("tags: [~, null, yes, Off]\n", id="special-plain"),
    pytest.param("tags: [a, , b]\n", id="empty-flow-item"),
    pytest.param("tags: [a, ]\n", id="trailing-comma"),
    pytest.param("tags: ['a', \"b\", 'c''d']\n", id="quoted-flow-items"),
    pytest.param("tags: a\u2028b\n", id="line-separator"),
    pytest.param("tags: a\x85b\n", id="next-line"),
    pytest.param("tags: a\x07b\n", id="control-character"),
    pytest.param("tags: \u00a0a\n", id="no-break-space"),
    pytest.param("<<: {a: 1}\n", id="merge-key"),
    pytest.param("tags: =\n", id="value-tag"),
    pytest.param("tags: <<\n", id="merge-as-value"),
]


@pytest.mark.parametrize("yaml_text", HOSTILE)
def test_hostile_frontmatter(yaml_text: str) -> None:
    check(yaml_text)


def test_a_key_over_1024_characters_is_a_yaml_problem() -> None:
    """PyYAML reads a key only when its colon is at most 1024 characters away."""
    assert fm._load_simple("a" * 1024 + ": x\n") == {"a" * 1024: "x"}
    block = split_frontmatter("---\n" + "a" * 1025 + ": x\ntags: [t]\n---\n")
    assert block is not None
    assert [p.code for p in parse_frontmatter(block).problems] == ["yaml"]


# --- generated frontmatter -----------------------------------------------------------------------

_KEYS = st.sampled_from(
    ["tags", "topics", "title", "date", "a b", "a-b", "_x", "k.v", "Ünï", "yes", "null", "'q'",
     '"d"', "a:b", "? a", "&x k", "!!str k", "[a]", "{a: 1}", "-k", "k#x", "k #x"]
)  # fmt: skip
_VALUES = st.sampled_from(
    ["", "a", "a b", "a, b", "[a, b]", "[a,b]", "[]", "['a', \"b\"]", '["a, b", c]', "{a: 1}",
     "{ { date } }", "{{date}}", "&x a", "*x", "!!str a", "|", ">-", "'it''s'", '"a\\"b"', "'a",
     '"a', "a # c", "a#b", "a: b", "a:b", "2024-03-05", "2024-13-45", "1_000", ".nan", "0x1F",
     "~", "yes", "-", "- a", "?", ":", "---", "...", "%", "@x", "`x`", "=", "<<", "\u00a0x"]
)  # fmt: skip
_SEPARATORS = st.sampled_from([": ", ":", " : ", ":  ", ":\t"])
_LINE = st.one_of(
    st.tuples(_KEYS, _SEPARATORS, _VALUES).map("".join),
    st.tuples(st.sampled_from(["- ", "  - ", "    - ", "-", "\t- ", " - "]), _VALUES).map("".join),
    st.sampled_from(["", "# c", "  # c", "  more", "\tmore", "? k", ": v", "--- x", "%YAML 1.1"]),
    st.integers(1020, 1030).map(lambda n: "k" * n + ": v"),
)


@pytest.mark.slow  # a property test of 1,500 generated cases
@settings(max_examples=1500, deadline=None)
@given(st.lists(_LINE, max_size=8), st.sampled_from(["\n", "\r\n"]))
def test_generated_frontmatter(lines: list[str], newline: str) -> None:
    check(newline.join(lines) + newline)


@settings(max_examples=500, deadline=None)
@given(st.text(st.characters(codec="utf-8"), max_size=120))
def test_arbitrary_text(yaml_text: str) -> None:
    check(yaml_text)


# --- what a rejected block means for a note ----------------------------------------------------

PLACEHOLDER_NOTE = "---\ndate: { { date:YYYY-MM-DD } }\ntags: [meeting]\n---\n# Weekly\n\nbody\n"


def test_a_block_yaml_rejects_is_a_yaml_problem_and_has_no_topics() -> None:
    note = parse_note("weekly.md", PLACEHOLDER_NOTE.encode(), EngramConfig())
    assert [(p.code, p.line) for p in note.problems] == [("yaml", 2)]
    assert "unhashable key" in note.problems[0].message
    assert '"{{date}}"' in note.problems[0].message  # the hint: quote the placeholder
    assert note.topics == ()
    assert note.title == "Weekly"


def test_the_librarian_does_not_edit_a_block_yaml_rejects(tmp_path: Path) -> None:
    with pytest.raises(InvalidRequest, match="unhashable key"):
        add_topics_edit(PLACEHOLDER_NOTE, ["python"], EngramConfig())
    note = tmp_path / "weekly.md"
    note.write_text(PLACEHOLDER_NOTE.replace("body", "python body"))
    before = note.read_bytes()
    config = EngramConfig(keyword_topics={"python": "python"})
    report = Librarian(tmp_path, config).run(apply=True)
    assert [(n.path, n.status) for n in report.notes] == [("weekly.md", "failed")]
    assert note.read_bytes() == before


def test_a_quoted_placeholder_is_still_only_a_date_problem() -> None:
    text = PLACEHOLDER_NOTE.replace("{ { date:YYYY-MM-DD } }", '"{{date:YYYY-MM-DD}}"')
    note = parse_note("weekly.md", text.encode(), EngramConfig())
    assert [(p.code, p.line) for p in note.problems] == [("date", 2)]
    assert note.topics == ("meeting",)

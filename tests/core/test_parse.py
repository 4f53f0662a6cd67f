"""parse_note: bytes → Note. Every rule of DESIGN §2, hostile input, and "never raises"."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_ls.core.config import EngramConfig, Limits
from engram_ls.core.inline import parse_iso_day
from engram_ls.core.model import Heading, Link, Note
from engram_ls.core.parse import parse_date_value, parse_note

DEFAULT = EngramConfig()


def parse(text: str, path: str = "notes/note.md", config: EngramConfig = DEFAULT) -> Note:
    return parse_note(path, text.encode("utf-8"), config)


def codes(note: Note) -> list[str]:
    return [p.code for p in note.problems]


# --- topics --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frontmatter", "topics"),
    [
        pytest.param("tags: [a, b]", ("a", "b"), id="list"),
        pytest.param("tags:\n  - a\n  - b", ("a", "b"), id="block-list"),
        pytest.param("tags: a, b c,  d ", ("a", "b c", "d"), id="comma-string"),
        pytest.param("tags: a b  c", ("a", "b", "c"), id="space-string"),
        pytest.param("tags: null", (), id="null"),
        pytest.param("tags:", (), id="empty"),
        pytest.param("tags: ''", (), id="empty-string"),
        pytest.param(
            "tags: [1, 2.5, true, 2024-01-02]", ("1", "2.5", "true", "2024-01-02"), id="nums"
        ),
        pytest.param("tags: 2024", ("2024",), id="number-value"),
        pytest.param("tags: [a, [b, c], {d: 1}, null, '', '  ']", ("a",), id="nested-garbage"),
        pytest.param("tags: {a: 1}", (), id="mapping-value"),
        pytest.param("tags: ['#a', ' #b ', '#']", ("a", "b"), id="leading-hash"),
        pytest.param("tags: '#a #b'", ("a", "b"), id="hash-string"),
        pytest.param("tag: solo", ("solo",), id="tag-key"),
        pytest.param("topics: [x]\ntags: [y]\ntag: z", ("x", "y", "z"), id="key-order"),
        pytest.param("tag: z\ntags: [y]\ntopics: [x]", ("x", "y", "z"), id="config-order-wins"),
        pytest.param("tags: [Memory, memory, MEMORY, Leak]", ("Memory", "Leak"), id="dedupe-first"),
        pytest.param("topics: [Python]\ntags: python", ("Python",), id="dedupe-across-keys"),
        pytest.param("Tags: [a]", ("a",), id="key-case-insensitive"),
        pytest.param("tags: [ß, SS, Straße, STRASSE]", ("ß", "Straße"), id="casefold"),
        pytest.param(
            "tags: [area/sub, machine learning]", ("area/sub", "machine learning"), id="kept"
        ),
    ],
)
def test_frontmatter_topics(frontmatter: str, topics: tuple[str, ...]) -> None:
    note = parse(f"---\n{frontmatter}\n---\nbody\n")
    assert note.topics == topics
    assert note.problems == ()


def test_inline_tags_follow_frontmatter_topics() -> None:
    note = parse("---\ntags: [b, Inline]\n---\nText #a and #inline and #c #a\n")
    assert note.topics == ("b", "Inline", "a", "c")


def test_inline_tags_can_be_switched_off() -> None:
    config = EngramConfig(inline_tags=False)
    assert parse("---\ntags: [b]\n---\n#a text #c\n", config=config).topics == ("b",)


def test_configured_topic_keys() -> None:
    config = EngramConfig(topic_keys=("keywords",), inline_tags=False)
    assert parse("---\nkeywords: [k]\ntags: [t]\n---\n", config=config).topics == ("k",)


# --- inline tags ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "tags"),
    [
        pytest.param("#start of line", ("start",), id="line-start"),
        pytest.param("word #tag word", ("tag",), id="after-space"),
        pytest.param("(#paren) [#bracket]", ("paren",), id="after-paren-not-bracket"),
        pytest.param(
            "#nested/tag/ and #dash- and #/slash", ("nested/tag", "dash", "slash"), id="trim"
        ),
        pytest.param("#with_under and #kebab-case", ("with_under", "kebab-case"), id="chars"),
        pytest.param("#café #日本語 #über", ("café", "日本語", "über"), id="unicode"),
        pytest.param("#tag, #tag2. #tag3!", ("tag", "tag2", "tag3"), id="punctuation-ends"),
        pytest.param("#y2024 #1st", ("y2024", "1st"), id="digits-with-letters"),
        pytest.param("# Heading #inheading", ("inheading",), id="tag-in-heading-text"),
        pytest.param("#123 issue #42 and #2024", (), id="numbers"),
        pytest.param("#-1 #--", (), id="no-letters"),
        pytest.param("colour #fff #FFFFFF #a1b2c3 #abcd #a1b2c3d4", (), id="hex-colours"),
        pytest.param("#fffff #abcdeg", ("fffff", "abcdeg"), id="not-colours"),
        pytest.param("# Title\n## Sub\n###### Six", (), id="headings"),
        pytest.param("####### seven", (), id="seven-hashes-no-tag"),
        pytest.param("C#sharp a#b", (), id="inside-word"),
        pytest.param("http://x.com/#frag and https://y.org/a#b", (), id="urls"),
        pytest.param("[a](page.md#section) [b](#anchor)", (), id="link-anchors"),
        pytest.param("[[note#heading]] [[#self]]", (), id="wiki-anchors"),
        pytest.param("\\#escaped &#123;", (), id="escaped-and-entities"),
        pytest.param("`#code` and `` x #y `` #real", ("real",), id="inline-code"),
        pytest.param("```\n#fenced\n```\n#after", ("after",), id="fence"),
        pytest.param("~~~python\n#fenced\n~~~\n#after", ("after",), id="tilde-fence"),
        pytest.param("````\n```\n#still\n````\n#after", ("after",), id="longer-fence"),
        pytest.param("```\n#a\n~~~\n#b\n```\n#c", ("c",), id="other-char-does-not-close"),
        pytest.param("```\n#a\n``` not a close\n#b\n```\n#c", ("c",), id="close-needs-bare"),
        pytest.param("```\n#never\nclosed #x", (), id="unclosed-fence"),
        pytest.param("- item\n  ```\n  #indented\n  ```\n#after", ("after",), id="fence-in-list"),
        pytest.param("``` a`b\n#notfence\n", ("notfence",), id="backtick-info-no-fence"),
    ],
)
def test_inline_tags(body: str, tags: tuple[str, ...]) -> None:
    assert parse(body).topics == tags


# --- dates ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frontmatter", "created_at", "created_ts"),
    [
        pytest.param("date: 2024-03-05", "2024-03-05", None, id="yaml-date"),
        pytest.param("date: '2024-03-05'", "2024-03-05", None, id="string-date"),
        pytest.param(
            "date: 2024-03-05 10:00:00", "2024-03-05", "2024-03-05T10:00:00", id="yaml-datetime"
        ),
        pytest.param(
            "date: 2024-03-05T10:00:00Z", "2024-03-05", "2024-03-05T10:00:00+00:00", id="yaml-z"
        ),
        pytest.param(
            "date: '2024-03-05T10:00:00+02:00'",
            "2024-03-05",
            "2024-03-05T10:00:00+02:00",
            id="string-offset",
        ),
        pytest.param(
            "date: '2024-03-05T10:00:00Z'", "2024-03-05", "2024-03-05T10:00:00+00:00", id="str-z"
        ),
        pytest.param("date: 2024-03-05 10:00", "2024-03-05", "2024-03-05T10:00:00", id="no-secs"),
        pytest.param("date: 2024-03-05T10:00", "2024-03-05", "2024-03-05T10:00:00", id="t-no-secs"),
        pytest.param("date: '20240305'", "2024-03-05", None, id="basic-iso"),
        pytest.param(
            "created_at: 2020-01-01\ndate: 2024-03-05", "2020-01-01", None, id="key-order"
        ),
        pytest.param(
            "date: 2024-03-05\ncreated: 2021-06-07", "2021-06-07", None, id="created-first"
        ),
        pytest.param("Created: 2021-06-07", "2021-06-07", None, id="key-case-insensitive"),
        pytest.param("date:\ncreated: ''\ncreated_at: null", None, None, id="blank-values-skipped"),
        pytest.param("title: x", None, None, id="no-date"),
    ],
)
def test_frontmatter_dates(
    frontmatter: str, created_at: str | None, created_ts: str | None
) -> None:
    note = parse(f"---\n{frontmatter}\n---\nbody\n")
    assert (note.created_at, note.created_ts) == (created_at, created_ts)
    assert note.problems == ()


def test_configured_date_format() -> None:
    config = EngramConfig(date_formats=("%m/%d/%Y", "%d.%m.%Y %H:%M"))
    note = parse("---\ndate: 03/05/2024\n---\n", config=config)
    assert (note.created_at, note.created_ts, note.problems) == ("2024-03-05", None, ())
    note = parse("---\ndate: 05.03.2024 10:30\n---\n", config=config)
    assert (note.created_at, note.created_ts) == ("2024-03-05", "2024-03-05T10:30:00")
    assert codes(parse("---\ndate: 03/05/2024\n---\n")) == ["date"]  # not configured


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param('"{{date}}"', '"{{date}}"', id="quoted-placeholder"),
        pytest.param("<% tp.date.now() %>", "<% tp.date.now() %>", id="templater"),
        pytest.param("2024-13-45", "2024-13-45", id="impossible"),
        pytest.param("0000-01-01", "0000-01-01", id="year-zero"),
        pytest.param("10000-01-01", "10000-01-01", id="year-five-digits"),
        pytest.param("someday", "someday", id="word"),
        pytest.param("[2024-03-05]", "[2024-03-05]", id="list"),
        pytest.param("20240305", "20240305", id="int"),
    ],
)
def test_bad_date_is_a_problem_on_its_line(value: str, shown: str) -> None:
    text = f"---\ntitle: T\ntags: [a]\ndate: {value}\nother: 1\n---\nbody\n"
    note = parse(text, path="2023-01-02 daily.md")
    assert [(p.code, p.line) for p in note.problems] == [("date", 4)]
    assert shown in note.problems[0].message
    assert note.title == "T"
    assert note.topics == ("a",)
    assert note.created_at == "2023-01-02"  # falls through to the file name


def test_bad_date_falls_through_to_next_key() -> None:
    note = parse("---\ncreated_at: '{{date}}'\ncreated: nope\ndate: 2024-03-05\n---\n")
    assert note.created_at == "2024-03-05"
    assert [(p.code, p.line) for p in note.problems] == [("date", 2), ("date", 3)]


@pytest.mark.parametrize(
    ("path", "created_at"),
    [
        pytest.param("2024-03-05 standup.md", "2024-03-05", id="prefix"),
        pytest.param("daily/notes-2024-03-05.md", "2024-03-05", id="suffix"),
        pytest.param("2024-02-30 x 2024-03-01.md", "2024-03-01", id="first-valid"),
        pytest.param("2024-13-01.md", None, id="invalid"),
        pytest.param("12024-03-05.md", None, id="longer-number"),
        pytest.param("2024-03-05/note.md", None, id="folder-not-name"),
        pytest.param("202401051234 - zettel.md", None, id="zettel-id"),
    ],
)
def test_date_from_file_name(path: str, created_at: str | None) -> None:
    note = parse("no frontmatter\n", path=path)
    assert (note.created_at, note.created_ts) == (created_at, None)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(dt.date(2024, 3, 5), ("2024-03-05", None), id="date"),
        pytest.param(dt.datetime(2024, 3, 5, 10), ("2024-03-05", "2024-03-05T10:00:00"), id="dt"),
        pytest.param(" 2024-03-05 ", ("2024-03-05", None), id="spaces"),
        pytest.param(
            "2024-03-05T23:59:59-05:00", ("2024-03-05", "2024-03-05T23:59:59-05:00"), id="tz"
        ),
        pytest.param(
            "9999-12-31T23:59:59+23:59", ("9999-12-31", "9999-12-31T23:59:59+23:59"), id="max"
        ),
        pytest.param(
            "0001-01-01T00:00:00-23:59", ("0001-01-01", "0001-01-01T00:00:00-23:59"), id="min"
        ),
        pytest.param("2024-03-05T10:00+99:00", None, id="bad-offset"),
        pytest.param("99999-01-01", None, id="big-year"),
        pytest.param("2024-02-30", None, id="feb-30"),
        pytest.param("2024-03", None, id="month-only"),
        pytest.param("", None, id="empty"),
        pytest.param("x" * 1000, None, id="long"),
        pytest.param(20240305, None, id="int"),
        pytest.param(None, None, id="none"),
        pytest.param(True, None, id="bool"),
        pytest.param(["2024-03-05"], None, id="list"),
    ],
)
def test_parse_date_value(value: object, expected: tuple[str, str | None] | None) -> None:
    assert parse_date_value(value, ()) == expected


def test_parse_date_value_formats() -> None:
    assert parse_date_value("03/05/2024", ["%m/%d/%Y"]) == ("2024-03-05", None)
    assert parse_date_value("05.03.2024", ["%m/%d/%Y", "%d.%m.%Y"]) == ("2024-03-05", None)
    assert parse_date_value("03/05/2024 7PM", ["%m/%d/%Y %I%p"]) == (
        "2024-03-05",
        "2024-03-05T19:00:00",
    )
    assert parse_date_value("13/45/2024", ["%m/%d/%Y"]) is None
    assert parse_date_value("03/05/2024", ["%Q bad directive", "%"]) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2024-03-05", dt.date(2024, 3, 5), id="ok"),
        pytest.param("2024-02-29", dt.date(2024, 2, 29), id="leap"),
        pytest.param("2023-02-29", None, id="not-leap"),
        pytest.param("0000-01-01", None, id="year-zero"),
        pytest.param("2024-3-5", None, id="short"),
        pytest.param(" 2024-03-05", None, id="space"),
        pytest.param("2024-03-05T00:00", None, id="time"),
        pytest.param("２０２４-０３-０５", None, id="fullwidth-digits"),
        pytest.param("", None, id="empty"),
    ],
)
def test_parse_iso_day(text: str, expected: dt.date | None) -> None:
    assert parse_iso_day(text) == expected


# --- title and summary ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "title"),
    [
        pytest.param("---\ntitle: '  From YAML '\n---\n# Heading\n", "From YAML", id="frontmatter"),
        pytest.param("---\ntitle: 1984\n---\n# Heading\n", "1984", id="number-title"),
        pytest.param("---\ntitle: ''\n---\n# Heading\n", "Heading", id="empty-title"),
        pytest.param("---\ntitle: [a]\n---\n# Heading\n", "Heading", id="list-title"),
        pytest.param("---\ntitle: yes\n---\n# Heading\n", "Heading", id="bool-title"),
        pytest.param("## Sub\n# First H1\n# Second\n", "First H1", id="first-h1"),
        pytest.param("```\n# in code\n```\n# Real\n", "Real", id="h1-not-in-code"),
        pytest.param("## Only sub\n", "my note", id="stem"),
        pytest.param("#NotHeading\n", "my note", id="tag-not-heading"),
    ],
)
def test_title(text: str, title: str) -> None:
    assert parse(text, path="dir/my note.md").title == title


def test_summary() -> None:
    assert parse("---\nsummary: '  S '\ndescription: D\n---\n").summary == "S"
    assert parse("---\nsummary: null\ndescription: D\n---\n").summary == "D"
    assert parse("---\nsummary: [x]\n---\n").summary is None
    config = EngramConfig(summary_keys=("abstract",))
    assert parse("---\nabstract: A\nsummary: S\n---\n", config=config).summary == "A"


# --- headings ------------------------------------------------------------------------------------


def test_headings_with_file_lines() -> None:
    text = (
        "---\ntitle: T\ntags: [a]\n---\n"  # lines 1-4
        "# One\n"  # 5
        "text\n"  # 6
        "## Two ##\n"  # 7
        "```\n## in code\n```\n"  # 8-10
        "   ### Three\n"  # 11
        "    #### indented code\n"  # 12
        "####### seven\n"  # 13
        "#### C#\n"  # 14
        "##### Five #\t\n"  # 15
        "###### Six `code` [[x]]\n"  # 16
        "#\n"  # 17
        "## \n"  # 18
        "###### ######\n"  # 19
        "text # not heading\n"  # 20
    )
    note = parse(text)
    assert note.body_line == 5
    assert note.headings == (
        Heading(1, "One", 5),
        Heading(2, "Two", 7),
        Heading(3, "Three", 11),
        Heading(4, "C#", 14),
        Heading(5, "Five", 15),
        Heading(6, "Six `code` [[x]]", 16),
    )


# --- links ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "links"),
    [
        pytest.param("[[Target]]", [("Target", "wiki", None, None)], id="wiki"),
        pytest.param("[[Target|Alias]]", [("Target", "wiki", None, "Alias")], id="wiki-alias"),
        pytest.param("[[Target#Head]]", [("Target", "wiki", "Head", None)], id="wiki-anchor"),
        pytest.param("[[T#H|A]]", [("T", "wiki", "H", "A")], id="wiki-anchor-alias"),
        pytest.param("[[T#^block]]", [("T", "wiki", "^block", None)], id="wiki-block"),
        pytest.param("![[img.png]]", [("img.png", "wiki", None, None)], id="embed"),
        pytest.param("| [[T\\|A]] |", [("T", "wiki", None, "A")], id="wiki-in-table"),
        pytest.param("[[ spaced ]]", [("spaced", "wiki", None, None)], id="wiki-strip"),
        pytest.param("[[#self]] [[]] [[|x]]", [], id="wiki-empty-target"),
        pytest.param("[a](path.md)", [("path.md", "markdown", None, "a")], id="md"),
        pytest.param("[a](dir/p.md#Sec)", [("dir/p.md", "markdown", "Sec", "a")], id="md-anchor"),
        pytest.param("[a](my%20note.md)", [("my note.md", "markdown", None, "a")], id="md-percent"),
        pytest.param(
            "[a](<with space.md>)", [("with space.md", "markdown", None, "a")], id="angle"
        ),
        pytest.param('[a](p.md "Title")', [("p.md", "markdown", None, "a")], id="md-title"),
        pytest.param("[](p.MD)", [("p.MD", "markdown", None, None)], id="md-upper-no-text"),
        pytest.param("![e](p.md)", [("p.md", "markdown", None, "e")], id="md-embed"),
        pytest.param("[a](../up.md#x%20y)", [("../up.md", "markdown", "x y", "a")], id="md-rel"),
        pytest.param("[a](https://x.com/p.md)", [], id="https"),
        pytest.param("[a](http://x.com/p.md)", [], id="http"),
        pytest.param("[a](mailto:me@x.md)", [], id="mailto"),
        pytest.param("[a](file.txt) [b](img.png) [c](#anchor)", [], id="not-md"),
        pytest.param("[a](p.md.bak)", [], id="md-not-at-end"),
        pytest.param("`[[code]]` `[a](p.md)`", [], id="inline-code"),
        pytest.param("```\n[[code]]\n[a](p.md)\n```", [], id="fenced"),
    ],
)
def test_links(body: str, links: list[tuple[str, str, str | None, str | None]]) -> None:
    note = parse(body)
    assert [(link.target, link.kind, link.anchor, link.label) for link in note.links] == links


def test_link_lines_count_frontmatter_and_keep_order() -> None:
    text = "---\na: 1\n---\nintro [[A]]\n\n[b](b.md) and [[C|c]]\n```\n[[X]]\n```\n![[D]]\n"
    assert parse(text).links == (
        Link("A", "wiki", 4),
        Link("b.md", "markdown", 6, None, "b"),
        Link("C", "wiki", 6, None, "c"),
        Link("D", "wiki", 10),
    )


# --- bytes: line endings, BOM, encoding, binary, size --------------------------------------------

RICH = (
    "---\ntitle: Rich\ntags: [a, b]\ndate: 2024-03-05 10:00:00\n---\n"
    "# H1\n\ntext #inline [[Link|L]]\n\n```\n#no\n```\n## H2\n[m](m.md)\n"
)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(RICH.replace("\n", "\r\n").encode(), id="crlf"),
        pytest.param(b"\xef\xbb\xbf" + RICH.encode(), id="bom"),
        pytest.param(b"\xef\xbb\xbf" + RICH.replace("\n", "\r\n").encode(), id="bom-crlf"),
    ],
)
def test_crlf_and_bom_match_lf(data: bytes) -> None:
    assert parse_note("n.md", data, DEFAULT) == parse(RICH, path="n.md")


def test_rich_note() -> None:
    note = parse(RICH, path="n.md")
    assert note.title == "Rich"
    assert note.topics == ("a", "b", "inline")
    assert (note.created_at, note.created_ts) == ("2024-03-05", "2024-03-05T10:00:00")
    assert note.headings == (Heading(1, "H1", 6), Heading(2, "H2", 13))
    assert note.links == (
        Link("Link", "wiki", 8, None, "L"),
        Link("m.md", "markdown", 14, None, "m"),
    )
    assert note.body_line == 6
    assert note.body.startswith("# H1\n")


def test_non_utf8_bytes() -> None:
    data = "---\ntitle: Café\n---\nline two\n".encode() + b"bad \xff\xfe byte #tag\n"
    note = parse_note("n.md", data, DEFAULT)
    assert [(p.code, p.line) for p in note.problems] == [("encoding", 5)]
    assert note.title == "Café"
    assert "\ufffd" in note.body
    assert note.topics == ("tag",)


def test_latin1_file() -> None:
    note = parse_note("n.md", "# Résumé\n".encode("latin-1"), DEFAULT)
    assert codes(note) == ["encoding"]
    assert note.title == "R\ufffdsum\ufffd"


def test_binary_file() -> None:
    data = b"---\ntitle: Nope\ntags: [x]\n---\n" + b"\x00\x01\x02" * 100
    note = parse_note("img/2024-03-05 photo.md", data, DEFAULT)
    assert note == Note(
        path="img/2024-03-05 photo.md", title="2024-03-05 photo", problems=note.problems
    )
    assert codes(note) == ["binary"]


def test_nul_after_first_8kb_is_not_binary() -> None:
    note = parse_note("n.md", b"# T\n" + b"x" * 9000 + b"\x00", DEFAULT)
    assert "binary" not in codes(note)
    assert note.title == "T"


def test_too_large_note_keeps_metadata_and_head() -> None:
    config = EngramConfig(limits=Limits(max_note_bytes=4096))
    head = "---\ntitle: Big\ntags: [big]\ndate: 2024-03-05\n---\n# Start\n"
    data = (head + "lorem ipsum #tag\n" * 300_000).encode()
    assert len(data) > 5_000_000
    note = parse_note("big.md", data, config)
    assert codes(note) == ["too-large"]
    assert (note.title, note.created_at) == ("Big", "2024-03-05")
    assert note.topics == ("big", "tag")
    assert note.headings == (Heading(1, "Start", 6),)
    assert len(note.body.encode()) <= 4096
    assert note.body.startswith("# Start\nlorem ipsum")


@pytest.mark.parametrize("shift", [0, 1, 2, 3])
def test_too_large_cut_on_character_boundary(shift: int) -> None:
    config = EngramConfig(limits=Limits(max_note_bytes=1024))
    data = ("x" * shift + "😀" * 400).encode()
    note = parse_note("n.md", data, config)
    assert codes(note) == ["too-large"]  # no "encoding" problem from a split character
    assert "\ufffd" not in note.body
    assert 1024 - 3 <= len(note.body.encode()) <= 1024


def test_frontmatter_larger_than_cap_is_unclosed() -> None:
    config = EngramConfig(limits=Limits(max_note_bytes=1024))
    data = ("---\n" + "k: v\n" * 500 + "---\nbody\n").encode()
    assert codes(parse_note("n.md", data, config)) == ["too-large", "unclosed-frontmatter"]


# --- broken frontmatter --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frontmatter", "code", "line"),
    [
        pytest.param("title: x\ntags: [a, b", "yaml", 3, id="unclosed-list"),
        pytest.param("title: x\ntags:\n\t- a\n\t\t- b", "yaml", 4, id="tab-mess"),
        pytest.param("title: [x\nfoo: {", "yaml", 3, id="two-problems-one-report"),
        pytest.param("- a\n- b", "frontmatter-type", 1, id="list"),
        pytest.param("plain words", "frontmatter-type", 1, id="scalar"),
    ],
)
def test_broken_frontmatter_keeps_body(frontmatter: str, code: str, line: int) -> None:
    text = f"---\n{frontmatter}\n---\n# Body Title\ntext #tag [[Link]]\n"
    note = parse(text, path="2024-01-01 x.md")
    assert [(p.code, p.line) for p in note.problems][:1] == [(code, line)]
    assert len(note.problems) == 1
    assert note.title == "Body Title"
    assert note.topics == ("tag",)
    assert note.created_at == "2024-01-01"
    assert note.links == (Link("Link", "wiki", note.body_line + 1),)
    assert note.body.startswith("# Body Title")


def test_unclosed_frontmatter_is_all_body() -> None:
    note = parse("---\ntitle: x\ntags: [a]\n# Heading\n")
    assert [(p.code, p.line) for p in note.problems] == [("unclosed-frontmatter", 1)]
    assert note.title == "Heading"
    assert note.topics == ()
    assert note.body_line == 1
    assert note.headings == (Heading(1, "Heading", 4),)


def test_empty_frontmatter_is_fine() -> None:
    note = parse("---\n---\n# T\n")
    assert note.problems == ()
    assert (note.title, note.body_line) == ("T", 3)


def test_alias_bomb_returns_with_problem() -> None:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 12)]
    lines.append("tags: *a11")
    note = parse("---\n" + "\n".join(lines) + "\n---\n# Still here\n")
    assert codes(note) == ["yaml"]
    assert note.title == "Still here"
    assert note.topics == ()


def test_note_without_anything() -> None:
    assert parse("", path="empty.md") == Note(path="empty.md", title="empty")


# --- never raises --------------------------------------------------------------------------------

SMALL = EngramConfig(limits=Limits(max_note_bytes=1024), date_formats=("%d/%m/%Y",))


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=2048))
def test_never_raises_on_bytes(data: bytes) -> None:
    for config in (DEFAULT, SMALL):
        note = parse_note("x/2024-01-01 n.md", data, config)
        assert isinstance(note, Note)
        assert all(line >= 1 for line in (h.line for h in note.headings))


_PIECES = st.sampled_from(
    [
        "---", "...", "\n", "\r\n", " ", "\t", "#", "##", "# ", "`", "```", "~~~", "[[", "]]", "[",
        "]", "(", ")", "<", ">", "|", "!", ":", ": ", "- ", "&a ", "*a", "{", "}", "'", '"', "\\",
        "%20", ".md", "http://", "tags", "tag", "topics", "title", "date", "created", "summary",
        "2024-03-05", "2024-13-45", "{{date}}", "10:00:00", "Z", "+02:00", "yes", "null", "~",
        "0x", "9" * 30, "é", "😀", "\u2028", "\x85", "\ufeff", "\x00", "\ufffd", "#fff", "#tag",
    ]
)  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=80))
def test_never_raises_on_markdownish_text(pieces: list[str]) -> None:
    text = "---\n" + "".join(pieces)
    for data in (text.encode(), "".join(pieces).encode()):
        note = parse_note("n.md", data, SMALL)
        assert isinstance(note, Note)
        for heading in note.headings:
            assert heading.line >= note.body_line
        for link in note.links:
            assert link.line >= note.body_line and link.target


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300))
def test_never_raises_on_text_with_frontmatter(yaml_text: str, body: str) -> None:
    note = parse(f"---\n{yaml_text}\n---\n{body}")
    assert isinstance(note, Note)
    assert note.body_line >= 1

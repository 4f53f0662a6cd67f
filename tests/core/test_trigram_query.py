"""The trigram query of a regular expression (core/search/trigram_query.py).

Soundness is checked against the real engines: ripgrep decides which texts a pattern matches
(the production ``Grep`` over files in a temporary folder, with the production flags), and
every matched text must satisfy the query, evaluated in Python (``Query.holds``) and as an FTS5
MATCH expression over real FTS5 ``trigram`` tables (folding and exact). Table-driven cases pin
the shapes of typical queries; hostile patterns stay bounded in size.
"""

from __future__ import annotations

import random
import sqlite3
import string
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_ls.core.errors import InvalidRequest
from engram_ls.core.ripgrep import Grep, rg_binary
from engram_ls.core.search.trigram_query import (
    ALL,
    MAX_QUERY,
    Requirement,
    fts5_match,
    text_trigrams,
    trigram_query,
)


def fts(pattern: str, *, case_sensitive: bool = True) -> str | None:
    return trigram_query(pattern, case_sensitive=case_sensitive).fts5()


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        pytest.param("foo.*bar", '"bar" AND "foo"', id="concat-any"),
        pytest.param("(abc|abd)", '"abc" OR "abd"', id="alternation"),
        pytest.param("ab", None, id="too-short"),
        pytest.param("a[bc]d", '"abd" OR "acd"', id="class"),
        pytest.param("abcd", '"abc" AND "bcd"', id="literal"),
        pytest.param(".*", None, id="any"),
        pytest.param(r"\w+", None, id="perl-class"),
        pytest.param("[a-z]{2}", None, id="big-class"),
        pytest.param("foo|.*", None, id="branch-without-trigram"),
        pytest.param("foo|ba", None, id="short-branch"),
        pytest.param("(abc)+", '"abc"', id="plus"),
        pytest.param("(abc)*xyz", '"xyz"', id="star"),
        pytest.param("(abc)?", None, id="optional"),
        pytest.param("x{5}yz", '"xxx" AND "xyz"', id="counted"),
        pytest.param("a{0}bcd", '"bcd"', id="zero-count"),
        pytest.param("ab{2,}c", '"abb"', id="open-count"),
        pytest.param("ab[cd]e", '("abc" OR "abd") AND ("bce" OR "bde")', id="class-middle"),
        pytest.param(r"^abc\b$", '"abc"', id="anchors"),
        pytest.param(r"\Aab\<c\>d\z", '"abc" AND "bcd"', id="zero-width-between"),
        pytest.param(r"\pLabc\p{Greek}", '"abc"', id="unicode-classes"),
        pytest.param("[^x]abc", '"abc"', id="negated"),
        pytest.param(r"a\.b\x{63}", '".bc" AND "a.b"', id="escapes"),
        pytest.param(r"a\/b\ c", '"/b " AND "a/b" AND "b c"', id="punctuation"),
        pytest.param(
            'say "hi"', '" ""h" AND """hi" AND "ay " AND "hi""" AND "say" AND "y """', id="quote"
        ),
        pytest.param("café", '"afé" AND "caf"', id="non-ascii"),
        pytest.param("(?P<n>abc)(?:def)", '"abc" AND "bcd" AND "cde" AND "def"', id="groups"),
        pytest.param("(?s)a.c(?m)abc", '"abc" AND "cab"', id="other-flags"),
    ],
)
def test_case_sensitive_queries(pattern: str, expected: str | None) -> None:
    assert fts(pattern) == expected


@pytest.mark.parametrize(
    ("pattern", "case_sensitive", "expected"),
    [
        pytest.param("Foo", False, '"foo"', id="ignore-case"),
        pytest.param("(?i)Foo", True, '"foo"', id="inline-flag"),
        pytest.param("ABC(?i:d)", True, '"abc" AND "bcd"', id="scoped-flag-folds-all"),
        pytest.param("KAFKA", False, '"afk" AND "fka" AND "kaf"', id="kelvin-folds-to-k"),
        pytest.param("\u212aab", False, '"kab"', id="kelvin-in-pattern"),
        pytest.param("stra\u00dfe", False, '"str" AND "tra"', id="non-ascii-unknown"),
        pytest.param("caf\u00e9s", False, '"caf"', id="accent-unknown"),
        pytest.param("a[BC]d", False, '"abd" OR "acd"', id="class-folded"),
        pytest.param("a[b\u00e9]d", False, None, id="class-non-ascii"),
    ],
)
def test_case_folded_queries(pattern: str, case_sensitive: bool, expected: str | None) -> None:
    req = trigram_query(pattern, case_sensitive=case_sensitive)
    assert req.folded
    assert req.fts5() == expected


def test_exact_queries_are_not_folded() -> None:
    assert not trigram_query("Abc", case_sensitive=True).folded
    assert fts("ÉCOLE") == '"COL" AND "OLE" AND "ÉCO"'


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param("(?x)abc def", id="verbose"),
        pytest.param(r"(?-u:\xff)abc", id="bytes"),
        pytest.param("[a[b]]abc", id="nested-class"),
        pytest.param("[a-z&&[^aeiou]]abc", id="class-intersection"),
        pytest.param("[a-z--c]abc", id="class-difference"),
        pytest.param("[[:alpha:]]abc", id="ascii-class"),
        pytest.param(r"\b{start}abc", id="special-boundary"),
        pytest.param(r"(abc)\1", id="backreference"),
        pytest.param("(?=abc)abc", id="look-ahead"),
        pytest.param("abc{", id="unclosed-count"),
        pytest.param("abc{2,1}", id="reversed-count"),
        pytest.param("abc**", id="repeated-repetition"),
        pytest.param("*abc", id="repetition-first"),
        pytest.param("(abc", id="unclosed-group"),
        pytest.param("abc)", id="unbalanced"),
        pytest.param(r"\Qabc", id="unknown-escape"),
        pytest.param("\ud800abc", id="lone-surrogate"),
        pytest.param("a" * 5000, id="too-long"),
        pytest.param("|".join(f"w{i:05d}" for i in range(10_000)), id="10000-alternatives"),
        pytest.param("(" * 100 + "abc" + ")" * 100, id="too-deep"),
        pytest.param("abc{1000000}", id="huge-count"),
    ],
)
def test_unmodelled_patterns_require_nothing(pattern: str) -> None:
    assert trigram_query(pattern, case_sensitive=True).query == ALL
    assert trigram_query(pattern, case_sensitive=False).query == ALL


@pytest.mark.parametrize(
    "pattern",
    [
        pytest.param("|".join(f"{i:03d}" for i in range(1000)), id="1000-alternatives"),
        pytest.param("|".join(f"a{i:03d}z" for i in range(800)), id="800-long-alternatives"),
        pytest.param("x" * 4000, id="long-literal"),
        pytest.param("(ab|cd){3}" * 300, id="many-small-sets"),
        pytest.param("((((abc|abd){3}){3}){3}){3}" * 20, id="nested-counts"),
        pytest.param("[\\x{0}-\\x{10FFFF}]abc" * 100, id="huge-ranges"),
        pytest.param("(" * 60 + "abc|def" + ")" * 60, id="deep-within-limit"),
        pytest.param("(abcd){999999}" * 50, id="big-counts"),
        pytest.param("(?i)" + r"(?i:k\x{212A}s\x{17F})" * 100, id="folded-flags"),
    ],
)
def test_hostile_patterns_stay_small(pattern: str) -> None:
    for case_sensitive in (True, False):
        q = trigram_query(pattern, case_sensitive=case_sensitive).query
        assert q.size <= MAX_QUERY
        rendered = fts5_match(q)
        assert rendered is None or len(rendered) < 20 * MAX_QUERY


def test_nul_never_reaches_a_trigram() -> None:
    for pattern in ("abc\0def", r"abc\x{0}def"):
        req = trigram_query(pattern, case_sensitive=True)
        assert req.fts5() == '"abc" AND "def"'


def test_alternation_of_words_is_an_or_of_ands() -> None:
    words = ["alpha", "beta", "gamma"]
    q = trigram_query("|".join(words), case_sensitive=True).query
    assert q.op == "or"
    for word in words:
        assert q.holds(text_trigrams(f"x {word} y", case_sensitive=True))
    assert not q.holds(text_trigrams("alp bet gam", case_sensitive=True))


def test_only_kelvin_and_long_s_fold_to_ascii_letters(tmp_path: Path) -> None:
    """The folding contract: rg's case-insensitive ASCII letters match exactly two non-ASCII
    characters (so the index's ``F`` must map those two to ``k`` and ``s``)."""
    lines = [chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    (tmp_path / "all.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = subprocess.run(
        [rg_binary(), "--no-config", "--ignore-case", "--no-line-number", "-e", "[a-z]", "all.txt"],
        cwd=tmp_path, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    assert sorted(out.split()) == ["\u017f", "\u212a"]


def test_fts5_trigram_folding_is_such_an_f() -> None:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trigram', detail=none)")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'row')")
    chars = [chr(c) for c in range(1, 128) if chr(c) != "\n"] + ["\u212a", "\u017f"]
    for ch in chars:
        db.execute("INSERT INTO t VALUES (?)", (ch * 3,))
    terms = {row[0] for row in db.execute("SELECT term FROM v")}
    assert terms == {t for ch in chars for t in text_trigrams(ch * 3, case_sensitive=False)}


# --- soundness against ripgrep ---------------------------------------------------------------

_CHARS = [*"abcxyzABKSks  _-1\"'.*#&~<", "\u212a", "\u017f", "é", "É", "ß", "ẞ", "ı", "İ", "€"]
_META = set("\\.+*?()|[]{}^$#&-~")


def _literal(rnd: random.Random) -> tuple[str, str]:
    ch = rnd.choice(_CHARS)
    if rnd.random() < 0.1:
        return f"\\x{{{ord(ch):X}}}", ch
    if ch in _META or (ch in string.punctuation and ch not in "<>" and rnd.random() < 0.3):
        return "\\" + ch, ch
    return ch, ch


def _class(rnd: random.Random) -> tuple[str, str]:
    members = [rnd.choice(_CHARS) for _ in range(rnd.randint(1, 4))]
    body = "".join("\\" + m if m in _META or m in "]^" else m for m in members)
    if rnd.random() < 0.3:
        body += "a-c"
        members.append(rnd.choice("abc"))
    if rnd.random() < 0.15:
        body += rnd.choice([r"\d", r"\w", r"\s", r"\pL"])
    negated = rnd.random() < 0.1
    sample = rnd.choice(_CHARS) if negated else rnd.choice(members)
    return f"[{'^' if negated else ''}{body}]", sample


def _node(rnd: random.Random, depth: int) -> tuple[str, str]:
    """A random pattern of the grammar and one string it is meant to match."""
    kind = rnd.random() if depth < 4 else rnd.random() * 0.6
    if kind < 0.35:
        parts = [_literal(rnd) for _ in range(rnd.randint(1, 8))]
        return "".join(p for p, _ in parts), "".join(s for _, s in parts)
    if kind < 0.45:
        return _class(rnd)
    if kind < 0.5:
        token, sample = rnd.choice([(".", "x"), (r"\w", "a"), (r"\d", "1"), (r"\s", " "),
                                    (r"\pL", "é"), ("^", ""), ("$", ""), (r"\b", ""),
                                    (r"\B", ""), (r"\<", ""), (r"\>", "")])  # fmt: skip
        return token, sample
    if kind < 0.6:
        return _node(rnd, depth + 1)
    if kind < 0.75:
        parts = [_node(rnd, depth + 1) for _ in range(rnd.randint(2, 3))]
        return "".join(p for p, _ in parts), "".join(s for _, s in parts)
    if kind < 0.87:
        branches = [_node(rnd, depth + 1) for _ in range(rnd.randint(2, 3))]
        opener = rnd.choice(["(", "(?:", "(?i:", "(?-i:"])
        return opener + "|".join(p for p, _ in branches) + ")", rnd.choice(branches)[1]
    inner, sample = _node(rnd, depth + 1)
    low = rnd.randint(0, 3)
    op, count = rnd.choice([("*", rnd.randint(0, 3)), ("+", rnd.randint(1, 3)),
                            ("?", rnd.randint(0, 1)), (f"{{{low}}}", low),
                            (f"{{{low},}}", low + rnd.randint(0, 2)),
                            (f"{{{low},{low + 2}}}", low + rnd.randint(0, 2))])  # fmt: skip
    lazy = "?" if rnd.random() < 0.2 else ""
    return f"(?:{inner}){op}{lazy}", sample * count


def _vary(rnd: random.Random, text: str) -> str:
    """Case variants, Kelvin signs and long s, so that case-insensitive matches occur."""
    out = []
    for ch in text:
        r = rnd.random()
        if r < 0.2:
            ch = ch.swapcase() if len(ch.swapcase()) == 1 else ch
        elif r < 0.3 and ch in "kK":
            ch = "\u212a"
        elif r < 0.4 and ch in "sS":
            ch = "\u017f"
        out.append(ch)
    return "".join(out)


def _case(rnd: random.Random) -> tuple[str, list[str], bool]:
    pattern, sample = _node(rnd, 0)
    flag = rnd.choice(["", "", "", "(?i)", "(?s)", "(?m)", "(?-i)"])
    case_sensitive = rnd.random() < 0.5
    noise = "".join(rnd.choice(_CHARS) for _ in range(rnd.randint(0, 6)))
    texts = [
        noise + sample + noise[::-1],
        _vary(rnd, sample),
        _vary(rnd, noise + sample),
        "".join(rnd.choice(_CHARS) for _ in range(rnd.randint(0, 12))),
    ]
    return flag + pattern, [t for t in texts if "\n" not in t], case_sensitive


def _rg_matches(pattern: str, texts: list[str], case_sensitive: bool) -> set[int]:
    """Which texts rg matches, through the production ``Grep`` (one file per text)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        names = []
        for n, text in enumerate(texts):
            (root / f"{n}.md").write_text(text + "\n", encoding="utf-8")
            names.append(f"{n}.md")
        try:
            counts = Grep(root, pattern, regex=True, case_sensitive=case_sensitive).count(names)
        except InvalidRequest:  # rg rejects the pattern: it matches nothing
            return set()
    return {int(name.removesuffix(".md")) for name in counts}


def _fts5_candidates(req: Requirement, texts: list[str], *, fold: bool) -> set[int]:
    db = sqlite3.connect(":memory:")
    option = "" if fold else " case_sensitive 1"
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(body, tokenize='trigram{option}', detail=none)")
    db.executemany("INSERT INTO t(rowid, body) VALUES (?, ?)", enumerate(texts))
    expression = req.fts5()
    if expression is None:
        return set(range(len(texts)))
    return {row[0] for row in db.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,))}


def _check(pattern: str, texts: list[str], case_sensitive: bool) -> int:
    req = trigram_query(pattern, case_sensitive=case_sensitive)
    matched = _rg_matches(pattern, texts, case_sensitive)
    for n in matched:
        grams = text_trigrams(texts[n], case_sensitive=not req.folded)
        assert req.query.holds(grams), (pattern, case_sensitive, texts[n], str(req.query))
    assert matched <= _fts5_candidates(req, texts, fold=True), (pattern, str(req.query))
    if not req.folded:
        assert matched <= _fts5_candidates(req, texts, fold=False), (pattern, str(req.query))
    return len(matched)


SOUNDNESS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SOUNDNESS
@given(st.randoms(use_true_random=False))
def test_every_text_rg_matches_satisfies_the_query(rnd: random.Random) -> None:
    pattern, texts, case_sensitive = _case(rnd)
    _check(pattern, texts, case_sensitive)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_every_text_rg_matches_satisfies_the_query_many(rnd: random.Random) -> None:
    pattern, texts, case_sensitive = _case(rnd)
    _check(pattern, texts, case_sensitive)


@pytest.mark.parametrize(
    ("pattern", "text", "case_sensitive"),
    [
        pytest.param("KAFKA", "\u212aafka", False, id="kelvin-text"),
        pytest.param("(?i)class", "CLA\u017fS", True, id="long-s-text"),
        pytest.param("a(bc|de)f", "xadefy", True, id="alternation-in-concat"),
        pytest.param(r"ab\b c", "ab c", True, id="boundary"),
        pytest.param("x{5}yz", "xxxxxyz", True, id="counted"),
        pytest.param('say "hi"', 'I say "hi"', True, id="quotes"),
        pytest.param("café", "CAFÉ", False, id="accent-ignore-case"),
    ],
)
def test_known_matches_satisfy_the_query(pattern: str, text: str, case_sensitive: bool) -> None:
    assert _check(pattern, [text], case_sensitive) == 1

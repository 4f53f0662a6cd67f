"""The linear-time glob matcher means exactly what the backtracking regex it replaced meant."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from engram_ls.core.globs import compile_glob


def backtracking_regex(pattern: str) -> re.Pattern[str]:
    """The translation used before (each ``**/`` to ``(?:.*/)?``): the meaning to keep."""
    pat = pattern.strip().lstrip("/")
    if pat.startswith("./"):
        pat = pat[2:]
    if pat.endswith("/"):
        pat += "**"
    if "/" not in pat:
        pat = "**/" + pat
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pat.find("]", i + 2 if pat[i + 1 : i + 2] in ("!", "]") else i + 1)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pat[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error:
        return re.compile(re.escape(pattern) + r"\Z")


ORDINARY = ["a", "b", "/", "*", "?", "**/", "/**", ".md", "[ab]", "[a-c]", "x"]
"""Pieces of patterns people write: whole ``**`` segments, classes that never match ``/``."""
ODD = [*ORDINARY, "**", "[!a]", "[/]", "[!]", "[", "]", "\\", "-", "./", "*a*"]
PATH_CHARS = st.sampled_from(["a", "b", "c", "x", "/", ".md", "-", "\\", "]", "["])
PATHS = st.lists(PATH_CHARS, max_size=14).map("".join)


def pattern_of(pieces: list[str]) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(pieces), min_size=1, max_size=9).map("".join)


@pytest.mark.slow  # a property test of 1,500 generated cases
@settings(max_examples=1500, deadline=None)
@given(pattern_of(ORDINARY), st.lists(PATHS, min_size=1, max_size=8))
def test_ordinary_patterns_agree_with_the_regex(pattern: str, paths: list[str]) -> None:
    old = backtracking_regex(pattern)
    new = compile_glob(pattern)
    for path in paths:
        assert new.match(path) == bool(old.match(path)), (pattern, path)


@pytest.mark.slow  # a property test of 1,500 generated cases
@pytest.mark.filterwarnings("ignore::FutureWarning")
@settings(max_examples=1500, deadline=None)
@given(pattern_of(ODD), st.lists(PATHS, min_size=1, max_size=8))
def test_odd_patterns_agree_with_the_regex(pattern: str, paths: list[str]) -> None:
    old = backtracking_regex(pattern)
    new = compile_glob(pattern)
    literal = re.escape(pattern) + r"\Z"
    # A class that does not compile by itself (``[!]``) makes the pattern literal; the regex
    # sometimes read it as part of a larger class instead, a meaning nobody wrote.
    assume(new.rx is None or new.rx.pattern != literal or old.pattern == literal)
    for path in paths:
        assert new.match(path) == bool(old.match(path)), (pattern, path)


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        pytest.param("**/" * 500 + "x", "a/b/x", True, id="many-doublestars"),
        pytest.param("**/" * 500 + "x", "a/b/y", False, id="many-doublestars-miss"),
        pytest.param("**/a/" * 150 + "b", "a/" * 149 + "c", False, id="groups-miss"),
        pytest.param("*a" * 200 + "b", "a" * 300, False, id="stars-in-a-segment"),
        pytest.param("**a" * 100 + "b", "a/" * 150, False, id="odd-doublestars"),
        pytest.param("[!x]**" * 100 + "b", "a/" * 150, False, id="odd-classes"),
    ],
)
def test_pathological_patterns_answer_at_once(pattern: str, path: str, expected: bool) -> None:
    """Each took from seconds to forever with the regex; a generous bound catches a return of
    backtracking (this is a hang check, not a benchmark)."""
    t0 = time.monotonic()
    glob = compile_glob(pattern)
    assert all(glob.match(path) is expected for _ in range(200))
    assert time.monotonic() - t0 < 5

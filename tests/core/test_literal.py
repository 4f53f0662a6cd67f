"""The in-process literal counter (core/search/literal.py) against the real ripgrep: for texts
and patterns drawn from what notes hold (ASCII, punctuation, CRLF, non-ASCII, the characters
that fold to ASCII letters, long lines, NUL bytes, byte-order marks), every answer it gives is
the one ``Grep.lines`` (rg) gives; where it cannot be sure it says so."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram_ls.core.ripgrep import MAX_LINE_CHARS, FirstMatch, Grep
from engram_ls.core.search.literal import UNDECIDED, Literal

WORDS = "foo Foo FOO bar k K s S \u212a \u017f é É straße İ ı ǅ Ω ω 🙂 - ' \" [ ( * . \\ café"
PIECES = [*WORDS.split(" "), " ", "  ", "\t", "\n", "\r\n", "x" * (MAX_LINE_CHARS - 2)]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


def rg_answer(root: Path, data: bytes, pattern: str, case_sensitive: bool) -> object:
    (root / "n.md").write_bytes(data)
    found = Grep(root, pattern, regex=False, case_sensitive=case_sensitive).lines(["n.md"])
    if found is None:
        return "binary"
    got = found.get("n.md")
    return None if got is None else (got[0], got[1].line, got[1].text)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=texts,
    data=st.data(),
    case_sensitive=st.booleans(),
    prefix=st.sampled_from([b""] * 6 + [b"\xff", b"\xc3(", b"\xef\xbb\xbf", b"\xff\xfe", b"\x00"]),
)
def test_counts_as_ripgrep_does(
    text: str, data: st.DataObject, case_sensitive: bool, prefix: bytes
) -> None:
    raw = prefix + text.encode("utf-8")
    if text:
        i = data.draw(st.integers(0, len(text) - 1))
        j = data.draw(st.integers(i + 1, min(len(text), i + 12)))
        pattern = text[i:j]
    else:
        pattern = "foo"
    if data.draw(st.booleans()):
        pattern = pattern.swapcase()
    needle = Literal.of(pattern, case_sensitive)
    if needle is None:
        assert "\n" in pattern or not pattern or (not case_sensitive and not pattern.isascii())
        return
    mine = needle.lines(raw)
    if mine == UNDECIDED:
        return
    with tempfile.TemporaryDirectory() as tmp:
        theirs = rg_answer(Path(tmp), raw, pattern, case_sensitive)
    assert isinstance(mine, tuple) or mine is None
    expected = None if mine is None else (mine[0], mine[1].line, mine[1].text)
    assert expected == theirs, (raw, pattern, case_sensitive)


def test_what_only_ripgrep_can_say() -> None:
    fold = Literal.of("ask", case_sensitive=False)
    assert fold is not None
    assert fold.lines("a\u212ak\n".encode()) == UNDECIDED  # KELVIN SIGN folds to k
    assert fold.lines(b"ask\x00") == UNDECIDED
    assert fold.lines(b"\xef\xbb\xbfask") == UNDECIDED
    assert fold.lines(b"ASK " + b"x" * MAX_LINE_CHARS) == UNDECIDED
    assert fold.lines(b"x\nASK ask\nno\nask") == (2, FirstMatch(2, "ASK ask"))
    assert Literal.of("café", case_sensitive=False) is None
    assert Literal.of("a\nb", case_sensitive=True) is None
    assert Literal.of("café", case_sensitive=True) is not None

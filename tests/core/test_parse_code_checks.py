"""The public code checks of ``core/parse.py`` used by the language server: ``in_fence`` and
``in_code_span``. ``in_fence`` replaced the LSP's own fence scan (``completion._in_fence``,
issue 14 item 6); the old scan is kept here as the oracle of a differential test over
generated bodies, so the move is shown to change no answer."""

from __future__ import annotations

import random
import re

import pytest

from engram_ls.core.parse import in_code_span, in_fence

_OLD_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)

LINES = [
    "text",
    "```",
    "````",
    "```python",
    "``` has ` tick",
    "~~~",
    "~~~~ info",
    "  ```",
    "```   ",
    "~~~ ~~~",
    "`code` span",
    "",
    "# heading",
    "```\r",
    "    ~~~",
]


def old_in_fence(source: str, start: int, end: int) -> bool:
    """The LSP's scan before issue 14, verbatim but for its argument."""
    if source.find("```", start, end) < 0 and source.find("~~~", start, end) < 0:
        return False
    fence_char, fence_len = "", 0
    for match in _OLD_FENCE_RE.finditer(source, start, end):
        run, rest = match.group(1), match.group(2)
        if match.end() == end:  # the line itself is a fence line
            return True
        if not fence_char:
            if run[0] == "`" and "`" in rest:
                continue
            fence_char, fence_len = run[0], len(run)
        elif run[0] == fence_char and len(run) >= fence_len and not rest.strip():
            fence_char = ""
    return bool(fence_char)


def line_ends(text: str, start: int) -> list[int]:
    ends, pos = [], start
    while True:
        nl = text.find("\n", pos)
        ends.append(len(text) if nl < 0 else nl)
        if nl < 0:
            return ends
        pos = nl + 1


@pytest.mark.parametrize("seed", range(40))
def test_in_fence_answers_as_the_old_scan(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        head = "---\ntags: [a]\n---\n" if rng.random() < 0.5 else ""
        body = "\n".join(rng.choice(LINES) for _ in range(rng.randint(1, 12)))
        text = head + body
        start = len(head)
        for end in line_ends(text, start):
            assert in_fence(text, start, end) == old_in_fence(text, start, end), (text, end)


@pytest.mark.parametrize(
    ("body", "line", "expected"),
    [
        pytest.param("a\n```\nb\n```\nc", 2, True, id="inside"),
        pytest.param("a\n```\nb\n```\nc", 4, False, id="after-closed"),
        pytest.param("a\n```\nb\n```\nc", 1, True, id="opening-line"),
        pytest.param("a\n```\nb\n```\nc", 3, True, id="closing-line"),
        pytest.param("```\nb", 1, True, id="unclosed"),
        pytest.param("``` x ` y\nb", 1, False, id="backticks-in-info-string"),
        pytest.param("~~~\n```\nb", 2, True, id="other-char-does-not-close"),
        pytest.param("````\n```\nb", 2, True, id="shorter-does-not-close"),
    ],
)
def test_in_fence(body: str, line: int, expected: bool) -> None:
    end = line_ends(body, 0)[line]
    assert in_fence(body, 0, end) is expected


@pytest.mark.parametrize(
    ("line", "at", "expected"),
    [
        pytest.param("a `code #x` b", 8, True, id="in-span"),
        pytest.param("a `code` #x", 9, False, id="after-span"),
        pytest.param("a `unclosed #x", 12, True, id="after-open-backtick"),
        pytest.param("``a ` b`` #x", 10, False, id="double-ticks-closed"),
        pytest.param("no ticks #x", 9, False, id="no-ticks"),
    ],
)
def test_in_code_span(line: str, at: int, expected: bool) -> None:
    assert in_code_span(line, at) is expected

"""Topic completion finds quotes and comments as YAML does (pure: ``locate`` + ``find_slot``).

Each case failed on completion's own comment scanner before it used the frontmatter scanner
(core/fmscan.py): it ended a double-quoted item at ``\\"`` and a single-quoted one at ``''``,
so a ``#`` inside the quotes looked like a comment, and it opened a quote after any space, so
the comment after ``a "b`` looked like a quoted item.
"""

from __future__ import annotations

import pytest

from engram_ls.core.config import EngramConfig
from engram_ls.lsp.document import locate
from engram_ls.lsp.features.topics import find_slot

CONFIG = EngramConfig()


def slot_at_end(line: str) -> tuple[str, str] | None:
    where = locate(f"---\n{line}\nother: 1\n---\nbody\n", 1)
    assert where is not None and where.kind == "yaml"
    slot = find_slot(where, len(line), CONFIG, whole=False)
    return None if slot is None else (slot.style, slot.text)


@pytest.mark.parametrize(
    "line",
    [
        pytest.param('tags: ["a\\" # b", py', id="escaped-double-quote"),
        pytest.param("tags: ['it'' # s', py", id="doubled-single-quote"),
    ],
)
def test_a_hash_inside_quotes_is_no_comment(line: str) -> None:
    assert slot_at_end(line) == ("flow", "py")


def test_a_comment_after_a_plain_scalar_with_a_quote_gets_nothing() -> None:
    assert slot_at_end('tags: a "b # c, py') is None


def test_plain_flow_and_block_slots_still_work() -> None:
    assert slot_at_end("tags: [a, py") == ("flow", "py")
    assert slot_at_end("tags: a, py") == ("plain", "py")
    assert slot_at_end("tags: [a] # py") is None
    where = locate("---\ntags:\n  - a\n  - py\n---\n", 3)
    assert where is not None
    slot = find_slot(where, len("  - py"), CONFIG, whole=False)
    assert slot is not None and (slot.style, slot.text, slot.siblings) == ("block", "py", {"a"})

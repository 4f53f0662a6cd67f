"""The benchmark generator's shapes: the low-alphabet vault is the standard one with every title
and heading word made of its eight letters."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import generate_vault as g
import pytest

from engram_ls.core.service import Engram


def by_number(root: Path) -> dict[str, str]:
    """Each generated note's text by its number (the stem's last part)."""
    return {p.stem.rsplit("-", 1)[1]: p.read_text(encoding="utf-8") for p in root.rglob("*.md")}


def metadata(text: str) -> list[str]:
    return [line for line in text.split("\n") if re.match(r"(  - |tags:|date:|created_at:)", line)]


def test_low_alphabet_names_over_eight_letters(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    low = generated(300, shape="low-alphabet", name="low")
    standard = generated(300, name="standard")
    letters = set(g.LOW_ALPHABET) | {" "}
    with Engram(low, index_path=tmp_path / "ix.sqlite") as engram:
        engram.sync()
        names = [n for (n,) in engram.index.conn().execute("SELECT name FROM names")]
    assert len(names) > 1000
    assert all(set(n.casefold()) <= letters for n in names)
    # the same notes otherwise: topics and dates, note by note
    low_notes, std_notes = by_number(low), by_number(standard)
    assert low_notes.keys() == std_notes.keys()
    assert all(metadata(low_notes[k]) == metadata(std_notes[k]) for k in low_notes)
    assert any(metadata(t) for t in low_notes.values())


def test_unknown_shape_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown shape"):
        g.generate(tmp_path / "v", 3, shape="cyrillic")
    assert g.main([str(tmp_path / "w"), "--notes", "2", "--shape", "low-alphabet"]) == 0

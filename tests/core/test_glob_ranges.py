"""A glob that names a whole folder (``FOLDER/**``) or everything (``**``) is answered from a
range of the paths' index instead of testing every note: the same notes as the glob matcher
itself, on tricky names, and through a search."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.globs import compile_glob
from engram_ls.core.search.filters import folder_of_glob
from engram_ls.core.service import Engram

NAMES = ["a", "a b", "x", "x0", "x.y", "é", "x-", "X", ".h", "x/"]
PATHS = sorted(
    {
        "/".join(parts) + ext
        for n in range(1, 4)
        for parts in itertools.product(NAMES, repeat=n)
        for ext in ("", ".md")
    }
)


@pytest.mark.parametrize(
    "pattern", ["**", "x/**", "a b/**", "x/x0/**", "é/**", "X/**", ".h/**", "x.y/a/**"]
)
def test_a_folder_glob_is_the_range_of_its_paths(pattern: str) -> None:
    folder = folder_of_glob(pattern)
    assert folder is not None
    for path in PATHS:
        in_range = folder == "" or folder + "/" <= path < folder + "0"
        assert in_range == bool(compile_glob(pattern).match(path)), (pattern, path)


@pytest.mark.parametrize(
    "pattern", ["x/*/**", "x//**", "./x/**", "x/../**", "x\\y/**", "**/x", "x/**/a", "x*/**", "/**"]
)
def test_other_globs_are_matched_note_by_note(pattern: str) -> None:
    assert folder_of_glob(pattern) is None


def test_search_by_a_folder_glob_finds_what_the_glob_matches(
    generated: Callable[..., Path],
) -> None:
    engram = Engram(generated(300))
    engram.open()
    engram.sync()
    every = engram.search({"path": "**", "limit": 1000})
    assert every.total == engram.status().notes == 300
    paths = [h.path for h in every.results]
    folder = paths[0].split("/")[0]
    for pattern in (f"{folder}/**", f"{folder}/*/**", f"{folder.upper()}/**"):
        got = engram.search({"path": pattern, "limit": 1000})
        want = [p for p in paths if compile_glob(pattern).match(p)]
        assert sorted(h.path for h in got.results) == sorted(want), pattern
        assert got.total == len(want)

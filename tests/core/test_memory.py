"""The servers' heap setting (core/memory.py), in a process of its own each time."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

CODE = "from engram_ls.core.memory import give_back, one_heap; print(one_heap()); give_back()"


def _run(env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-c", CODE], env=env, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_one_heap_is_set_unless_the_environment_sets_it() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert _run(env) == "True"
    assert _run({**env, "MALLOC_ARENA_MAX": "4"}) == "False"  # the user's own setting stands

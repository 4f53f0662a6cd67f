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


BATCH = """
import gc, weakref
from engram_ls.core import memory

class Node:
    pass

assert gc.isenabled() and gc.get_freeze_count() == 0
with memory.batch_collections():
    assert not gc.isenabled() and gc.get_freeze_count() > 0
    with memory.batch_collections():  # another vault's build at the same time
        pass
    assert not gc.isenabled()  # on until the last batch ends
    a = Node()
    a.me = a
    seen = weakref.ref(a)
    del a
    junk = [[] for _ in range(20_000)]  # would have run the collector many times
    memory.collect_batch()  # a pause, with few objects made since the last: nothing looked at
    assert seen() is not None
    more = [[] for _ in range(memory.YOUNG_MOST)]  # made and kept: past the bound
    assert seen() is not None
    memory.collect_batch()  # the next pause collects
    assert seen() is None
assert gc.isenabled() and gc.get_freeze_count() == 0
memory.collect_batch()  # outside a batch: nothing
gc.disable()
with memory.batch_collections():
    pass
assert not gc.isenabled()  # the caller's own setting stands
print("ok")
"""


def test_a_batch_turns_the_cycle_collector_off_and_collects_at_its_pauses() -> None:
    """A build's batch: no automatic collection while it runs (two batches overlapping: until
    the second ends), the objects from before it frozen, a cycle made in it collected at the
    first pause after ``YOUNG_MOST`` objects were made and kept (not at a pause before: each
    collection looks at every one of them), and the collector as it was after it."""
    out = subprocess.run([sys.executable, "-c", BATCH], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr

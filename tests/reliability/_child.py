"""Work run in a child process so that a test can SIGKILL it or hold a lock from outside.

``python -m tests.reliability._child apply ROOT INDEX PATHS_FILE``: apply one batch of
``changed`` events (one path a line), printing ``go`` just before and ``done`` after.
``python -m tests.reliability._child lock INDEX SECONDS MODE``: hold a lock on the index for
SECONDS, printing ``locked`` once held. MODE ``write``: an open write transaction (other
writers wait; WAL readers go on). MODE ``exclusive``: exclusive locking mode (nobody else can
even read; only possible while no other process has the index open).
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path


def apply(root: str, index: str, paths_file: str) -> None:
    from engram_ls.core.service import Engram
    from engram_ls.core.sync import Change

    paths = Path(paths_file).read_text(encoding="utf-8").splitlines()
    with Engram(Path(root), index_path=Path(index)) as engram:
        engram.status()
        print("go", flush=True)
        engram.apply_changes([Change("changed", p) for p in paths])
        print("done", flush=True)


def lock(index: str, seconds: float, mode: str) -> None:
    conn = sqlite3.connect(index, isolation_level=None, timeout=30)
    if mode == "exclusive":
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
    else:
        conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('lock-probe', 1)")
    print("locked", flush=True)
    time.sleep(seconds)
    conn.execute("ROLLBACK")
    conn.close()


if __name__ == "__main__":
    cmd, *args = sys.argv[1:]
    if cmd == "apply":
        apply(*args)
    elif cmd == "lock":
        lock(args[0], float(args[1]), args[2])
    else:
        raise SystemExit(f"unknown command {cmd}")

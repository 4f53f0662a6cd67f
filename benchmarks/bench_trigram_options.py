"""Where a trigram index's build time goes: the notes' texts inserted into an FTS5 ``trigram``
table like the index's (``detail=none``, ``columnsize=0``) on its own, in transactions of
2,500 notes written 500 at a time (as a build writes them), with each of several FTS5
settings, one after the other in one run. Reports the seconds spent inserting (commits
included), the ``optimize`` at the end where a variant asks for one, and the file's size.

    python benchmarks/bench_trigram_options.py VAULT --dir DIR [--notes N] [--variants a,b]

The texts are read into memory first (not timed); the database files go to ``--dir`` and are
deleted after each variant.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import sys
import time
from pathlib import Path

VARIANTS: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "content": ("", (), False),
    "contentless": (", content=''", (), False),
    "automerge=0+optimize": ("", ("automerge", "0"), True),
    "automerge=16": ("", ("automerge", "16"), False),
    "crisismerge=64": ("", ("crisismerge", "64"), False),
    "pgsz=4000": ("", ("pgsz", "4000"), False),
    "hashsize=64MB": ("", ("hashsize", "64000000"), False),
}
"""name (``--variants`` takes a comma-separated list of them): (extra table options, an FTS5
configuration (key, value) or none, whether to ``optimize`` at the end)."""


def texts_of(vault: Path, limit: int | None) -> list[str]:
    out: list[str] = []
    for folder, dirs, files in os.walk(vault):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if name.endswith(".md"):
                out.append((Path(folder) / name).read_bytes().decode("utf-8", "replace"))
                if limit is not None and len(out) >= limit:
                    return out
    return out


def run(name: str, texts: list[str], path: Path) -> dict[str, float]:
    extra, setting, optimize = VARIANTS[name]
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA cache_size=-64000")
        conn.execute(
            "CREATE VIRTUAL TABLE t USING fts5 (text, tokenize = 'trigram', detail = none,"
            f" columnsize = 0{extra})"
        )
        if setting:
            conn.execute("INSERT INTO t (t, rank) VALUES (?, ?)", (setting[0], int(setting[1])))
        started = time.perf_counter()
        for first in range(0, len(texts), 2500):
            conn.execute("BEGIN IMMEDIATE")
            for at in range(first, min(first + 2500, len(texts)), 500):
                rows = [(i + 1, texts[i]) for i in range(at, min(at + 500, len(texts)))]
                conn.executemany("INSERT INTO t (rowid, text) VALUES (?, ?)", rows)
            conn.execute("COMMIT")
        inserted = time.perf_counter() - started
        started = time.perf_counter()
        if optimize:
            conn.execute("INSERT INTO t (t) VALUES ('optimize')")
        optimized = time.perf_counter() - started
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    size = path.stat().st_size
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    return {"insert_s": inserted, "optimize_s": optimized, "bytes": size}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--notes", type=int)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args(argv)
    texts = texts_of(args.vault, args.notes)
    sys.stdout.write(f"{len(texts)} notes, {sum(map(len, texts)) / 1e6:.1f} M characters\n")
    args.dir.mkdir(parents=True, exist_ok=True)
    for i, name in enumerate(args.variants.split(",")):
        got = run(name, texts, args.dir / f"trigram-options-{i}.sqlite")
        total = got["insert_s"] + got["optimize_s"]
        sys.stdout.write(
            f"{name}: {total:.2f} s (insert {got['insert_s']:.2f}, optimize"
            f" {got['optimize_s']:.2f}), {got['bytes'] / 2**20:.1f} MiB,"
            f" load {os.getloadavg()[0]:.2f}\n"
        )
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

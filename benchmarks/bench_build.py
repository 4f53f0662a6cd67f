"""Cold-build benchmark: ``engram index --full`` into a fresh index file, with the trigram
index off and on, for one or more code trees (this one, and e.g. a worktree of the code
before a change), the runs alternated so that a shared machine's load falls on every variant
alike. Reports per variant the median notes/s, the CPU seconds of the writing process (the
CLI's own) and of its parse processes, and the index file's size.

The writing process is what a build waits on, and its CPU time is far less disturbed by other
load than the wall time: compare it first on a busy machine.

    python benchmarks/bench_build.py VAULT --index-dir DIR [--runs 3] [--tree old=PATH ...]
        [--trigram off,on] [--json out.json] [--keep]

The vault is only read (the index files go to ``--index-dir``, deleted before each build). A
tree is a checkout of this repository; its code runs with this interpreter, its config's
``trigram_index`` set as asked (the vault's own config file is left as it is).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

_CHILD = """
import resource, sys
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
sys.path.insert(0, sys.argv.pop(1))
trigram = sys.argv.pop(1) == "on"
import engram_ls.core.config as config
read = config.read_config_file
def with_trigram(root):
    raw, warnings = read(root)
    has = "semantic" in config.EngramConfig.model_fields
    extra = {"semantic": {"enabled": False}} if has else {}
    return {**raw, **extra, "trigram_index": trigram}, warnings
config.read_config_file = with_trigram
from engram_ls.cli import main
code = main()
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write("\\nCPU %.3f %.3f\\n" % (me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime))
sys.exit(code)
"""
"""Runs the CLI of the tree given first, the code of no other tree importable (an editable
install's finder is dropped), with ``trigram_index`` overridden and search by meaning off (a
tree that has it would embed after the build: not part of a build); prints its CPU times."""


def _remove(index: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)


def build_once(vault: Path, tree: Path, trigram: str, index: Path) -> dict[str, float]:
    _remove(index)
    # `engram index` marks the folder as a vault (an empty `.engram/`): taken away again, so
    # that the vault is only read (the shared real vault's tests check that nothing is left).
    marker = vault / ".engram"
    marked = marker.exists()
    try:
        return _build(vault, tree, trigram, index)
    finally:
        if not marked:
            with contextlib.suppress(OSError):
                marker.rmdir()


def _build(vault: Path, tree: Path, trigram: str, index: Path) -> dict[str, float]:
    started = time.perf_counter()
    command = [sys.executable, "-c", _CHILD, str(tree), trigram]
    done = subprocess.run(
        [*command, "index", "--full", "--json", str(vault), "--index", str(index)],
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"build failed ({tree}, trigram {trigram}):\n{done.stderr[-3000:]}")
    sync = json.loads(done.stdout)["sync"]
    writer, parse = (float(x) for x in done.stderr.rsplit("CPU ", 1)[1].split())
    return {
        "notes_per_s": sync["parsed"] / sync["elapsed_s"],
        "build_s": sync["elapsed_s"],
        "command_s": wall,
        "writer_cpu_s": writer,
        "parse_cpu_s": parse,
        "index_bytes": index.stat().st_size,
        "load_1min": os.getloadavg()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("vault", type=Path)
    ap.add_argument("--index-dir", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree", action="append", default=[], help="LABEL=PATH (repeatable)")
    ap.add_argument("--trigram", default="off,on", help="off, on or off,on")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--keep", action="store_true", help="keep the last index of each variant")
    args = ap.parse_args(argv)
    trees = [("this", HERE)] + [
        (label, Path(path)) for label, _, path in (t.partition("=") for t in args.tree)
    ]
    variants = [(label, tree, tri) for label, tree in trees for tri in args.trigram.split(",")]
    args.index_dir.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, float]]] = {f"{lab} {tri}": [] for lab, _, tri in variants}
    for i in range(args.runs):
        # each round starts with the next variant: whichever runs first in a round was seen to
        # build up to 15 % slower than the same code run later (the previous build's writes
        # still going to disk), which a fixed order would pin on one variant
        start = i % len(variants)
        for label, tree, tri in variants[start:] + variants[:start]:
            name = f"{label} {tri}"
            got = build_once(args.vault, tree, tri, args.index_dir / f"build-{label}-{tri}.sqlite")
            runs[name].append(got)
            sys.stderr.write(
                f"run {i} {name}: {got['notes_per_s']:.0f} notes/s, writer"
                f" {got['writer_cpu_s']:.1f} s CPU, parse {got['parse_cpu_s']:.1f} s CPU,"
                f" {got['index_bytes'] / 2**20:.1f} MiB, load {got['load_1min']:.2f}\n"
            )
    summary = {
        name: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
        for name, rs in runs.items()
    }
    for name, med in summary.items():
        sys.stdout.write(
            f"{name}: median {med['notes_per_s']:.0f} notes/s, writer {med['writer_cpu_s']:.1f} s"
            f" CPU, parse {med['parse_cpu_s']:.1f} s CPU, {med['index_bytes'] / 2**20:.1f} MiB\n"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"runs": runs, "median": summary}, indent=2) + "\n")
    if not args.keep:
        for label, _tree, tri in variants:
            _remove(args.index_dir / f"build-{label}-{tri}.sqlite")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

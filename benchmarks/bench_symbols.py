"""Workspace-symbol benchmark in the core: the search with and without ``name_keys``, alternated
in one process on one index, with the same answers checked.

    python benchmarks/bench_symbols.py VAULT [--index FILE] [--shape low-alphabet]
                                       [--repeat N] [--json OUT] [QUERY ...]

"Without" sets ``symbols.KEYS_MAX`` to -1: exact, prefix and word-start matches of the whole
vault then come from the full-text index or a scan, as before ``name_keys`` existed. The
queries are the shape's (``benchlib.symbol_queries``) and any given. Each query runs once
untimed, then ``--repeat`` times each way, the two ways taking turns; every run of both ways
must return the same hits in the same order. The index is built first when missing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as b
import generate_vault as g

from engram_ls.core.index import symbols as sym
from engram_ls.core.service import Engram

WAYS = {"without name_keys": -1, "with name_keys": sym.KEYS_MAX}


def run(engram: Engram, queries: list[str], repeat: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for q in queries:
        times: dict[str, list[float]] = {way: [] for way in WAYS}
        answers: dict[str, list[tuple[str, int, int]]] = {}
        for i in range(repeat + 1):
            for way, keys_max in WAYS.items():
                sym.KEYS_MAX = keys_max
                t0 = time.perf_counter()
                hits = engram.symbols(q)
                if i:
                    times[way].append((time.perf_counter() - t0) * 1000)
                answers[way] = [(h.kind, h.ref, h.line) for h in hits]
            if len({tuple(a) for a in answers.values()}) != 1:
                raise AssertionError(f"{q!r}: the two ways answer differently")
        out[q] = {way: b.summary(t) for way, t in times.items()}
        out[q]["results"] = len(answers["with name_keys"])
    sym.KEYS_MAX = WAYS["with name_keys"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("vault", type=Path)
    ap.add_argument("queries", nargs="*", help="more queries")
    ap.add_argument("--index", type=Path, default=None, help="index file (default: the vault's)")
    ap.add_argument("--shape", choices=g.SHAPES, default="standard")
    ap.add_argument("--repeat", type=int, default=40, help="timed runs of each way")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_intermixed_args()
    queries = list(dict.fromkeys([*b.symbol_queries(args.shape), *args.queries]))
    with Engram(args.vault, index_path=args.index) as engram:
        engram.sync()
        out = {"notes": engram.status().notes, "shape": args.shape}
        out["workspace/symbol"] = run(engram, queries, args.repeat)
    b.emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

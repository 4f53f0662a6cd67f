"""Core benchmark: build, reconcile and query a vault through the core service, with ripgrep
scanning the same vault for the same text as the baseline, in the same run.

    python benchmarks/bench_core.py VAULT [--index FILE] [--repeat N] [--json OUT]

Prints a table (and optionally JSON) with the cold build rate, the warm no-change reconcile time,
and p50/p95 of a fixed query mix, each text query beside the time `rg` needs for it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import generate_vault as g

from engram_ls.core.ripgrep import rg_binary
from engram_ls.core.service import Engram


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def query_mix() -> list[tuple[str, dict[str, Any], str | None]]:
    """(name, request, pattern that ``rg`` scans for as the baseline, or None)."""
    topic, rare_topic = g.COMMON_TOPICS[0], g.RARE_TOPICS[0]
    word, word2, rare = g.COMMON_WORDS[0], g.COMMON_WORDS[1], g.RARE_WORDS[0]
    year = {"date_from": "2021-01-01", "date_to": "2021-12-31"}
    return [
        ("tag", {"tags": [topic]}, None),
        ("tag+date", {"tags": [topic], **year}, None),
        ("rare tag+date", {"tags": [rare_topic], "date_from": "2018-01-01"}, None),
        ("2 tags all", {"tags": [topic, "memory"], "tags_mode": "all"}, None),
        ("text rare", {"query": rare}, rare),
        ("text common", {"query": word}, word),
        ("text+tag+date", {"query": word, "tags": [topic], **year}, None),
        ("phrase", {"query": f'"{word} {word2}"'}, f"{word} {word2}"),
        ("literal rare", {"query": rare, "mode": "literal"}, rare),
        ("regex rare+tag", {"query": rare[:5] + ".*", "mode": "regex", "tags": [topic]}, None),
    ]


def rg_time(root: Path, pattern: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [
            rg_binary(),
            "--no-config",
            "--no-ignore",
            "-i",
            "-l",
            "--glob=*.md",
            "-F",
            "-e",
            pattern,
            "--",
            ".",
        ],
        cwd=root,
        stdout=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-"))
    index = args.index or tmp / "index.sqlite"
    out: dict[str, Any] = {"vault": str(args.vault), "cpus": os.cpu_count()}
    try:
        with Engram(args.vault, index_path=index) as engram:
            t0 = time.perf_counter()
            report = engram.sync(workers=args.workers)
            build_s = time.perf_counter() - t0
            out["notes"] = engram.status().notes
            out["cold_build_s"] = round(build_s, 2)
            out["cold_build_notes_per_s"] = round(report.parsed / build_s)
            out["index_mb"] = round(index.stat().st_size / 2**20, 1)
            warm = []
            for _ in range(3):
                t0 = time.perf_counter()
                engram.sync()
                warm.append(time.perf_counter() - t0)
            out["warm_reconcile_s"] = round(statistics.median(warm), 3)
            rows = []
            for name, req, pattern in query_mix():
                times = []
                total = 0
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    res = engram.search(req)
                    times.append((time.perf_counter() - t0) * 1000)
                    total = res.total
                    assert res.index.served_by == "index"
                row: dict[str, Any] = {
                    "query": name,
                    "total": total,
                    "p50_ms": round(pct(times, 50), 2),
                    "p95_ms": round(pct(times, 95), 2),
                }
                if pattern:
                    rg = [rg_time(args.vault, pattern) * 1000 for _ in range(3)]
                    row["rg_ms"] = round(statistics.median(rg), 1)
                    row["ratio"] = round(row["rg_ms"] / max(row["p50_ms"], 0.001), 1)
                rows.append(row)
            out["queries"] = rows
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"notes {out['notes']}, cold build {out['cold_build_s']} s"
        f" = {out['cold_build_notes_per_s']} notes/s, index {out['index_mb']} MB,"
        f" warm reconcile {out['warm_reconcile_s']} s"
    )
    print(f"{'query':18} {'total':>7} {'p50 ms':>8} {'p95 ms':>8} {'rg ms':>8} {'ratio':>7}")
    for r in out["queries"]:
        print(
            f"{r['query']:18} {r['total']:>7} {r['p50_ms']:>8} {r['p95_ms']:>8}"
            f" {r.get('rg_ms', ''):>8} {r.get('ratio', ''):>7}"
        )
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

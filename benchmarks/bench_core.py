"""Core benchmark: build, reconcile and query a vault through the core service, with ripgrep
scanning the same vault for the same text as the baseline, in the same run.

    python benchmarks/bench_core.py VAULT [--repeat N] [--builds N] [--workers N] [--json OUT]

Prints a table (and optionally JSON) with the cold build rate, the warm no-change reconcile time,
and p50/p95/p99 of a fixed query mix, each text query beside the time `rg` needs for it.
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

import benchlib as b
import generate_vault as g

from engram_ls.core.service import Engram
from engram_ls.core.sync import Change


def median_ms(fn: Any, n: int) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1)


def cli_ms(vault: Path, index: Path, *args: str, n: int = 5) -> float:
    env = {**os.environ, "ENGRAM_INDEX": str(index)}
    cmd = [sys.executable, "-m", "engram_ls", "search", "--vault", str(vault), *args]
    return median_ms(lambda: subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True), n)


def updates(engram: Engram, vault: Path) -> dict[str, float]:
    """Save one note and see it in a search; rename a big folder there and back."""
    note = next(vault.rglob("*.md"))
    rel = note.relative_to(vault).as_posix()
    original = note.read_bytes()
    out: dict[str, float] = {}
    try:
        times = []
        for i in range(20):
            word = f"savedword{i}x"
            note.write_bytes(original + f"\n{word}\n".encode())
            t0 = time.perf_counter()
            engram.apply_changes([Change("changed", rel)])
            res = engram.search({"query": word})
            times.append((time.perf_counter() - t0) * 1000)
            assert res.total == 1
        out["save -> visible in search"] = round(statistics.median(times), 2)
    finally:
        note.write_bytes(original)
        engram.apply_changes([Change("changed", rel)])
    folders = sorted(
        (d for d in vault.iterdir() if d.is_dir()), key=lambda d: sum(1 for _ in d.rglob("*.md"))
    )
    folder = next((d for d in folders if sum(1 for _ in d.rglob("*.md")) >= 1000), folders[-1])
    count = sum(1 for _ in folder.rglob("*.md"))
    moved = folder.with_name(folder.name + "-moved")
    folder.rename(moved)
    t0 = time.perf_counter()
    report = engram.apply_changes([Change("renamed", folder.name, moved.name)])
    out[f"rename folder of {count} notes"] = round((time.perf_counter() - t0) * 1000, 1)
    assert report.parsed == 0
    moved.rename(folder)
    engram.apply_changes([Change("renamed", moved.name, folder.name)])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--repeat", type=int, default=30, help="runs of each query")
    ap.add_argument("--builds", type=int, default=3, help="cold builds (median reported)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="engram-bench-"))
    index = tmp / "index.sqlite"
    out: dict[str, Any] = {"vault": str(args.vault), "cpus": os.cpu_count()}
    try:
        rates = []
        for _ in range(args.builds):
            for suffix in ("", "-wal", "-shm"):
                Path(str(index) + suffix).unlink(missing_ok=True)
            with Engram(args.vault, index_path=index) as engram:
                t0 = time.perf_counter()
                report = engram.sync(workers=args.workers)
                rates.append(report.parsed / (time.perf_counter() - t0))
        out["cold_build_notes_per_s"] = round(statistics.median(rates))
        out["cold_build_runs"] = [round(r) for r in rates]
        with Engram(args.vault, index_path=index) as engram:
            out["notes"] = engram.status().notes
            out["index_mb"] = round(index.stat().st_size / 2**20, 1)
            out["warm_reconcile_ms"] = median_ms(engram.sync, 3)
            rows = []
            for name, req, baseline in b.query_mix():
                times = []
                total = 0
                served = "index"
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    res = engram.search(req)
                    times.append((time.perf_counter() - t0) * 1000)
                    total, served = res.total, res.index.served_by
                    # ripgrep reads every file for a query the index cannot narrow
                    assert served == "index" or req.get("mode") in ("literal", "regex")
                row: dict[str, Any] = {"query": name, "total": total, **b.summary(times)}
                row["served_by"] = served
                if baseline is not None:
                    row["rg_ms"] = b.rg_ms(
                        args.vault, baseline["pattern"], regex=baseline.get("regex", False)
                    )
                    row["ratio"] = round(row["rg_ms"] / max(row["p50_ms"], 0.001), 1)
                rows.append(row)
            out["queries"] = rows
            out["updates"] = updates(engram, args.vault)
        topic = g.COMMON_TOPICS[0]
        out["cli_ms"] = {
            "search --no-sync (tag+date)": cli_ms(
                args.vault, index, "--tag", topic, "--from", "2021-01-01", "--no-sync"
            ),
            "search (tag+date, with sync)": cli_ms(
                args.vault, index, "--tag", topic, "--from", "2021-01-01"
            ),
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"notes {out['notes']}, cold build {out['cold_build_notes_per_s']} notes/s"
        f" (runs {out['cold_build_runs']}), index {out['index_mb']} MB,"
        f" warm reconcile {out['warm_reconcile_ms']} ms"
    )
    print(
        f"{'query':18} {'total':>7} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
        f" {'rg ms':>8} {'ratio':>7}"
    )
    for r in out["queries"]:
        print(
            f"{r['query']:18} {r['total']:>7} {r['p50_ms']:>8} {r['p95_ms']:>8} {r['p99_ms']:>8}"
            f" {r.get('rg_ms', ''):>8} {r.get('ratio', ''):>7}"
        )
    for name, ms in {**out["updates"], **out["cli_ms"]}.items():
        print(f"{name:40} {ms:>8} ms")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

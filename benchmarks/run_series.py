"""Run the front-end benchmarks on vaults of several sizes, write JSON and draw the chart.

    python benchmarks/run_series.py [--sizes 1000 10000 100000] [--vault-dir DIR]
                                    [--out benchmarks/results] [--chart PNG]
    python benchmarks/run_series.py --quick [--out DIR]     # ~2,000 notes, a few runs, < 1 min
    python benchmarks/run_series.py --chart-only            # redraw from the JSON in --out
    python benchmarks/run_series.py --sizes 10000 --shape low-alphabet   # the second shape

For each size: generate the vault under ``--vault-dir`` (reused when already generated with the
same size and seed), then ``bench_lsp`` (cold build, warm start, the query mix with ``rg`` as
the baseline, symbols, completion, save → visible, 1,000-file batches for a VS Code-like and a
Neovim-like client) and ``bench_mcp`` (``search_notes`` round trips). One JSON file per size,
``series-<label>.json`` (``series-<label>-low-alphabet.json`` for ``--shape low-alphabet``,
generate_vault.py's second shape, whose vault is ``vault-<notes>-low-alphabet``); the chart
(matplotlib, optional) plots p95 latency against vault size.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_lsp
import bench_mcp
import generate_vault as g

from engram_ls.core.ripgrep import rg_binary

HERE = Path(__file__).resolve().parent
QUICK_NOTES = 2000


def label(notes: int) -> str:
    return f"{notes // 1000}k" if notes % 1000 == 0 else str(notes)


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem_gib = round(kb / 2**20, 1)
    except (OSError, ValueError, IndexError):
        pass
    rg = subprocess.run([rg_binary(), "--version"], capture_output=True, text=True, check=False)
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "mem_gib": mem_gib,
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "rg": rg.stdout.split("\n", 1)[0],
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def shaped(name: str, shape: str) -> str:
    """A file or folder name of the standard shape, or of another one."""
    return name if shape == "standard" else f"{name}-{shape}"


def ensure_vault(vault_dir: Path, notes: int, seed: int = 1, shape: str = "standard") -> Path:
    """The generated vault of ``notes`` notes, generated unless a finished one is there."""
    vault = vault_dir / shaped(f"vault-{notes}", shape)
    stamp = vault_dir / f"{vault.name}.generated.json"
    want: dict[str, Any] = {"notes": notes, "seed": seed}
    if shape != "standard":
        want["shape"] = shape
    if vault.is_dir() and stamp.exists() and json.loads(stamp.read_text()) == want:
        return vault
    if vault.exists():
        shutil.rmtree(vault)
    t0 = time.perf_counter()
    g.generate(vault, notes, seed, shape=shape)
    print(f"generated {notes} notes in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    stamp.write_text(json.dumps(want))
    return vault


async def run_size(vault: Path, index: Path, runs: int, shape: str = "standard") -> dict[str, Any]:
    lsp = await bench_lsp.run_all(vault, index, runs, cold_build=True, shape=shape)
    mcp = await bench_mcp.run(vault.resolve(), index, runs)
    return {"lsp": lsp, "mcp": mcp}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--vault-dir", type=Path, default=None, help="where vaults and indexes live")
    ap.add_argument("--out", type=Path, default=None, help="folder for series-<size>.json")
    ap.add_argument("--chart", type=Path, default=None, help="PNG to draw (needs matplotlib)")
    ap.add_argument("--repeat", type=int, default=100, help="runs per request (time-capped)")
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_NOTES:,} notes, few runs")
    ap.add_argument(
        "--shape", choices=g.SHAPES, default="standard", help="generator shape of the vaults"
    )
    ap.add_argument("--chart-only", action="store_true", help="redraw from the JSON in --out")
    ap.add_argument(
        "--markdown", action="store_true", help="print the docs tables from the JSON in --out"
    )
    args = ap.parse_args(argv)
    out_dir = args.out
    if out_dir is None and not args.quick:
        out_dir = HERE / "results"
    chart = args.chart
    if chart is None and not args.quick and args.shape == "standard":
        chart = HERE.parent / "docs" / "img" / "latency-by-size.png"
    if args.markdown:
        assert out_dir is not None
        print(markdown(load_series(out_dir, args.sizes)))
        return 0
    if args.chart_only:
        assert out_dir is not None
        return draw_chart(load_series(out_dir, args.sizes), chart) if chart else 0
    sizes, runs = ([QUICK_NOTES], 10) if args.quick else (args.sizes, args.repeat)
    tmp = None
    vault_dir = args.vault_dir
    if vault_dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="engram-series-"))
        vault_dir = tmp
    vault_dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    try:
        for notes in sizes:
            vault = ensure_vault(vault_dir, notes, shape=args.shape)
            index = vault_dir / (shaped(f"index-{notes}", args.shape) + ".sqlite")
            t0 = time.perf_counter()
            data = {
                "vault": f"generated, {notes:,} notes, seed 1, shape {args.shape}",
                "notes": notes,
                "date": dt.date.today().isoformat(),
                "mode": "quick" if args.quick else "series",
                "runs_per_request": runs,
                "machine": machine(),
                **asyncio.run(run_size(vault, index, runs, args.shape)),
            }
            data["seconds"] = round(time.perf_counter() - t0, 1)
            results[label(notes)] = data
            print(table(label(notes), data))
            if out_dir is not None:
                out_dir.mkdir(parents=True, exist_ok=True)
                stem = f"{'quick' if args.quick else 'series'}-{label(notes)}"
                path = out_dir / (shaped(stem, args.shape) + ".json")
                path.write_text(json.dumps(data, indent=2) + "\n")
                print(f"wrote {path}", file=sys.stderr)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    if chart is not None and not args.quick:
        return draw_chart(results, chart)
    return 0


def key_rows(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, {p50_ms, p95_ms, p99_ms, ...}) for the figures the docs table shows."""
    vs = data["lsp"]["vscode"]
    rows = [(f"engram/search {k}", v) for k, v in vs["engram/search"].items()]
    rows += [(f"workspace/symbol `{k}`", v) for k, v in vs["workspace/symbol"].items()]
    rows += [("completion `tags: [py`", vs["completion"])]
    rows += [(f"link completion `{k}`", v) for k, v in vs.get("link completion", {}).items()]
    rows += [("save → visible", vs["save->visible"])]
    rows += [(f"MCP search_notes {k}", v) for k, v in data["mcp"]["search_notes"].items()]
    return rows


def table(name: str, data: dict[str, Any]) -> str:
    lsp = data["lsp"]
    lines = [f"== {name}: {lsp['vault_notes']} notes, {data['seconds']} s"]
    cli, cold = lsp["cold_cli"], lsp["cold_lsp"]
    lines.append(
        f"cold build, engram index: {cli['build_notes_per_s']} notes/s ({cli['seconds']} s in"
        f" all), peak RSS {cli['peak_rss_mib_tree']} MiB"
    )
    if "error" in cold:
        lines.append(f"cold build, language server: {cold['error']}")
    else:
        lines.append(
            f"cold build, language server: {cold['notes_per_s']} notes/s ({cold['ready_s']} s"
            f" to ready), peak RSS {cold['peak_rss_mib_tree']} MiB"
        )
    for preset in ("vscode", "neovim"):
        p = lsp[preset]
        lines.append(
            f"{preset}: warm start {p['warm_start_s']} s, RSS ready {p['server_rss_mib_ready']}"
            f" MiB, server peak {p['server_peak_rss_mib']} MiB, tree peak"
            f" {p['peak_rss_mib_tree_sampled']} MiB"
        )
        for k, v in p["batches"].items():
            lines.append(f"  {k:24} {v['ms']:>8} ms (from first write {v['from_first_write_ms']})")
    lines.append(f"{'what':44} {'p50':>8} {'p95':>8} {'p99':>8} {'rg':>8} {'ratio':>6}")
    for k, v in key_rows(data):
        lines.append(
            f"{k:44} {v['p50_ms']:>8} {v['p95_ms']:>8} {v['p99_ms']:>8}"
            f" {v.get('rg_ms', ''):>8} {v.get('rg_ratio_p50', ''):>6}"
        )
    m = data["mcp"]
    lines.append(
        f"MCP start → first answer {m['start_to_first_answer_s']} s, RSS {m['server_rss_mib']}"
    )
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    """The latency table of docs/benchmarks.md: p50 / p95 / p99 ms per vault size."""
    ordered = sorted(results.items(), key=lambda kv: kv[1]["notes"])
    head = "| what | " + " | ".join(f"{name} p50 / p95 / p99" for name, _ in ordered) + " |"
    lines = [head, "|---|" + "---:|" * len(ordered)]
    by_size = [dict(key_rows(data)) for _, data in ordered]
    for name in by_size[0]:
        cells = []
        for rows in by_size:
            row = rows.get(name)
            cells.append(f"{row['p50_ms']} / {row['p95_ms']} / {row['p99_ms']}" if row else "—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| text query: rg ms (rg ÷ Engram p50) | " + " | ".join(n for n, _ in ordered) + " |",
    ]
    lines.append("|---|" + "---:|" * len(ordered))
    for q in ordered[0][1]["lsp"]["vscode"]["engram/search"]:
        rows = [d["lsp"]["vscode"]["engram/search"][q] for _, d in ordered]
        if "rg_ms" in rows[0]:
            cells = [f"{r['rg_ms']} ({r['rg_ratio_p50']}×)" for r in rows]
            lines.append(f"| {q} | " + " | ".join(cells) + " |")
    lines += ["", "| batch of 1,000 files, ms | " + " | ".join(n for n, _ in ordered) + " |"]
    lines.append("|---|" + "---:|" * len(ordered))
    for preset, who in (("vscode", "VS Code-like"), ("neovim", "Neovim-like")):
        for key in ordered[0][1]["lsp"][preset]["batches"]:
            cells = []
            for _, d in ordered:
                r = d["lsp"][preset]["batches"][key]
                cells.append(f"{r['ms']} ({r['from_first_write_ms']})")
            lines.append(f"| {who}: {key} | " + " | ".join(cells) + " |")
    lines += ["", "| start-up and memory | " + " | ".join(n for n, _ in ordered) + " |"]
    lines.append("|---|" + "---:|" * len(ordered))

    def row(title: str, get: Callable[[dict[str, Any]], Any]) -> None:
        vals = []
        for _, d in ordered:
            try:
                vals.append(str(get(d)))
            except KeyError:
                vals.append("—")
        lines.append(f"| {title} | " + " | ".join(vals) + " |")

    row(
        "cold build, `engram index --full`: notes/s (build only)",
        lambda d: d["lsp"]["cold_cli"]["build_notes_per_s"],
    )
    row(
        "cold build, `engram index --full`: whole command, s",
        lambda d: d["lsp"]["cold_cli"]["seconds"],
    )
    row(
        "cold build, `engram index`: peak RSS (process + parse worker), MiB",
        lambda d: d["lsp"]["cold_cli"]["peak_rss_mib_tree"],
    )
    row(
        "cold build in `engram-ls`: s to ready",
        lambda d: d["lsp"]["cold_lsp"].get("ready_s", "hung"),
    )
    row(
        "cold build in `engram-ls`: peak RSS (server + worker), MiB",
        lambda d: d["lsp"]["cold_lsp"]["peak_rss_mib_tree"],
    )
    row(
        "warm start → ready (process start included), s",
        lambda d: d["lsp"]["vscode"]["warm_start_s"],
    )
    row("`engram-ls` RSS when ready, MiB", lambda d: d["lsp"]["vscode"]["server_rss_mib_ready"])
    row(
        "`engram-ls` peak RSS over the session (VmHWM), MiB",
        lambda d: max(
            d["lsp"]["vscode"]["server_peak_rss_mib"], d["lsp"]["neovim"]["server_peak_rss_mib"]
        ),
    )
    row(
        "`engram-ls` + children (rg), sampled peak, MiB",
        lambda d: max(
            d["lsp"]["vscode"]["peak_rss_mib_tree_sampled"],
            d["lsp"]["neovim"]["peak_rss_mib_tree_sampled"],
        ),
    )
    row("`engram-mcp` start → first answer, s", lambda d: d["mcp"]["start_to_first_answer_s"])
    row("`engram-mcp` RSS, MiB", lambda d: d["mcp"]["server_rss_mib"])
    return "\n".join(lines)


def load_series(out_dir: Path, sizes: list[int]) -> dict[str, Any]:
    found = {}
    for notes in sizes:
        path = out_dir / f"series-{label(notes)}.json"
        if path.exists():
            found[label(notes)] = json.loads(path.read_text())
    return found


CHART_LINES = [
    ("engram/search tag+date", lambda d: d["lsp"]["vscode"]["engram/search"]["tag+date"]),
    ("engram/search text, rare word", lambda d: d["lsp"]["vscode"]["engram/search"]["text rare"]),
    (
        "engram/search text, common word",
        lambda d: d["lsp"]["vscode"]["engram/search"]["text common"],
    ),
    (
        "workspace/symbol `memory leak`",
        lambda d: d["lsp"]["vscode"]["workspace/symbol"]["memory leak"],
    ),
    ("completion in frontmatter", lambda d: d["lsp"]["vscode"]["completion"]),
    ("didSave → visible", lambda d: d["lsp"]["vscode"]["save->visible"]),
    ("MCP search_notes text, rare word", lambda d: d["mcp"]["search_notes"]["text rare"]),
]


def draw_chart(results: dict[str, Any], png: Path) -> int:
    """p95 latency against vault size (log–log), rg as the baseline; batches on the right."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            "chart skipped: matplotlib is not installed (pip install matplotlib)", file=sys.stderr
        )
        return 0
    if not results:
        print("chart skipped: no results", file=sys.stderr)
        return 0
    ordered = sorted(results.values(), key=lambda d: d["notes"])
    xs = [d["notes"] for d in ordered]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.4), dpi=80)
    for name, get in CHART_LINES:
        left.plot(xs, [get(d)["p95_ms"] for d in ordered], marker="o", label=name)
    rg = [d["lsp"]["vscode"]["engram/search"]["text rare"]["rg_ms"] for d in ordered]
    left.plot(xs, rg, "k--", marker="x", label="rg over the vault (baseline)")
    left.axhline(10, color="grey", lw=0.8, ls=":")
    left.set(xscale="log", yscale="log", xlabel="notes", ylabel="p95 ms")
    left.set_title("Latency through the front ends (p95)")
    left.legend(fontsize=7)
    batches = [
        ("rename folder of 1000 (didRenameFiles)", "vscode", "rename folder of 1000"),
        ("1000 files, didChangeWatchedFiles", "vscode", "create 1000"),
        ("1000 files, server's watcher", "neovim", "create 1000"),
        ("rename folder of 1000, server's watcher", "neovim", "rename folder of 1000"),
    ]
    for name, preset, key in batches:
        right.plot(
            xs, [d["lsp"][preset]["batches"][key]["ms"] for d in ordered], marker="o", label=name
        )
    right.plot(
        xs,
        [d["lsp"]["vscode"]["warm_start_s"] * 1000 for d in ordered],
        marker="s",
        label="warm start → ready",
    )
    right.axhline(300, color="grey", lw=0.8, ls=":")
    right.set(xscale="log", yscale="log", xlabel="notes", ylabel="ms")
    right.set_title("1,000-file batches and warm start")
    right.legend(fontsize=7)
    for ax in (left, right):
        ax.set_xticks(xs, [label(x) for x in xs])
        ax.grid(True, which="major", alpha=0.3)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png)
    print(f"wrote {png}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

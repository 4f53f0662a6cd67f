"""The benchmark harness in quick mode (about 2,000 notes), so it never rots.

Runs ``benchmarks/run_series.py --quick`` as a subprocess, exactly as a person would, and checks
that the JSON holds every metric with a sane value (positive and finite). No timing thresholds:
the figures themselves belong to docs/benchmarks.md, not to CI.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engram_ls.core.semantic.model import missing_packages
from tests.conftest import REAL_VAULT

ROOT = Path(__file__).resolve().parents[1]

QUERIES = [
    "tag",
    "tag+date",
    "rare tag+date",
    "2 tags all",
    "metadata-only date",
    "text rare",
    "text common",
    "phrase",
    "text+tag+date",
    "text rare+tag",
    "literal rare",
    "literal common",
    "regex",
    "regex+tag",
    "where 1",
    "where 2",
    "where or",
    "where+tag+date",
    "where+text",
    "nested tag",
    "nested tag exact",
    "nested tag+where",
]
BASES = ["base 3 conditions+sort", "base formula filter", "base groupBy+summary"]
TASKS = ["tasks due this week", "tasks tag by priority", "tasks in folder", "tasks open by due"]
WITH_RG = [
    "text rare",
    "text common",
    "phrase",
    "text+tag+date",
    "literal rare",
    "literal common",
    "regex",
]
BATCHES = ["create 1000", "modify 1000", "rename folder of 1000", "delete folder of 1000"]


def sane(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def percentiles(row: dict[str, Any]) -> None:
    for key in ("p50_ms", "p95_ms", "p99_ms"):
        assert sane(row[key]), row
    assert row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"], row


@pytest.mark.serial
@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="memory figures come from /proc")
def test_quick_benchmark_reports_every_metric(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "run_series.py"),
            "--quick",
            "--out",
            str(tmp_path / "out"),
            "--vault-dir",
            str(tmp_path / "vaults"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    data = json.loads((tmp_path / "out" / "quick-2k.json").read_text())
    assert data["notes"] == 2000 and data["machine"]["cpus"]
    lsp, mcp = data["lsp"], data["mcp"]

    cold = lsp["cold_lsp"]
    assert cold["notes"] == 2000, cold
    for key in ("ready_s", "build_s", "notes_per_s", "peak_rss_mib_tree", "peak_rss_mib_server"):
        assert sane(cold[key]), (key, cold)
    cli = lsp["cold_cli"]
    assert cli["notes"] == 2000
    for key in ("seconds", "notes_per_s", "build_s", "build_notes_per_s", "peak_rss_mib_tree"):
        assert sane(cli[key]), (key, cli)

    for preset in ("vscode", "neovim"):
        session = lsp[preset]
        assert session["notes"] == 2000
        for key in ("warm_start_s", "server_rss_mib_ready", "server_peak_rss_mib"):
            assert sane(session[key]), (preset, key)
        for name in BATCHES:
            row = session["batches"][name]
            assert sane(row["ms"]) and sane(row["from_first_write_ms"]), (preset, name, row)

    vs = lsp["vscode"]
    assert sorted(vs["engram/search"]) == sorted(QUERIES)
    assert sorted(vs["engram/query"]) == sorted(BASES)
    assert sorted(vs["engram/tasks"]) == sorted(TASKS)
    for row in vs["engram/tasks"].values():
        percentiles(row)
        assert row["total"] >= 1 and row["served_by"] == "index", row
    for row in vs["engram/query"].values():
        percentiles(row)
        assert row["total"] >= 1 and row["rows"] >= 1, row
    for name, row in vs["engram/search"].items():
        percentiles(row)
        # literal and regex with no filter scan every file (the trigram index is off by default)
        served = "scan" if name in ("regex", "literal rare", "literal common") else "index"
        assert row["total"] >= 1 and row["served_by"] == served, (name, row)
    for name in WITH_RG:
        row = vs["engram/search"][name]
        assert sane(row["rg_ms"]) and sane(row["rg_ratio_p50"]), (name, row)
    assert len(vs["workspace/symbol"]) == 4
    for row in vs["workspace/symbol"].values():
        percentiles(row)
    percentiles(vs["completion"])
    assert vs["completion"]["items"] >= 1
    percentiles(vs["save->visible"])
    for row in vs["link completion"].values():
        percentiles(row)
    assert vs["link completion"]["[[a"]["items"] >= 1

    assert mcp["notes"] == 2000 and sane(mcp["start_to_first_answer_s"])
    assert sane(mcp["server_rss_mib"])
    assert len(mcp["search_notes"]) >= 3
    for row in mcp["search_notes"].values():
        percentiles(row)
        assert row["total"] >= 1

    # The vault ends as it began: no batch folder left, the saved note restored.
    vault = tmp_path / "vaults" / "vault-2000"
    assert not (vault / "_engram-bench").exists()
    notes = list(vault.rglob("*.md"))
    assert len(notes) == 2000
    assert not any(b"lspsaved" in n.read_bytes() for n in notes)


QUALITY_MODES = ["text", "semantic", "hybrid", "semantic exact", "text or"] + [
    f"hybrid {side} k{k}{exact}"
    for side in ("and", "or")
    for k in (10, 60)
    for exact in ("", " exact")
    if not (side == "and" and exact)
]


def test_quality_benchmark_on_a_few_queries(tmp_path: Path) -> None:
    """bench_quality.py on its first four queries, with the variants: every mode and variant
    has recall@10 and MRR in [0, 1] overall and per kind, and the fusion it recomputes is the
    shipped hybrid's."""
    if not REAL_VAULT.is_dir():
        pytest.skip("the shared real vault is not present")
    if missing_packages():
        pytest.skip("the semantic extra is not installed")
    out = tmp_path / "quality.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_quality.py"),
            str(REAL_VAULT),
            "--first",
            "4",
            "--variants",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "recall@10" in proc.stdout and "hybrid or k10" in proc.stdout
    assert not (REAL_VAULT / ".engram").exists()
    data = json.loads(out.read_text())
    assert data["queries"] == 4 and data["k"] == 10
    figures = data["models"]["default"]
    assert figures["dims"] == 256 and figures["notes"] > 800 and figures["chunks"] > 0
    assert sorted(figures["modes"]) == sorted(QUALITY_MODES)
    for name, row in figures["modes"].items():
        assert row["all"]["queries"] == 4, name
        assert 0 <= row["answered"] <= 4, name
        for kind, cell in row.items():
            if kind in ("answered", "latency"):
                continue
            for key in ("recall@10", "mrr"):
                assert 0.0 <= cell[key] <= 1.0, (name, kind, cell)
    for mode in ("text", "semantic", "hybrid"):
        percentiles(figures["modes"][mode]["latency"])
    assert figures["modes"]["semantic"]["answered"] == 4
    assert figures["fusion_check"] == {"same_top10": 4, "queries": 4}
    assert len(figures["per_query"]) == 4
    first = figures["per_query"][0]
    assert first["id"] == "q01" and set(first["first_relevant_rank"]) == set(QUALITY_MODES)

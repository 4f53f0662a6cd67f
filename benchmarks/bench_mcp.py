"""MCP benchmark: ``search_notes`` round trips through the official SDK client over stdio.

    python benchmarks/bench_mcp.py VAULT [--index FILE] [--repeat N] [--json OUT]

Starts the real ``engram-mcp`` process (``python -m engram_ls.mcp_server VAULT``, index file from
``--index`` via ENGRAM_INDEX), measures process start to the first answered tool call, then
p50/p95/p99 of ``search_notes`` for a few queries (tool call, JSON encoding, structured result),
and the server's RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as b

MCP_QUERIES = ("tag+date", "text rare", "text common", "text+tag+date")


def mcp_queries() -> dict[str, dict[str, Any]]:
    """The same requests as the language server benchmark's rows of these names (MCP's
    default page is 20 hits where engram/search's is 50)."""
    mix = {name: params for name, params, _ in b.query_mix()}
    return {name: mix[name] for name in MCP_QUERIES}


async def run(vault: Path, index: Path, runs: int) -> dict[str, Any]:
    env = {**os.environ, "ENGRAM_INDEX": str(index)}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls.mcp_server", str(vault)], env=env
    )
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    async with Client(params) as client:
        first = await client.call_tool("index_status", {})
        out["start_to_first_answer_s"] = round(time.perf_counter() - t0, 2)
        out["notes"] = first.structured_content["notes"]
        pids = b.child_pids("engram_ls.mcp_server")
        rows: dict[str, Any] = {}
        for name, args in mcp_queries().items():

            async def call(args: dict[str, Any] = args) -> Any:
                return await client.call_tool("search_notes", args)

            stats, res = await b.timed(call, runs)
            if res.is_error:
                raise RuntimeError(f"search_notes {args}: {res.content}")
            rows[name] = {**stats, "total": res.structured_content["total"]}
        out["search_notes"] = rows
        if pids:
            out["server_rss_mib"] = b.tree_rss_mib(pids[0])
            out["server_peak_rss_mib"] = b.peak_rss_mib(pids[0])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--index", type=Path, required=True, help="an index file (built if missing)")
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    out = asyncio.run(run(args.vault.resolve(), args.index, args.repeat))
    b.emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

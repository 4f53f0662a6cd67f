"""MCP HTTP sessions and memory: the RSS of ``engram-mcp --http`` while sessions pile up and
after idle ones are reclaimed (issue 13 item 10).

    python benchmarks/bench_mcp_sessions.py VAULT [--sessions 5000] [--idle 20] [--json OUT]

Starts the real server on a free loopback port twice:

1. with room for every session (``--max-sessions`` above ``--sessions``) and a short
   ``--session-idle-seconds``, ``--cycles`` times: open the sessions (initialize, never ended,
   as a client that drops its sessions does), then wait out the idle time (the sessions answer
   404); RSS after start and after each step (flat from the second cycle on: freed memory is
   reused, nothing leaks);
2. with the default cap: how many of the sessions were admitted and the RSS after.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as b

from engram_ls.mcp_server.http import DEFAULT_MAX_SESSIONS
from tests.mcp.http_server import (
    INITIALIZE,
    JSON_HEADERS,
    PROTOCOL,
    start_mcp_http,
    stop,
    wait_listening,
)


def _open(http: httpx2.Client, url: str, count: int) -> tuple[list[str], int]:
    """Open ``count`` sessions; their ids and how many were refused with 503."""
    ids: list[str] = []
    refused = 0
    for _ in range(count):
        r = http.post(url, json=INITIALIZE, headers=JSON_HEADERS)
        if r.status_code == 503:
            refused += 1
        else:
            r.raise_for_status()
            ids.append(r.headers["mcp-session-id"])
    return ids, refused


def _alive(http: httpx2.Client, url: str, ids: list[str]) -> int:
    headers = {**JSON_HEADERS, "MCP-Protocol-Version": PROTOCOL}
    alive = 0
    for sid in ids:
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        r = http.post(url, json=ping, headers={**headers, "Mcp-Session-Id": sid})
        alive += r.status_code == 200
    return alive


def _rss(pid: int) -> float:
    value = b.rss_mib(pid)
    assert value is not None
    return round(value, 1)


def reclaimed(vault: Path, sessions: int, idle: float, cycles: int) -> dict[str, Any]:
    args = ("--max-sessions", str(sessions + 10), "--session-idle-seconds", str(idle))
    with tempfile.TemporaryFile() as logs:
        proc, port = start_mcp_http(vault, logs, *args)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            wait_listening(proc, port)
            with httpx2.Client(timeout=30) as http:
                _open(http, url, 1)
                out: dict[str, Any] = {"sessions": sessions, "idle_s": idle}
                out["rss_start_mib"] = _rss(proc.pid)
                for cycle in range(1, cycles + 1):
                    start = time.perf_counter()
                    ids, _ = _open(http, url, sessions)
                    out[f"{cycle}_open_s"] = round(time.perf_counter() - start, 1)
                    out[f"{cycle}_rss_open_mib"] = _rss(proc.pid)
                    first_alive = _alive(http, url, ids[:1])
                    out[f"{cycle}_first_alive_when_all_open"] = bool(first_alive)
                    time.sleep(idle + 5)
                    sample = ids[:: max(1, len(ids) // 50)]
                    alive = _alive(http, url, sample)
                    out[f"{cycle}_alive_after_idle"] = f"{alive}/{len(sample)}"
                    out[f"{cycle}_rss_after_idle_mib"] = _rss(proc.pid)
        finally:
            stop(proc)
    return out


def capped(vault: Path, sessions: int) -> dict[str, Any]:
    with tempfile.TemporaryFile() as logs:
        proc, port = start_mcp_http(vault, logs)
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            wait_listening(proc, port)
            with httpx2.Client(timeout=30) as http:
                rss_start = _rss(proc.pid)
                ids, refused = _open(http, url, sessions)
                return {
                    "max_sessions": DEFAULT_MAX_SESSIONS,
                    "asked": sessions,
                    "admitted": len(ids),
                    "refused_503": refused,
                    "rss_start_mib": rss_start,
                    "rss_after_mib": _rss(proc.pid),
                }
        finally:
            stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--idle", type=float, default=20.0, help="--session-idle-seconds")
    parser.add_argument("--cycles", type=int, default=3, help="open, then let expire, N times")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    out = {
        "reclaimed": reclaimed(args.vault, args.sessions, args.idle, args.cycles),
        "default_cap": capped(args.vault, args.sessions),
    }
    b.emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

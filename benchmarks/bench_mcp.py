"""MCP benchmark: round trips through the official SDK client, over stdio and over HTTP.

    python benchmarks/bench_mcp.py VAULT [--index FILE] [--repeat N] [--no-watch]
        [--clients 20] [--seconds 10] [--no-http] [--json OUT]

Starts the real ``engram-mcp`` process (``python -m engram_ls.mcp_server VAULT``, index file from
``--index`` via ENGRAM_INDEX), measures process start to the first answered tool call, then
p50/p95/p99 of ``search_notes`` for a few queries (tool call, JSON encoding, structured result),
of ``resources/list`` (first page), ``resources/read`` (a few notes) and ``completion/complete``
(a folder of the note template's ``path``, a prompt's ``topic``), each only when the server
offers it ("not available" otherwise), and the server's RSS.

Then over streamable HTTP (``engram-mcp --http --no-watch`` on a free loopback port, the same
index): one client calling ``search_notes`` over the query mix for ``--seconds`` (the
baseline), then ``--clients`` SDK clients at once doing the same; then both again against a
second server started with ``--tokens-file``, with a bearer token limited to the vault: every
call goes through the token and scope checks. Each gives requests/s, p50/p95/p99 and the errors (a
tool error or a failed request; must be 0). The clients run in this process, on the same cores
as the server: the load is what one machine can give itself; ``load_before`` is the machine's
load average when the run began.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import PromptReference, ResourceTemplateReference

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as b

from tests.mcp.http_server import start_mcp_http, stop, wait_listening

MCP_QUERIES = ("tag+date", "text rare", "text common", "text+tag+date")
NOTE_TEMPLATE = "engram://{vault}/{+path}"
NOT_AVAILABLE = "not available"
TOKEN = "engram-bench-token-" + "7e" * 12


def mcp_queries() -> dict[str, dict[str, Any]]:
    """The same requests as the language server benchmark's rows of these names (MCP's
    default page is 20 hits where engram/search's is 50)."""
    mix = {name: params for name, params, _ in b.query_mix()}
    return {name: mix[name] for name in MCP_QUERIES}


def _server_args(vault: Path, watch: bool) -> list[str]:
    return ["-m", "engram_ls.mcp_server", str(vault), *([] if watch else ["--no-watch"])]


async def run(
    vault: Path,
    index: Path,
    runs: int,
    *,
    watch: bool = True,
    clients: int = 0,
    seconds: float = 10.0,
) -> dict[str, Any]:
    """The stdio measures; with ``clients``, the HTTP ones too (under ``"http"``)."""
    env = {**os.environ, "ENGRAM_INDEX": str(index)}
    params = StdioServerParameters(command=sys.executable, args=_server_args(vault, watch), env=env)
    out: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    t0 = time.perf_counter()
    async with Client(params) as client:
        first = await client.call_tool("index_status", {})
        out["start_to_first_answer_s"] = round(time.perf_counter() - t0, 2)
        out["notes"] = first.structured_content["notes"]
        name = first.structured_content["name"]
        pids = b.child_pids("engram_ls.mcp_server")
        rows: dict[str, Any] = {}
        for query, args in mcp_queries().items():

            async def call(args: dict[str, Any] = args) -> Any:
                return await client.call_tool("search_notes", args)

            stats, res = await b.timed(call, runs)
            if res.is_error:
                raise RuntimeError(f"search_notes {args}: {res.content}")
            rows[query] = {**stats, "total": res.structured_content["total"]}
        out["search_notes"] = rows
        out["resources"] = await _resources(client, runs)
        out["completion"] = await _completion(client, name, runs)
        if pids:
            out["server_rss_mib"] = b.tree_rss_mib(pids[0])
            out["server_peak_rss_mib"] = b.peak_rss_mib(pids[0])
    if clients:
        out["http"] = await http_load(vault, index, clients, seconds)
    return out


async def _resources(client: Client, runs: int) -> dict[str, Any] | str:
    """``resources/list`` (the first page) and ``resources/read`` of notes it lists, when the
    server has resources."""
    if not (await client.list_resource_templates()).resource_templates:
        return NOT_AVAILABLE

    async def listing() -> Any:
        return await client.list_resources(cache_mode="bypass")

    list_stats, page = await b.timed(listing, runs)
    uris = [str(r.uri) for r in page.resources][:: max(1, len(page.resources) // 10)][:10]
    turn = 0

    async def read() -> Any:
        nonlocal turn
        turn += 1
        return await client.read_resource(uris[turn % len(uris)], cache_mode="bypass")

    read_stats, got = await b.timed(read, runs)
    return {
        "list_first_page": {**list_stats, "resources": len(page.resources)},
        "read": {**read_stats, "notes": len(uris), "last_chars": len(got.contents[0].text)},
    }


async def _completion(client: Client, vault: str, runs: int) -> dict[str, Any] | str:
    """``completion/complete`` of the note template's ``path`` (a folder's entries) and of a
    prompt's ``topic``, when the server answers completions."""
    if client.server_capabilities.completions is None:
        return NOT_AVAILABLE
    note = ResourceTemplateReference(type="ref/resource", uri=NOTE_TEMPLATE)
    asks: dict[str, tuple[Any, dict[str, str]]] = {
        "path area-0": (note, {"name": "path", "value": "area-0"}),
        "path area-01/20": (note, {"name": "path", "value": "area-01/20"}),
    }
    prompts = {p.name: p for p in (await client.list_prompts()).prompts}
    with_topic = [n for n, p in prompts.items() if "topic" in {a.name for a in p.arguments or ()}]
    if with_topic:
        asks["topic a"] = (
            PromptReference(type="ref/prompt", name=with_topic[0]),
            {"name": "topic", "value": "a"},
        )
    rows: dict[str, Any] = {}
    for label, (ref, argument) in asks.items():

        async def ask(ref: Any = ref, argument: dict[str, str] = argument) -> Any:
            return await client.complete(ref, argument, {"vault": vault})

        stats, res = await b.timed(ask, runs)
        rows[label] = {**stats, "values": len(res.completion.values)}
    return rows


# -- HTTP under load ---------------------------------------------------------------------------


async def _client_loop(
    url: str, token: str | None, until: float, offset: int, times: list[float], errors: list[str]
) -> None:
    """One SDK client calling ``search_notes`` over the query mix until ``until`` (one untimed
    warm-up call first)."""
    queries = list(mcp_queries().values())
    headers = {"Authorization": f"Bearer {token}"} if token else None
    http = create_mcp_http_client(headers=headers)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        await client.call_tool("search_notes", queries[offset % len(queries)])
        i = offset
        while time.perf_counter() < until:
            i += 1
            t0 = time.perf_counter()
            try:
                res = await client.call_tool("search_notes", queries[i % len(queries)])
            except Exception as exc:  # a failed request is an error of the run, not its end
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            times.append((time.perf_counter() - t0) * 1000)
            if res.is_error:
                errors.append(str(res.content[0])[:200])


async def _phase(
    url: str, pid: int, clients: int, seconds: float, token: str | None
) -> dict[str, Any]:
    """``clients`` clients at once for ``seconds``; with the server's CPU time (process
    ``pid``) over the phase, which says whether the server or the clients were the limit."""
    times: list[float] = []
    errors: list[str] = []
    cpu0 = b.tree_cpu_s(pid)
    # every client connects and warms up before the clock starts
    start = time.perf_counter() + 2.0 + 0.1 * clients
    until = start + seconds
    await asyncio.gather(
        *(_client_loop(url, token, until, i, times, errors) for i in range(clients))
    )
    wall = max(time.perf_counter() - start, 1e-9)
    done = len(times)
    cpu = b.tree_cpu_s(pid) - cpu0
    return {
        "clients": clients,
        "requests": done,
        "requests_per_s": round(done / wall, 1),
        **(b.summary(times) if times else {}),
        "errors": len(errors),
        **({"first_error": errors[0]} if errors else {}),
        "server_cpu_ms_per_request": round(1000 * cpu / max(done, 1), 2),
        "server_cpu_share": round(cpu / wall, 2),
    }


async def http_load(vault: Path, index: Path, clients: int, seconds: float) -> dict[str, Any]:
    """The HTTP phases, one client then ``clients`` at once, against ``engram-mcp --http``
    without a token, then against a second server started with ``--tokens-file`` with a token
    limited to the vault."""
    from engram_ls.mcp_server.vaults import name_for

    out: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        tokens = Path(tmp) / "tokens"
        tokens.write_text(f"read {TOKEN} {name_for(vault)}\n")
        servers = [
            ("no_token", (), None, (1, clients)),
            ("scoped_token", ("--tokens-file", str(tokens)), TOKEN, (1, clients)),
        ]
        for label, args, token, counts in servers:
            with open(Path(tmp) / f"{label}.log", "w+b") as logs:
                env = {"ENGRAM_INDEX": str(index)}
                proc, port = start_mcp_http(vault, logs, *args, env=env)
                try:
                    wait_listening(proc, port, timeout=300)
                    url = f"http://127.0.0.1:{port}/mcp"
                    for count in counts:
                        name = f"{label}_{count}_client" + ("s" if count > 1 else "")
                        out[name] = await _phase(url, proc.pid, count, seconds, token)
                    out[f"{label}_server_rss_mib"] = b.tree_rss_mib(proc.pid)
                finally:
                    stop(proc)
    out["load_after"] = os.getloadavg()[0]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--index", type=Path, required=True, help="an index file (built if missing)")
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--no-watch", action="store_true", help="the server does not watch the vault")
    ap.add_argument("--clients", type=int, default=20, help="HTTP clients at once (0: no HTTP)")
    ap.add_argument("--seconds", type=float, default=10.0, help="length of each HTTP phase")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    out = asyncio.run(
        run(
            args.vault.resolve(),
            args.index,
            args.repeat,
            watch=not args.no_watch,
            clients=args.clients,
            seconds=args.seconds,
        )
    )
    b.emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

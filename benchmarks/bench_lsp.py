"""Language server benchmark: requests through the real ``engram-ls`` over stdio.

    python benchmarks/bench_lsp.py VAULT [--index FILE] [--repeat N] [--json OUT]

Starts ``engram-ls`` on VAULT (optionally with an existing index file, via ENGRAM_INDEX),
waits until the index is ready, then measures p50/p95 of ``engram/search`` for a fixed query
mix, ``workspace/symbol``, frontmatter completion, and save → visible in ``engram/search``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import generate_vault as g

from engram_ls.lsp.server import converter_factory


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))]


def _status_kb(client: LanguageClient, field: str) -> float | None:
    proc = getattr(client, "_server", None)
    pid = getattr(proc, "pid", None)
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def rss_mib(client: LanguageClient) -> float | None:
    return _status_kb(client, "VmRSS")


def peak_rss_mib(client: LanguageClient) -> float | None:
    return _status_kb(client, "VmHWM")


async def timed(n: int, fn: Any) -> tuple[float, float, Any]:
    times = []
    result = None
    for _ in range(n):
        t0 = time.perf_counter()
        result = await fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(pct(times, 50), 2), round(pct(times, 95), 2), result


async def run(vault: Path, index: Path | None, repeat: int) -> dict[str, Any]:
    client = LanguageClient("engram-bench", "1", converter_factory=converter_factory)

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: Any) -> None:
        return None

    env = dict(os.environ)
    if index is not None:
        env["ENGRAM_INDEX"] = str(index)
    await client.start_io(sys.executable, "-m", "engram_ls.lsp", env=env)
    caps = types.ClientCapabilities(
        workspace=types.WorkspaceClientCapabilities(
            did_change_watched_files=types.DidChangeWatchedFilesClientCapabilities(
                dynamic_registration=True
            )
        )
    )
    await client.initialize_async(
        types.InitializeParams(
            capabilities=caps,
            workspace_folders=[types.WorkspaceFolder(uri=vault.as_uri(), name=vault.name)],
        )
    )
    client.initialized(types.InitializedParams())
    out: dict[str, Any] = {"vault": str(vault)}
    t0 = time.perf_counter()
    while True:
        status = await client.protocol.send_request_async("engram/status", {})
        v = status["vaults"][0]
        if v["state"] == "ready" and not v["building"]:
            break
        await asyncio.sleep(0.05)
    out["ready_s"] = round(time.perf_counter() - t0, 2)
    out["notes"] = v["notes"]
    out["server_rss_mib_ready"] = rss_mib(client)

    topic, word, rare = g.COMMON_TOPICS[0], g.COMMON_WORDS[0], g.RARE_WORDS[0]
    year = {"date_from": "2021-01-01", "date_to": "2021-12-31"}
    mix = {
        "tag": {"tags": [topic]},
        "tag+date": {"tags": [topic], **year},
        "text rare": {"query": rare},
        "text common": {"query": word},
        "text+tag+date": {"query": word, "tags": [topic], **year},
    }
    rows = {}
    for name, params in mix.items():

        async def one(params: dict[str, Any] = params) -> Any:
            return await client.protocol.send_request_async("engram/search", params)

        p50, p95, res = await timed(repeat, one)
        rows[name] = {"p50_ms": p50, "p95_ms": p95, "total": res["total"]}
    out["engram/search"] = rows

    symbols = {}
    for q in ("qu", g.RARE_WORDS[1][:6], "idxq", "memory leak"):

        async def sym(q: str = q) -> Any:
            return await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=q))

        try:
            p50, p95, res = await timed(repeat, sym)
            symbols[q] = {"p50_ms": p50, "p95_ms": p95, "results": len(res or [])}
        except Exception as exc:  # the feature may be absent in this build
            symbols[q] = {"error": str(exc)}
    out["workspace/symbol"] = symbols

    note = next(vault.rglob("*.md"))
    text = note.read_text(encoding="utf-8")
    uri = note.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text
            )
        )
    )
    lines = text.split("\n")
    tag_line = next((i for i, line in enumerate(lines) if line.startswith("tags:")), None)
    if tag_line is not None:
        original = lines[tag_line]
        lines[tag_line] = "tags: [py"
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(text="\n".join(lines))
                ],
            )
        )
        pos = types.Position(line=tag_line, character=len("tags: [py"))

        async def complete() -> Any:
            return await client.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=uri), position=pos
                )
            )

        try:
            p50, p95, res = await timed(repeat, complete)
            items = res.items if hasattr(res, "items") else (res or [])
            out["completion"] = {"p50_ms": p50, "p95_ms": p95, "items": len(items)}
        except Exception as exc:
            out["completion"] = {"error": str(exc)}
        lines[tag_line] = original

    original_bytes = note.read_bytes()
    save_times = []
    try:
        for i in range(repeat):
            word_i = f"lspsaved{i}q"
            note.write_bytes(original_bytes + f"\n{word_i}\n".encode())
            t0 = time.perf_counter()
            client.text_document_did_save(
                types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
            )
            res = await client.protocol.send_request_async("engram/search", {"query": word_i})
            save_times.append((time.perf_counter() - t0) * 1000)
            assert res["total"] == 1, res
    finally:
        note.write_bytes(original_bytes)
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
    out["save->visible"] = {
        "p50_ms": round(pct(save_times, 50), 2),
        "p95_ms": round(pct(save_times, 95), 2),
    }
    out["server_rss_mib_end"] = rss_mib(client)
    out["server_peak_rss_mib"] = peak_rss_mib(client)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    out = asyncio.run(run(args.vault.resolve(), args.index, args.repeat))
    print(json.dumps(out, indent=2))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

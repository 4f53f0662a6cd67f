"""Concurrency and load: engram-ls, engram-mcp and the CLI on one vault and one index while a
writer makes thousands of edits, creates, deletes and renames (some announced with didSave and
didRenameFiles) and queries run continuously on all three. No request fails, no update is
lost (the index equals a fresh build once the writes stop), latency stays bounded.

CI runs about 60 s; ``ENGRAM_SOAK=1`` (optionally ``ENGRAM_SOAK_OPS=N``) runs a longer soak.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from mcp import Client, StdioServerParameters

from tests.lsp.conftest import request, wait_ready
from tests.reliability.helpers import engram_cli, lsp_session, server_alive
from tests.reliability.oracle import contents, diff, fresh

SOAK = os.environ.get("ENGRAM_SOAK") == "1"
OPS = int(os.environ.get("ENGRAM_SOAK_OPS", "40000" if SOAK else "4000"))
PAUSE_S = 0.3
"""The writer pauses this long every 50 operations, so that queries overlap the writes for the
whole run (about 25 s in CI) rather than a burst."""
NOTES = 2000


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0.0


class Writer:
    """Edits, creates, deletes and renames notes on disk, like git, scripts and agents do."""

    def __init__(self, root: Path, seed: int, announce: Callable[[str, Path, Path | None], None]):
        self.root = root
        self.rng = random.Random(seed)
        self.announce = announce
        self.notes = sorted(root.rglob("*.md"))
        self.counts = {"edit": 0, "create": 0, "delete": 0, "rename": 0, "folder-rename": 0}

    def run(self, ops: int, stop: threading.Event) -> None:
        for i in range(ops):
            if stop.is_set():
                return
            r = self.rng.random()
            if r < 0.5 or len(self.notes) < 100:
                self._edit(i)
            elif r < 0.65:
                self._create(i)
            elif r < 0.8:
                self._delete()
            elif r < 0.9995:
                self._rename(i)
            else:
                self._rename_folder(i)
            if i % 50 == 0:
                time.sleep(PAUSE_S)

    def _edit(self, i: int) -> None:
        p = self.rng.choice(self.notes)
        with open(p, "a", encoding="utf-8") as fh:
            fh.write(f"\nedit {i} #load{i % 97}\n")
        self.counts["edit"] += 1
        if i % 20 == 0:
            self.announce("save", p, None)

    def _create(self, i: int) -> None:
        folder = self.rng.choice(self.notes).parent
        p = folder / f"load-created-{i}.md"
        p.write_text(f"---\ntags: [created, load{i % 97}]\ndate: 2024-05-06\n---\n# New {i}\n")
        self.notes.append(p)
        self.counts["create"] += 1

    def _delete(self) -> None:
        p = self.notes.pop(self.rng.randrange(len(self.notes)))
        p.unlink()
        self.counts["delete"] += 1

    def _rename(self, i: int) -> None:
        k = self.rng.randrange(len(self.notes))
        old = self.notes[k]
        new = old.with_name(f"renamed-{i}-{old.name}"[:120])
        os.rename(old, new)
        self.notes[k] = new
        self.counts["rename"] += 1
        if i % 10 == 0:
            self.announce("rename", old, new)

    def _rename_folder(self, i: int) -> None:
        folder = self.rng.choice(self.notes).parent
        new = folder.with_name(f"{folder.name}-moved{i}")
        os.rename(folder, new)
        self.notes = [new / p.relative_to(folder) if p.is_relative_to(folder) else p
                      for p in self.notes]  # fmt: skip
        self.counts["folder-rename"] += 1
        self.announce("rename", folder, new)


@pytest.mark.serial
@pytest.mark.slow
async def test_three_front_ends_under_load(generated: Callable[..., Path], tmp_path: Path) -> None:
    root = generated(NOTES)
    idx = root / ".engram" / "index.sqlite"
    assert engram_cli("index", str(root)).returncode == 0
    latencies: dict[str, list[float]] = {"lsp": [], "mcp": [], "cli": []}
    failures: list[str] = []
    stop = threading.Event()
    loop = asyncio.get_running_loop()
    mcp_params = StdioServerParameters(
        command=sys.executable, args=["-m", "engram_ls", "mcp", str(root)]
    )
    async with lsp_session([root], "neovim") as lsp, Client(mcp_params) as mcp:
        await wait_ready(lsp, timeout=120)

        def announce(kind: str, old: Path, new: Path | None) -> None:
            if kind == "save":
                params: Any = types.DidSaveTextDocumentParams(
                    text_document=types.TextDocumentIdentifier(uri=old.as_uri())
                )
                loop.call_soon_threadsafe(lsp.text_document_did_save, params)
            else:
                assert new is not None
                params = types.RenameFilesParams(
                    files=[types.FileRename(old_uri=old.as_uri(), new_uri=new.as_uri())]
                )
                loop.call_soon_threadsafe(lsp.workspace_did_rename_files, params)

        writer = Writer(root, seed=8, announce=announce)
        rng = random.Random(9)
        requests = [
            {"query": "", "tags": ["python"], "limit": 20},
            {"query": "index query", "limit": 10},
            {"query": "", "tags": ["created"], "date_from": "2024-01-01"},
            {"query": "", "tags": ["sqlite", "-python"], "tags_mode": "all"},
            {"query": "release", "mode": "literal", "limit": 5},
            {"query": "sys", "path": "area-01/**"},
        ]

        async def lsp_queries() -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    if rng.random() < 0.2:
                        await asyncio.wait_for(
                            lsp.workspace_symbol_async(types.WorkspaceSymbolParams(query="ind")),
                            30,
                        )
                    else:
                        await request(lsp, "engram/search", rng.choice(requests))
                except Exception as exc:
                    failures.append(f"lsp: {exc!r}")
                latencies["lsp"].append(time.perf_counter() - t0)

        async def mcp_queries() -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                try:
                    req = dict(rng.choice(requests))
                    r = await asyncio.wait_for(mcp.call_tool("search_notes", req), 30)
                    if r.is_error:
                        failures.append(f"mcp: {r.content[0].text}")
                except Exception as exc:
                    failures.append(f"mcp: {exc!r}")
                latencies["mcp"].append(time.perf_counter() - t0)

        def cli_queries() -> None:
            while not stop.is_set():
                t0 = time.perf_counter()
                out = engram_cli("search", "--vault", str(root), "--json", "--tag", "python")
                if out.returncode != 0:
                    failures.append(f"cli: {out.stderr.strip()}")
                else:
                    json.loads(out.stdout)
                latencies["cli"].append(time.perf_counter() - t0)

        t_start = time.monotonic()
        queries = [asyncio.ensure_future(lsp_queries()), asyncio.ensure_future(mcp_queries())]
        cli_thread = threading.Thread(target=cli_queries, daemon=True)
        cli_thread.start()
        await asyncio.to_thread(writer.run, OPS, threading.Event())
        write_s = time.monotonic() - t_start
        await asyncio.sleep(1.0)  # queries go on a little after the last write
        stop.set()
        await asyncio.gather(*queries)
        await asyncio.to_thread(cli_thread.join, 120)

        # quiescence: the watchers have applied everything; then the oracle
        want = fresh(root, tmp_path)
        deadline = time.monotonic() + 60
        got = contents(idx)
        while got != want and time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            got = contents(idx)
        settle_s = time.monotonic() - t_start - write_s
        assert got == want, diff(got, want)
        assert server_alive(lsp)
        res = await request(lsp, "engram/search", {"query": "", "tags": ["created"]})
        created = sum(1 for key, *_ in want["note_topics"] if key == "created")
        assert res["total"] == created and res["index"]["served_by"] == "index"
        r = await mcp.call_tool("search_notes", {"tags": ["created"]})
        assert r.structured_content["total"] == created

    report = {
        "ops": writer.counts,
        "write_s": round(write_s, 1),
        "settle_s": round(settle_s, 1),
        **{f"{k}_requests": len(v) for k, v in latencies.items()},
        **{
            f"{k}_p{int(q * 100)}_ms": round(_pct(v, q) * 1000, 1)
            for k, v in latencies.items()
            for q in (0.5, 0.95, 0.99)
        },
    }
    print("\nload:", json.dumps(report))
    assert failures == [], failures[:5]
    assert len(latencies["lsp"]) > 50 and len(latencies["mcp"]) > 50 and latencies["cli"]
    for front in ("lsp", "mcp"):
        assert _pct(latencies[front], 0.99) < 5.0, (front, report)

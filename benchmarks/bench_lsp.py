"""Language server benchmark: everything through the real ``engram-ls`` over stdio.

    python benchmarks/bench_lsp.py VAULT [--index FILE] [--repeat N] [--no-cold] [--json OUT]
                                         [--shape standard|low-alphabet]
                                         [--only warm [--runs N] [--baseline TREE]]
                                         [--only semantic --index FILE [--runs N] [--baseline TREE]]

Three server sessions on VAULT, each a new ``engram-ls`` process (index file from ``--index``,
passed as ENGRAM_INDEX; a temporary one when absent):

1. cold: the index file is deleted, the server builds it; time to ready (notes/s) and the peak
   RSS of the server and its parse worker together.
2. a VS Code-like client (dynamic file watching, file operations): warm start (process start,
   index present, nothing changed) to ready; ``engram/search`` over the query mix (with ``rg``
   scanning the vault for the same text as the baseline, in the same run); ``workspace/symbol``
   (the queries of the vault's ``--shape``, ``benchlib.symbol_queries``);
   frontmatter completion; ``[[`` link completion; ``didSave`` → visible; 1,000 new files
   reported by ``workspace/didChangeWatchedFiles`` (create, then modify);
   ``workspace/didRenameFiles`` of their folder (exactly 1,000 notes); ``didDeleteFiles`` of it.
3. a Neovim-like client (no file watching: the server watches the vault itself): the same
   create / modify / rename / delete of 1,000 files, done on disk only.

``--only semantic`` measures search by meaning alone (``benchlib.semantic_mix``) on an index
that exists: the server embeds what it lacks, then each kind is timed; with RSS. Every other run
turns search by meaning off (``initializationOptions``), so no embedding runs beside it.

``--only warm`` measures nothing but the warm start (the index must exist: ``--index``): ``--runs``
starts in each preset, alternated, and their median (with the server's CPU seconds up to ready:
less sensitive to a busy machine than the wall time); with ``--baseline TREE`` (a checkout of
other code, e.g. ``git worktree add TREE main``) the server from TREE is started in turn with this
one, so both are measured under the same load, and the ratio of the medians is reported.

Each timing is p50/p95/p99 over repeated runs; each batch is timed until ``engram/search`` shows
all of it. The batch folder ``_engram-bench/`` is removed afterwards and the saved note restored,
so the vault ends as it began.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchlib as b
import generate_vault as g

from engram_ls.lsp.server import converter_factory

BATCH = 1000
BENCH_DIR = "_engram-bench"
BATCH_TAG = "engram-bench-batch"
TIMEOUT_S = 120.0
STALL_S = 20.0
"""A server still building whose processes used under 15 % of one core over this long is hung
(a build keeps at least one core busy; answering engram/status polls costs about 5 %)."""
SERVER = [sys.executable, "-m", "engram_ls.lsp"]


class ServerHung(RuntimeError):
    pass


def capabilities(preset: str) -> types.ClientCapabilities:
    """pytest-lsp's editor presets when installed (dev extra), else the parts Engram reads."""
    try:
        from pytest_lsp import client_capabilities

        caps = client_capabilities(preset)
    except ImportError:
        caps = types.ClientCapabilities()
    ws = caps.workspace or types.WorkspaceClientCapabilities()
    if preset == "visual-studio-code":
        ws.file_operations = types.FileOperationClientCapabilities(
            dynamic_registration=True, did_create=True, did_rename=True, did_delete=True
        )
        ws.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=True
        )
    else:  # Neovim on Linux: no dynamic file watching; the server watches by itself
        ws.did_change_watched_files = types.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=False
        )
    caps.workspace = ws
    window = caps.window or types.WindowClientCapabilities()
    window.work_done_progress = True
    caps.window = window
    return caps


class Session:
    """One ``engram-ls`` process and a client that answers what the server asks of it."""

    def __init__(
        self,
        vault: Path,
        index: Path,
        preset: str,
        code: Path | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.vault, self.index, self.preset = vault, index, preset
        self.settings = NO_SEMANTIC if settings is None else settings
        """``initializationOptions``: by default search by meaning is off, so that no
        embedding runs in the background of what is measured (``--only semantic`` turns it
        on)."""
        self.code = code
        """Where the server's ``engram_ls`` comes from (``PYTHONPATH``); None: this tree's."""
        self.client = LanguageClient("engram-bench", "1", converter_factory=converter_factory)
        self.pid = 0
        self.notes = 0
        self.after_initialized_s = 0.0
        self.registrations: list[str] = []
        c = self.client

        @c.feature(types.CLIENT_REGISTER_CAPABILITY)
        def _register(params: types.RegistrationParams) -> None:
            self.registrations += [r.method for r in params.registrations]

        @c.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def _progress_create(params: Any) -> None:
            return None

        @c.feature(types.WORKSPACE_CONFIGURATION)
        def _configuration(params: types.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]

        for method in (types.PROGRESS, types.WINDOW_LOG_MESSAGE, types.WINDOW_SHOW_MESSAGE):
            c.feature(method)(lambda params: None)
        c.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(lambda params: None)

    async def start(self) -> float:
        """Start the process and initialize; seconds from process start to a ready index."""
        env = {**os.environ, "ENGRAM_INDEX": str(self.index)}
        where: dict[str, Any] = {}
        if self.code is not None:  # ``-m`` puts the working folder first on the path
            env["PYTHONPATH"] = str(self.code)
            where["cwd"] = str(self.code)
        t0 = time.perf_counter()
        await self.client.start_io(*SERVER, env=env, **where)
        self.pid = self.client._server.pid  # type: ignore[union-attr]
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=capabilities(self.preset),
                workspace_folders=[
                    types.WorkspaceFolder(uri=self.vault.as_uri(), name=self.vault.name)
                ],
                initialization_options=self.settings or None,
            )
        )
        self.client.initialized(types.InitializedParams())
        t_init = time.perf_counter()
        cpu = (t_init, b.tree_cpu_s(self.pid))
        while True:
            status = await self.request("engram/status", {})
            v = status["vaults"][0] if status["vaults"] else {}
            if v.get("state") == "ready" and not v.get("building"):
                break
            now = time.perf_counter()
            if now - cpu[0] > STALL_S:
                used = b.tree_cpu_s(self.pid) - cpu[1]
                if used < 0.15 * STALL_S:
                    raise ServerHung(
                        f"not ready after {now - t0:.0f} s and {used:.2f} s of CPU in the last"
                        f" {now - cpu[0]:.0f} s (state {v.get('state')}, {v.get('notes')} notes)"
                    )
                cpu = (now, b.tree_cpu_s(self.pid))
            await asyncio.sleep(0.05)
        self.notes = int(v["notes"])
        self.after_initialized_s = time.perf_counter() - t_init
        return time.perf_counter() - t0

    async def settled(self, *, window_s: float = 1.0, most_s: float = 120.0) -> float:
        """Wait until the server is idle: under 3 % of a core in two windows of ``window_s``
        in a row (its start-up work done: the integrity check of the index, which starts at
        the first quiet moment and reads the whole file, the in-memory tables); seconds
        waited (``most_s`` at most)."""
        t0 = time.perf_counter()
        calm = 0
        while calm < 2 and time.perf_counter() - t0 < most_s:
            before = b.tree_cpu_s(self.pid)
            await asyncio.sleep(window_s)
            calm = calm + 1 if b.tree_cpu_s(self.pid) - before < 0.03 * window_s else 0
        return round(time.perf_counter() - t0, 2)

    async def request(self, method: str, params: Any) -> Any:
        return await asyncio.wait_for(
            self.client.protocol.send_request_async(method, params), TIMEOUT_S
        )

    async def search(self, **params: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("engram/search", params)
        return result

    async def total(self, **params: Any) -> int:
        return int((await self.search(limit=1, **params))["total"])

    async def until_total(self, expected: int, t0: float, **params: Any) -> float:
        """Poll ``engram/search`` until its total is ``expected``; ms since ``t0``."""
        while True:
            if await self.total(**params) == expected:
                return (time.perf_counter() - t0) * 1000
            if time.perf_counter() - t0 > TIMEOUT_S:
                got = await self.total(**params)
                raise TimeoutError(f"{params}: total {got}, expected {expected}")
            await asyncio.sleep(0.005)

    def notify_files(self, kind: str, changes: list[tuple[Path, Path | None]]) -> None:
        """Report file operations or watched-file events as VS Code does."""
        c = self.client
        if kind == "rename":
            c.workspace_did_rename_files(
                types.RenameFilesParams(
                    files=[
                        types.FileRename(old_uri=a.as_uri(), new_uri=n.as_uri())
                        for a, n in changes
                        if n is not None
                    ]
                )
            )
        elif kind == "delete":
            c.workspace_did_delete_files(
                types.DeleteFilesParams(
                    files=[types.FileDelete(uri=a.as_uri()) for a, _ in changes]
                )
            )
        else:
            ftype = {
                "created": types.FileChangeType.Created,
                "changed": types.FileChangeType.Changed,
            }[kind]
            c.workspace_did_change_watched_files(
                types.DidChangeWatchedFilesParams(
                    changes=[types.FileEvent(uri=a.as_uri(), type=ftype) for a, _ in changes]
                )
            )

    async def stop(self) -> None:
        """Shut down politely; a server that does not exit (with its workers) is killed."""
        pids = b.tree_pids(self.pid) if self.pid else []
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 10)
            self.client.exit(None)
        except Exception as exc:
            print(f"bench_lsp: shutdown failed ({exc!r})", file=sys.stderr)
        proc = self.client._server
        if proc is not None:
            try:
                await asyncio.wait_for(proc.wait(), 10)
            except TimeoutError:
                print(f"bench_lsp: killing server {self.pid} and its workers", file=sys.stderr)
                b.kill_all(pids)
        await self.client.stop()


NO_SEMANTIC: dict[str, Any] = {"semantic": {"enabled": False}}


def _remove_index(index: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(str(index) + suffix).unlink(missing_ok=True)


async def cold_lsp(vault: Path, index: Path) -> dict[str, Any]:
    """A language server that finds no index builds it: notes/s and peak memory."""
    _remove_index(index)
    s = Session(vault, index, "visual-studio-code")
    try:
        t0 = time.perf_counter()
        start = asyncio.ensure_future(s.start())
        while not s.pid and not start.done():
            await asyncio.sleep(0.001)
        try:
            with b.RssSampler(s.pid, 0.05) as rss:
                await start
        except ServerHung as exc:
            return {"error": f"hung: {exc}", "peak_rss_mib_tree": round(rss.peak, 1)}
        seconds = time.perf_counter() - t0
        return {
            "notes": s.notes,
            "ready_s": round(seconds, 2),
            "build_s": round(s.after_initialized_s, 2),
            "notes_per_s": round(s.notes / seconds),
            "peak_rss_mib_tree": round(rss.peak, 1),
            "peak_rss_mib_server": b.peak_rss_mib(s.pid),
            "index_mib": round(index.stat().st_size / 2**20, 1),
        }
    finally:
        await s.stop()


async def cold_cli(vault: Path, index: Path) -> dict[str, Any]:
    """``engram index --full`` on a missing index: the whole command, process start included."""
    _remove_index(index)
    env = {**os.environ, "ENGRAM_INDEX": str(index)}
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "engram_ls", "index", "--full", "--json", str(vault),
        env=env, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    with b.RssSampler(proc.pid, 0.05) as rss:
        stdout, _ = await proc.communicate()
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"engram index failed ({proc.returncode})")
    sync = json.loads(stdout)["sync"]
    notes = int(sync["parsed"])
    return {
        "notes": notes,
        "seconds": round(seconds, 2),
        "notes_per_s": round(notes / seconds),
        "build_s": round(sync["elapsed_s"], 2),
        "build_notes_per_s": round(notes / sync["elapsed_s"]),
        "peak_rss_mib_tree": round(rss.peak, 1),
        "index_mib": round(index.stat().st_size / 2**20, 1),
    }


async def queries(s: Session, vault: Path, runs: int, settle_s: float = 0.0) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for name, params, baseline in b.query_mix():

        async def one(params: dict[str, Any] = params) -> Any:
            return await s.search(**params)

        stats, res = await b.timed(one, runs, settle_s=settle_s)
        row = {**stats, "total": res["total"], "served_by": res["index"]["served_by"]}
        if baseline is not None:
            row["rg_ms"] = b.rg_ms(vault, baseline["pattern"], regex=baseline.get("regex", False))
            row["rg_ratio_p50"] = round(row["rg_ms"] / max(row["p50_ms"], 0.001), 1)
        rows[name] = row
    return rows


async def bases(s: Session, runs: int, settle_s: float = 0.0) -> dict[str, Any]:
    """``engram/query`` over the base kinds (``benchlib.base_mix``)."""
    rows: dict[str, Any] = {}
    for name, text in b.base_mix():

        async def one(text: str = text) -> Any:
            return await s.request("engram/query", {"text": text})

        stats, res = await b.timed(one, runs, settle_s=settle_s)
        rows[name] = {**stats, "total": res["total"], "rows": len(res["rows"])}
    return rows


async def tasks(s: Session, runs: int, settle_s: float = 0.0) -> dict[str, Any]:
    """``engram/tasks`` over the task kinds (``benchlib.task_mix``)."""
    rows: dict[str, Any] = {}
    for name, params in b.task_mix():

        async def one(params: dict[str, Any] = params) -> Any:
            return await s.request("engram/tasks", params)

        stats, res = await b.timed(one, runs, settle_s=settle_s)
        rows[name] = {**stats, "total": res["total"], "served_by": res["index"]["served_by"]}
    return rows


async def symbols(s: Session, runs: int, shape: str = "standard") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for q in b.symbol_queries(shape):

        async def sym(q: str = q) -> Any:
            return await s.client.workspace_symbol_async(types.WorkspaceSymbolParams(query=q))

        stats, res = await b.timed(sym, runs)
        out[q] = {**stats, "results": len(res or [])}
    return out


async def completion_and_save(s: Session, vault: Path, runs: int) -> dict[str, Any]:
    """Frontmatter completion in an open note, and didSave → visible (the note is restored)."""
    note = next(p for p in sorted((vault / "area-00").rglob("*.md")))
    original = note.read_bytes()
    text = original.decode("utf-8")
    uri = note.as_uri()
    c = s.client
    c.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="markdown", version=1, text=text
            )
        )
    )
    out: dict[str, Any] = {}
    lines = text.split("\n")
    tag_line = next(i for i, line in enumerate(lines) if line.startswith("tags:"))
    lines[tag_line] = "tags: [py"
    c.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="\n".join(lines))],
        )
    )
    pos = types.Position(line=tag_line, character=len("tags: [py"))

    async def complete() -> Any:
        return await c.text_document_completion_async(
            types.CompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=pos
            )
        )

    stats, res = await b.timed(complete, runs)
    items = res.items if hasattr(res, "items") else (res or [])
    out["completion"] = {**stats, "items": len(items)}
    c.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )

    saves = []
    saved = types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    try:
        for i in range(max(5, min(runs, 50))):
            word = f"lspsaved{i}q"
            note.write_bytes(original + f"\n{word}\n".encode())
            t0 = time.perf_counter()
            c.text_document_did_save(saved)
            res = await s.search(query=word, limit=1)
            saves.append((time.perf_counter() - t0) * 1000)
            assert res["total"] == 1, res
    finally:
        note.write_bytes(original)
        c.text_document_did_save(saved)
        await s.total(query="lspsaved0q")
    out["save->visible"] = b.summary(saves)
    c.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return out


LINK_PREFIXES = ("", "a", "ar", "arch", "archive-filter")
"""Typed after ``[[``: from every note (capped) to a few."""


async def link_completion(s: Session, vault: Path, runs: int) -> dict[str, Any]:
    """``[[`` link completion in an open note, per typed prefix (the buffer is not saved)."""
    note = next(p for p in sorted((vault / "area-00").rglob("*.md")))
    uri = note.as_uri()
    c = s.client
    lines = note.read_text(encoding="utf-8").split("\n")
    out: dict[str, Any] = {}
    for version, prefix in enumerate(LINK_PREFIXES, start=1):
        text = "\n".join([*lines, f"See [[{prefix}"])
        item = types.TextDocumentItem(uri=uri, language_id="markdown", version=version, text=text)
        c.text_document_did_open(types.DidOpenTextDocumentParams(text_document=item))
        pos = types.Position(line=len(lines), character=len(f"See [[{prefix}"))
        params = types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=pos
        )

        async def complete(params: types.CompletionParams = params) -> Any:
            return await c.text_document_completion_async(params)

        stats, res = await b.timed(complete, runs)
        out[f"[[{prefix}"] = {**stats, "items": len(res.items), "incomplete": res.is_incomplete}
        c.text_document_did_close(
            types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
    return out


def _batch_note(i: int, word: str) -> bytes:
    return (
        f"---\ntitle: Bench batch {i}\ntags: [{BATCH_TAG}]\ndate: 2024-05-{1 + i % 28:02d}\n---\n"
        f"# Bench batch {i}\n\nA note written by the benchmark, {word} and more words.\n"
    ).encode()


def _write_batch(folder: Path, word: str) -> tuple[list[Path], float]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [folder / f"batch-{i:04d}.md" for i in range(BATCH)]
    t0 = time.perf_counter()
    for i, f in enumerate(files):
        f.write_bytes(_batch_note(i, word))
    return files, (time.perf_counter() - t0) * 1000


async def batches(s: Session, vault: Path) -> dict[str, Any]:
    """1,000 files created, then modified, then their folder renamed, then deleted.

    VS Code-like: each step is done on disk, then reported (didChangeWatchedFiles with 1,000
    events, didRenameFiles / didDeleteFiles of the folder); timed from the report.
    Neovim-like: done on disk only, the server's own watcher finds it; timed from the last
    write (``from_first_write_ms`` includes the writing).
    """
    vscode = s.preset == "visual-studio-code"
    root = vault / BENCH_DIR
    folder, renamed = root / "batch", root / "renamed"
    out: dict[str, Any] = {}
    try:
        # Created.
        t_first = time.perf_counter()
        files, write_ms = _write_batch(folder, "benchfirstq")
        t0 = time.perf_counter()
        if vscode:
            s.notify_files("created", [(f, None) for f in files])
        ms = await s.until_total(BATCH, t0, tags=[BATCH_TAG])
        out["create 1000"] = _row(ms, write_ms, t_first, t0)
        # Modified.
        t_first = time.perf_counter()
        _, write_ms = _write_batch(folder, "benchsecondq")
        t0 = time.perf_counter()
        if vscode:
            s.notify_files("changed", [(f, None) for f in files])
        ms = await s.until_total(BATCH, t0, query="benchsecondq")
        out["modify 1000"] = _row(ms, write_ms, t_first, t0)
        # A folder of exactly 1,000 notes renamed.
        t_first = time.perf_counter()
        folder.rename(renamed)
        t0 = time.perf_counter()
        if vscode:
            s.notify_files("rename", [(folder, renamed)])
        rel = f"{BENCH_DIR}/renamed"
        ms = await s.until_total(BATCH, t0, tags=[BATCH_TAG], path=rel)
        out["rename folder of 1000"] = _row(ms, 0.0, t_first, t0)
        assert await s.total(tags=[BATCH_TAG]) == BATCH
        # Deleted.
        t_first = time.perf_counter()
        shutil.rmtree(root)
        t0 = time.perf_counter()
        if vscode:
            s.notify_files("delete", [(root, None)])
        ms = await s.until_total(0, t0, tags=[BATCH_TAG])
        out["delete folder of 1000"] = _row(ms, 0.0, t_first, t0)
    finally:
        if root.exists():
            shutil.rmtree(root)
            if vscode:
                s.notify_files("delete", [(root, None)])
            await s.until_total(0, time.perf_counter(), tags=[BATCH_TAG])
    return out


def _row(ms: float, write_ms: float, t_first: float, t0: float) -> dict[str, float]:
    return {
        "ms": round(ms, 1),
        "write_ms": round(write_ms, 1),
        "from_first_write_ms": round(ms + (t0 - t_first) * 1000, 1),
    }


async def watcher_live(s: Session, vault: Path) -> None:
    """Wait until the server's own watcher reports files (it starts after the index opens)."""
    probe = vault / BENCH_DIR / "probe.md"
    probe.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.perf_counter() + TIMEOUT_S
    i = 0
    try:
        while True:
            i += 1
            word = f"benchprobe{i}q"
            probe.write_text(f"# probe\n\n{word}\n", encoding="utf-8")
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 1.0:
                if await s.total(query=word) == 1:
                    return
                await asyncio.sleep(0.02)
            if time.perf_counter() > deadline:
                raise TimeoutError("the server's watcher never reported a change")
    finally:
        shutil.rmtree(probe.parent, ignore_errors=True)
        await s.until_total(0, time.perf_counter(), query=f"benchprobe{i}q")


async def editor_session(
    vault: Path, index: Path, preset: str, runs: int, *, full: bool, shape: str = "standard"
) -> dict[str, Any]:
    s = Session(vault, index, preset)
    out: dict[str, Any] = {"preset": preset}
    try:
        out["warm_start_s"] = round(await s.start(), 2)
        out["notes"] = s.notes
        out["server_rss_mib_ready"] = b.rss_mib(s.pid)
        with b.RssSampler(s.pid, 0.1) as rss:
            if full:
                out["engram/search"] = await queries(s, vault, runs)
                out["engram/query"] = await bases(s, runs)
                out["engram/tasks"] = await tasks(s, runs)
                out["workspace/symbol"] = await symbols(s, runs, shape)
                out.update(await completion_and_save(s, vault, runs))
                out["link completion"] = await link_completion(s, vault, runs)
            if preset != "visual-studio-code":
                await watcher_live(s, vault)
            out["batches"] = await batches(s, vault)
        out["server_rss_mib_end"] = b.rss_mib(s.pid)
        out["server_peak_rss_mib"] = b.peak_rss_mib(s.pid)
        out["peak_rss_mib_tree_sampled"] = round(rss.peak, 1)
        if full:
            assert await s.total(tags=[g.COMMON_TOPICS[0]]) == out["engram/search"]["tag"]["total"]
    finally:
        await s.stop()
    return out


async def run_all(
    vault: Path, index: Path, runs: int, *, cold_build: bool = True, shape: str = "standard"
) -> dict[str, Any]:
    vault = vault.resolve()
    if (vault / BENCH_DIR).exists():  # left by an interrupted run: the warm start drops it
        shutil.rmtree(vault / BENCH_DIR)
    out: dict[str, Any] = {"vault_notes": None}
    if cold_build or not index.exists():
        out["cold_lsp"] = await cold_lsp(vault, index)
        out["cold_cli"] = await cold_cli(vault, index)
    out["vscode"] = await editor_session(
        vault, index, "visual-studio-code", runs, full=True, shape=shape
    )
    out["neovim"] = await editor_session(vault, index, "neovim", runs, full=False)
    out["vault_notes"] = out["vscode"]["notes"]
    return out


PRESETS = ("visual-studio-code", "neovim")


def _trees(only: str, index: Path, baseline: Path | None) -> dict[str, Path | None]:
    """The code trees of an ``--only`` run (None: this tree), given that its index exists."""
    if not index.exists():
        raise SystemExit(f"bench_lsp: --only {only} needs an existing index (--index {index})")
    if baseline is None:
        return {"new": None}
    return {"baseline": baseline.resolve(), "new": None}


def _turns(trees: dict[str, Path | None], rounds: int) -> list[tuple[str, Path | None]]:
    """(name, code) of each server to start: every tree in each round, each round in the other
    order, so that a change in the machine's load, or what the first server leaves in the page
    cache, reaches every tree alike."""
    order = list(trees.items())
    return [turn for i in range(rounds) for turn in (order if i % 2 == 0 else order[::-1])]


async def search_rounds(
    vault: Path,
    index: Path,
    repeat: int,
    rounds: int,
    baseline: Path | None = None,
    settle_s: float = 0.0,
) -> dict[str, Any]:
    """Only the query mix, through a VS Code-like server started for each round and code
    tree (``_turns``)."""
    vault = vault.resolve()
    trees = _trees("search", index, baseline)
    out: dict[str, Any] = {"settle_s": settle_s, "rounds": {name: [] for name in trees}}
    for name, code in _turns(trees, rounds):
        s = Session(vault, index, "visual-studio-code", code)
        try:
            await s.start()
            row = await queries(s, vault, repeat, settle_s)
            if code is None:  # engram/query: this tree's (a baseline may not have it)
                bases_rows = await bases(s, repeat, settle_s)
                row.update({f"engram/query {k}": v for k, v in bases_rows.items()})
                row.update(
                    {f"engram/tasks {k}": v for k, v in (await tasks(s, repeat, settle_s)).items()}
                )
            out["rounds"][name].append(row)
        finally:
            await s.stop()
    out["load_avg"] = os.getloadavg()
    return out


async def semantic_rounds(
    vault: Path,
    index: Path,
    repeat: int,
    rounds: int,
    settle_s: float = 0.0,
    baseline: Path | None = None,
) -> dict[str, Any]:
    """Only search by meaning (``benchlib.semantic_mix``), through a VS Code-like server per
    round with semantic search on: it first embeds what the index lacks (timed: chunks/s),
    then every kind is timed (with the server's own time, the answers' ``elapsed_ms``); the
    server's RSS once ready and after the queries; ``settle_s`` as in ``queries``. The kinds are
    timed once the server is idle (``Session.settled``: its start-up work, such as the integrity
    check of the index, would otherwise share the first kinds' time). With
    ``baseline``, a server of that code tree and one of this tree take turns (``_turns``);
    each row names its ``tree``."""
    vault = vault.resolve()
    trees = _trees("semantic", index, baseline)
    out: dict[str, Any] = {"rounds": [], "index_bytes": index.stat().st_size, "settle_s": settle_s}
    for tree, code in _turns(trees, rounds):
        print(f"bench_lsp: semantic round of {tree}", file=sys.stderr, flush=True)
        s = Session(vault, index, "visual-studio-code", code, settings={})
        try:
            await s.start()
            t0 = time.perf_counter()
            first: dict[str, Any] | None = None
            while True:
                v = (await s.request("engram/status", {}))["vaults"][0]
                first = first or v["semantic"]
                if v["semantic"]["state"] == "ready":
                    break
                if time.perf_counter() - t0 > 3600:
                    raise TimeoutError(f"semantic not ready: {v['semantic']}")
                await asyncio.sleep(0.5)
            row: dict[str, Any] = {
                "tree": tree,
                "embed_wait_s": round(time.perf_counter() - t0, 2),
                "embedded_before": first["embedded"] if first else None,
                "semantic": v["semantic"],
                "rss_ready_mib": b.rss_mib(s.pid),
                "settle_wait_s": await s.settled(),
                "kinds": {},
            }
            for name, params in b.semantic_mix():
                turns = itertools.cycle(
                    params["query"] if isinstance(params.get("query"), tuple) else [None]
                )
                inside: list[float] = []
                failed: list[str] = []

                async def one(
                    params: dict[str, Any] = params,
                    s: Session = s,
                    turns: Any = turns,
                    inside: list[float] = inside,
                    failed: list[str] = failed,
                ) -> Any:
                    query = next(turns)
                    try:
                        res = await s.search(
                            **(params if query is None else {**params, "query": query})
                        )
                    except JsonRpcException as exc:  # e.g. past its deadline: counted, timed
                        failed.append(str(exc))
                        return {"total": None}
                    inside.append(float(res["elapsed_ms"]))
                    return res

                if name.endswith("(baseline)") and "rss_semantic_mib" not in row:
                    row["rss_semantic_mib"] = b.rss_mib(s.pid)  # after the semantic kinds
                stats, res = await b.timed(one, repeat, settle_s=settle_s)
                server = b.summary(inside[-stats["runs"] :]) if inside else {}
                row["kinds"][name] = {
                    **stats,
                    "server_p50_ms": server.get("p50_ms"),
                    "server_p95_ms": server.get("p95_ms"),
                    "total": res["total"],
                    **({"errors": len(failed), "error": failed[0]} if failed else {}),
                }
            row["rss_after_mib"] = b.rss_mib(s.pid)
            row["peak_rss_mib"] = b.peak_rss_mib(s.pid)
            out["rounds"].append(row)
        finally:
            await s.stop()
    out["index_bytes_after"] = index.stat().st_size
    out["load_avg"] = os.getloadavg()
    return out


async def warm_starts(
    vault: Path, index: Path, runs: int, baseline: Path | None = None
) -> dict[str, Any]:
    """Only the warm start: ``runs`` starts per preset (and per code tree with a baseline),
    alternated so that a change in the machine's load reaches every variant alike."""
    vault = vault.resolve()
    trees = _trees("warm", index, baseline)
    seconds: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PRESETS} for name in trees}
    cpu: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PRESETS} for name in trees}
    notes = 0
    for _ in range(runs):
        for name, code in trees.items():
            for preset in PRESETS:
                s = Session(vault, index, preset, code)
                try:
                    seconds[name][preset].append(round(await s.start(), 3))
                    cpu[name][preset].append(round(b.tree_cpu_s(s.pid), 2))
                    notes = s.notes
                finally:
                    await s.stop()
    out: dict[str, Any] = {"vault_notes": notes, "runs": runs, "load_avg": os.getloadavg()}
    for name, by_preset in seconds.items():
        out[name] = {
            p: {
                "median_s": round(statistics.median(v), 3),
                "runs_s": v,
                "server_cpu_s_median": round(statistics.median(cpu[name][p]), 2),
            }
            for p, v in by_preset.items()
        }
    if baseline is not None:
        out["ratio_new_to_baseline"] = {
            p: round(out["new"][p]["median_s"] / out["baseline"][p]["median_s"], 3) for p in PRESETS
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--index", type=Path, default=None, help="index file (default: a temp one)")
    ap.add_argument("--repeat", type=int, default=100, help="runs per request (time-capped)")
    ap.add_argument("--no-cold", action="store_true", help="reuse --index, skip the cold build")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--shape", choices=g.SHAPES, default="standard", help="the vault's generator shape"
    )
    ap.add_argument(
        "--only",
        choices=["warm", "search", "semantic"],
        default=None,
        help="measure only the warm start, only the engram/search query mix, or only search"
        " by meaning (semantic and hybrid, after the server has embedded the notes)",
    )
    ap.add_argument(
        "--runs", type=int, default=5, help="with --only: starts per preset, or search rounds"
    )
    ap.add_argument("--baseline", type=Path, default=None, help="with --only: code tree to compare")
    ap.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="with --only search or semantic: a second untimed request and this many seconds"
        " of rest before timing each query kind (the steady state after background reads)",
    )
    args = ap.parse_args()
    if args.only == "search":
        if args.index is None:
            ap.error("--only search needs --index (an index built beforehand)")
        searches = search_rounds(
            args.vault, args.index, args.repeat, args.runs, args.baseline, args.settle
        )
        b.emit(asyncio.run(searches), args.json)
        return 0
    if args.only == "semantic":
        if args.index is None:
            ap.error("--only semantic needs --index (an index built beforehand)")
        rounds = semantic_rounds(
            args.vault, args.index, args.repeat, args.runs, args.settle, args.baseline
        )
        b.emit(asyncio.run(rounds), args.json)
        return 0
    if args.only == "warm":
        if args.index is None:
            ap.error("--only warm needs --index (an index built beforehand)")
        b.emit(
            asyncio.run(warm_starts(args.vault, args.index, args.runs, args.baseline)), args.json
        )
        return 0
    tmp = None
    index = args.index
    if index is None:
        tmp = Path(tempfile.mkdtemp(prefix="engram-bench-"))
        index = tmp / "index.sqlite"
    try:
        out = asyncio.run(
            run_all(args.vault, index, args.repeat, cold_build=not args.no_cold, shape=args.shape)
        )
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    b.emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

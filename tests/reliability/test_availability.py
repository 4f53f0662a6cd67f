"""Availability: no request can stall the others, a deadline is kept and answered with a valid
error, and bad bytes get a typed error (issue 13, items 6, 8 and 9).

Everything runs against real processes: ``engram-ls`` over stdio (pytest-lsp), ``engram-mcp``
over stdio fed raw bytes, and the ``engram`` CLI. Timeouts here catch hangs; they are bounds,
not benchmarks.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from mcp import Client
from pygls.exceptions import JsonRpcException

from engram_ls.core.errors import EngramError
from engram_ls.core.service import Engram
from engram_ls.lsp.convert import to_jsonrpc_error
from engram_ls.mcp_server.server import create_server
from tests.conftest import EXAMPLE, copy_tree
from tests.lsp.conftest import request, wait_ready
from tests.reliability.helpers import PY, ROOT, engram_cli, lsp_session

BACKTRACKING_GLOB = "**/" * 300 + "x"
"""Under the 1024-character cap; the backtracking regex never finished on it."""
OVERLONG_GLOB = "**/" * 500 + "x"
"""The issue's pattern: 1,501 characters, over the cap."""


def _built(root: Path) -> Path:
    with Engram(root) as engram:
        engram.sync()
    return root


def _error(exc: JsonRpcException) -> tuple[int, str]:
    data = exc.data if isinstance(exc.data, dict) else {}
    return exc.code, str(data.get("code", ""))


# -- item 6: a path glob cannot hang a front end ----------------------------------------------


def test_cli_answers_a_backtracking_glob(generated: Callable[..., Path]) -> None:
    root = _built(generated(900))
    args = ["search", "--vault", str(root), "--json", "--path"]
    done = engram_cli(*args, BACKTRACKING_GLOB, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"] == 0
    # the same scope with a name that exists: the glob still means "x at any depth"
    name = sorted(root.rglob("*.md"))[0].name
    done = engram_cli(*args, "**/" * 300 + name, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["total"] >= 1
    done = engram_cli(*args, OVERLONG_GLOB, timeout=60)
    assert done.returncode == 2
    assert "[ENGRAM_LIMIT]" in done.stderr and "Traceback" not in done.stderr


async def test_lsp_keeps_serving_while_a_glob_is_matched(generated: Callable[..., Path]) -> None:
    root = generated(900)
    async with lsp_session([root], "neovim") as client:
        await wait_ready(client)
        search = asyncio.ensure_future(
            request(client, "engram/search", {"path": BACKTRACKING_GLOB}, timeout=60)
        )
        # other requests are answered meanwhile (the regex held the GIL: they timed out)
        status = await request(client, "engram/status", {}, timeout=20)
        assert status["vaults"][0]["state"] == "ready"
        symbols = await asyncio.wait_for(
            client.workspace_symbol_async(types.WorkspaceSymbolParams(query="index")), 20
        )
        assert symbols
        assert (await search)["total"] == 0
        with pytest.raises(JsonRpcException) as info:
            await request(client, "engram/search", {"path": OVERLONG_GLOB}, timeout=20)
        assert _error(info.value) == (-32602, "ENGRAM_LIMIT")


async def test_mcp_answers_a_backtracking_glob(generated: Callable[..., Path]) -> None:
    root = _built(generated(900))
    with Engram(root) as engram:
        async with Client(create_server(engram)) as client:
            r = await asyncio.wait_for(
                client.call_tool("search_notes", {"query": "", "path": BACKTRACKING_GLOB}), 60
            )
            assert not r.is_error and r.structured_content["total"] == 0
            r = await client.call_tool("search_notes", {"query": "", "path": OVERLONG_GLOB})
            assert r.is_error and "ENGRAM_LIMIT" in r.content[0].text


# -- item 8: the deadline is kept, and answered with a valid error ----------------------------


def _no_index(tmp_path: Path) -> str:
    """An index path that cannot be created: every search is a scan of the files."""
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder", "utf-8")
    return str(blocker / "index.sqlite")


@pytest.mark.serial
@pytest.mark.slow
async def test_lsp_search_past_its_deadline_is_engram_timeout(
    generated: Callable[..., Path], tmp_path: Path
) -> None:
    root = generated(4000)
    options = {"index_path": _no_index(tmp_path), "limits": {"deadline_ms": 200}}
    async with lsp_session([root], "neovim", options=options) as client:
        await request(client, "engram/status", {})
        t0 = time.monotonic()
        with pytest.raises(JsonRpcException) as info:
            await request(client, "engram/search", {"query": "index"}, timeout=30)
        elapsed = time.monotonic() - t0
        code, engram_code = _error(info.value)
        assert -32099 <= code <= -32000, info.value
        assert engram_code == "ENGRAM_TIMEOUT"
        assert elapsed < 0.2 + 1.5, f"answered after {elapsed:.2f} s (deadline 0.2 s)"
        status = await request(client, "engram/status", {})
        assert status["vaults"][0]["notes"] == 0  # still serving; the index is unavailable


@pytest.mark.serial
@pytest.mark.slow
async def test_lsp_search_during_the_first_build_keeps_its_deadline(
    generated: Callable[..., Path],
) -> None:
    root = generated(8000)
    options = {"limits": {"deadline_ms": 300}}
    async with lsp_session([root], "neovim", options=options) as client:
        answers: list[tuple[float, Any]] = []
        while True:
            status = await request(client, "engram/status", {})
            vault = status["vaults"][0] if status["vaults"] else None
            if vault is not None and vault["state"] == "ready" and not vault["building"]:
                break
            t0 = time.monotonic()
            try:
                got: Any = await request(client, "engram/search", {"query": "index"}, timeout=30)
            except JsonRpcException as exc:
                got = _error(exc)
            answers.append((time.monotonic() - t0, got))
        assert answers, "the build ended before a search could be sent"
        for elapsed, got in answers:
            if isinstance(got, tuple):
                assert -32099 <= got[0] <= -32000 and got[1] == "ENGRAM_TIMEOUT", got
            assert elapsed < 0.3 + 1.5, f"answered after {elapsed:.2f} s (deadline 0.3 s)"


@pytest.mark.parametrize("error", EngramError.__subclasses__(), ids=lambda cls: cls.code)
def test_every_engram_error_has_a_valid_json_rpc_code(error: type[EngramError]) -> None:
    exc = to_jsonrpc_error(error("x"))
    assert exc.code == -32602 or -32099 <= exc.code <= -32000, exc.code
    assert exc.data == {"code": error.code}


@pytest.mark.serial
@pytest.mark.slow
def test_many_short_words_are_bounded(generated: Callable[..., Path]) -> None:
    root = _built(generated(4000))
    (root / ".engram" / "config.yaml").write_text("limits:\n  deadline_ms: 3000\n", "utf-8")
    done = engram_cli("search", "--vault", str(root), "--no-sync", "--json", "a " * 500)
    assert done.returncode == 0, done.stderr  # ``a a a …`` means ``a``: no timeout
    assert json.loads(done.stdout)["total"] > 0
    words = " ".join(f"w{i}" for i in range(33))
    done = engram_cli("search", "--vault", str(root), "--no-sync", words)
    assert done.returncode == 2
    assert "[ENGRAM_LIMIT]" in done.stderr and "Traceback" not in done.stderr


# -- item 9: bad bytes get a typed error and the server keeps serving ------------------------


class McpStdio:
    """``engram-mcp`` over stdio, fed raw lines; replies collected by a reader thread."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [PY, "-m", "engram_ls.mcp_server", str(root), "--no-watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=ROOT,
        )
        self.replies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.lock:
                self.replies.append(json.loads(line))

    def raw(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.raw(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def wait_for(self, count: int, timeout: float = 30) -> list[dict[str, Any]]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if len(self.replies) >= count:
                    return list(self.replies)
            assert self.proc.poll() is None, "engram-mcp exited"
            time.sleep(0.02)
        with self.lock:
            raise AssertionError(f"{len(self.replies)} replies, expected {count}: {self.replies}")

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


BAD_LINES: list[tuple[bytes, int]] = [
    (b'{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"x": "\\ud800"}}', -32700),
    (b'{"jsonrpc": "2.0", "id": 3, "method": "tools/li', -32700),
    (b"[" * 10_000 + b"]" * 10_000, -32700),
    (b"\xff\xfe{", -32700),
    (b'{"jsonrpc": "2.0", "params": {}}', -32600),
]
"""A lone surrogate, truncated JSON, deep nesting, bytes that are not UTF-8, and JSON that is
no JSON-RPC message (a line with no method and no id)."""


def test_mcp_stdio_answers_lines_it_cannot_read(tmp_path: Path) -> None:
    client = McpStdio(_built(copy_tree(EXAMPLE, tmp_path / "vault")))
    try:
        client.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert "result" in client.wait_for(1)[0]
        client.send({"method": "notifications/initialized"})
        for line, _ in BAD_LINES:
            client.raw(line)
        replies = client.wait_for(1 + len(BAD_LINES))[1:]
        for (line, code), reply in zip(BAD_LINES, replies, strict=True):
            assert reply["id"] is None and reply["error"]["code"] == code, (line[:60], reply)
        # and it goes on serving
        client.send({"id": 9, "method": "tools/call", "params": {
            "name": "search_notes", "arguments": {"query": "sqlite"}}})  # fmt: skip
        answer = client.wait_for(2 + len(BAD_LINES))[-1]
        assert answer["id"] == 9 and answer["result"]["structuredContent"]["total"] > 0
    finally:
        client.close()


async def test_lsp_lone_surrogates_are_invalid_requests(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    async with lsp_session([root], "neovim") as client:
        await wait_ready(client)
        for params in [
            {"query": "\udc00 x", "mode": "literal"},
            {"query": "\ud800", "mode": "regex"},
            {"query": "sqlite", "tags": ["g\udcffo"]},
            {"query": "sqlite", "path": "De\udcffsign"},
        ]:
            with pytest.raises(JsonRpcException) as info:
                await request(client, "engram/search", params)
            assert _error(info.value) == (-32602, "ENGRAM_INVALID_REQUEST"), params
        result = await request(client, "engram/search", {"query": "sqlite"})
        assert result["total"] > 0


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([b"search", b"--tag", b"g\xffo", b"x"], id="tag"),
        pytest.param([b"search", b"--path", b"De\xffsign", b"x"], id="path"),
        pytest.param([b"topics", b"--prefix", b"\xff"], id="topic-prefix"),
    ],
)
def test_cli_arguments_that_are_not_utf8(
    vault_copy: Callable[[str], Path], args: list[bytes]
) -> None:
    root = vault_copy("example")
    vault = [b"--vault", os.fsencode(root)] if args[0] == b"search" else [os.fsencode(root)]
    done = subprocess.run(
        [PY, "-m", "engram_ls", *args[:1], *vault, *args[1:]],
        capture_output=True,
        timeout=120,
        cwd=ROOT,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, stderr
    assert "[ENGRAM_INVALID_REQUEST]" in stderr and "not valid text" in stderr
    assert "Traceback" not in stderr

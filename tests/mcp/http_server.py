"""The real ``engram-mcp --http`` process, and plain HTTP requests to it (only ever on loopback)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx2

PY = sys.executable
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
PROTOCOL = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": PROTOCOL,
        "capabilities": {},
        "clientInfo": {"name": "engram-tests", "version": "1"},
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class McpHttp:
    """A running server; requests go to 127.0.0.1 whatever address it is bound to."""

    port: int
    proc: subprocess.Popen[bytes]
    logs: IO[bytes]
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def post(self, body: dict[str, Any], **headers: str) -> httpx2.Response:
        """POST one JSON-RPC message; ``headers`` are added to (or replace) the defaults."""
        merged = {**JSON_HEADERS, **self.headers, **headers}
        return httpx2.post(self.url, json=body, headers=merged, timeout=10)

    def open_session(self, **headers: str) -> httpx2.Response:
        return self.post(INITIALIZE, **headers)

    def ping(self, session_id: str, **headers: str) -> httpx2.Response:
        return self.post(
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            **{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": PROTOCOL, **headers},
        )

    def output(self) -> str:
        """Everything the process wrote so far (stdout and stderr)."""
        self.logs.flush()
        self.logs.seek(0)
        return self.logs.read().decode("utf-8", "replace")


def start_mcp_http(
    root: Path,
    logs: IO[bytes],
    *args: str,
    host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start ``engram-mcp ROOT --http`` on a free port; stdout and stderr go to ``logs`` (a
    file: no pipe to fill up)."""
    port = free_port()
    server = ["--http", "--host", host, "--port", str(port), "--no-watch"]
    proc = subprocess.Popen(
        [PY, "-m", "engram_ls.mcp_server", str(root), *server, *args],
        stdout=logs,
        stderr=logs,
        env={**os.environ, **(env or {})},
    )
    return proc, port


def wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            assert proc.poll() is None, f"engram-mcp exited with {proc.returncode}"
            assert time.monotonic() < end, "engram-mcp did not listen"
            time.sleep(0.05)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End the server we started, by its pid."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def mcp_http(
    root: Path, *args: str, host: str = "127.0.0.1", env: dict[str, str] | None = None
) -> Iterator[McpHttp]:
    with tempfile.TemporaryFile() as logs:
        proc, port = start_mcp_http(root, logs, *args, host=host, env=env)
        try:
            wait_listening(proc, port)
            yield McpHttp(port, proc, logs)
        finally:
            stop(proc)

"""``engram-ls --tcp HOST:PORT`` serves the same protocol over a loopback socket."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.conftest import DATA, copy_tree
from tests.mcp.http_server import free_port


def _send(sock: socket.socket, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode()
    sock.sendall(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


def _read(sock: socket.socket, buffer: bytearray) -> dict[str, Any]:
    while b"\r\n\r\n" not in buffer:
        buffer += sock.recv(65536)
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(rest) < length:
        rest += sock.recv(65536)
    buffer[:] = rest[length:]
    message: dict[str, Any] = json.loads(rest[:length])
    return message


def _response(sock: socket.socket, buffer: bytearray, msg_id: int) -> dict[str, Any]:
    while True:
        message = _read(sock, buffer)
        if message.get("id") == msg_id and "method" not in message:
            return message


def test_tcp(tmp_path: Path) -> None:
    root = copy_tree(DATA / "tags", tmp_path / "tags")
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram_ls", "lsp", "--tcp", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.05)
        buffer = bytearray()
        with sock:
            _send(
                sock,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "capabilities": {},
                        "workspaceFolders": [{"uri": root.as_uri(), "name": "tags"}],
                    },
                },
            )
            init = _response(sock, buffer, 1)
            assert init["result"]["serverInfo"]["name"] == "engram-ls"
            _send(sock, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
            for attempt in range(200):
                _send(
                    sock,
                    {
                        "jsonrpc": "2.0",
                        "id": 10 + attempt,
                        "method": "engram/search",
                        "params": {"tags": ["python"]},
                    },
                )
                result = _response(sock, buffer, 10 + attempt)["result"]
                if result["index"]["served_by"] == "index":
                    break
                time.sleep(0.05)
            assert result["total"] == 3
            _send(sock, {"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": None})
            _response(sock, buffer, 2)
            _send(sock, {"jsonrpc": "2.0", "method": "exit", "params": None})
    finally:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
    assert out == b"", "nothing is written to stdout when serving over TCP"

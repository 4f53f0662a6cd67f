"""Malformed and random JSON-RPC traffic: ``engram-ls`` answers with errors and keeps serving.

Raw frames are written to the real server's stdin (pytest-lsp's client only sends valid ones).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.conftest import DATA, copy_tree

SERVER = [sys.executable, "-m", "engram_ls.lsp"]


class RawClient:
    """Frames in, frames out, over the server's stdio."""

    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
        )
        self.messages: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            body = json.loads(out.read(length))
            with self.lock:
                self.messages.append(body)

    def raw(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.raw(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def response(self, id_: Any, timeout: float = 30) -> dict[str, Any]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                for m in self.messages:
                    if m.get("id") == id_ and ("result" in m or "error" in m):
                        return m
            assert self.proc.poll() is None, "the server exited"
            time.sleep(0.02)
        raise AssertionError(f"no response to {id_!r}")

    def close(self) -> None:
        try:
            self.send({"id": "bye", "method": "shutdown"})
            self.response("bye", timeout=10)
            self.send({"method": "exit"})
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def test_garbage_does_not_stop_the_server(tmp_path: Path) -> None:
    root = copy_tree(DATA / "tags", tmp_path / "tags")
    client = RawClient(tmp_path)
    try:
        client.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"capabilities": {}, "rootUri": root.as_uri(), "processId": os.getpid()},
            }
        )
        assert "result" in client.response(1)
        client.send({"method": "initialized", "params": {}})

        rng = random.Random(7)
        garbage: list[bytes] = [
            b"{not json",
            b"[]",
            b"42",
            b'"a string"',
            b"null",
            b'{"jsonrpc": "2.0"}',
            b'{"jsonrpc": "1.0", "id": 5, "method": "engram/status"}',
            json.dumps({"jsonrpc": "2.0", "id": 6, "method": "no/such/method"}).encode(),
            json.dumps(
                {"jsonrpc": "2.0", "id": 7, "method": "engram/search", "params": 3}
            ).encode(),
            json.dumps(
                {"jsonrpc": "2.0", "id": 8, "method": "engram/search", "params": {"query": {}}}
            ).encode(),
            json.dumps(
                {"jsonrpc": "2.0", "id": 9, "method": "textDocument/completion", "params": {}}
            ).encode(),
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "method": "textDocument/didOpen",
                    "params": {"textDocument": {"uri": 5}},
                }
            ).encode(),
            json.dumps(
                {"jsonrpc": "2.0", "method": "workspace/didRenameFiles", "params": {"files": "x"}}
            ).encode(),
            b'{"jsonrpc": "2.0", "id": 10, "method": "engram/search",'
            b' "params": {"query": "\xed\xb3\xbf"}}',  # a lone surrogate, as UTF-8
            b"\xff\xfe\x00garbage",
            # issue 13 item 9: lone surrogates as JSON escapes (typed errors below), truncated
            # JSON and nesting deeper than the parser allows (dropped; the server goes on)
            b'{"jsonrpc": "2.0", "id": 12, "method": "engram/search",'
            b' "params": {"query": "\\udc00 x", "mode": "literal"}}',
            b'{"jsonrpc": "2.0", "id": 13, "method": "engram/search",'
            b' "params": {"query": "\\ud800", "mode": "regex"}}',
            b'{"jsonrpc": "2.0", "id": 14, "method": "engram/search",'
            b' "params": {"query": "x", "tags": ["g\\udcffo"], "path": "\\ud800/x"}}',
            b'{"jsonrpc": "2.0", "id": 15, "method": "engram/sea',
            b"[" * 100_000 + b"]" * 100_000,
        ]
        garbage += [rng.randbytes(rng.randint(1, 200)) for _ in range(20)]
        for body in garbage:
            client.raw(body)
        assert client.proc.stdin is not None  # header lines no header is: skipped
        client.proc.stdin.write(b"X-Junk: " + b"x" * 300_000 + b"\r\n" + b"\x00" * 70_000)
        client.proc.stdin.write(b"\r\n\r\nContent-Type: text/plain\r\n")

        # every request that had an id got an error answer, not silence
        for id_ in (6, 7, 8, 9):
            assert "error" in client.response(id_), id_
        assert client.response(6)["error"]["code"] == -32601  # method not found
        assert client.response(9)["error"]["code"] == -32602  # invalid params
        for id_ in (12, 13, 14):  # lone surrogates: a typed error, not -32603
            error = client.response(id_)["error"]
            assert error["code"] == -32602, error
            assert error["data"]["code"] == "ENGRAM_INVALID_REQUEST", error

        # params are optional in JSON-RPC
        client.send({"id": 11, "method": "engram/status"})
        assert "vaults" in client.response(11)["result"]

        # and the server still serves real requests, from a built index
        deadline = time.monotonic() + 60
        while True:
            client.send({"id": "s", "method": "engram/status", "params": {}})
            status = client.response("s")["result"]
            with client.lock:
                client.messages = [m for m in client.messages if m.get("id") != "s"]
            if status["vaults"] and status["vaults"][0]["state"] == "ready":
                break
            assert time.monotonic() < deadline, status
            time.sleep(0.1)
        client.send(
            {"id": "q", "method": "engram/search", "params": {"query": "", "tags": ["python"]}}
        )
        result = client.response("q")["result"]
        assert result["total"] == 3
        assert client.proc.poll() is None
    finally:
        client.close()


def test_stdin_from_a_regular_file(tmp_path: Path) -> None:
    """Requests read from a file (no pipe to wait on) are answered in order, the ones before
    ``shutdown`` before it, and the server ends at the file's end. (No ``exit``: a client
    sends it once ``shutdown`` is answered.)"""
    root = copy_tree(DATA / "tags", tmp_path / "tags")
    frames = b""
    for message in (
        {"id": 1, "method": "initialize", "params": {"capabilities": {}, "rootUri": root.as_uri()}},
        {"method": "initialized", "params": {}},
        {"id": 2, "method": "engram/status", "params": {}},
        {"id": 3, "method": "shutdown"},
    ):
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        frames += b"Content-Length: %d\r\n\r\n" % len(body) + body
    requests = tmp_path / "requests.bin"
    requests.write_bytes(frames)
    with open(requests, "rb") as stdin:
        done = subprocess.run(
            SERVER, stdin=stdin, capture_output=True, cwd=tmp_path, timeout=60, check=False
        )
    answered = [
        json.loads(part.split(b"\r\n\r\n", 1)[1])
        for part in done.stdout.split(b"Content-Length: ")[1:]
    ]
    ids = [m.get("id") for m in answered if "result" in m]
    assert ids == [1, 2, 3], (ids, done.stderr[-2000:])
    assert done.returncode == 0, done.stderr[-2000:]

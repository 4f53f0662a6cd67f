"""Ask the real engram-ls what it answers, before an editor test decides what to expect.

The editors show what the server says (results, or its error); what it says depends on this
installation (``semantic`` needs an extra) and on the server's version (``engram/related`` is
new). :func:`ask` starts ``engram-ls`` over stdio on a vault, sends a few requests and returns
the raw JSON-RPC answers, so a test can compare what the editor showed with what the server
said, and skip only what the server cannot do.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

TIMEOUT_S = 30.0

METHOD_NOT_FOUND = -32601


def _write(stream: IO[bytes], message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def _read(stream: IO[bytes], out: queue.Queue[dict[str, Any] | None]) -> None:
    while True:
        length = None
        while True:
            line = stream.readline()
            if not line:
                out.put(None)
                return
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if length is None:
            continue
        out.put(json.loads(stream.read(length)))


def settled(status: dict[str, Any], waited_s: float) -> bool:
    """Whether every vault of an ``engram/status`` answer is ready and its semantic search
    (when the server has it) is done embedding; after ``SEMANTIC_WAIT_S`` an idle semantic
    state (a server that embeds nothing in the background) counts as done too."""
    vaults = status.get("vaults") or []
    if not vaults:
        return False
    for vault in vaults:
        if vault.get("state") != "ready" or vault.get("building"):
            return False
        semantic = vault.get("semantic") or {}
        state = semantic.get("state")
        busy = state == "embedding" or (state != "ready" and waited_s < SEMANTIC_WAIT_S)
        if semantic.get("available") and busy:
            return False
    return True


SEMANTIC_WAIT_S = 5.0
"""How long an available but idle semantic search is waited for before it counts as done."""


def ask(server: list[str], vault: Path, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The answer to each request (``{"result": …}`` or ``{"error": …}``), in order, asked
    once the vault's index is ready (and its notes embedded, see :func:`settled`)."""
    proc = subprocess.Popen(
        server,
        cwd=vault,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None
    inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
    threading.Thread(target=_read, args=(proc.stdout, inbox), daemon=True).start()

    def call(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None
        _write(proc.stdin, {"id": ident, "method": method, "params": params})
        while True:
            message = inbox.get(timeout=TIMEOUT_S)
            if message is None:
                raise AssertionError(f"engram-ls exited before answering {method}")
            if "method" in message and "id" in message:  # a request to the client
                _write(proc.stdin, {"id": message["id"], "result": None})
            elif message.get("id") == ident and "method" not in message:
                return message

    try:
        root = vault.resolve().as_uri()
        call(
            0,
            "initialize",
            {
                "processId": None,
                "rootUri": root,
                "workspaceFolders": [{"uri": root, "name": vault.name}],
                "capabilities": {},
            },
        )
        _write(proc.stdin, {"method": "initialized", "params": {}})
        ident = 0
        start = time.monotonic()
        while True:
            ident += 1
            status = call(ident, "engram/status", {}).get("result") or {}
            if settled(status, time.monotonic() - start):
                break
            if time.monotonic() - start > TIMEOUT_S:
                raise AssertionError(f"engram-ls never settled: {status}")
            time.sleep(0.1)
        answers = []
        for method, params in requests:
            ident += 1
            reply = call(ident, method, params)
            answers.append({k: reply[k] for k in ("result", "error") if k in reply})
        call(ident + 1, "shutdown", {})
        _write(proc.stdin, {"method": "exit"})
        proc.wait(timeout=TIMEOUT_S)
        return answers
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

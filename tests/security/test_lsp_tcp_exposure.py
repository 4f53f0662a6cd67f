"""Issue 13 item 4: ``engram-ls --tcp`` on an address beyond loopback warns on stderr (the
language server has no credential: whoever connects opens any folder as a workspace)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time

import pytest

from tests.mcp.http_server import free_port


def _stderr_once_listening(host: str) -> str:
    port = free_port()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "engram_ls", "lsp", "--tcp", f"{host}:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            end = time.monotonic() + 30
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    assert proc.poll() is None, "engram-ls exited"
                    assert time.monotonic() < end, "engram-ls did not listen"
                    time.sleep(0.05)
        finally:
            proc.kill()  # ours, by its pid
            proc.wait(timeout=10)
        err.seek(0)
        return err.read().decode("utf-8", "replace")


def test_tcp_beyond_loopback_warns() -> None:
    err = _stderr_once_listening("0.0.0.0")
    assert "warning" in err and "0.0.0.0" in err, err
    assert "beyond this machine" in err


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_tcp_on_loopback_does_not_warn(host: str) -> None:
    assert "warning" not in _stderr_once_listening(host)

"""Helpers of the reliability suite: the CLI, child processes and engram-ls as real processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import lsp_session as lsp_session  # re-exported: the suite's one way

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
SERVER = [PY, "-m", "engram_ls.lsp"]


def engram_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "engram_ls", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        cwd=cwd or ROOT,
    )


def child(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``tests/reliability/_child.py`` in its own process (stdout piped, line by line)."""
    return subprocess.Popen(
        [PY, "-m", "tests.reliability._child", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def child_cli(*args: str) -> subprocess.Popen[bytes]:
    """``engram ARGS`` started in the background (to be killed)."""
    return subprocess.Popen(
        [PY, "-m", "engram_ls", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )


def server_alive(client: LanguageClient) -> bool:
    proc = getattr(client, "_server", None)
    return proc is not None and proc.returncode is None


async def until(check: Any, timeout: float = 60, every: float = 0.1) -> Any:
    """Poll ``await check()`` until it returns something truthy; its last value on timeout
    raises AssertionError."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        last = await check()
        if last:
            return last
        await asyncio.sleep(every)
    raise AssertionError(f"condition not reached in {timeout} s; last value {last!r}")


def save(client: LanguageClient, path: Path) -> None:
    client.text_document_did_save(
        types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri())
        )
    )


def grow(mnt: Path, size: str = "64m") -> None:
    """Give the small disk room again (the user freed space)."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(mnt)], check=True)

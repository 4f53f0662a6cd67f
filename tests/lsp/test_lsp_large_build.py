"""A first build large enough for the parse worker processes, inside the language server.

Forking a worker while the server's stdin-reader thread held its lock left the worker blocked
forever and the build hung (from PARALLEL_MIN notes on); workers are spawned there now.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from engram_ls.core.sync import PARALLEL_MIN
from tests.lsp.conftest import search, start, wait_ready


@pytest.mark.slow
async def test_first_build_with_worker_processes(
    client: LanguageClient, generated: Callable[..., Path]
) -> None:
    root = generated(PARALLEL_MIN + 200)
    await start(client, [root], "neovim")
    status = await wait_ready(client, timeout=120)
    assert status["vaults"][0]["notes"] == PARALLEL_MIN + 200
    result = await search(client, query="", date_from="1900-01-01", limit=1)
    assert result["index"]["served_by"] == "index"
    assert 0 < result["total"] <= PARALLEL_MIN + 200

"""``engram/search`` with ``require_index`` / ``max_staleness_ms`` and the source revision in
``engram/search`` and ``engram/status`` (issue 15, item 4), through the real ``engram-ls``
process: a vault that is a git repository with uncommitted changes, and a vault whose index
cannot be made."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.conftest import DATA, copy_tree
from tests.lsp.conftest import lsp_session, request, search, wait_ready

GitVault = Callable[..., tuple[Path, str]]


async def _stale_error(client: object, **params: object) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await request(client, "engram/search", params)  # type: ignore[arg-type]
    err = info.value
    assert err.code == -32003 and err.data["code"] == "ENGRAM_INDEX_STALE"  # type: ignore[index]
    return err


async def test_git_vault_with_uncommitted_changes(git_vault: GitVault) -> None:
    root, head = git_vault(dirty=True)
    async with lsp_session([root]) as client:
        status = await wait_ready(client)
        assert status["vaults"][0]["source_revision"] == {"commit": head, "dirty": True}
        res = await search(client, query="hello", require_index=True, max_staleness_ms=600_000)
        assert res["index"]["served_by"] == "index" and res["total"] == 1
        assert res["index"]["source_revision"] == {"commit": head, "dirty": True}
        err = await _stale_error(client, query="hello", max_staleness_ms=0)
        assert err.data["max_staleness_ms"] == 0  # type: ignore[index]
        # the server goes on serving, as before without the new fields
        assert (await search(client, query="hello"))["total"] == 1


async def test_require_index_while_the_index_cannot_be_made(
    tmp_path: Path, unmakeable_index: Path
) -> None:
    root = copy_tree(DATA / "tags", tmp_path / "tags")
    env = {"ENGRAM_INDEX": str(unmakeable_index)}
    async with lsp_session([root], env=env) as client:
        loop = asyncio.get_running_loop()
        end = loop.time() + 30
        while (await request(client, "engram/status", {}))["vaults"][0]["building"]:
            assert loop.time() < end
            await asyncio.sleep(0.05)
        status = (await request(client, "engram/status", {}))["vaults"][0]
        assert status["state"] == "failed" and status["source_revision"] is None
        scanned = await search(client, tags=["python"])
        assert scanned["index"]["served_by"] == "scan" and scanned["total"] == 3
        assert scanned["index"]["source_revision"] is None
        err = await _stale_error(client, tags=["python"], require_index=True)
        assert "require_index" in err.message
        alone = await search(client, tags=["python"], max_staleness_ms=0)  # a scan is current
        assert alone["index"]["served_by"] == "scan" and alone["total"] == 3

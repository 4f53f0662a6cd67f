"""``engram/search`` and ``engram/status``: the core search service over JSON-RPC.

``engram/search`` takes the DESIGN §4 request (plus an optional ``uri`` of a note or folder
to pick the vault when the workspace has several) and returns the §4 result; each hit also
carries an LSP ``range``. ``engram/status`` returns each vault's index state. A bad request is
a ``-32602`` error whose ``data.code`` is the Engram error code; ``$/cancelRequest`` stops a
running search.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

from engram_ls.core.errors import EngramError
from engram_ls.core.serialize import json_value
from engram_ls.lsp import convert

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer
    from engram_ls.lsp.vaults import VaultSession

SEARCH = "engram/search"
STATUS = "engram/status"
RELATED = "engram/related"


def _pick_vault(ls: EngramLanguageServer, params: dict[str, Any]) -> VaultSession:
    uri = params.pop("uri", None)
    vault, rel = ls.request_vault(None if uri is None else str(uri))
    if rel and "path" not in params and not rel.endswith(".md"):
        params["path"] = rel
    return vault


async def search(ls: EngramLanguageServer, params: Any) -> dict[str, Any]:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise JsonRpcInvalidParams(
            message="engram/search params must be an object",
            data={"code": "ENGRAM_INVALID_REQUEST"},
        )
    params = dict(params)
    await ls.ready()
    vault = _pick_vault(ls, params)
    await vault.settled()
    cancel = threading.Event()
    try:
        response = await ls.run(lambda: vault.engram.search(params, cancel=cancel))
    except asyncio.CancelledError:
        cancel.set()
        raise
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    return convert.search_result(response)


async def status(ls: EngramLanguageServer, params: Any) -> dict[str, Any]:
    await ls.ready()
    vaults = []
    for vault in ls.vaults:
        st = await ls.run(vault.engram.status)
        vaults.append(
            {
                "root": str(vault.root),
                "uri": convert.path_to_uri(vault.root),
                "building": vault.building,
                **json_value(st),
            }
        )
    return {"vaults": vaults}


async def related(ls: EngramLanguageServer, params: Any) -> dict[str, Any]:
    """``engram/related`` ``{uri, limit?}``: the note's neighbours in one ranking, by links,
    backlinks and meaning (``Engram.related_notes``' ``related``), each with its ``uri``,
    ``reasons``, ``score``, a 0-based ``line`` to open it at and a ``snippet``."""
    if not isinstance(params, dict) or not isinstance(params.get("uri"), str):
        raise JsonRpcInvalidParams(
            message="engram/related needs {uri: the note's URI, limit?: 1-200}",
            data={"code": "ENGRAM_INVALID_REQUEST"},
        )
    await ls.ready()
    vault, rel = ls.request_vault(params["uri"])
    await vault.settled()
    limit = params.get("limit", 20)
    try:
        out = await ls.run(vault.engram.related_notes, rel, limit if isinstance(limit, int) else 0)
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    results = [
        {**r, "uri": vault.engram.vault.uri(r["path"]), "line": max(0, int(r["line"]) - 1)}
        for r in out["related"]
    ]
    return {"results": results}

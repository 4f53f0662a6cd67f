"""``engram/query``: one view of an Obsidian base, answered from the index.

Params ``{uri, view?, block?}`` (a ``.base`` file of a vault, or a note with ```` ```base ````
blocks; its open buffer when the editor has it open, unsaved edits included) or
``{text, uri?, view?}`` (the base as text; ``uri`` picks the vault). The result is
``Engram.query``'s (docs/queries.md), each row with the ``uri`` of its note. An error in the
base is ``-32602`` whose ``data`` names the part, line, column and unsupported construct.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from pygls.exceptions import JsonRpcInvalidParams

from engram_ls.core.errors import EngramError
from engram_ls.lsp import convert

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer

QUERY = "engram/query"


def _bad(message: str) -> JsonRpcInvalidParams:
    return JsonRpcInvalidParams(message=message, data={"code": "ENGRAM_INVALID_REQUEST"})


async def query(ls: EngramLanguageServer, params: Any) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise _bad("engram/query needs {uri, view?, block?} or {text, uri?, view?}")
    uri, text = params.get("uri"), params.get("text")
    view, block = params.get("view"), params.get("block")
    if uri is not None and not isinstance(uri, str):
        raise _bad("uri is text")
    if text is not None and not isinstance(text, str):
        raise _bad("text is the base as text")
    if uri is None and text is None:
        raise _bad("engram/query needs the uri of a base or its text")
    if view is not None and not isinstance(view, str):
        raise _bad("view is the name of a view")
    if block is not None and (not isinstance(block, int) or isinstance(block, bool)):
        raise _bad("block is the number of a ```base block, from 1")
    await ls.ready()
    vault, rel = ls.request_vault(uri)
    source: dict[str, Any] = {"text": text} if text is not None else {"path": rel}
    if text is None and uri is not None:
        opened = ls.workspace.text_documents.get(unquote(uri))
        if opened is not None:  # the buffer, with its unsaved edits, named by its path
            source["text"] = opened.source
    await vault.settled()
    cancel = threading.Event()
    try:
        out = await ls.run(
            lambda: vault.engram.query(**source, view=view, block=block, cancel=cancel)
        )
    except asyncio.CancelledError:
        cancel.set()
        raise
    except EngramError as exc:
        raise convert.to_jsonrpc_error(exc) from None
    for row in out["rows"]:
        row["uri"] = vault.engram.vault.uri(row["path"])
    return out

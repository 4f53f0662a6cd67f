"""The LSP error mapping as a unit test of ``lsp/convert.py``: each core error becomes the
JSON-RPC error a client receives. (The end-to-end check that the server answers bad requests
this way, and keeps serving, runs once against one shared server in test_lsp_search.py.)"""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from engram_ls.core.errors import (
    EngramError,
    IndexUnavailable,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    OutsideVault,
    SearchTimeout,
    UnsupportedMode,
)
from engram_ls.lsp.convert import to_jsonrpc_error

REQUEST_FAULTS = [InvalidRequest, LimitExceeded, OutsideVault, UnsupportedMode, NotFound]


@pytest.mark.parametrize("error", REQUEST_FAULTS, ids=lambda cls: cls.code)
def test_a_fault_of_the_request_is_invalid_params(error: type[EngramError]) -> None:
    exc = to_jsonrpc_error(error("bad date", data={"field": "date_from"}))
    assert isinstance(exc, JsonRpcInvalidParams)
    assert exc.code == -32602
    assert exc.data == {"code": error.code, "field": "date_from"}
    assert "bad date" in str(exc.message)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        pytest.param(IndexUnavailable, -32001, id="index-unavailable"),
        pytest.param(SearchTimeout, -32002, id="timeout"),
        pytest.param(EngramError, -32000, id="any-other"),
    ],
)
def test_a_fault_of_the_server_is_a_server_error(error: type[EngramError], code: int) -> None:
    exc = to_jsonrpc_error(error("no index"))
    assert not isinstance(exc, JsonRpcInvalidParams)
    assert exc.code == code
    assert exc.data == {"code": error.code}
    assert "no index" in str(exc.message)

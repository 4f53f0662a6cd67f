"""Engram errors as the MCP protocol's errors (resources, prompts, completion): a tool's
errors are tool results instead (``server.EngramMCP``)."""

from __future__ import annotations

from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS

from engram_ls.core.errors import (
    EngramError,
    Forbidden,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    OutsideVault,
)

REQUEST_FAULTS = (InvalidRequest, LimitExceeded, NotFound, OutsideVault, Forbidden)
"""What the request got wrong: invalid params; any other Engram error is an internal error."""


def protocol_error(exc: EngramError, uri: str | None = None) -> MCPError:
    """The JSON-RPC error of an Engram error: its message begins with the Engram code, and
    ``data`` holds the code, the error's data and the resource's ``uri`` when there is one."""
    code = INVALID_PARAMS if isinstance(exc, REQUEST_FAULTS) else INTERNAL_ERROR
    data: dict[str, Any] = {**exc.data, "code": exc.code}
    if uri is not None:
        data["uri"] = uri
    return MCPError(code, f"{exc.code}: {exc.message}", data)

"""``engram-mcp`` over stdio, answering every line, even one that is not a JSON-RPC message.

The SDK's stdio transport turns a line it cannot read (truncated JSON, a lone surrogate such as
``"\\ud800"``, nesting deeper than its parser allows, valid JSON that is no JSON-RPC message)
into an exception on its read stream, and the server drops it without a word: the client waits
for an answer that never comes. Over HTTP the same bytes get ``-32700``. Here such a line gets
the JSON-RPC error a client expects (``-32700`` parse error, or ``-32600`` invalid request for
JSON that is not a message), with ``id: null``, and the server goes on serving.
"""

from __future__ import annotations

import logging

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError

log = logging.getLogger("engram_ls.mcp")
DETAIL_CHARS = 200


def error_reply(exc: Exception) -> SessionMessage:
    """The JSON-RPC error answering a line the transport could not read."""
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if not errors or any(e.get("type") == "json_invalid" for e in errors):
        code, what = PARSE_ERROR, "Parse error"
    else:
        code, what = INVALID_REQUEST, "Invalid request: not a JSON-RPC message"
    detail = str(errors[0].get("msg", "")) if errors else str(exc)
    message = f"{what}: {detail[:DETAIL_CHARS]}" if detail else what
    return SessionMessage(
        JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message))
    )


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` on stdin/stdout, as ``MCPServer.run()`` does, with unreadable lines
    answered instead of dropped."""
    async with stdio_server() as (read_stream, write_stream):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def relay() -> None:
            async with send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        reply = error_reply(item)
                        log.warning("answered a line that is no message: %s", reply.message)
                        await write_stream.send(reply)
                    else:
                        await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            # The SDK offers no public way to serve its low-level server on given streams.
            lowlevel = server._lowlevel_server
            await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()

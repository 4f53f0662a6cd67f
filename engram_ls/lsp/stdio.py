"""``engram-ls`` over stdio, read by the event loop itself.

pygls reads stdin on its thread pool: each header line and each body is one blocking read
handed to a worker thread, so a request costs three thread hand-offs (and their wake-ups of the
event loop) before it is even parsed, about a millisecond of a 3 ms round trip here. When stdin
is a pipe or a socket (what every editor gives a language server) the event loop reads it
instead, as pygls' own message loop expects (``readline`` / ``readexactly``); anything else (a
regular file, a terminal) keeps pygls' reader. Replies are written as pygls writes them.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import TYPE_CHECKING, BinaryIO

from pygls.io_ import StdoutWriter, run_async

if TYPE_CHECKING:
    from pygls.server import JsonRPCServer

log = logging.getLogger("engram_ls.lsp")
LINE_LIMIT = 1 << 16
"""A header line longer than this is no header: it is skipped (the rest of it read as lines
that match no header), as pygls skips any line that is not one."""


class PipeReader:
    """pygls' ``AsyncReader`` over an ``asyncio.StreamReader``."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        try:
            return await self.stream.readline()
        except ValueError:  # longer than LINE_LIMIT: the stream dropped what it had read
            return b"\x00 (an over-long line)\r\n"

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:  # end of input: pygls stops on b""
            return b"" if not exc.partial else exc.partial


def pollable(stream: BinaryIO) -> bool:
    """Whether the event loop can wait on ``stream``: a pipe or a socket."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def serve(server: JsonRPCServer, stdin: BinaryIO | None = None) -> None:
    """Serve ``server`` on stdin/stdout until the client exits or stdin ends."""
    stdin = stdin or sys.stdin.buffer
    if not pollable(stdin):
        server.start_io(stdin)
        return
    stop = server._stop_event = threading.Event()  # as pygls' start_io sets it
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))

    async def loop() -> None:
        stream = asyncio.StreamReader(limit=LINE_LIMIT)
        running = asyncio.get_running_loop()
        await running.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
        await run_async(
            stop_event=stop,
            reader=PipeReader(stream),
            protocol=server.protocol,
            logger=log,
            error_handler=server.report_server_error,
        )

    try:
        asyncio.run(loop())
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]

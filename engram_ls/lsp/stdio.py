"""``engram-ls`` over stdio, read by the event loop itself.

pygls reads stdin on its thread pool: each header line and each body is one blocking read
handed to a worker thread, so a request costs three thread hand-offs (and their wake-ups of the
event loop) before it is even parsed, about a millisecond of a 3 ms round trip here. When stdin
is a pipe or a socket (what every editor gives a language server) the event loop reads it
instead, as pygls' own message loop expects (``readline`` / ``readexactly``); anything else (a
regular file, a terminal) is read on a thread per read, as pygls does. Replies are written as
pygls writes them; at the end of stdin the requests still running are answered first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
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
END_WAIT_S = 10.0
"""Longest wait at the end of stdin for the requests still running (a search's deadline)."""
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


class FileReader:
    """pygls' ``AsyncReader`` over a stream the event loop cannot wait on (a regular file, a
    terminal): each read on a thread of its own."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        return await asyncio.to_thread(self.stream.readline, LINE_LIMIT)

    async def readexactly(self, n: int) -> bytes:
        return await asyncio.to_thread(self.stream.read, n)


async def answered(server: JsonRPCServer, timeout: float = END_WAIT_S) -> None:
    """Wait (at most ``timeout``) until the requests still running (but the caller's own) are
    answered: at the end of the input they would be dropped with the event loop, and after
    ``shutdown`` pygls answers them with an error. pygls keeps them in ``_request_futures``
    (pinned pygls 2.1.1)."""
    me: object = asyncio.current_task()
    pending: list[asyncio.Future[object]] = []
    running: list[object] = list(server.protocol._request_futures.values())
    for future in running:
        if future is me:
            continue
        if isinstance(future, concurrent.futures.Future):
            if not future.done():
                pending.append(asyncio.wrap_future(future))
        elif isinstance(future, asyncio.Future) and not future.done():
            pending.append(future)
    if pending:
        await asyncio.wait(pending, timeout=timeout)
        await asyncio.sleep(0)  # the answers are sent by the futures' done-callbacks


def pollable(stream: BinaryIO) -> bool:
    """Whether the event loop can wait on ``stream``: a pipe or a socket."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def serve(server: JsonRPCServer, stdin: BinaryIO | None = None) -> None:
    """Serve ``server`` on stdin/stdout until the client exits or stdin ends; at the end of
    stdin the requests still running are answered first."""
    stdin = stdin or sys.stdin.buffer
    stop = server._stop_event = threading.Event()  # as pygls' start_io sets it
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))

    async def loop() -> None:
        reader: PipeReader | FileReader
        if pollable(stdin):
            stream = asyncio.StreamReader(limit=LINE_LIMIT)
            running = asyncio.get_running_loop()
            await running.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), stdin)
            reader = PipeReader(stream)
        else:
            reader = FileReader(stdin)
        await run_async(
            stop_event=stop,
            reader=reader,
            protocol=server.protocol,
            logger=log,
            error_handler=server.report_server_error,
        )
        await answered(server)

    try:
        asyncio.run(loop())
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]

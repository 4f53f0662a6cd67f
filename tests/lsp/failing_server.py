"""``engram-ls`` with one more contributor, listed first for every method that has several,
which always fails: the test server of ``test_lsp_contributors.py``.

The server is the real one (``create_server`` and the real registry); only the contributor
lists differ. The registry's log records are also sent to the client as
``window/logMessage``, so the test can see that each failure was logged.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from typing import Any

from lsprotocol import types

from engram_ls.lsp.features import CONTRIBUTORS
from engram_ls.lsp.server import EngramLanguageServer, create_server

FAILURE = "a contributor that always fails (test)"


async def failing(ls: EngramLanguageServer, *args: Any) -> Any:
    raise RuntimeError(FAILURE)


class _ToClient(logging.Handler):
    def __init__(self, server: EngramLanguageServer) -> None:
        super().__init__(logging.WARNING)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        self.server.window_log_message(
            types.LogMessageParams(type=types.MessageType.Error, message=record.getMessage())
        )


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    contributors = dataclasses.replace(
        CONTRIBUTORS,
        hover=(failing, *CONTRIBUTORS.hover),
        completion=(failing, *CONTRIBUTORS.completion),
        code_actions=(failing, *CONTRIBUTORS.code_actions),
        diagnostics=(failing, *CONTRIBUTORS.diagnostics),
    )
    server = create_server(contributors)
    logging.getLogger("engram_ls.lsp.registry").addHandler(_ToClient(server))
    server.start_io()

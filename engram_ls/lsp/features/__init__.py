"""One module per capability; each exposes ``register(server)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from engram_ls.lsp.features import (
    code_actions,
    completion,
    diagnostics,
    files,
    hover,
    links,
    search,
    symbols,
)

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer

FEATURES: list[Callable[[EngramLanguageServer], None]] = [
    search.register,
    files.register,
    completion.register,
    hover.register,
    diagnostics.register,
    symbols.register,
    code_actions.register,
    links.register,
]

"""Typed errors raised by the core; each front end maps them once.

Every error carries a stable ``code`` from DESIGN §4. The LSP adapter turns it into a JSON-RPC
error with ``data.code``, the MCP adapter into a tool error, the CLI into a message and exit 2.
"""

from __future__ import annotations

from typing import Any


class EngramError(Exception):
    """Base class of every error the core raises on purpose."""

    code = "ENGRAM_ERROR"

    def __init__(self, message: str, *, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = dict(data or {})


class InvalidRequest(EngramError):
    """The request is malformed: bad field, bad date, bad regex, empty query without filters."""

    code = "ENGRAM_INVALID_REQUEST"


class IndexUnavailable(EngramError):
    """The index cannot be opened or built, and the request cannot be answered without it."""

    code = "ENGRAM_INDEX_UNAVAILABLE"


class IndexStale(EngramError):
    """The request asked for an answer from a current index (``require_index``,
    ``max_staleness_ms``) and the index cannot give one: it cannot serve, or its last sync is
    older than asked. Nothing was scanned instead."""

    code = "ENGRAM_INDEX_STALE"


class UnsupportedMode(EngramError):
    """The search mode is not available in this installation or on this path."""

    code = "ENGRAM_UNSUPPORTED_MODE"


class SearchTimeout(EngramError):
    """The request ran past its deadline and was cancelled."""

    code = "ENGRAM_TIMEOUT"


class LimitExceeded(EngramError):
    """A request exceeded a hard cap (query length, page size, offset)."""

    code = "ENGRAM_LIMIT"


class OutsideVault(EngramError):
    """A path resolves outside the vault (``..``, absolute path, symlink escape)."""

    code = "ENGRAM_OUTSIDE_VAULT"


class NotFound(EngramError):
    """A vault, note or folder does not exist."""

    code = "ENGRAM_NOT_FOUND"


class Forbidden(EngramError):
    """The caller may not do this: a read-only bearer token asked for a write, or a token
    limited to some vaults named another (``engram-mcp --http`` with ``--tokens-file``)."""

    code = "ENGRAM_FORBIDDEN"

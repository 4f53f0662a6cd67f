"""Core ↔ LSP conversions and the one mapping of core errors to JSON-RPC errors.

Core lines are 1-based; LSP positions are 0-based. Paths are vault-relative in the core and
``file://`` URIs in the protocol.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcServerError

from engram_ls.core.errors import (
    EngramError,
    IndexStale,
    IndexUnavailable,
    InvalidRequest,
    LimitExceeded,
    NotFound,
    OutsideVault,
    SearchTimeout,
    UnsupportedMode,
)
from engram_ls.core.index.prop_stats import PropertyCount, ValueCount
from engram_ls.core.model import Problem
from engram_ls.core.search import SearchHit, SearchResponse
from engram_ls.core.serialize import json_value

SERVER_ERROR = -32000

_INVALID_PARAMS = (InvalidRequest, LimitExceeded, OutsideVault, UnsupportedMode, NotFound)
SERVER_CODES: dict[type[EngramError], int] = {
    IndexUnavailable: SERVER_ERROR - 1,
    SearchTimeout: SERVER_ERROR - 2,
    IndexStale: SERVER_ERROR - 3,
}
"""JSON-RPC codes (in the -32099..-32000 range for server errors) of the errors that are not
a fault of the request; any other is -32000. A client's ``$/cancelRequest`` is -32800."""


def uri_to_path(uri: str) -> Path | None:
    """The local path of a ``file://`` URI, or None for other schemes."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":
        path = f"//{parsed.netloc}{path}"
    return Path(os.path.normpath(path))


def path_to_uri(path: Path) -> str:
    return path.absolute().as_uri()


def to_jsonrpc_error(exc: EngramError) -> JsonRpcException:
    """A core error as the JSON-RPC error a client receives, with ``data.code``."""
    data: dict[str, Any] = {"code": exc.code, **exc.data}
    if isinstance(exc, _INVALID_PARAMS):
        return JsonRpcInvalidParams(message=exc.message, data=data)
    code = next((c for cls, c in SERVER_CODES.items() if isinstance(exc, cls)), SERVER_ERROR)
    return JsonRpcServerError(exc.message, code, data)  # type: ignore[no-untyped-call]


def hit_range(hit: SearchHit) -> dict[str, Any]:
    line = max(hit.line - 1, 0)
    return {"start": {"line": line, "character": 0}, "end": {"line": line + 1, "character": 0}}


def search_result(response: SearchResponse) -> dict[str, Any]:
    """DESIGN §4 result; each hit also carries the LSP ``range`` of its line."""
    out: dict[str, Any] = json_value(response)
    for item, hit in zip(out["results"], response.results, strict=True):
        item["range"] = hit_range(hit)
    return out


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!<>|~])")


def escape_markdown(text: str) -> str:
    """``text`` as literal Markdown (hovers): every character Markdown would act on escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


PROBLEM_ERRORS = frozenset({"yaml", "frontmatter-type", "unclosed-frontmatter", "binary"})
"""Problem codes shown as errors; the others (date, encoding, too-large) are warnings."""


def problem_diagnostic(
    problem: Problem, text_line: str = "", units: Callable[[str], int] = len
) -> types.Diagnostic:
    """A core problem as a diagnostic on its (1-based) line, from its first non-blank
    character to the end; ``units`` counts a string in the client's position units."""
    zero = max((problem.line or 1) - 1, 0)
    indent = len(text_line) - len(text_line.lstrip())
    error = problem.code in PROBLEM_ERRORS
    return types.Diagnostic(
        range=types.Range(
            start=types.Position(line=zero, character=units(text_line[:indent])),
            end=types.Position(line=zero, character=units(text_line)),
        ),
        message=problem.message,
        severity=types.DiagnosticSeverity.Error if error else types.DiagnosticSeverity.Warning,
        code=problem.code,
        source="engram",
    )


HOVER_VALUES = 8
"""Most values a property's hover lists."""


def _notes(count: int) -> str:
    return f"{count} note" if count == 1 else f"{count} notes"


def property_markdown(
    name: str, about: PropertyCount | None, values: list[ValueCount] | None
) -> str:
    """A property as hover (and ``.base`` hover) shows it: kinds, counts, common values."""
    head = f"**Property {escape_markdown(name)}**"
    if about is None:
        return f"{head}: no note has it."
    kinds = ", ".join(
        f"{kind} {n}" for kind, n in sorted(about.kinds.items(), key=lambda kv: -kv[1])
    )
    lines = [f"{head}: {about.kind}, {_notes(about.notes)}", "", f"Kinds: {kinds}"]
    if about.lists:
        lines[-1] += f"; a list on {_notes(about.lists)}"
    if values:
        shown = ", ".join(
            f"`{v.text}` {v.notes}" for v in values[:HOVER_VALUES] if "`" not in v.text
        )
        more = f" and {len(values) - HOVER_VALUES} more" if len(values) > HOVER_VALUES else ""
        lines += ["", f"Values: {shown}{more}"]
    elif values is None:
        lines += ["", "Values: too many to list."]
    return "\n".join(lines)


def plain_text(markdown: str) -> str:
    """A hover's Markdown for a client that shows plain text."""
    return markdown.replace("**", "").replace("`", "")

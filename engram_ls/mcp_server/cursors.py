"""Opaque page cursors for the MCP server's lists (``search_notes``, ``list_topics``,
``list_tasks``, ``resources/list``).

A cursor names what it continues: the list's kind, the vault, a digest of the request it pages
(every argument but the cursor itself), the offset of the next page, and the index generation
the first page was read at. It is signed with a key made when the server starts, so a client
cannot forge one (nor bring one from another server or an earlier run). Following a cursor
while the index is at the same generation gives the next page, with no overlap and no gap; once
the index changed (a note saved, moved or deleted), it fails with ``ENGRAM_INVALID_REQUEST``
"cursor expired, search again" rather than silently skipping or repeating notes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

from engram_ls.core.errors import InvalidRequest

EXPIRED = "cursor expired, search again"


@dataclass(frozen=True, slots=True)
class Page:
    """Where a cursor continues."""

    offset: int
    generation: int


class Cursors:
    """Issues and reads cursors for one server (one signing key)."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def issue(
        self, kind: str, vault: str, request: dict[str, Any], offset: int, generation: int
    ) -> str:
        body = json.dumps(
            [kind, vault, _digest(request), offset, generation], separators=(",", ":")
        ).encode()
        sig = hmac.new(self._key, body, hashlib.sha256).digest()[:12]
        return base64.urlsafe_b64encode(sig + body).decode().rstrip("=")

    def read(
        self,
        cursor: str,
        kind: str,
        vault: str,
        request: dict[str, Any],
        generation: int | None = None,
    ) -> Page:
        """The page ``cursor`` continues; ``ENGRAM_INVALID_REQUEST`` when it is not one this
        server issued for this list and request, or (``generation`` given: the index's now)
        the index changed since. Without ``generation`` the caller compares the generation
        its answer was read at with ``Page.generation``."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
            sig, body = raw[:12], raw[12:]
            ok = hmac.compare_digest(sig, hmac.new(self._key, body, hashlib.sha256).digest()[:12])
            fields = json.loads(body) if ok else None
        except (ValueError, TypeError):
            fields = None
        if not (isinstance(fields, list) and len(fields) == 5):
            raise InvalidRequest(
                "cursor: not a cursor of this server (pass next_cursor as it was returned, "
                "with the same other arguments)",
                data={"argument": "cursor"},
            )
        c_kind, c_vault, c_digest, offset, c_generation = fields
        if c_kind != kind or c_vault != vault or c_digest != _digest(request):
            raise InvalidRequest(
                "cursor: it continues another list or request (pass the same other arguments "
                "as the call that returned it)",
                data={"argument": "cursor"},
            )
        if generation is not None and c_generation != generation:
            raise InvalidRequest(EXPIRED, data={"argument": "cursor"})
        return Page(offset=int(offset), generation=int(c_generation))


def _digest(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]

"""Issue 13 item 10: MCP HTTP sessions are reclaimed. An idle session expires after
``--session-idle-seconds`` (its id then answers 404, as the MCP spec asks) and at most
``--max-sessions`` are open (one more gets 503 until room frees up). Real server process."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tests.mcp.http_server import mcp_http

IDLE = 2.0


def test_idle_sessions_expire_and_their_number_is_capped(
    vault_copy: Callable[[str], Path],
) -> None:
    args = ("--session-idle-seconds", str(IDLE), "--max-sessions", "3")
    with mcp_http(vault_copy("tags"), *args) as server:
        ids = []
        for _ in range(3):
            r = server.open_session()
            assert r.status_code == 200
            ids.append(r.headers["mcp-session-id"])
        full = server.open_session()
        assert full.status_code == 503, full.text
        assert "Too many open sessions" in full.text
        for sid in ids:
            assert server.ping(sid).status_code == 200

        # keep the first session busy for more than twice the idle time; leave the others
        end = time.monotonic() + 2.5 * IDLE
        while time.monotonic() < end:
            assert server.ping(ids[0]).status_code == 200, "a session in use does not expire"
            time.sleep(IDLE / 5)
        for sid in ids[1:]:
            r = server.ping(sid)
            assert r.status_code == 404, f"an idle session was not reclaimed: {r.status_code}"
        assert server.ping(ids[0]).status_code == 200

        # the two reclaimed places can be taken again, and the cap still holds
        for _ in range(2):
            assert server.open_session().status_code == 200
        assert server.open_session().status_code == 503

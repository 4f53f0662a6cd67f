"""Issue 13 item 4: ``engram-mcp --http`` off loopback needs a bearer token, and the Host and
Origin checks hold on every bind. Real server processes; requests only ever go to 127.0.0.1
(a server bound to 0.0.0.0 is reached through loopback)."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from engram_ls.mcp_server import server as mcp_server
from tests.conftest import in_process
from tests.mcp.http_server import McpHttp, mcp_http, start_mcp_http, stop

TOKEN = "engram-test-token-" + "5f3a9c" * 5


@pytest.fixture(autouse=True)
def _no_token_from_outside(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ENGRAM_MCP_TOKEN", "ENGRAM_MCP_ALLOWED_HOSTS", "ENGRAM_MCP_ALLOWED_ORIGINS"):
        monkeypatch.delenv(name, raising=False)


def _refusal(root: Path, *args: str, host: str = "0.0.0.0") -> tuple[int, str]:
    """Start the server and expect it to exit by itself; its status and output."""
    with tempfile.TemporaryFile() as logs:
        proc, _port = start_mcp_http(root, logs, *args, host=host)
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("engram-mcp started serving instead of refusing")
        finally:
            stop(proc)
        logs.seek(0)
        return code, logs.read().decode("utf-8", "replace")


def _refusal_in_process(
    root: Path, monkeypatch: pytest.MonkeyPatch, *args: str
) -> subprocess.CompletedProcess[str]:
    """``engram-mcp ROOT --http --host 0.0.0.0 ARGS`` in this process, which must refuse before
    it serves (serving fails the test instead of blocking it)."""

    def serve(*_: object) -> None:
        pytest.fail("engram-mcp started serving instead of refusing")

    monkeypatch.setattr(mcp_server, "serve_http", serve)
    argv = [str(root), "--http", "--host", "0.0.0.0", "--port", "0", "--no-watch", *args]
    return in_process(mcp_server.main, "engram-mcp", *argv)


def test_off_loopback_without_a_token_refuses_to_start(vault_copy: Callable[[str], Path]) -> None:
    """The real process: its exit status and what it says (the cases below run in-process)."""
    code, out = _refusal(vault_copy("tags"))
    assert code == 2
    assert "--token-file" in out and "ENGRAM_MCP_TOKEN" in out, out


@pytest.mark.parametrize(
    ("content", "says"),
    [
        pytest.param(None, "cannot read", id="missing-file"),
        pytest.param("\n", "empty", id="empty-file"),
        pytest.param("short\n", "at least", id="too-short"),
    ],
)
def test_a_bad_token_file_refuses_to_start(
    vault_copy: Callable[[str], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    content: str | None,
    says: str,
) -> None:
    token_file = tmp_path / "token"
    if content is not None:
        token_file.write_text(content)
    proc = _refusal_in_process(vault_copy("tags"), monkeypatch, "--token-file", str(token_file))
    out = proc.stderr
    assert proc.returncode == 2
    assert "unrecognized arguments" not in out
    assert "token" in out and says in out, out


def _authorized(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_off_loopback_every_request_needs_the_token(
    vault_copy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_MCP_TOKEN", TOKEN)
    with mcp_http(vault_copy("tags"), "--log-level", "DEBUG", host="0.0.0.0") as server:
        for headers in (
            {},
            _authorized("wrong-" + TOKEN),
            _authorized(TOKEN[:-1]),
            {"Authorization": f"Basic {TOKEN}"},
            {"Authorization": TOKEN},
        ):
            r = server.open_session(**headers)
            assert r.status_code == 401, headers
            assert r.headers["www-authenticate"].startswith("Bearer"), headers
            assert "mcp-session-id" not in r.headers
        # any path, not only /mcp
        r = httpx2.get(f"http://127.0.0.1:{server.port}/", timeout=10)
        assert r.status_code == 401
        r = server.open_session(**_authorized(TOKEN))
        assert r.status_code == 200 and r.headers["mcp-session-id"]
        out = server.output()
        assert TOKEN not in out, "the token is never logged"
        assert "reachable beyond this machine" in out and f"localhost:{server.port}" in out


async def test_the_sdk_client_works_with_the_token(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with mcp_http(vault_copy("tags"), "--token-file", str(token_file), host="0.0.0.0") as server:
        async with (
            httpx2.AsyncClient(headers=_authorized(TOKEN)) as http,
            Client(streamable_http_client(server.url, http_client=http)) as client,
        ):
            r = await client.call_tool("search_notes", {"tags": ["memory"]})
            assert not r.is_error
            assert r.structured_content is not None and r.structured_content["total"] == 4


def test_on_loopback_a_token_is_optional_but_honoured(
    vault_copy: Callable[[str], Path], tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    root = vault_copy("tags")
    with mcp_http(root, "--token-file", str(token_file)) as server:
        assert server.open_session().status_code == 401
        assert server.open_session(**_authorized(TOKEN)).status_code == 200
    with mcp_http(root) as server:
        assert server.open_session().status_code == 200


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHttp]:
    """Loopback, default settings."""
    from tests.conftest import DATA, copy_tree

    root = copy_tree(DATA / "tags", tmp_path_factory.mktemp("plain") / "tags")
    with mcp_http(root) as server:
        yield server


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpHttp]:
    """Loopback, with hosts and origins added by flags and environment variables."""
    from tests.conftest import DATA, copy_tree

    root = copy_tree(DATA / "tags", tmp_path_factory.mktemp("configured") / "tags")
    env = {
        "ENGRAM_MCP_ALLOWED_HOSTS": "other.example, third.example:8000",
        "ENGRAM_MCP_ALLOWED_ORIGINS": "http://tool.example:3000",
    }
    args = ("--allowed-host", "Notes.Example", "--allowed-origin", "https://app.example")
    with mcp_http(root, *args, env=env) as server:
        yield server


# (server, Host (PORT is the server's port) or None for the real one, Origin or None, status)
CHECKS = [
    pytest.param("plain", None, None, 200, id="plain-request"),
    pytest.param("plain", "127.0.0.1:PORT", None, 200, id="host-ipv4"),
    pytest.param("plain", "localhost:PORT", None, 200, id="host-localhost"),
    pytest.param("plain", "[::1]:PORT", None, 200, id="host-ipv6"),
    pytest.param("plain", "LocalHost:PORT", None, 200, id="host-case-insensitive"),
    pytest.param("plain", "localhost:9999", None, 421, id="host-other-port"),
    pytest.param("plain", "localhost", None, 421, id="host-without-port"),
    pytest.param("plain", "evil.example:PORT", None, 421, id="host-foreign"),
    pytest.param("plain", "127.0.0.1:PORT@evil", None, 421, id="host-garbage"),
    pytest.param("plain", None, "http://localhost:PORT", 200, id="origin-localhost"),
    pytest.param("plain", None, "http://127.0.0.1:PORT", 200, id="origin-ipv4"),
    pytest.param("plain", None, "http://[::1]:PORT", 200, id="origin-ipv6"),
    pytest.param("plain", None, "http://LOCALHOST:PORT", 200, id="origin-case-insensitive"),
    pytest.param("plain", None, "http://localhost:9999", 403, id="origin-other-port"),
    pytest.param("plain", None, "http://localhost", 403, id="origin-port-80"),
    pytest.param("plain", None, "https://localhost:PORT", 403, id="origin-other-scheme"),
    pytest.param("plain", None, "http://evil.example", 403, id="origin-foreign"),
    pytest.param("plain", None, "null", 403, id="origin-null"),
    pytest.param("configured", "notes.example:PORT", None, 200, id="host-by-flag"),
    pytest.param("configured", "NOTES.EXAMPLE:PORT", None, 200, id="host-by-flag-case"),
    pytest.param("configured", "notes.example:9999", None, 421, id="host-by-flag-other-port"),
    pytest.param("configured", "other.example:PORT", None, 200, id="host-by-env"),
    pytest.param("configured", "third.example:8000", None, 200, id="host-by-env-with-port"),
    pytest.param("configured", "evil.example:PORT", None, 421, id="host-still-checked"),
    pytest.param("configured", "localhost:PORT", None, 200, id="host-loopback-kept"),
    pytest.param("configured", None, "https://app.example", 200, id="origin-by-flag"),
    pytest.param("configured", None, "https://app.example:443", 200, id="origin-default-port"),
    pytest.param("configured", None, "http://app.example", 403, id="origin-by-flag-scheme"),
    pytest.param("configured", None, "http://tool.example:3000", 200, id="origin-by-env"),
    pytest.param("configured", None, "http://localhost:PORT", 200, id="origin-loopback-kept"),
    pytest.param("configured", None, "http://localhost:9999", 403, id="origin-still-checked"),
]


@pytest.mark.parametrize(("which", "host", "origin", "status"), CHECKS)
def test_host_and_origin_checks(
    request: pytest.FixtureRequest, which: str, host: str | None, origin: str | None, status: int
) -> None:
    server: McpHttp = request.getfixturevalue(which)
    headers: dict[str, str] = {}
    if host is not None:
        headers["Host"] = host.replace("PORT", str(server.port))
    if origin is not None:
        headers["Origin"] = origin.replace("PORT", str(server.port))
    r = server.open_session(**headers)
    assert r.status_code == status, r.text
    assert ("mcp-session-id" in r.headers) == (status == 200)


def test_checks_stay_on_off_loopback(
    vault_copy: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_MCP_TOKEN", TOKEN)
    args = ("--allowed-host", "notes.example")
    with mcp_http(vault_copy("tags"), *args, host="0.0.0.0") as server:
        port = server.port
        ok = _authorized(TOKEN)
        assert server.open_session(**ok).status_code == 200
        assert server.open_session(**ok, Host=f"notes.example:{port}").status_code == 200
        assert server.open_session(**ok, Host=f"evil.example:{port}").status_code == 421
        assert server.open_session(**ok, Origin="http://evil.example").status_code == 403
        assert server.open_session(**ok, Origin=f"http://localhost:{port}").status_code == 200

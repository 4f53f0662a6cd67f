"""``engram-mcp --http``: who may talk to the streamable HTTP server, and how long sessions live.

One ASGI layer in front of the SDK's app checks every request, on every bind:

1. the ``Host`` header names an allowed ``host:port`` (else 421): by default the loopback names
   with the server's own port, plus the bind address, plus ``--allowed-host`` /
   ``ENGRAM_MCP_ALLOWED_HOSTS``; compared case-insensitively;
2. an ``Origin`` header, when a browser sends one, is an allowed origin (else 403): by default
   ``http://`` + those loopback names with the server's own port (not any port of localhost),
   plus ``--allowed-origin`` / ``ENGRAM_MCP_ALLOWED_ORIGINS``;
3. with a token (``--token-file`` or ``ENGRAM_MCP_TOKEN``; required for a bind beyond loopback),
   ``Authorization: Bearer TOKEN`` (else 401 with ``WWW-Authenticate: Bearer``), compared in
   constant time. The token is never logged.

The SDK's own DNS-rebinding check is switched off because this one replaces it: the SDK's
accepts any port of localhost, compares Host case-sensitively and is off for any bind but
loopback. Sessions are the SDK session manager's: it closes a session after
``--session-idle-seconds`` without a request in flight (its id then answers 404) and answers 503
to a new session while ``--max-sessions`` are open.
"""

from __future__ import annotations

import argparse
import hmac
import logging
import math
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from engram_ls.core.contained import read_regular
from engram_ls.core.errors import InvalidRequest
from engram_ls.core.net import WILDCARDS, is_loopback

log = logging.getLogger("engram_ls.mcp.http")

TOKEN_ENV = "ENGRAM_MCP_TOKEN"
HOSTS_ENV = "ENGRAM_MCP_ALLOWED_HOSTS"
ORIGINS_ENV = "ENGRAM_MCP_ALLOWED_ORIGINS"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MIN_TOKEN_CHARS = 16
DEFAULT_SESSION_IDLE_SECONDS = 30 * 60
# Measured (docs/benchmarks.md, "MCP HTTP sessions"): an open session holds about 37 KB and
# the RSS it took stays at its peak after the session is reclaimed, so the cap bounds memory
# (100: ~4 MiB). An agent keeps one session open; a script that never ends its sessions opens
# one per run, and they expire after the idle time.
DEFAULT_MAX_SESSIONS = 100
GRACEFUL_SHUTDOWN_SECONDS = 5
_NAME = re.compile(r"[a-z0-9._-]+|\[[0-9a-f:.]+\]", re.ASCII)
_DEFAULT_PORTS = {"http": 80, "https": 443}

Host = tuple[str, int]
Origin = tuple[str, str, int]


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``name``, ``name:port``, ``[v6]`` or ``[v6]:port`` as (lower-case name, port or None);
    None when it is none of these."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]") + 1
        name, rest = value[:end], value[end:]
        if end == 0 or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
    else:
        name, sep, after = value.partition(":")
        port = after if sep else None
    if not _NAME.fullmatch(name):
        return None
    if port is None:
        return name, None
    if not (port.isascii() and port.isdigit() and 0 < int(port) < 65536):
        return None
    return name, int(port)


def _parse_host(value: str, default_port: int) -> Host | None:
    parsed = _split_host(value)
    if parsed is None:
        return None
    return parsed[0], default_port if parsed[1] is None else parsed[1]


def _parse_origin(value: str) -> Origin | None:
    """``scheme://host[:port]`` as (scheme, lower-case host, port with the scheme's default);
    None for anything else (``null``, a path, another scheme)."""
    scheme, sep, rest = value.strip().lower().partition("://")
    if not sep or scheme not in _DEFAULT_PORTS:
        return None
    host = _parse_host(rest, _DEFAULT_PORTS[scheme])
    return None if host is None else (scheme, *host)


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _listed(values: Iterable[str], env: str) -> list[str]:
    """Flag values, then the comma-separated entries of the environment variable ``env``."""
    return [*values, *(v for v in os.environ.get(env, "").split(",") if v.strip())]


@dataclass(frozen=True)
class HttpSettings:
    host: str
    port: int
    token: str | None
    allowed_hosts: frozenset[Host]
    allowed_origins: frozenset[Origin]
    session_idle_seconds: float
    max_sessions: int

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def describe_hosts(self) -> str:
        return ", ".join(sorted(f"{name}:{port}" for name, port in self.allowed_hosts))


def read_token(token_file: str | None) -> str | None:
    """The bearer token from ``token_file`` (first line, stripped) or ``$ENGRAM_MCP_TOKEN``;
    None when neither is given. A token that is empty, short or not printable ASCII is refused."""
    if token_file is not None:
        source = f"the token file {token_file}"
        try:
            token = read_regular(token_file, 4096).decode("utf-8", "replace").strip()
        except OSError as exc:
            raise InvalidRequest(f"cannot read {source}: {exc.strerror}") from None
    elif TOKEN_ENV in os.environ:
        source = f"${TOKEN_ENV}"
        token = os.environ[TOKEN_ENV].strip()
    else:
        return None
    if not token:
        raise InvalidRequest(f"the bearer token in {source} is empty")
    if len(token) < MIN_TOKEN_CHARS:
        raise InvalidRequest(
            f"the bearer token in {source} is too short: use at least {MIN_TOKEN_CHARS} "
            "characters, e.g. the output of: python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(32))'"
        )
    if not (token.isascii() and token.isprintable()) or " " in token:
        raise InvalidRequest(f"the bearer token in {source} must be printable ASCII without spaces")
    return token


def http_settings(args: argparse.Namespace) -> HttpSettings:
    """Check the HTTP options of ``engram-mcp`` (raises InvalidRequest for the user)."""
    host, port = str(args.host), int(args.port)
    token = read_token(args.token_file)
    if token is None and not is_loopback(host):
        raise InvalidRequest(
            f"--host {host} makes the server reachable beyond this machine, so it needs a "
            f"bearer token: pass --token-file PATH or set {TOKEN_ENV} (clients then send "
            "'Authorization: Bearer TOKEN')"
        )
    hosts = {(name, port) for name in LOOPBACK_NAMES}
    if host.lower() not in WILDCARDS:
        hosts.add((_bracketed(host.lower()), port))
    for value in _listed(args.allowed_host, HOSTS_ENV):
        parsed = _parse_host(value, port)
        if parsed is None:
            raise InvalidRequest(f"not a HOST or HOST:PORT for --allowed-host: {value.strip()!r}")
        hosts.add(parsed)
    origins = {("http", name, port) for name in LOOPBACK_NAMES}
    for value in _listed(args.allowed_origin, ORIGINS_ENV):
        origin = _parse_origin(value.strip().removesuffix("/"))
        if origin is None:
            raise InvalidRequest(
                f"not an origin (http://HOST[:PORT] or https://HOST[:PORT]) for "
                f"--allowed-origin: {value.strip()!r}"
            )
        origins.add(origin)
    return HttpSettings(
        host=host,
        port=port,
        token=token,
        allowed_hosts=frozenset(hosts),
        allowed_origins=frozenset(origins),
        session_idle_seconds=float(args.session_idle_seconds),
        max_sessions=int(args.max_sessions),
    )


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return value


def _positive_count(text: str) -> int:
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"not a positive whole number: {text!r}")
    return int(text)


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``engram-mcp --http`` besides --host and --port."""
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help=f"file holding the bearer token clients must send (else ${TOKEN_ENV}); "
        "required with a --host beyond loopback",
    )
    parser.add_argument(
        "--allowed-host",
        metavar="HOST[:PORT]",
        action="append",
        default=[],
        help="also accept this Host header (default port: --port; repeatable; also "
        f"${HOSTS_ENV}, comma-separated)",
    )
    parser.add_argument(
        "--allowed-origin",
        metavar="ORIGIN",
        action="append",
        default=[],
        help="also accept this Origin, e.g. https://app.example (repeatable; also "
        f"${ORIGINS_ENV}, comma-separated)",
    )
    parser.add_argument(
        "--session-idle-seconds",
        type=_positive_seconds,
        default=DEFAULT_SESSION_IDLE_SECONDS,
        metavar="SECONDS",
        help=f"close a session idle this long (default {DEFAULT_SESSION_IDLE_SECONDS})",
    )
    parser.add_argument(
        "--max-sessions",
        type=_positive_count,
        default=DEFAULT_MAX_SESSIONS,
        metavar="N",
        help=f"open sessions at most; more get HTTP 503 (default {DEFAULT_MAX_SESSIONS})",
    )


class RequestGuard:
    """ASGI middleware: the Host, Origin and bearer-token checks of the module docstring."""

    def __init__(self, app: ASGIApp, settings: HttpSettings) -> None:
        self.app = app
        self.settings = settings
        self._token = settings.token.encode("ascii") if settings.token else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            refusal = self._refusal(Headers(scope=scope))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers) -> Response | None:
        hosts = headers.getlist("host")
        host = _parse_host(hosts[0], 80) if len(hosts) == 1 else None
        if host is None or host not in self.settings.allowed_hosts:
            log.info("refused a request for Host %.100r", hosts)
            return Response("Host header not allowed (see --allowed-host)\n", status_code=421)
        origins = headers.getlist("origin")
        if origins and (
            len(origins) > 1 or _parse_origin(origins[0]) not in self.settings.allowed_origins
        ):
            log.info("refused a request from Origin %.100r", origins)
            return Response("Origin not allowed (see --allowed-origin)\n", status_code=403)
        if self._token is not None:
            scheme, _, credentials = headers.get("authorization", "").partition(" ")
            presented = credentials.strip().encode("latin-1")
            if scheme.lower() != "bearer" or not hmac.compare_digest(presented, self._token):
                challenge = 'Bearer realm="engram-mcp"'
                if scheme:
                    challenge += ', error="invalid_token"'
                log.info("refused a request without the bearer token")
                return Response(
                    "missing or wrong bearer token (send 'Authorization: Bearer TOKEN')\n",
                    status_code=401,
                    headers={"WWW-Authenticate": challenge},
                )
        return None


def serve_http(server: MCPServer, settings: HttpSettings) -> None:
    """Serve ``server`` over streamable HTTP at /mcp until interrupted; a bind beyond loopback
    is said on stderr, with the Host headers accepted (never the token)."""
    import uvicorn

    if not settings.loopback:
        sys.stderr.write(
            f"engram-mcp: serving on {settings.host}:{settings.port}, reachable beyond this "
            f"machine; requests need the bearer token; Host headers accepted: "
            f"{settings.describe_hosts()} (add the name clients use with --allowed-host)\n"
        )

    app = server.streamable_http_app(
        session_idle_timeout=settings.session_idle_seconds,
        max_sessions=settings.max_sessions,
        # RequestGuard replaces the SDK's check (its Content-Type check stays)
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=settings.host,
    )
    config = uvicorn.Config(
        RequestGuard(app, settings),
        host=settings.host,
        port=settings.port,
        log_config=None,  # uvicorn's own logs go where ours go (stderr), not to stdout
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
    )
    uvicorn.Server(config).run()

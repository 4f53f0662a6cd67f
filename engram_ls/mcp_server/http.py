"""``engram-mcp --http``: who may talk to the streamable HTTP server, what each bearer token
may do, and how long sessions live.

One ASGI layer in front of the SDK's app checks every request, on every bind:

1. the ``Host`` header names an allowed ``host:port`` (else 421): by default the loopback names
   with the server's own port, plus the bind address, plus ``--allowed-host`` /
   ``ENGRAM_MCP_ALLOWED_HOSTS``; compared case-insensitively; a Host without a port is the
   default port of http or https, 80 or 443 (what a TLS-terminating proxy forwards);
2. an ``Origin`` header, when a browser sends one, is an allowed origin (else 403): by default
   ``http://`` + those loopback names with the server's own port (not any port of localhost),
   plus ``--allowed-origin`` / ``ENGRAM_MCP_ALLOWED_ORIGINS``;
3. with tokens (``--token-file`` or ``ENGRAM_MCP_TOKEN``, and ``--tokens-file``; required for a
   bind beyond loopback), ``Authorization: Bearer TOKEN`` naming one of them (else 401 with
   ``WWW-Authenticate: Bearer``), compared in constant time with every token. No token is
   ever logged. The request's ASGI scope then carries the token's ``Grant``.

Each token has a scope (``Grant``: read or write, and optionally its vaults), which
``ScopeGuard`` applies in the MCP server's request handlers. Each handler reads it from the HTTP
request of its own message (``ctx.request``, attached by the SDK's streamable HTTP transport to
every message of a POST), so it holds in whatever task the SDK runs the handler.

The SDK's own DNS-rebinding check is switched off because this one replaces it: the SDK's
accepts any port of localhost, compares Host case-sensitively and is off for any bind but
loopback. Sessions are the SDK session manager's: it closes a session after
``--session-idle-seconds`` without a request in flight (its id then answers 404) and answers 503
to a new session while ``--max-sessions`` are open.
"""

from __future__ import annotations

import argparse
import functools
import hmac
import logging
import math
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pydantic_core
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CompletionContext,
    GetPromptRequestParams,
    ListResourcesResult,
    ListToolsResult,
    TextContent,
)
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from engram_ls.core.contained import read_regular
from engram_ls.core.errors import EngramError, Forbidden, InvalidRequest
from engram_ls.core.net import WILDCARDS, is_loopback
from engram_ls.mcp_server.errors import protocol_error

log = logging.getLogger("engram_ls.mcp.http")

TOKEN_ENV = "ENGRAM_MCP_TOKEN"
HOSTS_ENV = "ENGRAM_MCP_ALLOWED_HOSTS"
ORIGINS_ENV = "ENGRAM_MCP_ALLOWED_ORIGINS"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
MIN_TOKEN_CHARS = 16
MAX_TOKENS = 1000
TOKENS_FILE_BYTES = 1 << 20
SCOPES = ("read", "write")
GRANT_KEY = "engram.grant"
"""The key of the ASGI scope under which ``RequestGuard`` leaves the request's ``Grant``."""
DEFAULT_SESSION_IDLE_SECONDS = 30 * 60
# Measured (docs/benchmarks.md, "MCP HTTP sessions"): an open session holds about 37 KB and
# the RSS it took stays at its peak after the session is reclaimed, so the cap bounds memory
# (100: ~4 MiB). An agent keeps one session open; a script that never ends its sessions opens
# one per run, and they expire after the idle time.
DEFAULT_MAX_SESSIONS = 100
GRACEFUL_SHUTDOWN_SECONDS = 5
_NAME = re.compile(r"[a-z0-9._-]+|\[[0-9a-f:.]+\]", re.ASCII)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_VAULT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", re.ASCII)  # vaults.NAME_RE

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
class Grant:
    """What one bearer token may do. ``write``: call the write tools (which exist only with
    ``--allow-write``); else only the tools marked read-only. ``vaults``: the vaults it may
    use, None for all. ``source`` says where the token was given (never the token)."""

    write: bool
    vaults: frozenset[str] | None = None
    source: str = ""

    def may_use(self, vault: object) -> bool:
        return self.vaults is None or (isinstance(vault, str) and vault in self.vaults)

    def vault_list(self) -> str:
        return ", ".join(sorted(self.vaults or ()))


NO_GRANT = Grant(write=False, vaults=frozenset(), source="no token")
"""A request that reached the server without a grant (never, past ``RequestGuard``): it may
do nothing that needs one."""


@dataclass(frozen=True)
class HttpSettings:
    host: str
    port: int
    tokens: tuple[tuple[str, Grant], ...]
    allowed_hosts: frozenset[Host]
    allowed_origins: frozenset[Origin]
    session_idle_seconds: float
    max_sessions: int

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def scoped(self) -> bool:
        """Whether some token may do less than everything the server offers."""
        return any(not g.write or g.vaults is not None for _, g in self.tokens)

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
    return _checked_token(token, source)


def _checked_token(token: str, source: str) -> str:
    """``token`` if it is a usable bearer token, else InvalidRequest naming ``source`` (and
    never the token)."""
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


def read_tokens_file(path: str, vault_names: Sequence[str] = ()) -> list[tuple[str, Grant]]:
    """The tokens of a ``--tokens-file``: one ``SCOPE TOKEN [VAULT,...]`` a line, ``SCOPE``
    ``read`` or ``write``, the vaults comma-separated (default: all); blank lines and ``#``
    comments are skipped. Each token is checked as ``--token-file``'s is; a token given twice,
    a vault not among ``vault_names`` (when given) or no token at all is refused. Messages name
    the line, never a token."""
    try:
        raw = read_regular(path, TOKENS_FILE_BYTES + 1)
    except OSError as exc:
        raise InvalidRequest(f"cannot read the tokens file {path}: {exc.strerror}") from None
    if len(raw) > TOKENS_FILE_BYTES:
        raise InvalidRequest(f"the tokens file {path} is over {TOKENS_FILE_BYTES} bytes")
    known = set(vault_names)
    tokens: list[tuple[str, Grant]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        where = f"line {number} of the tokens file {path}"
        if len(fields) not in (2, 3) or fields[0] not in SCOPES:
            raise InvalidRequest(
                f"{where}: expected 'read TOKEN' or 'write TOKEN', optionally followed by "
                "VAULT,... (the vaults the token may use)"
            )
        token = _checked_token(fields[1], where)
        if token in seen:
            raise InvalidRequest(f"{where}: the same token as on line {seen[token]}")
        seen[token] = number
        vaults: frozenset[str] | None = None
        if len(fields) == 3:
            vaults = frozenset(v for v in fields[2].split(",") if v)
            unknown = sorted(vaults - known) if known else []
            if not vaults or unknown:
                raise InvalidRequest(
                    f"{where}: no served vault named {', '.join(unknown) or repr(fields[2])} "
                    f"(the vaults: {', '.join(vault_names)})"
                )
        tokens.append((token, Grant(fields[0] == "write", vaults, where)))
        if len(tokens) > MAX_TOKENS:
            raise InvalidRequest(f"the tokens file {path} has more than {MAX_TOKENS} tokens")
    if not tokens:
        raise InvalidRequest(f"the tokens file {path} holds no token")
    return tokens


def http_settings(args: argparse.Namespace, vault_names: Sequence[str] = ()) -> HttpSettings:
    """Check the HTTP options of ``engram-mcp`` (raises InvalidRequest for the user);
    ``vault_names`` are the served vaults, which a ``--tokens-file`` may name."""
    host, port = str(args.host), int(args.port)
    allow_write = bool(getattr(args, "allow_write", False))
    tokens: list[tuple[str, Grant]] = []
    token = read_token(args.token_file)
    if token is not None:
        source = "--token-file" if args.token_file is not None else f"${TOKEN_ENV}"
        # the one token may do what the server offers: write with --allow-write, else read
        tokens.append((token, Grant(write=allow_write, source=source)))
    tokens_file = getattr(args, "tokens_file", None)
    if tokens_file is not None:
        listed = read_tokens_file(tokens_file, vault_names)
        for other, grant in listed:
            if other == token:
                raise InvalidRequest(f"{grant.source}: the same token as {tokens[0][1].source}")
        tokens += listed
        if not allow_write and any(g.write for _, g in listed):
            log.warning(
                "the tokens file %s has write tokens but the server runs without "
                "--allow-write: no token can write",
                tokens_file,
            )
    if not tokens and not is_loopback(host):
        raise InvalidRequest(
            f"--host {host} makes the server reachable beyond this machine, so it needs a "
            f"bearer token: pass --token-file PATH or --tokens-file PATH, or set {TOKEN_ENV} "
            "(clients then send 'Authorization: Bearer TOKEN')"
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
        tokens=tuple(tokens),
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
        help=f"file holding the bearer token clients must send (else ${TOKEN_ENV}); it may "
        "do everything the server offers; a token is required with a --host beyond loopback",
    )
    parser.add_argument(
        "--tokens-file",
        metavar="PATH",
        help="file of bearer tokens with scopes, one 'read|write TOKEN [VAULT,...]' a line: "
        "read tokens get only the read-only tools, a list of vaults limits a token to them",
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
    """ASGI middleware: the Host, Origin and bearer-token checks of the module docstring; an
    accepted request's scope carries its token's ``Grant`` under ``GRANT_KEY``."""

    def __init__(self, app: ASGIApp, settings: HttpSettings) -> None:
        self.app = app
        self.settings = settings
        self._tokens = [(token.encode("ascii"), grant) for token, grant in settings.tokens]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "lifespan":
            refusal = self._refusal(Headers(scope=scope), scope)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers, scope: Scope) -> Response | None:
        hosts = headers.getlist("host")
        if len(hosts) != 1 or not self._host_allowed(hosts[0]):
            log.info("refused a request for Host %.100r", hosts)
            return Response("Host header not allowed (see --allowed-host)\n", status_code=421)
        origins = headers.getlist("origin")
        if origins and (
            len(origins) > 1 or _parse_origin(origins[0]) not in self.settings.allowed_origins
        ):
            log.info("refused a request from Origin %.100r", origins)
            return Response("Origin not allowed (see --allowed-origin)\n", status_code=403)
        if self._tokens:
            scheme, _, credentials = headers.get("authorization", "").partition(" ")
            grant = self._grant(credentials.strip().encode("latin-1"))
            if scheme.lower() != "bearer" or grant is None:
                challenge = 'Bearer realm="engram-mcp"'
                if scheme:
                    challenge += ', error="invalid_token"'
                log.info("refused a request without a bearer token of this server")
                return Response(
                    "missing or wrong bearer token (send 'Authorization: Bearer TOKEN')\n",
                    status_code=401,
                    headers={"WWW-Authenticate": challenge},
                )
            scope[GRANT_KEY] = grant
        return None

    def _host_allowed(self, value: str) -> bool:
        """Whether a Host header names an allowed host; without a port it is the default port
        of http or https (80 or 443: a TLS-terminating proxy in front forwards the name clients
        used in an ``https://`` URL)."""
        parsed = _split_host(value)
        if parsed is None:
            return False
        name, port = parsed
        ports = (80, 443) if port is None else (port,)
        return any((name, p) in self.settings.allowed_hosts for p in ports)

    def _grant(self, presented: bytes) -> Grant | None:
        """The grant of the token presented, compared in constant time with every token (the
        time taken does not say which one matched, or how much of one)."""
        found = None
        for token, grant in self._tokens:
            if hmac.compare_digest(presented, token):
                found = grant
        return found


Ctx = ServerRequestContext[Any, Any]
Handler = Callable[[Ctx, Any], Awaitable[Any]]


def grant_of(ctx: Ctx) -> Grant:
    """The grant of the HTTP request that carried this message (``NO_GRANT`` without one)."""
    scope = getattr(ctx.request, "scope", None)
    grant = scope.get(GRANT_KEY) if isinstance(scope, Mapping) else None
    return grant if isinstance(grant, Grant) else NO_GRANT


class ScopeGuard:
    """Applies each request's ``Grant`` by wrapping the SDK's handlers of ``tools/list``,
    ``tools/call``, ``resources/list``, ``resources/read``, ``resources/subscribe``,
    ``subscriptions/listen``, ``prompts/get`` and ``completion/complete`` (those registered).

    A read grant lists and calls only the tools annotated ``readOnlyHint`` (any other is
    ``ENGRAM_FORBIDDEN``). A grant limited to vaults: a ``vault`` argument, a completion's
    context or an ``engram://VAULT/`` URI naming another vault is ``ENGRAM_FORBIDDEN``; a
    left-out ``vault`` is its one vault, else ``ENGRAM_INVALID_REQUEST``; ``list_vaults``,
    ``resources/list`` and vault completions show only its vaults; a ``subscriptions/listen``
    stream drops the other vaults' URIs."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._tools: dict[str, tuple[bool, bool]] = {}  # name: (read-only, takes vault)
        self._prompts: dict[str, bool] = {}  # name: takes vault

    def install(self) -> None:
        lowlevel = self.server._lowlevel_server  # the SDK's handler table: no public accessor
        wrappers: dict[str, Any] = {
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/read": self._read_resource,
            "resources/subscribe": self._read_resource,
            "subscriptions/listen": self._listen,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
        }
        for method, wrapper in wrappers.items():
            entry = lowlevel.get_request_handler(method)
            if entry is not None:
                handler = functools.partial(wrapper, entry.handler)
                lowlevel.add_request_handler(method, entry.params_type, handler)

    async def _list_tools(self, inner: Handler, ctx: Ctx, params: Any) -> Any:
        result = await inner(ctx, params)
        if grant_of(ctx).write or not isinstance(result, ListToolsResult):
            return result
        shown = [t for t in result.tools if t.annotations and t.annotations.read_only_hint]
        return result.model_copy(update={"tools": shown})

    async def _call_tool(self, inner: Handler, ctx: Ctx, params: CallToolRequestParams) -> Any:
        grant = grant_of(ctx)
        if params.name not in self._tools:
            self._tools = {
                t.name: (
                    bool(t.annotations and t.annotations.read_only_hint),
                    "vault" in t.input_schema.get("properties", {}),
                )
                for t in await self.server.list_tools()
            }
        read_only, takes_vault = self._tools.get(params.name, (True, False))
        if not read_only and not grant.write:
            log.info("refused %s to the read-only token of %s", params.name, grant.source)
            return _tool_error(
                Forbidden(f"{params.name} changes the vault, and this token may only read")
            )
        if grant.vaults is not None and takes_vault:
            try:
                arguments = _with_vault(params.arguments, grant)
            except EngramError as exc:
                return _tool_error(exc)
            params = params.model_copy(update={"arguments": arguments})
        result = await inner(ctx, params)  # an unknown tool: the SDK's own error
        if grant.vaults is not None and params.name == "list_vaults":
            result = _own_vaults(result, grant)
        return result

    def _first_page(self, grant: Grant, after: str | None) -> tuple[bool, str | None]:
        """Whether one of the grant's vaults comes after the vault ``after`` (None: from the
        first), and a ``resources/list`` cursor for its first page (None for the first vault;
        the cursor is resources.py's)."""
        vaults: Any = getattr(self.server, "vaults", ())
        names = [s.name for s in vaults]
        start = names.index(after) + 1 if after in names else 0
        own = next((i for i in range(start, len(names)) if grant.may_use(names[i])), None)
        if own is None or own == 0:
            return own == 0, None
        from engram_ls.mcp_server.resources import _cursor

        served = vaults.get(names[own])
        return True, _cursor(self.server, served, 0, served.engram.status().generation)  # type: ignore[arg-type]

    async def _list_resources(self, inner: Handler, ctx: Ctx, params: Any) -> Any:
        grant = grant_of(ctx)
        if grant.vaults is None:
            return await inner(ctx, params)
        if params.cursor:  # resources.py's cursors begin with their vault's name
            vault = str(params.cursor).rpartition(".")[0]
            if not grant.may_use(vault):
                raise protocol_error(_forbidden_vault(vault, grant))
        else:
            found, cursor = self._first_page(grant, None)
            if not found:
                return ListResourcesResult(resources=[])
            params = params.model_copy(update={"cursor": cursor})
        result = await inner(ctx, params)
        kept = [r for r in result.resources if grant.may_use(_uri_vault(r.uri))]
        cursor = result.next_cursor
        if cursor and not grant.may_use(cursor.rpartition(".")[0]):
            cursor = self._first_page(grant, cursor.rpartition(".")[0])[1]
        return result.model_copy(update={"resources": kept, "next_cursor": cursor})

    async def _read_resource(self, inner: Handler, ctx: Ctx, params: Any) -> Any:
        grant, uri = grant_of(ctx), str(params.uri)
        if grant.vaults is not None and not grant.may_use(_uri_vault(uri)):
            raise protocol_error(_forbidden_vault(_uri_vault(uri) or uri, grant), uri=uri)
        return await inner(ctx, params)

    async def _listen(self, inner: Handler, ctx: Ctx, params: Any) -> Any:
        grant = grant_of(ctx)
        wanted = params.notifications.resource_subscriptions
        if grant.vaults is not None and wanted:
            # a listen stream is acknowledged as a whole: another vault's URI never fires
            kept = [uri for uri in wanted if grant.may_use(_uri_vault(uri))]
            notifications = params.notifications.model_copy(update={"resource_subscriptions": kept})
            params = params.model_copy(update={"notifications": notifications})
        return await inner(ctx, params)

    async def _get_prompt(self, inner: Handler, ctx: Ctx, params: GetPromptRequestParams) -> Any:
        grant = grant_of(ctx)
        if grant.vaults is not None and params.name not in self._prompts:
            self._prompts = {
                p.name: any(a.name == "vault" for a in p.arguments or ())
                for p in await self.server.list_prompts()
            }
        if grant.vaults is not None and self._prompts.get(params.name):
            try:
                arguments = _with_vault(params.arguments, grant)
            except EngramError as exc:
                raise protocol_error(exc) from None
            params = params.model_copy(update={"arguments": arguments})
        return await inner(ctx, params)

    async def _complete(self, inner: Handler, ctx: Ctx, params: CompleteRequestParams) -> Any:
        grant = grant_of(ctx)
        if grant.vaults is None:
            return await inner(ctx, params)
        given = dict((params.context.arguments if params.context else None) or {})
        if "vault" in given and not grant.may_use(given["vault"]):
            return CompleteResult(completion=Completion(values=[], total=0))
        if "vault" not in given and len(grant.vaults) == 1:
            given["vault"] = next(iter(grant.vaults))
            params = params.model_copy(update={"context": CompletionContext(arguments=given)})
        result = await inner(ctx, params)
        if params.argument.name != "vault":
            return result
        values = [v for v in result.completion.values if grant.may_use(v)]
        total = None if result.completion.has_more else len(values)
        completion = result.completion.model_copy(update={"values": values, "total": total})
        return result.model_copy(update={"completion": completion})


def _uri_vault(uri: object) -> str | None:
    """The vault an ``engram://VAULT/...`` URI names; None for any other URI."""
    parts = urlsplit(str(uri))
    return parts.netloc if parts.scheme == "engram" and _VAULT.fullmatch(parts.netloc) else None


def _forbidden_vault(vault: object, grant: Grant) -> Forbidden:
    shown = vault if isinstance(vault, str) else repr(vault)
    return Forbidden(
        f"vault: this token may not use the vault {shown[:80]!r} (its vaults: {grant.vault_list()})"
    )


def _with_vault(arguments: Mapping[str, Any] | None, grant: Grant) -> dict[str, Any]:
    """Arguments naming one of the grant's vaults (its one vault filled in when none is)."""
    out = dict(arguments or {})
    if out.get("vault") is None and len(grant.vaults or ()) == 1:
        out["vault"] = grant.vault_list()
    elif out.get("vault") is None:
        raise InvalidRequest(f"vault: name one of this token's vaults ({grant.vault_list()})")
    elif not grant.may_use(out["vault"]):
        raise _forbidden_vault(out["vault"], grant)
    return out


def _own_vaults(result: CallToolResult, grant: Grant) -> CallToolResult:
    """``list_vaults``' answer with only the grant's vaults, text and structure alike."""
    data = result.structured_content
    if result.is_error or not isinstance(data, dict):
        return result
    kept = {**data, "vaults": [v for v in data.get("vaults", ()) if grant.may_use(v.get("name"))]}
    text = pydantic_core.to_json(kept, fallback=str, indent=2).decode()
    content = [TextContent(type="text", text=text)]
    return result.model_copy(update={"structured_content": kept, "content": content})


def _tool_error(exc: EngramError) -> CallToolResult:
    text = f"{exc.code}: {exc.message}"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


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

    if settings.scoped:
        ScopeGuard(server).install()
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

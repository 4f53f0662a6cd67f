"""``engram-mcp``: an MCP server (official SDK) whose tools call the core service directly.

Tools: ``search_notes`` (the DESIGN §4 request and result), ``get_session_context`` (the
original Engram tool's plain-text answer), ``read_note``, ``list_topics``, ``related_notes``
(links, backlinks, notes sharing topics and notes near in meaning), ``query_notes`` (a view
of an Obsidian base), ``list_tasks``, ``index_status``; with ``--allow-write`` also
``write_note``, ``add_topics`` and ``complete_task``.
Every error an agent can cause comes back as a tool error naming the Engram code.
"""

from __future__ import annotations

import argparse
import inspect
import logging
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field, ValidationError

from engram_ls import __version__
from engram_ls.core.errors import EngramError, InvalidRequest, NotFound, OutsideVault
from engram_ls.core.memory import one_heap
from engram_ls.core.search import RequestField, request_fields
from engram_ls.core.serialize import json_value
from engram_ls.core.service import Engram
from engram_ls.core.tasks.request import TasksRequest
from engram_ls.mcp_server.completion import add_completion
from engram_ls.mcp_server.cursors import EXPIRED, Cursors
from engram_ls.mcp_server.http import add_http_arguments, http_settings, serve_http
from engram_ls.mcp_server.prompts import add_prompts
from engram_ls.mcp_server.resources import add_resources
from engram_ls.mcp_server.schemas import OUTPUTS
from engram_ls.mcp_server.stdio import serve_stdio
from engram_ls.mcp_server.vaults import Served, Vaults, vaults_from

log = logging.getLogger("engram_ls.mcp")
TOPICS_CAP = 10_000
"""Topics the core lists at most (``Engram.topics``): ``list_topics`` pages within them."""
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
SESSION_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
TRUNCATED = (
    "\n[... truncated: the answer reached the {budget}-character budget; narrow the query ...]"
)


VAULT_DOC = (
    "The vault to use: a name list_vaults gives. Needed only when the server serves several."
)
Vault = Annotated[str | None, Field(description=VAULT_DOC)]
CURSOR_DOC = "next_cursor of the previous page (with the same other arguments)."
Cursor = Annotated[str | None, Field(description=CURSOR_DOC)]
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)
"""A write tool: ``write_note`` without ``overwrite`` refuses a second call, ``add_topics``
changes nothing a second time but ``complete_task`` toggles: none is idempotent as a whole."""


def _tool_error(exc: EngramError) -> ToolError:
    return ToolError(f"{exc.code}: {exc.message}")


def _budgeted(lines: list[str], budget: int) -> str:
    out: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > budget:
            out.append(TRUNCATED.format(budget=budget))
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


class EngramMCP(MCPServer):
    """The SDK's server with Engram's vaults, cursors and error texts: a tool error's text is
    the Engram code and message alone (the SDK would put ``Error executing tool NAME:``
    before it), and arguments that fail the input schema are ``ENGRAM_INVALID_REQUEST``
    naming the argument in plain words (not pydantic's dump and its URL)."""

    def __init__(self, vaults: Vaults, *, allow_write: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.vaults = vaults
        self.allow_write = allow_write
        self.cursors = Cursors()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        unknown = self._unknown_arguments(name, arguments)
        if unknown:
            raise ToolError(
                f"ENGRAM_INVALID_REQUEST: {name} has no argument "
                + ", ".join(repr(u) for u in unknown)
                + f" (its arguments: {', '.join(self._argument_names(name))})"
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"ENGRAM_INVALID_REQUEST: {plain_errors(cause)}") from None
            if isinstance(cause, ToolError) and str(cause).startswith("ENGRAM_"):
                raise ToolError(str(cause)) from None
            raise

    def _argument_names(self, name: str) -> list[str]:
        tool = self._tool_manager.get_tool(name)
        return [] if tool is None else list(tool.parameters.get("properties", {}))

    def _unknown_arguments(self, name: str, arguments: dict[str, Any]) -> list[str]:
        known = self._argument_names(name)
        return [a for a in arguments if a not in known] if known or arguments else []


def plain_errors(exc: ValidationError) -> str:
    """Pydantic's errors as one line an agent can act on: each argument with what is wrong
    (``limit: Input should be a valid integer (got 'abc')``), no URL and no model name."""
    parts = []
    for err in exc.errors(include_url=False)[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__") or "arguments"
        got = err.get("input")
        shown = "" if err.get("type") == "missing" else f" (got {_short(got)})"
        parts.append(f"{where}: {err.get('msg', 'invalid')}{shown}")
    return "; ".join(parts)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def create_server(
    vaults: Vaults | Engram | Mapping[str, Engram], *, allow_write: bool = False
) -> EngramMCP:
    """An MCP server over one or more vaults (no global state); write tools only with
    ``allow_write``. An ``Engram`` alone is one vault named after its folder."""
    if not isinstance(vaults, Vaults):
        vaults = Vaults.of(vaults)
    several = len(vaults) > 1
    mcp = EngramMCP(
        vaults,
        allow_write=allow_write,
        name="engram",
        version=__version__,
        instructions=(
            "Search and read the user's Markdown notes (a vault). Use search_notes to find notes "
            "by words, topics (tags) and dates, then read_note to read one. Results name notes "
            "by vault-relative paths."
            + (
                f" This server serves several vaults ({', '.join(vaults.names)}): pass `vault` "
                "to every tool (list_vaults describes them)."
                if several
                else ""
            )
        ),
    )
    _add_search_tools(mcp)
    _add_note_tools(mcp)
    _add_index_tools(mcp)
    _add_task_tools(mcp)
    add_resources(mcp)
    add_prompts(mcp)
    add_completion(mcp)
    if allow_write:
        _add_write_tools(mcp)
    _describe_outputs(mcp)
    return mcp


def _describe_outputs(mcp: EngramMCP) -> None:
    """Publish each structured tool's output schema (``schemas.OUTPUTS``) instead of the
    empty object a ``dict[str, Any]`` return would give."""
    for tool in mcp._tool_manager.list_tools():  # the SDK has no public setter for it
        schema = OUTPUTS.get(tool.name)
        if schema is not None and tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = schema


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``; an Engram error becomes the tool error naming its code."""
    try:
        return fn(*args, **kwargs)
    except EngramError as exc:
        raise _tool_error(exc) from None


def _vault(mcp: EngramMCP, name: str | None) -> Served:
    return _call(mcp.vaults.get, name)  # type: ignore[no-any-return]


def _paged(
    mcp: EngramMCP,
    kind: str,
    served: Served,
    request: dict[str, Any],
    cursor: str | None,
) -> tuple[int, int | None]:
    """(offset, the index generation the cursor was issued at) of the page a cursor asks
    for; (the request's offset, None) for a first page."""
    if not cursor:
        return int(request.get("offset") or 0), None
    page = _call(mcp.cursors.read, cursor, kind, served.name, request)
    return page.offset, page.generation


def _next_cursor(
    mcp: EngramMCP,
    kind: str,
    served: Served,
    request: dict[str, Any],
    next_offset: int,
    issued: int | None,
    generation: int | None,
    more: bool,
) -> str | None:
    """The cursor of the page after this one (None at the end). ``generation`` is the one
    the answer was read at: a page read at another than the cursor's (``issued``) may
    overlap or skip what the earlier pages showed, so it is refused as expired."""
    if issued is not None and generation != issued:
        raise ToolError(f"ENGRAM_INVALID_REQUEST: {EXPIRED}")
    if not more or generation is None:
        return None
    return mcp.cursors.issue(kind, served.name, request, next_offset, generation)


def _add_search_tools(mcp: EngramMCP) -> None:
    def search_notes(
        vault: str | None = None, cursor: str | None = None, **request: Any
    ) -> dict[str, Any]:
        """Search the notes by text, topics, dates and folder. Returns matching notes with
        path, title, date, topics, a snippet and its line, best first (newest first when there
        is no query), plus the total, whether more pages exist and `next_cursor` (pass it as
        `cursor`, with the same other arguments, for the next page)."""
        served = _vault(mcp, vault)
        offset, issued = _paged(mcp, "search", served, request, cursor)
        response = _call(served.engram.search, {**request, "offset": offset})
        result: dict[str, Any] = json_value(response)
        shown = len(result.get("results", ()))
        more = offset + shown < int(result.get("total") or 0) and shown > 0
        result["next_cursor"] = _next_cursor(
            mcp, "search", served, request, offset + shown, issued, response.index.generation, more
        )
        return result

    search_notes.__signature__ = _signature(  # type: ignore[attr-defined]
        request_fields("agents"), paged=True
    )
    mcp.add_tool(search_notes, annotations=READ_ONLY)

    @mcp.tool(annotations=READ_ONLY)
    def get_session_context(
        query: Annotated[str | None, Field(description="Regular expression to find.")] = None,
        session_id: Annotated[
            str | None,
            Field(description="File-name prefix of the notes to look in (letters, digits, . _ -)."),
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Topics to filter by.")] = None,
        date_from: Annotated[str | None, Field(description="YYYY-MM-DD, inclusive.")] = None,
        date_to: Annotated[str | None, Field(description="YYYY-MM-DD, inclusive.")] = None,
        vault: Vault = None,
    ) -> str:
        """Recall context from the notes as plain text: with a query, matching lines as
        `path:line:text`; without one, the head of each note that passes the filters, as
        `--- path ---` blocks. At least one argument is required."""
        served = _vault(mcp, vault)
        engram = served.engram
        budget = engram.config.limits.response_chars
        if not any((query, session_id, tags, date_from, date_to)):
            raise ToolError(
                "ENGRAM_INVALID_REQUEST: give at least one of query, session_id, tags, "
                "date_from, date_to"
            )
        if session_id is not None and not SESSION_ID.match(session_id):
            raise ToolError(
                "ENGRAM_INVALID_REQUEST: session_id may hold only letters, digits, '.', '_' and '-'"
            )
        request: dict[str, Any] = {
            "query": query or "",
            "mode": "regex",
            "tags": tags or [],
            "date_from": date_from,
            "date_to": date_to,
            "limit": engram.config.limits.max_results,
            "path": f"**/{session_id}*" if session_id else None,
        }
        response = _call(engram.search, request)
        lines: list[str] = []
        for hit in response.results:
            if query:
                lines.append(f"{hit.path}:{hit.line}:{hit.snippet}")
            else:
                head = _call(_read, engram, hit.path, 0, 600)
                lines.append(f"--- {hit.path} ---")
                lines.extend(head.rstrip("\n").split("\n"))
        info = response.index
        trailer = f"[index {info.state}, served by {info.served_by}, generation {info.generation}]"
        if not lines:
            return f"no matching notes\n{trailer}"
        return _budgeted(lines, budget - len(trailer) - 1) + "\n" + trailer


def _add_note_tools(mcp: EngramMCP) -> None:
    @mcp.tool(annotations=READ_ONLY)
    def read_note(
        path: Annotated[str, Field(description="Vault-relative path of a note (*.md).")],
        offset: Annotated[int, Field(ge=0, description="First character to return.")] = 0,
        max_chars: Annotated[
            int, Field(ge=1, le=200_000, description="Characters to return.")
        ] = 20_000,
        vault: Vault = None,
    ) -> str:
        """Read a note's text (paged with offset and max_chars). Only notes of the vault can
        be read."""
        return str(_call(_read, _vault(mcp, vault).engram, path, offset, max_chars))

    @mcp.tool(annotations=READ_ONLY)
    def list_topics(
        prefix: Annotated[str, Field(description="Only topics starting with this.")] = "",
        limit: Annotated[int, Field(ge=1, le=10_000, description="At most this many.")] = 100,
        vault: Vault = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """The vault's topics (tags) with how many notes use each, most used first; with
        `next_cursor` when there are more (pass it as `cursor` for the next page)."""
        served = _vault(mcp, vault)
        request = {"prefix": prefix, "limit": limit}
        offset, issued = _paged(mcp, "topics", served, request, cursor)
        # one more than the page tells whether there are more (the core lists at most
        # TOPICS_CAP: the cursor ends there)
        want = min(offset + limit + 1, TOPICS_CAP)
        topics = json_value(_call(served.engram.topics, prefix, want))
        status = served.engram.status()
        more = len(topics) > offset + limit
        return {
            "topics": topics[offset : offset + limit],
            "next_cursor": _next_cursor(
                mcp, "topics", served, request, offset + limit, issued, status.generation, more
            ),
            "index": json_value(status),
        }

    @mcp.tool(annotations=READ_ONLY)
    def related_notes(
        path: Annotated[str, Field(description="Vault-relative path of a note (*.md).")],
        limit: Annotated[
            int, Field(ge=1, le=200, description="At most this many of each kind.")
        ] = 20,
        vault: Vault = None,
    ) -> dict[str, Any]:
        """Notes connected to one note, to explore around it: `outgoing` (the links it
        makes, each with the note it resolves to, or status broken/ambiguous), `backlinks`
        (notes linking to it, with the line of the first link), `sharing_topics` (other
        notes with its topics, most shared first, then newest), `similar` (the notes nearest
        it by meaning, with score, line and snippet; empty without search by meaning) and
        `related` (links, backlinks and meaning in one ranking, each with its `reasons`).
        Paths are vault-relative; read one with read_note."""
        return dict(_call(_vault(mcp, vault).engram.related_notes, path, limit))


def _add_index_tools(mcp: EngramMCP) -> None:
    @mcp.tool(annotations=READ_ONLY)
    def query_notes(
        base: Annotated[
            str,
            Field(
                description="An Obsidian base: the vault-relative path of a .base file or of a "
                "note with ```base blocks, or the YAML text of a base (filters, formulas, views)."
            ),
        ],
        view: Annotated[
            str | None, Field(description="The view to run (default: the first).")
        ] = None,
        block: Annotated[
            int | None, Field(ge=1, description="The Nth ```base block of a note.")
        ] = None,
        max_rows: Annotated[
            int, Field(ge=1, le=2000, description="At most this many rows in the answer.")
        ] = 200,
        vault: Vault = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Run one view of an Obsidian base over the index: the notes passing its filters
        (properties, tags, folders, links, dates), in its sort order, with its columns
        (`values` by property, formulas included), `total` notes passing, `groups` and
        `summaries`. An unsupported construct is an error naming it and its line. With more
        rows than `max_rows`, `next_cursor` continues (pass it as `cursor`)."""
        served = _vault(mcp, vault)
        request = {"base": base, "view": view, "block": block, "max_rows": max_rows}
        offset, issued = _paged(mcp, "query", served, request, cursor)
        path = "\n" not in base and base.strip().endswith((".base", ".md"))
        source = {"path": base.strip()} if path else {"text": base}
        out: dict[str, Any] = _call(served.engram.query, **source, view=view, block=block)
        rows = out["rows"]
        out["rows"] = rows[offset : offset + max_rows]
        more = len(rows) > offset + max_rows
        out["truncated"] = out["total"] > offset + len(out["rows"])
        generation = out["index"].get("generation")
        out["next_cursor"] = _next_cursor(
            mcp, "query", served, request, offset + max_rows, issued, generation, more
        )
        return out

    @mcp.tool(annotations=READ_ONLY)
    def index_status(vault: Vault = None) -> dict[str, Any]:
        """The state of the vault's index: state, note/topic/problem counts, generation."""
        served = _vault(mcp, vault)
        return {
            "vault": str(served.engram.vault.root),
            "name": served.name,
            **json_value(served.engram.status()),
        }

    @mcp.tool(annotations=READ_ONLY)
    def list_vaults() -> dict[str, Any]:
        """The vaults this server serves: each one's `name` (the `vault` argument of every
        tool), folder, note count, index state and capabilities (search by meaning)."""
        return {"vaults": [mcp.vaults.describe(s) for s in mcp.vaults]}


def _add_write_tools(mcp: EngramMCP) -> None:
    @mcp.tool(annotations=WRITE)
    def write_note(
        path: Annotated[str, Field(description="Vault-relative path ending in .md.")],
        content: Annotated[str, Field(description="The whole text of the note.")],
        overwrite: Annotated[
            bool, Field(description="Replace the note if it exists (default: refuse).")
        ] = False,
        vault: Vault = None,
    ) -> dict[str, Any]:
        """Create (or, with overwrite, replace) a note. The write is atomic and the note
        is searchable when this returns. `indexed: false` (with a `warning`) means the
        note was written but the index could not be updated yet: it catches up by
        itself, and searches read the files meanwhile. Do not write the note again."""
        engram = _vault(mcp, vault).engram
        indexed = _call(engram.write_note, path, content, overwrite=overwrite)
        return {"path": engram.vault.rel(path), **json_value(indexed)}

    @mcp.tool(annotations=WRITE)
    def add_topics(
        path: Annotated[str, Field(description="Vault-relative path of a note (.md).")],
        topics: Annotated[list[str], Field(description="Topics to add (kept if present).")],
        vault: Vault = None,
    ) -> dict[str, Any]:
        """Add topics to a note's frontmatter. Only the topic entry's lines change (the
        rest of the note stays byte-identical, list style kept); a note without
        frontmatter gets one. Refused if the note changed while it was being edited.
        The note is searchable by the new topics when this returns; `indexed: false`
        (with a `warning`) means the note was edited but the index catches up later."""
        engram = _vault(mcp, vault).engram
        edit, indexed = _call(engram.add_topics, path, topics)
        return {
            "path": engram.vault.rel(path),
            "changed": edit is not None,
            "topics": list(edit.topics) if edit is not None else None,
            **json_value(indexed),
        }


def _add_task_tools(mcp: EngramMCP) -> None:
    def list_tasks(
        vault: str | None = None, cursor: str | None = None, **request: Any
    ) -> dict[str, Any]:
        """List the tasks (- [ ] items) of the notes: by status (open, done, ...), due and
        scheduled days (YYYY-MM-DD or today, tomorrow, +7d ...), priority, #tags in the
        task, the note's topics, folder and words. Each task has its path and line (use them
        with complete_task), status, description, dates, priority, tags, whether it is
        overdue, and its note's title. `next_cursor` continues (pass it as `cursor`)."""
        served = _vault(mcp, vault)
        offset, issued = _paged(mcp, "tasks", served, request, cursor)
        result: dict[str, Any] = _call(served.engram.tasks, {**request, "offset": offset})
        shown = len(result.get("tasks", ()))
        more = shown > 0 and offset + shown < int(result.get("total") or 0)
        generation = result["index"].get("generation")
        result["next_cursor"] = _next_cursor(
            mcp, "tasks", served, request, offset + shown, issued, generation, more
        )
        return result

    list_tasks.__signature__ = _signature(  # type: ignore[attr-defined]
        request_fields("agents", TasksRequest), paged=True
    )
    mcp.add_tool(list_tasks, annotations=READ_ONLY)

    if not mcp.allow_write:
        return

    @mcp.tool(annotations=WRITE)
    def complete_task(
        path: Annotated[str, Field(description="Vault-relative path of the note (.md).")],
        line: Annotated[int, Field(ge=1, description="The task's line, from 1 (list_tasks).")],
        expect: Annotated[
            str | None,
            Field(description="The whole line as you last read it: refused if it changed."),
        ] = None,
        done: Annotated[
            bool, Field(description="true: mark done (default); false: mark not done.")
        ] = True,
        vault: Vault = None,
    ) -> dict[str, Any]:
        """Mark a task done (status x and a ✅ day, as Obsidian Tasks writes it) or not done.
        Only that line changes (a recurring task gets its next occurrence on the line above:
        see `inserted` and `recurrence`); refused when the line is not a task or no longer
        reads `expect`. The note is indexed again when this returns."""
        engram = _vault(mcp, vault).engram
        result: dict[str, Any] = _call(engram.toggle_task, path, line, expect=expect, done=done)
        return result


def _signature(fields: Sequence[RequestField], *, paged: bool = False) -> inspect.Signature:
    """The tool's parameters: the core request's fields (types, defaults, limits and
    descriptions), which the SDK turns into the input schema and validates, then ``vault``
    (and ``cursor`` for a paged list)."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter(f.name, keyword, default=f.default, annotation=f.annotation)
        for f in fields
    ]
    params.append(inspect.Parameter("vault", keyword, default=None, annotation=Vault))
    if paged:
        params.append(inspect.Parameter("cursor", keyword, default=None, annotation=Cursor))
    return inspect.Signature(params, return_annotation=dict[str, Any])


def _read(engram: Engram, path: str, offset: int, max_chars: int) -> str:
    rel = engram.vault.rel(path)
    if not engram.vault.filter.is_note(rel):
        raise InvalidRequest(f"not a note of this vault: {path}")
    try:
        text = engram.vault.read(rel)[0].decode("utf-8", "replace")
    except FileNotFoundError:
        raise NotFound(f"no such note: {rel}") from None
    except OSError as exc:
        raise OutsideVault(f"cannot read {rel}: {exc.strerror}") from None
    part = text[offset : offset + max_chars]
    if offset + max_chars < len(text):
        rest = len(text) - offset - max_chars
        part += f"\n[... {rest} more characters: read on with offset={offset + max_chars} ...]"
    return part


def main(argv: Sequence[str] | None = None) -> int:
    one_heap()  # before any thread starts: core/memory.py
    parser = argparse.ArgumentParser(
        prog="engram-mcp", description="The Engram MCP server (stdio by default)."
    )
    parser.add_argument(
        "vault",
        nargs="?",
        help="vault folder (default: $ENGRAM_VAULT, else the nearest folder at or above the "
        "current one with .engram/ or .obsidian/, unless --vault or --vaults-file name vaults)",
    )
    parser.add_argument(
        "--vault",
        dest="vaults",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="serve the vault at PATH as NAME (repeatable: several vaults in one server)",
    )
    parser.add_argument(
        "--vaults-file",
        metavar="FILE",
        help="a file of NAME=PATH lines, one vault each (# comments)",
    )
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="HTTP address (default 127.0.0.1; another needs a bearer token)",
    )
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    add_http_arguments(parser)
    parser.add_argument("--no-watch", action="store_true", help="do not watch the vaults")
    parser.add_argument(
        "--allow-write",
        action="store_true",
        help="offer the write tools (write_note, add_topics, complete_task)",
    )
    parser.add_argument("--log-level", default="WARNING", help="log level on stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, args.log_level.upper(), 30))
    try:
        pairs = vaults_from(args.vault, args.vaults, args.vaults_file)
        http = http_settings(args, [name for name, _ in pairs]) if args.http else None
    except EngramError as exc:
        sys.stderr.write(f"engram-mcp: error: {exc.message} [{exc.code}]\n")
        return 2
    vaults = Vaults([Served(name, Engram(root)) for name, root in pairs])
    # Watch first, then reconcile: a change before the watch is on disk when the reconcile
    # walks, one after it is an event (applied after the reconcile, which holds the lock).
    vaults.start(watch=not args.no_watch)
    server = create_server(vaults, allow_write=args.allow_write)
    try:
        if http is not None:
            serve_http(server, http)
        else:
            anyio.run(serve_stdio, server)
    finally:
        vaults.stop()
    return 0

"""The MCP prompts: ``notes_about``, ``notes_since`` and ``weekly_review``.

A prompt is a user message an agent's client offers as a command (a slash command, a menu
entry). Each one here runs the first searches itself and puts what the index found into the
message (paths, titles, dates, topics, snippets, tasks), so that the agent starts from real
notes, then says which tools to call next, with their arguments, and how to answer (citing
notes by their vault-relative paths). An argument that cannot be used (a day that is not one,
a vault not served) is an MCP error whose message begins with the Engram code
(``ENGRAM_INVALID_REQUEST: date: ...``).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver.prompts.base import Prompt
from mcp.shared.exceptions import MCPError
from mcp.types import GetPromptRequestParams
from pydantic import Field

from engram_ls.core.errors import (
    EngramError,
    InvalidRequest,
)
from engram_ls.core.search import SearchResponse
from engram_ls.core.search.any_word import STOP_WORDS
from engram_ls.core.search.hits import SearchHit
from engram_ls.core.serialize import json_text
from engram_ls.core.service import Engram
from engram_ls.core.tasks.query import done_between
from engram_ls.core.tasks.request import DAY_HELP, resolve_day
from engram_ls.mcp_server.errors import protocol_error

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

    from engram_ls.mcp_server.server import EngramMCP
    from engram_ls.mcp_server.vaults import Served

HITS = 8
"""Search hits ``notes_about`` puts in its message."""
SINCE_NOTES = 20
"""Notes ``notes_since`` lists."""
WEEK_NOTES = 30
"""Notes of the week ``weekly_review`` lists (dated, then changed on disk)."""
WEEK_TASKS = 25
"""Tasks of each kind ``weekly_review`` lists."""
ANY_WORDS = 8
"""Words of a question searched for one by one when no note holds them all."""
SNIPPET_CHARS = 200

VaultArg = Annotated[
    str | None,
    Field(description="The vault to use (list_vaults names them); needed when several are served."),
]


def _invalid(message: str) -> MCPError:
    return protocol_error(InvalidRequest(message))


class EngramPrompt(Prompt):
    """A prompt whose argument errors are Engram's: an argument it does not have, or a
    required one missing or blank, is ``ENGRAM_INVALID_REQUEST`` naming it (the SDK would
    answer a bare "Error rendering prompt")."""

    async def render(self, arguments: dict[str, Any] | None, context: Context[Any, Any]) -> Any:
        given = dict(arguments or {})
        names = [a.name for a in self.arguments or ()]
        unknown = [k for k in given if k not in names]
        if unknown:
            raise _invalid(
                f"{self.name} has no argument {', '.join(repr(u) for u in unknown)}"
                f" (its arguments: {', '.join(names)})"
            )
        for arg in self.arguments or ():
            value = given.get(arg.name)
            if arg.required and (value is None or not str(value).strip()):
                raise _invalid(f"{arg.name}: required")
            if value is not None and not str(value).strip():
                given.pop(arg.name)  # a blank optional argument is one not given
        return await super().render(given, context)


def add_prompts(mcp: EngramMCP) -> None:
    """Register the prompts on the server."""
    prompts = Prompts(mcp)
    for fn, title in (
        (prompts.notes_about, "What do my notes say about…"),
        (prompts.notes_since, "Notes since a day"),
        (prompts.weekly_review, "Weekly review"),
    ):
        about = " ".join((fn.__doc__ or "").split())
        mcp.add_prompt(EngramPrompt.from_function(fn, title=title, description=about))
    _name_unknown_prompts(mcp)


def call(tool: str, **args: Any) -> str:
    """How a message writes a tool call: its name and its JSON arguments."""
    return f"{tool} {json_text(args)}"


class Prompts:
    """The prompts of one server: each method is one (its parameters are the arguments)."""

    def __init__(self, mcp: EngramMCP) -> None:
        self.mcp = mcp

    def _served(self, vault: str | None) -> tuple[Served, dict[str, str]]:
        """The vault, and the ``vault`` argument of the tool calls a message asks for (only
        when several vaults are served)."""
        try:
            s = self.mcp.vaults.get(vault)
        except EngramError as exc:
            raise protocol_error(exc) from None
        return s, ({"vault": s.name} if len(self.mcp.vaults) > 1 else {})

    def notes_about(
        self,
        topic_or_question: Annotated[
            str, Field(description="A topic, some words, or a question to answer from the notes.")
        ],
        vault: VaultArg = None,
    ) -> str:
        """What do my notes say about X? Searches the notes, lists the best matches with
        their paths and snippets, and asks for an answer from the notes that cites them."""
        s, va = self._served(vault)
        engram = s.engram
        asked = topic_or_question.strip()
        response, how = _search_words(engram, asked)
        lines = [
            f"What do my notes say about: {asked}",
            "",
            f"Answer from my notes in the vault {s.name!r} only, and cite each note you use "
            "by its vault-relative path.",
            "",
        ]
        request = {"query": asked, **va}
        if response.results:
            lines.append(
                f"I searched them already: {call('search_notes', **request)} found "
                f"{response.total} note{_s(response.total)}{how}. The best "
                f"{len(response.results)}:"
            )
            lines += _hit_lines(response.results)
        else:
            lines.append(
                f"I searched them already: {call('search_notes', **request)} found no note, "
                "nor did any single one of its words."
            )
        topic = _topic_named(engram, asked)
        if topic is not None:
            listed = {h.path for h in response.results}
            tagged = _search(engram, {"tags": [topic], "limit": HITS + len(listed)})
            more = [h for h in tagged.results if h.path not in listed][:HITS]
            lines += [
                "",
                f"{tagged.total} note{_s(tagged.total)} have the topic #{topic} (or one under "
                f"it): {call('search_notes', tags=[topic], **va)}"
                + ("; the newest not listed above:" if more else "."),
                *_hit_lines(more),
            ]
        lines += ["", "Do this:"]
        first = response.results[0].path if response.results else "PATH"
        lines += [
            "1. Read the notes above that bear on it, best first: "
            f"{call('read_note', path=first, **va)}.",
            "2. If they do not answer it, search again with other or fewer words "
            f"({call('search_notes', query='...', **va)}"
            + (', or mode "hybrid" to find notes by meaning' if _semantic(engram) else "")
            + f"), and follow links: {call('related_notes', path=first, **va)}.",
            "3. Answer in a few short paragraphs. After each statement, cite the note it "
            "comes from by its path, e.g. (projects/x.md). Say plainly what the notes do not "
            "cover; do not fill gaps with general knowledge without saying so.",
        ]
        return "\n".join(lines)

    def notes_since(
        self,
        date: Annotated[str, Field(description=f"The first day: {DAY_HELP} (-7d: a week ago).")],
        topic: Annotated[
            str | None,
            Field(description="Only notes with this topic (tag); words if no note has it."),
        ] = None,
        vault: VaultArg = None,
    ) -> str:
        """What is new in my notes since a day (on a topic)? Lists the notes dated since
        then, newest first, and asks for a summary of what changed, citing them."""
        s, va = self._served(vault)
        engram = s.engram
        today = dt.date.today()
        first = _day("date", date, today)
        on = ""
        request: dict[str, Any] = {"date_from": first.isoformat()}
        how = ""
        if topic:
            topic = topic.strip().lstrip("#")
            request["tags"] = [topic]
            on = f" on {topic}"
            response = _search(engram, {**request, "limit": SINCE_NOTES})
            how = f" with the topic #{topic} (or one under it)"
            if response.total == 0:
                request = {"query": topic, "date_from": first.isoformat()}
                response = _search(engram, {**request, "limit": SINCE_NOTES})
                how = f" (no note since then has the topic #{topic}: these hold the words)"
        else:
            response = _search(engram, {**request, "limit": SINCE_NOTES})
        said = "" if date.strip() == first.isoformat() else f" ({date.strip()})"
        lines = [
            f"What is new in my notes since {first.isoformat()}{said}{on}?",
            "",
            f"Vault {s.name!r}. {call('search_notes', **request, **va)} found "
            f"{response.total} note{_s(response.total)} dated {first.isoformat()} or later"
            f"{how}, newest first:",
        ]
        lines += _hit_lines(response.results) or ["(none)"]
        if response.total > len(response.results):
            lines.append(
                f"({response.total - len(response.results)} more: the same search_notes "
                f"call with its next_cursor lists them.)"
            )
        lines += [
            "",
            "Do this:",
            f"1. Read these notes ({call('read_note', path='...', **va)}): all of them if "
            "they are few, else the ones whose titles and snippets matter most.",
            f"2. Summarize what is new since {first.isoformat()}{on}: decisions, new facts, "
            "open questions, by theme, each with the path of its note.",
            "3. Notes without a date are not in this list; if the answer needs them, "
            f"search by words without dates ({call('search_notes', query='...', **va)}).",
        ]
        return "\n".join(lines)

    def weekly_review(
        self,
        vault: VaultArg = None,
        end: Annotated[
            str | None, Field(description=f"The last day of the week (default today): {DAY_HELP}.")
        ] = None,
    ) -> str:
        """A review of the last 7 days: the notes dated (or changed) in them and, where the
        vault has tasks, the open tasks due or overdue and the tasks done in those days."""
        s, va = self._served(vault)
        engram = s.engram
        last = _day("end", end or "today", dt.date.today())
        first = last - dt.timedelta(days=6)
        after = last + dt.timedelta(days=1)
        week = {"date_from": first.isoformat(), "date_to": last.isoformat()}
        dated = _search(engram, {**week, "limit": WEEK_NOTES})
        lines = [
            f"Weekly review of my notes: {first.isoformat()} to {last.isoformat()}.",
            "",
            f"Vault {s.name!r}.",
            "",
            f"## Notes dated in those days: {dated.total}",
            f"{call('search_notes', **week, **va)}:",
            *(_hit_lines(dated.results) or ["(none)"]),
        ]
        if dated.total > len(dated.results):
            lines.append(f"({dated.total - len(dated.results)} more: page with next_cursor.)")
        changed = _changed(engram, first, after, {h.path for h in dated.results})
        if changed:
            lines += [
                "",
                f"## Changed on disk in those days, dated otherwise: {len(changed)} shown",
                *_hit_lines(changed),
            ]
        lines += ["", *_week_tasks(engram, first, last, after, va)]
        lines += [
            "",
            "Do this:",
            f"1. Read the notes of the week ({call('read_note', path='...', **va)}).",
            "2. Write the review: what happened, by theme; decisions; what is still open "
            "(overdue first); what got done; what to do next week. Cite each note by its "
            "path and each task by path:line.",
            "3. Change nothing (notes, tasks) unless I ask.",
        ]
        return "\n".join(lines)


def _name_unknown_prompts(mcp: EngramMCP) -> None:
    """``prompts/get`` of a prompt the server does not have: ENGRAM_INVALID_REQUEST naming
    the prompts it has (the SDK answers an internal error, and logs a traceback)."""

    async def get_prompt(ctx: Any, params: GetPromptRequestParams) -> Any:
        names = [p.name for p in await mcp.list_prompts()]
        if params.name not in names:
            raise _invalid(f"no prompt named {params.name!r} (prompts: {', '.join(names)})")
        return await mcp._handle_get_prompt(ctx, params)  # the SDK's handler

    mcp._lowlevel_server.add_request_handler("prompts/get", GetPromptRequestParams, get_prompt)


# -- searches ------------------------------------------------------------------------------


def _search(engram: Engram, request: dict[str, Any]) -> SearchResponse:
    try:
        return engram.search(request)
    except EngramError as exc:
        raise protocol_error(exc) from None


def _search_words(engram: Engram, text: str) -> tuple[SearchResponse, str]:
    """The notes holding every word of ``text``; when none does (a question rarely is in one
    note word for word), those holding any of its informative words, best first (BM25), and
    how they were found."""
    response = _search(engram, {"query": text, "limit": HITS})
    words = _words(text)
    if response.results or len(words) < 2:
        return response, ""
    quoted = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    found = _search(engram, {"query": quoted, "raw_fts": True, "limit": HITS})
    if not found.results:
        return response, ""
    return found, f" holding any of {', '.join(words)} (no note holds every word)"


def _words(text: str) -> list[str]:
    words = [w for w in re.findall(r"\w+", text.casefold()) if w not in STOP_WORDS]
    return list(dict.fromkeys(w for w in words if len(w) > 1 or not w.isascii()))[:ANY_WORDS]


def _topic_named(engram: Engram, text: str) -> str | None:
    """The vault's topic that ``text`` names (any case, ``#`` or not), if any."""
    key = text.strip().lstrip("#").casefold()
    if not key or len(key) > 100:
        return None
    try:
        found = engram.topics(key, 1)
    except EngramError:
        return None
    return found[0].name if found and found[0].name.casefold() == key else None


def _semantic(engram: Engram) -> bool:
    sem = engram.status().semantic
    return bool(sem is not None and sem.available)


def _changed(engram: Engram, first: dt.date, after: dt.date, seen: set[str]) -> list[SearchHit]:
    """Notes whose file changed from ``first`` to before ``after`` (UTC), not in ``seen``."""
    where = [f"file.mtime >= {first.isoformat()}", f"file.mtime < {after.isoformat()}"]
    try:
        response = engram.search({"where": where, "limit": WEEK_NOTES})
    except EngramError:
        return []
    return [h for h in response.results if h.path not in seen][:WEEK_NOTES]


def _week_tasks(
    engram: Engram, first: dt.date, last: dt.date, after: dt.date, va: dict[str, str]
) -> list[str]:
    """The tasks part of a weekly review: open tasks due by ``last`` (overdue first), due in
    the next 7 days, and done from ``first`` to ``last``; a line saying there are none when
    the vault has no tasks."""
    try:
        due: dict[str, Any] = {"status": "open", "due_before": after.isoformat(), "sort": "due"}
        soon: dict[str, Any] = {
            "status": "open",
            "due_after": last.isoformat(),
            "due_before": (last + dt.timedelta(days=8)).isoformat(),
            "sort": "due",
        }
        overdue = engram.tasks({**due, "limit": WEEK_TASKS}, today=last)
        coming = engram.tasks({**soon, "limit": WEEK_TASKS}, today=last)
        done = done_between(engram, first, last, WEEK_TASKS)
        listed = overdue["total"] or coming["total"] or done["total"]
        if not listed and not engram.tasks({"sort": "due", "limit": 1}, today=last)["total"]:
            return ["## Tasks", "The vault has no tasks (- [ ] items)."]
    except EngramError as exc:
        return ["## Tasks", f"(the tasks could not be listed: {exc.code}: {exc.message})"]
    return [
        f"## Open tasks due by {last.isoformat()}: {overdue['total']}",
        f"{call('list_tasks', **due, **va)}:",
        *(_task_lines(overdue["tasks"]) or ["(none)"]),
        "",
        f"## Open tasks due in the next 7 days: {coming['total']}",
        f"{call('list_tasks', **soon, **va)}:",
        *(_task_lines(coming["tasks"]) or ["(none)"]),
        "",
        f"## Tasks done from {first.isoformat()} to {last.isoformat()}: {done['total']}",
        *(_task_lines(done["tasks"]) or ["(none)"]),
    ]


# -- text ----------------------------------------------------------------------------------


def _day(name: str, value: str, today: dt.date) -> dt.date:
    try:
        return dt.date.fromisoformat(resolve_day(value, today))
    except ValueError as exc:
        raise _invalid(f"{name}: {exc}") from None


def _hit_lines(hits: list[SearchHit]) -> list[str]:
    out = []
    for n, hit in enumerate(hits, 1):
        about = "; ".join(
            part
            for part in (
                hit.created_at or "undated",
                "topics: " + ", ".join(hit.topics) if hit.topics else "",
            )
            if part
        )
        line = f"{n}. {hit.path} — {hit.title} ({about})"
        snippet = " ".join(hit.snippet.split())
        if snippet:
            if len(snippet) > SNIPPET_CHARS:
                snippet = snippet[: SNIPPET_CHARS - 1] + "…"
            line += f"\n   line {hit.line}: {snippet}"
        out.append(line)
    return out


def _task_lines(tasks: list[dict[str, Any]]) -> list[str]:
    out = []
    for t in tasks:
        when = [
            f"{name} {t[name]}" for name in ("due", "scheduled", "done") if t.get(name) is not None
        ]
        if t.get("overdue"):
            when.append("overdue")
        extra = f" ({', '.join(when)})" if when else ""
        box = t.get("status", " ")
        text = t.get("description") or t.get("text", "")
        out.append(f"- [{box}] {text}{extra} — {t['path']}:{t['line']}")
    return out


def _s(n: int) -> str:
    return "" if n == 1 else "s"


__all__ = ["EngramPrompt", "add_prompts"]

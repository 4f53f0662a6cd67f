"""``completion/complete``: suggestions for the arguments of the prompts and of the resource
templates, as a client offers them while the user types.

What is suggested goes by the argument's name:

- ``topic``, ``topics``, ``tag``, ``tags``, ``topic_or_question``: the vault's topics, most
  used first;
- ``vault``: the names of the vaults served, in the order served;
- ``path`` (``engram://{vault}/{+path}``): the folders one level below what is typed (most
  notes first, each ending in ``/``), then its notes (newest first), as paths (the client
  percent-encodes them into the URI; a value typed encoded is decoded);
- ``property``, ``properties``: the vault's frontmatter properties, most used first.

Every match is by the start of the value, in any case; at most 100 values, with ``total``
(None when it is not known: a folder with more notes than a completion reads) and
``has_more``. The vault is the ``vault`` argument of the request's context (the one already
chosen), else the only one served; with several and none chosen, there is nothing to suggest.
Everything comes from the index (ranges of its indexes, never a pass over every note): while
it cannot answer, nothing is suggested. A reference to a prompt or template this server does
not have, or to an argument it does not take, is ``ENGRAM_INVALID_REQUEST``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import unquote

import anyio.to_thread
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    ResourceTemplateReference,
)

from engram_ls.core.errors import EngramError, InvalidRequest
from engram_ls.core.health import SERVABLE_STATES
from engram_ls.core.service import Engram
from engram_ls.mcp_server.errors import protocol_error
from engram_ls.mcp_server.resources import URI_TEMPLATE

if TYPE_CHECKING:
    from engram_ls.mcp_server.server import EngramMCP

MAX_VALUES = 100
"""The protocol's cap on the values of one answer."""
MAX_COUNTED = 10_000
"""Matches counted at most for ``total`` (the core's listing cap); beyond it, unknown."""
KINDS = {
    "topic": "topic",
    "topics": "topic",
    "tag": "topic",
    "tags": "topic",
    "topic_or_question": "topic",
    "vault": "vault",
    "path": "path",
    "property": "property",
    "properties": "property",
}
"""What an argument of each name is completed with."""
_VARIABLE = re.compile(r"\{[+#./;?&]?([^}]*)\}")

Found = tuple[list[str], int | None]
"""Values (more than ``MAX_VALUES`` when there are more) and the total, None if unknown."""


def add_completion(mcp: EngramMCP) -> None:
    """Answer ``completion/complete`` on the server."""

    async def complete(
        ref: PromptReference | ResourceTemplateReference,
        argument: CompletionArgument,
        context: CompletionContext | None,
    ) -> Completion:
        names = await _arguments(mcp, ref)
        if argument.name not in names:
            raise protocol_error(
                InvalidRequest(
                    f"argument: {_what(ref)} has no argument {argument.name!r}"
                    f" (its arguments: {', '.join(names) or 'none'})"
                )
            )
        kind = KINDS.get(argument.name)
        if kind is None:
            return _answer([], 0)
        if kind == "vault":
            key = argument.value.casefold()
            return _answer(*_counted([n for n in mcp.vaults.names if n.casefold().startswith(key)]))
        given = (context.arguments or {}) if context is not None else {}
        chosen = given.get("vault") or None
        if chosen is None and len(mcp.vaults) > 1:
            return _answer([], 0)  # which vault is not known yet
        try:
            engram = mcp.vaults.get(chosen).engram
        except EngramError as exc:
            raise protocol_error(exc) from None
        values, total = await anyio.to_thread.run_sync(
            partial(suggest, kind, engram, argument.value)
        )
        return _answer(values, total)

    mcp.completion()(complete)  # type: ignore[no-untyped-call]  # the SDK's decorator is untyped


async def _arguments(mcp: EngramMCP, ref: PromptReference | ResourceTemplateReference) -> list[str]:
    """The argument names of the prompt or template ``ref`` names; ENGRAM_INVALID_REQUEST
    when the server has none such."""
    if isinstance(ref, PromptReference):
        prompts = {p.name: p for p in await mcp.list_prompts()}
        prompt = prompts.get(ref.name)
        if prompt is None:
            raise protocol_error(
                InvalidRequest(f"ref: no prompt named {ref.name!r} (prompts: {', '.join(prompts)})")
            )
        return [a.name for a in prompt.arguments or ()]
    templates = {t.uri_template for t in await mcp.list_resource_templates()} | {URI_TEMPLATE}
    if ref.uri not in templates:
        raise protocol_error(
            InvalidRequest(
                f"ref: no resource template {ref.uri!r} (templates: {', '.join(sorted(templates))})"
            )
        )
    return template_variables(ref.uri)


def template_variables(uri_template: str) -> list[str]:
    """The variables of an RFC 6570 URI template (``{vault}``, ``{+path}``, ``{?a,b*}``)."""
    out: list[str] = []
    for group in _VARIABLE.findall(uri_template):
        for spec in group.split(","):
            name = spec.split(":")[0].rstrip("*").strip()
            if name and name not in out:
                out.append(name)
    return out


def _what(ref: PromptReference | ResourceTemplateReference) -> str:
    if isinstance(ref, PromptReference):
        return f"prompt {ref.name!r}"
    return f"resource template {ref.uri!r}"


def _answer(values: list[str], total: int | None) -> Completion:
    shown = values[:MAX_VALUES]
    more = total is None or total > len(shown)
    return Completion(values=shown, total=total, has_more=more)


def _counted(values: list[str]) -> Found:
    return values, len(values)


def _ready(engram: Engram) -> bool:
    """Whether the index can answer now (not while it is first built: a listing of topics
    would then read every note)."""
    return engram.health.status().state in SERVABLE_STATES


def _listed(listing: Callable[[int], list[str]]) -> Found:
    """Values from a core listing that takes a limit: one more than shown tells whether
    there are more; only then are they counted (up to ``MAX_COUNTED``)."""
    values = listing(MAX_VALUES + 1)
    if len(values) <= MAX_VALUES:
        return values, len(values)
    every = len(listing(MAX_COUNTED))
    return values, (every if every < MAX_COUNTED else None)


def topics(engram: Engram, typed: str) -> Found:
    return _listed(lambda limit: [t.name for t in engram.topics(typed, limit)])


def properties(engram: Engram, typed: str) -> Found:
    return _listed(lambda limit: [p.name for p in engram.properties(typed, limit)])


def paths(engram: Engram, typed: str) -> Found:
    """Folders and notes; a value typed percent-encoded (as in the URI) is decoded first."""
    found = engram.path_completions(unquote(typed), MAX_VALUES)
    if not found.choices and unquote(typed) != typed:  # a '%' of the name itself
        found = engram.path_completions(typed, MAX_VALUES)
    return [c.path for c in found.choices], found.total


SUGGEST: dict[str, Callable[[Engram, str], Found]] = {
    "topic": topics,
    "property": properties,
    "path": paths,
}


def suggest(kind: str, engram: Engram, typed: str) -> Found:
    """The values of one kind for ``typed``; none while the index cannot answer (or for a
    value it refuses, such as one holding a NUL)."""
    if not _ready(engram):
        return [], 0
    try:
        return SUGGEST[kind](engram, typed)
    except EngramError:
        return [], 0


__all__ = ["KINDS", "add_completion", "suggest", "template_variables"]

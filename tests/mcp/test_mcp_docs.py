"""Every ``mcp`` example of docs/mcp.md, run in order through the SDK's client against a copy
of the example vault served as the vault ``notes`` (with ``--allow-write``; a second vault,
``tags``, where an example names it). An example is

    → METHOD [NAME] [JSON arguments]
    ← what comes back (JSON, or text for read_note, get_session_context and resources/read)

and what it shows must be in the answer: an object's keys with matching values (keys not shown
are not checked), a list ending in ``"..."`` as a prefix, else in full, a string ending in
``...`` as a prefix; a text answer shown must begin the answer (``...`` ends what is shown). A
tool error is shown as ``← error: TEXT``. Methods: ``tools/call``, ``resources/read``,
``resources/list``, ``resources/templates/list``, ``prompts/list``, ``prompts/get``,
``completion/complete``."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import PromptReference, ResourceTemplateReference

from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server
from tests.conftest import DATA, EXAMPLE, ROOT, copy_tree
from tests.mcp.test_mcp import READ_TOOLS, WRITE_TOOLS

DOC = ROOT / "docs" / "mcp.md"
_BLOCK = re.compile(r"```mcp\n(.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    out = []
    for block in _BLOCK.findall(DOC.read_text(encoding="utf-8")):
        call, sep, shown = block.partition("\n← ")
        assert call.startswith("→ ") and sep, block
        out.append((call[2:].strip(), shown.rstrip("\n")))
    return out


def test_the_page_shows_every_tool_and_kind() -> None:
    calls = [c for c, _ in examples()]
    tools = {c.split()[1] for c in calls if c.startswith("tools/call")}
    assert tools >= READ_TOOLS | WRITE_TOOLS
    prompts = {c.split()[1] for c in calls if c.startswith("prompts/get")}
    assert prompts == {"notes_about", "notes_since", "weekly_review"}
    methods = {c.split()[0] for c in calls}
    assert {"resources/read", "resources/list", "completion/complete"} <= methods


def matches(shown: Any, actual: Any) -> bool:
    if isinstance(shown, dict):
        return isinstance(actual, dict) and all(
            k in actual and matches(v, actual[k]) for k, v in shown.items()
        )
    if isinstance(shown, list):
        if not isinstance(actual, list):
            return False
        if shown and shown[-1] == "...":
            head = shown[:-1]
            return len(actual) >= len(head) and all(map(matches, head, actual))
        return len(shown) == len(actual) and all(map(matches, shown, actual))
    if isinstance(shown, str) and shown.endswith(("...", "…")) and isinstance(actual, str):
        return actual.startswith(shown.rstrip(".…"))
    return bool(shown == actual)


@asynccontextmanager
async def served(base: Path) -> AsyncIterator[Client]:
    engrams = {"notes": Engram(copy_tree(EXAMPLE, base / "notes"))}
    engrams["tags"] = Engram(copy_tree(DATA / "tags", base / "tags"))
    for engram in engrams.values():
        engram.open()
        engram.sync()
    async with Client(create_server(engrams, allow_write=True)) as c:
        yield c


async def answer(client: Client, call: str) -> tuple[bool, Any]:
    """(is an error, the answer: structured content, or text) of one example's call."""
    method, _, rest = call.partition(" ")
    if method in ("tools/call", "prompts/get"):
        name, _, args = rest.partition(" ")
        arguments = json.loads(args) if args.strip() else {}
        if method == "prompts/get":
            prompt = await client.get_prompt(name, arguments)
            return False, prompt.model_dump(mode="json", by_alias=True, exclude_none=True)
        r = await client.call_tool(name, arguments)
        if r.is_error or r.structured_content is None or "result" in r.structured_content:
            return bool(r.is_error), r.content[0].text
        return False, r.structured_content
    if method == "resources/read":
        r = await client.read_resource(rest.strip())
        return False, r.contents[0].text  # type: ignore[union-attr]
    if method == "completion/complete":
        args = json.loads(rest)
        ref_args = args["ref"]
        ref = (
            PromptReference(type="ref/prompt", name=ref_args["name"])
            if ref_args["type"] == "ref/prompt"
            else ResourceTemplateReference(type="ref/resource", uri=ref_args["uri"])
        )
        r = await client.complete(ref, args["argument"], args.get("context"))
        return False, r.model_dump(mode="json", by_alias=True, exclude_none=True)
    listed = {
        "resources/list": lambda: client.list_resources(),
        "resources/templates/list": lambda: client.list_resource_templates(),
        "prompts/list": lambda: client.list_prompts(),
    }[method]
    r = await listed()
    return False, r.model_dump(mode="json", by_alias=True, exclude_none=True)


async def test_every_example_answers_what_the_page_shows(tmp_path: Path) -> None:
    found = examples()
    assert len(found) >= 15
    async with served(tmp_path) as client:
        for call, shown in found:
            await check(client, call, shown)


async def check(client: Client, call: str, shown: str) -> None:
    error, got = await answer(client, call)
    if shown.startswith("error: "):
        assert error, f"{call}: expected a tool error, got {got!r}"
        assert matches(shown[len("error: ") :], got), f"{call}:\n{got}"
        return
    assert not error, f"{call}: {got}"
    if isinstance(got, str):
        text = shown.rstrip(".…") if shown.endswith(("...", "…")) else shown
        assert got.startswith(text) if text != shown else got == shown, f"{call}:\n{got}"
    else:
        want = json.loads(shown)
        assert matches(want, got), f"{call}:\n{json.dumps(got, indent=1)[:3000]}"

"""One search schema (issue 14, item 4): the MCP tool ``search_notes`` and the CLI's ``engram
search`` take their parameters from the core ``SearchRequest``, so their defaults, limits,
choices and descriptions are the model's. Each front end is compared with the model's own JSON
schema (not with the code that derives them): the MCP one through the real SDK client's
``list_tools``, the CLI one through the help text of its real parser."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from engram_ls.cli import build_parser
from engram_ls.core.search import SearchRequest
from engram_ls.core.search.request import AVAILABLE_MODES, DEFAULT_LIMIT, LIMIT_CAP
from engram_ls.core.service import Engram
from engram_ls.mcp_server.server import create_server

CORE = SearchRequest.model_json_schema()["properties"]
NOT_FOR_AGENTS = {"case_sensitive", "raw_fts"}
"""Fields the MCP tool does not offer (as before the schema was derived)."""


def _typed(prop: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an optional property (where its type and bounds are)."""
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    return {**prop, **branches[0]}


def _bounds(prop: dict[str, Any]) -> tuple[Any, Any]:
    typed = _typed(prop)
    return typed.get("minimum"), typed.get("maximum")


@pytest.fixture
def engram(vault_copy: Callable[[str], Path]) -> Engram:
    engram = Engram(vault_copy("tags"))
    engram.open()
    engram.sync()
    return engram


async def _mcp_schema(engram: Engram) -> dict[str, Any]:
    async with Client(create_server(engram)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    schema: dict[str, Any] = tools["search_notes"].input_schema
    return schema


def test_the_core_model_declares_the_limits() -> None:
    assert _bounds(CORE["limit"]) == (1, LIMIT_CAP) == (1, 1000)
    assert _bounds(CORE["offset"]) == (0, 100_000)
    assert CORE["limit"]["default"] is None  # the configuration's limits.default_limit
    assert DEFAULT_LIMIT == 50


async def test_mcp_parameters_are_the_core_fields(engram: Engram) -> None:
    props = (await _mcp_schema(engram))["properties"]
    # the core's fields, then the server's own: which vault, and the page to continue
    for own in ("vault", "cursor"):
        assert {"type": "string"} in props.pop(own)["anyOf"], own
    assert list(props) == [name for name in CORE if name not in NOT_FOR_AGENTS]
    for name, prop in props.items():
        core = CORE[name]
        assert prop["description"] == core["description"], name
        assert _bounds(prop) == _bounds(core), name
        assert prop["default"] == core["default"], name  # limit too: one default everywhere
        if name == "mode":  # only the modes this installation answers
            assert prop["enum"] == list(AVAILABLE_MODES)
            assert set(prop["enum"]) <= set(core["enum"])
            assert prop["enum"][:3] == ["text", "literal", "regex"]
        else:
            assert _typed(prop).get("enum") == _typed(core).get("enum"), name
            assert _typed(prop).get("type") == _typed(core).get("type"), name


def _search_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    parser: argparse.ArgumentParser = sub.choices["search"]  # type: ignore[index]
    return parser


def test_cli_options_and_help_come_from_the_core_model() -> None:
    actions = {a.dest: a for a in _search_parser()._actions}
    for name, core in CORE.items():
        action = actions[name]
        help_text = action.help or ""
        assert help_text.startswith(core["description"]), (name, help_text)
        default = core["default"]
        if default not in (None, False, "", [], 0):
            assert f"default {default}" in help_text, (name, help_text)
            assert action.default == default, name
        if _bounds(core)[1] is not None:
            assert f"at most {_bounds(core)[1]}" in help_text, (name, help_text)
        choices = _typed(core).get("enum", [])  # shown, and checked by the model (cli_options)
        assert action.metavar == ("{" + ",".join(choices) + "}" if choices else action.metavar)
    assert "default 50 or limits.default_limit" in (actions["limit"].help or "")


def test_cli_help_text_shows_the_core_descriptions() -> None:
    text = " ".join(_search_parser().format_help().split())
    for name, core in CORE.items():
        assert " ".join(core["description"].split()) in text, name


async def test_mcp_default_page_is_the_core_default(generated: Callable[..., Path]) -> None:
    engram = Engram(generated(80))
    engram.open()
    engram.sync()
    async with Client(create_server(engram)) as client:
        r = await client.call_tool("search_notes", {"path": "**"})
        many = await client.call_tool("search_notes", {"path": "**", "limit": 1000})
    assert not r.is_error
    assert many.structured_content["total"] > DEFAULT_LIMIT  # the vault has more than a page
    assert len(r.structured_content["results"]) == DEFAULT_LIMIT


async def test_mcp_limit_over_the_cap_is_an_engram_limit_error(engram: Engram) -> None:
    """Behaviour change: the SDK refused it with a bare validation message before; now the
    core's cap answers, with its code, as in the LSP and the CLI."""
    async with Client(create_server(engram)) as client:
        r = await client.call_tool("search_notes", {"query": "memory", "limit": 5000})
    assert r.is_error and "ENGRAM_LIMIT" in r.content[0].text, r.content[0].text


async def test_mcp_tags_null_or_a_string(engram: Engram) -> None:
    async with Client(create_server(engram)) as client:
        null = await client.call_tool("search_notes", {"query": "memory", "tags": None})
        plain = await client.call_tool("search_notes", {"query": "memory"})
        listed = await client.call_tool("search_notes", {"tags": ["memory", "python"]})
        text = await client.call_tool("search_notes", {"tags": "memory, python"})
    assert (
        not null.is_error and null.structured_content["total"] == plain.structured_content["total"]
    )
    assert (
        not text.is_error
        and text.structured_content["results"] == (listed.structured_content["results"])
    )


STRICT_KEYWORDS = {
    "type",
    "properties",
    "title",
    "description",
    "default",
    "enum",
    "anyOf",
    "items",
    "minimum",
    "maximum",
    "required",
    "additionalProperties",
}
"""JSON Schema keywords a strict validator (Ajv in strict mode, as MCP clients use) knows;
one outside them is an error there, not ignored."""


def _keywords(schema: Any) -> set[str]:
    if isinstance(schema, list):
        return set().union(*(_keywords(s) for s in schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for key, value in schema.items():
        if key == "properties":
            found |= set().union(*(_keywords(v) for v in value.values()))
        elif key in ("anyOf", "items"):
            found |= _keywords(value)
    return found


async def test_mcp_input_schema_is_strict_json_schema(engram: Engram) -> None:
    import jsonschema

    schema = await _mcp_schema(engram)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert _keywords(schema) <= STRICT_KEYWORDS, _keywords(schema) - STRICT_KEYWORDS
    validator = jsonschema.Draft202012Validator(schema)
    assert not list(validator.iter_errors({"query": "x", "tags": ["a"], "limit": 20}))
    assert list(validator.iter_errors({"limit": 1001}))


async def test_session_context_keeps_to_the_configured_page_cap(
    vault_copy: Callable[[str], Path],
) -> None:
    """get_session_context asked for a page of 1000 whatever ``limits.max_results`` said, so a
    vault that lowered the cap got ENGRAM_LIMIT for every call; it asks for the cap now."""
    root = vault_copy("tags")
    (root / ".engram").mkdir(exist_ok=True)
    (root / ".engram" / "config.yaml").write_text("limits:\n  max_results: 100\n", "utf-8")
    engram = Engram(root)
    engram.open()
    engram.sync()
    async with Client(create_server(engram)) as client:
        r = await client.call_tool("get_session_context", {"query": "memory"})
    assert not r.is_error, r.content[0].text
    assert "memory" in r.content[0].text.casefold()

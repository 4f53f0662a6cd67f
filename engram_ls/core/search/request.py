"""The search request: the one model of DESIGN §4 that every front end takes.

The language server validates ``engram/search`` params with it; the MCP tool's parameters and
the CLI's options are derived from its fields (``request_fields``), so a field, a default or a
limit is written here once.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from engram_ls.core.config import Limits
from engram_ls.core.errors import InvalidRequest
from engram_ls.core.search.where import OPS, Node, WhereError, parse_where
from engram_ls.core.semantic.model import missing_packages

Mode = Literal["text", "literal", "regex", "semantic", "hybrid"]
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
MAX_TAGS = 50
MAX_TAG_CHARS = 200
MAX_OFFSET = 100_000
MAX_QUERY_TERMS = 32
"""Distinct words and phrases in a text query (a repeated one counts once: ``a a a`` means
``a``). Each costs a pass over its matches when ranking: 32 words found in nearly every note
took 0.15 s over 4,000 notes, 128 took 1.7 s (and ``"a " * 500`` 6 s over 885)."""
MAX_PATH_CHARS = 1024
"""Longest ``path`` scope (a folder or glob); far above any real one (PATH_MAX is 4096 bytes,
but a glob of a real vault is a few segments)."""


SEMANTIC_MODES: tuple[Mode, ...] = ("semantic", "hybrid")
AVAILABLE_MODES: tuple[Mode, ...] = ("text", "literal", "regex") + (
    SEMANTIC_MODES if not missing_packages() else ()
)
"""The modes this installation answers: ``semantic`` and ``hybrid`` with the ``semantic``
extra (else ENGRAM_UNSUPPORTED_MODE, naming the install command)."""
DEFAULT_LIMIT: int = Limits.model_fields["default_limit"].default
"""Page size when a request gives none: the configuration's ``limits.default_limit``."""
LIMIT_CAP: int = next(m.le for m in Limits.model_fields["max_results"].metadata if hasattr(m, "le"))
"""The hard cap of a page (``limits.max_results`` can only lower it); over it: ENGRAM_LIMIT."""


def _tags(value: Any) -> Any:
    """Tags as a list: a string is split on commas and spaces; null is no tags."""
    if value is None:
        return []
    if isinstance(value, str):
        return [t for t in re.split(r"[,\s]+", value) if t]
    return value


def _where(value: Any) -> Node | None:
    """A ``where`` in any of its forms (text, a condition, a list, an and/or/not tree) as its
    tree; a tree already read is kept."""
    if value is None or isinstance(value, Node):
        return value
    try:
        return parse_where(value)
    except WhereError as exc:
        raise ValueError(str(exc)) from None


_CONDITION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "property": {"type": "string", "description": "A frontmatter key or a file.* property"},
        "op": {"enum": list(OPS)},
        "value": {"type": ["string", "number", "boolean", "null"]},
    },
    "required": ["property", "op"],
}
WHERE_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {
            "type": "array",
            "items": {
                "anyOf": [
                    {"type": "string", "description": "PROPERTY OP VALUE, e.g. 'status = done'"},
                    _CONDITION_SCHEMA,
                    {"type": "object", "description": '{"and"|"or": [...]} or {"not": ...}'},
                ]
            },
        },
        {"type": "object", "description": 'A condition, or {"and"|"or": [...]}, {"not": ...}'},
        {"type": "string"},
        {"type": "null"},
    ]
}
"""The ``where`` field's JSON schema (its Python type is the parsed tree)."""


@dataclass(frozen=True, slots=True)
class Offer:
    """How the front ends that take the request field by field (the MCP tool's parameters,
    the CLI's options) offer one field. Its type, default, limits and description are the
    field's own; this holds only what differs between them."""

    flag: str | None = None
    """CLI option (default: ``--`` and the field's name with dashes); ``""``: the positional
    argument."""
    short: str | None = None
    metavar: str | None = None
    unset: str | None = None
    """How the CLI's help names the default of a field whose default is None (taken from the
    configuration)."""
    agents: bool = True
    """Whether the MCP tool offers the field."""
    agent_choices: tuple[str, ...] | None = None
    """The MCP tool's choices, where it offers fewer than the field's type."""


class SearchRequest(BaseModel):
    """DESIGN §4: the same request in the language server, the MCP server and the CLI."""

    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, Offer(flag="", metavar="QUERY")] = Field(
        default="",
        description='What to find: words, "phrases" and prefix* (mode text), a substring '
        "(literal) or a regular expression (regex); may be empty when a filter is given",
    )
    mode: Annotated[Mode, Offer(agent_choices=AVAILABLE_MODES)] = Field(
        default="text",
        description='How the query matches: text (words, "phrases", prefix*; ranked by '
        "relevance), literal (a substring), regex (a linear-time regular expression), "
        "semantic (by meaning: the notes whose sections are nearest the query), hybrid (text "
        "and semantic rankings fused)",
    )
    tags: Annotated[
        list[str], BeforeValidator(_tags), Offer(flag="--tag", short="-t", metavar="TOPIC")
    ] = Field(
        default=[],  # pydantic copies it for each request
        description="Topics to filter by (case-insensitive, whole topics), each with the topics "
        "nested under it (engineering finds engineering/frontend); a leading '=' is the topic "
        "alone, a leading '-' excludes it",
    )
    tags_mode: Literal["any", "all"] = Field(
        default="any", description="Whether a note needs any or all of the tags"
    )
    date_from: Annotated[str | None, Offer(flag="--from", metavar="YYYY-MM-DD")] = Field(
        default=None, description="Only notes dated on or after this day, YYYY-MM-DD"
    )
    date_to: Annotated[str | None, Offer(flag="--to", metavar="YYYY-MM-DD")] = Field(
        default=None, description="Only notes dated on or before this day, YYYY-MM-DD"
    )
    path: Annotated[str | None, Offer(metavar="FOLDER_OR_GLOB")] = Field(
        default=None,
        description="Only notes under this vault-relative folder, this note, or notes matching "
        f"this glob (at most {MAX_PATH_CHARS} characters)",
    )
    where: Annotated[Any, Offer(metavar="'PROPERTY OP VALUE'")] = Field(
        default=None,
        json_schema_extra=WHERE_SCHEMA,
        description="Conditions on frontmatter or file properties, all of which must hold: "
        "'status = done', 'priority >= 2', {property, op, value} objects, or an and/or/not "
        f"tree of them; op is one of {', '.join(OPS)}",
    )
    limit: Annotated[
        int | None,
        Offer(metavar="N", unset=f"{DEFAULT_LIMIT} or limits.default_limit"),
    ] = Field(
        default=None,
        ge=1,
        json_schema_extra={"maximum": LIMIT_CAP},
        description="Results per page",
    )
    offset: Annotated[int, Offer(metavar="N")] = Field(
        default=0,
        ge=0,
        json_schema_extra={"maximum": MAX_OFFSET},
        description="Results to skip, for paging",
    )
    case_sensitive: Annotated[bool, Offer(agents=False)] = Field(
        default=False, description="Literal and regex modes: match case"
    )
    raw_fts: Annotated[bool, Offer(agents=False)] = Field(
        default=False,
        description="Text mode: pass the query to SQLite FTS5 unchanged (operators, NEAR, "
        "column filters)",
    )

    require_index: bool = Field(
        default=False,
        description="Answer from the index or fail with ENGRAM_INDEX_STALE: never scan the "
        "files while the index cannot serve (missing, damaged, being built)",
    )
    max_staleness_ms: Annotated[int | None, Offer(metavar="MS", unset="no limit")] = Field(
        default=None,
        ge=0,
        description="Fail with ENGRAM_INDEX_STALE when the index was last brought in line with "
        "the files (a completed sync or an applied batch of changes) longer ago than this",
    )

    @field_validator("query", "path", "date_from", "date_to")
    @classmethod
    def _text(cls, value: str | None) -> str | None:
        if value is not None:
            require_text(value)
        return value

    @field_validator("where", mode="before")
    @classmethod
    def _where_tree(cls, value: Any) -> Node | None:
        # A validator of the model, not of the field's type: the front ends that take the
        # fields one by one (the MCP tool) pass the value on, and a malformed one is refused
        # here, as ENGRAM_INVALID_REQUEST naming its part, like every other field's.
        return _where(value)

    @field_validator("tags")
    @classmethod
    def _tag_text(cls, value: list[str]) -> list[str]:
        for tag in value:
            require_text(tag)
        return value

    @field_validator("date_from", "date_to")
    @classmethod
    def _day(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        value = value.strip()
        if not _DAY.match(value):
            raise ValueError(f"'{value}' is not a date in the form YYYY-MM-DD")
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"'{value}' is not a valid calendar date") from None
        return value


FrontEnd = Literal["agents", "cli"]


@dataclass(frozen=True, slots=True)
class RequestField:
    """One field of ``SearchRequest`` as a front end that takes fields one by one offers it."""

    name: str
    annotation: Any
    """The field's type with its constraints, validators and description, for a signature
    that pydantic validates (the MCP tool's)."""
    default: Any
    """What the front end sends when the field is not given (None: leave it to the core)."""
    description: str
    choices: tuple[str, ...]
    """The values a field of a fixed set takes (``()`` for any value)."""
    minimum: int | None
    maximum: int | None
    kind: type
    """``str``, ``int``, ``bool`` or ``list`` (of strings)."""
    offer: Offer

    @property
    def help(self) -> str:
        """The description with the default and the limits, as the CLI's help says it."""
        parts = []
        shown = self.offer.unset if self.default is None else self.default
        if shown not in (None, False, "", []):
            parts.append(f"default {shown}")
        if self.maximum is not None:
            parts.append(f"at most {self.maximum}")
        if self.kind is list:
            parts.append("repeatable")
        return self.description + (f" ({', '.join(parts)})" if parts else "")


@functools.cache
def request_fields(
    front_end: FrontEnd, model: type[BaseModel] | None = None
) -> tuple[RequestField, ...]:
    """The fields of a request model (``SearchRequest`` by default; also
    ``tasks.request.TasksRequest``) that ``front_end`` offers, in their order, each with its
    default there: the MCP tools (``agents``) and the CLI build their parameters from these.
    Derived once per process (the model's JSON schema costs milliseconds; the CLI asks three
    times at start-up)."""
    model = model or SearchRequest
    schema = model.model_json_schema()["properties"]
    out = []
    for name, info in model.model_fields.items():
        offer = next((m for m in info.metadata if isinstance(m, Offer)), Offer())
        if front_end == "agents" and not offer.agents:
            continue
        prop = schema[name]
        typed = next((t for t in prop.get("anyOf", [prop]) if t.get("type") != "null"), prop)
        choices = tuple(typed.get("enum", ()))
        default = info.get_default(call_default_factory=True)
        base = info.annotation
        if front_end == "agents" and offer.agent_choices is not None:
            choices = offer.agent_choices
            base = Literal[choices]  # type: ignore[assignment]
        constraints = [m for m in info.metadata if not isinstance(m, Offer)]
        described = Field(description=info.description, json_schema_extra=info.json_schema_extra)
        out.append(
            RequestField(
                name=name,
                annotation=Annotated[(base, *constraints, described)],
                default=default,
                description=info.description or "",
                choices=choices,
                minimum=typed.get("minimum", prop.get("minimum")),
                maximum=typed.get("maximum", prop.get("maximum")),
                kind={"integer": int, "boolean": bool, "array": list}.get(typed.get("type"), str),
                offer=offer,
            )
        )
    return tuple(out)


def require_text(value: str) -> str:
    """``value`` if it is text that can be stored and passed on (UTF-8); else ValueError.

    A lone surrogate (``"\\ud800"`` in JSON) or bytes that are not UTF-8 (command-line arguments
    arrive with them as ``\\udcXX``) can be neither bound to SQLite nor given to ripgrep."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = value[exc.start : exc.end]
        raise ValueError(
            f"{bad!r} at position {exc.start} is not valid text (a lone surrogate, or bytes"
            " that are not UTF-8)"
        ) from None
    return value


def parse_request(data: SearchRequest | Mapping[str, Any]) -> SearchRequest:
    """Validate a request from any front end; problems become InvalidRequest."""
    return validated(SearchRequest, data, "search")


M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: M | Mapping[str, Any], what: str) -> M:
    """``data`` as a ``model``; its problems as one InvalidRequest naming each part."""
    if isinstance(data, model):
        return data
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ())) or "request"
            msg = str(err.get("msg")).removeprefix("Value error, ")
            named = msg.startswith(where) and msg[len(where) : len(where) + 1] in ("[", ".", ":")
            parts.append(msg if named else f"{where}: {msg}")
        raise InvalidRequest(
            f"invalid {what} request: " + "; ".join(parts), data={"errors": parts}
        ) from None

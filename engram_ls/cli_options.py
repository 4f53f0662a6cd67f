"""A request model's fields as command-line options, and its problems in the options' words.

The options of ``engram search`` and ``engram tasks`` are the fields of the core's request
models (``core/search/request.py``, ``core/tasks/request.py``): ``add_request_options`` makes
them, ``flag_of`` names a field as the command line does, and ``request_from`` validates the
values given, turning each problem into a sentence that names the option and the value as typed
(``--from 2024-13-01 is not a date``), never a field name or pydantic's wording.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engram_ls.core.errors import EngramError, InvalidRequest
from engram_ls.core.search import RequestField, SearchRequest, request_fields

M = TypeVar("M", bound=BaseModel)

_DAY_FORM = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DAY_METAVARS = ("YYYY-MM-DD", "DAY")
_PART = re.compile(r"^\w+(\[\d+\])+: ")  # "where[1]: " before a message about one item


def flags(f: RequestField) -> list[str]:
    """The options of a request field: ``--`` and its name with dashes, or its own."""
    long = f.offer.flag or "--" + f.name.replace("_", "-")
    return [long, f.offer.short] if f.offer.short else [long]


def flag_of(f: RequestField) -> str:
    """How the command line names a field: its long option, or its metavar (``QUERY``) for
    the positional argument."""
    return (f.offer.metavar or f.name.upper()) if f.offer.flag == "" else flags(f)[0]


def add_request_options(p: argparse.ArgumentParser, model: type[BaseModel] | None = None) -> None:
    """A request's fields as options (and QUERY), from the core model (the search request's,
    or ``model``'s): the names, defaults, choices and help text are the model's. Every value
    is kept as typed and checked by the model (``request_from``), numbers and choices too, so
    that each problem is said one way."""
    for f in request_fields("cli", model):
        offer = f.offer
        options: dict[str, Any] = {"help": f.help.replace("%", "%%"), "default": f.default}
        if f.kind is bool:
            options["action"] = "store_true"
        else:
            options["metavar"] = offer.metavar or f.name.upper()
            if f.kind is list:
                options.update(action="append", default=None)
            if f.choices:
                options["metavar"] = "{" + ",".join(f.choices) + "}"
        if offer.flag == "":
            p.add_argument(f.name, nargs="?", **options)
            continue
        p.add_argument(*flags(f), dest=f.name, **options)


def whole_number(text: str) -> int:
    """An option's whole number (the options that are no request field: ``topics --limit``,
    ``query --block``); its problem in plain words (argparse names the option)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{shown(text)} is not a whole number") from None


def shown(value: Any) -> str:
    """A value as it would be typed in a shell (quoted when it must be)."""
    return shlex.quote(str(value)) if str(value) else "''"


def request_from(model: type[M], values: Mapping[str, Any]) -> M:
    """The request of the options given (None values left out), validated by ``model``;
    InvalidRequest naming each bad option and value in plain words."""
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return model.model_validate(given)
    except ValidationError as exc:
        fields = {f.name: f for f in request_fields("cli", model)}
        problems = [_problem(fields, err) for err in exc.errors()]
        raise InvalidRequest("; ".join(problems), data={"errors": problems}) from None


def _problem(fields: Mapping[str, RequestField], err: Mapping[str, Any]) -> str:
    loc = err.get("loc", ())
    f = fields.get(str(loc[0])) if loc else None
    if f is None:
        return str(err.get("msg"))
    flag, kind, ctx = flag_of(f), err.get("type"), err.get("ctx") or {}
    value = err.get("input")
    if kind == "greater_than_equal":
        return f"{flag} must be {ctx.get('ge')} or more, not {shown(value)}"
    if kind == "less_than_equal":
        return f"{flag} must be {ctx.get('le')} or less, not {shown(value)}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{flag} {shown(value)} is not a whole number"
    if kind == "literal_error":
        return f"{flag} {shown(value)} is not one of {', '.join(f.choices)}"
    message = str(ctx.get("error") or err.get("msg"))
    message = _PART.sub("", message)
    items = value if isinstance(value, list) else [value]
    for item in items:  # "'VALUE' is not ...": the option, the value as typed, the rest
        quoted = f"{item!r} "
        if isinstance(item, str) and message.startswith(quoted):
            if f.offer.metavar in _DAY_METAVARS:
                return _not_a_day(flag, item, f)
            return f"{flag} {shown(item)} {message[len(quoted) :]}"
    return f"{flag}: {message}"


def _not_a_day(flag: str, value: str, f: RequestField) -> str:
    """A day option's value that is not a day: one of the calendar's form (``2024-13-01``)
    is not a date; another form is not a day, and the forms taken are named."""
    if _DAY_FORM.match(value.strip()):
        return f"{flag} {shown(value)} is not a date"
    if f.offer.metavar == "YYYY-MM-DD":
        return f"{flag} {shown(value)} is not a date (YYYY-MM-DD)"
    forms = f.description.rpartition(": ")[2] or "YYYY-MM-DD"  # "...: YYYY-MM-DD, today, ..."
    return f"{flag} {shown(value)} is not a day ({forms})"


def in_flag_words(exc: EngramError, model: type[BaseModel] | None = None) -> EngramError:
    """``exc`` with the request's field names that are no English word (``date_from``,
    ``max_staleness_ms``) replaced by their options (``--from``), for a problem the core found
    after validation (``date_from 2024-05-01 is after date_to 2024-01-01``)."""
    message = exc.message
    for f in request_fields("cli", model or SearchRequest):
        if "_" in f.name:
            message = re.sub(rf"\b{f.name}\b", flag_of(f), message)
    if message == exc.message:
        return exc
    renamed = type(exc)(message, data=exc.data)
    return renamed


__all__ = [
    "add_request_options",
    "flag_of",
    "flags",
    "in_flag_words",
    "request_from",
    "shown",
    "whole_number",
]

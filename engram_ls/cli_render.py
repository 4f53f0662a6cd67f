"""How ``engram search`` prints its hits for a person to scan, as ripgrep prints its matches:
each hit's ``path:line`` (the path in magenta, the line number in green), its title in bold,
its date and topics, then its snippet on an indented line, cut to the width of the terminal
around the first match; the query's matches in bold red, in the title and the snippet.

Colour is ``--color auto`` (on when standard output is a terminal, unless ``NO_COLOR`` is set
to anything or ``TERM`` is ``dumb``), ``always`` or ``never``. ``--json`` never has colour.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from typing import TextIO

from engram_ls.core.search import SearchRequest, SearchResponse
from engram_ls.core.search.snippet import Matcher, Span, cut_around

COLOR_CHOICES = ("auto", "always", "never")
PATH, LINE, TITLE, TOPICS, MATCH = "35", "32", "1", "36", "1;31"
"""SGR codes: magenta paths, green line numbers and bold red matches as ripgrep's defaults;
bold titles, cyan topics."""
RESET = "\x1b[0m"
INDENT = "    "
MIN_WIDTH = 40
"""The narrowest snippet cut for a terminal (a snippet is never cut past the core's
``limits.snippet_chars``)."""


def use_color(choice: str, stream: TextIO, env: Mapping[str, str] | None = None) -> bool:
    """Whether to colour: ``always``, ``never``, or (``auto``) when ``stream`` is a terminal,
    ``NO_COLOR`` is unset or empty (https://no-color.org) and ``TERM`` is not ``dumb``."""
    env = os.environ if env is None else env
    if choice != "auto":
        return choice == "always"
    if env.get("NO_COLOR") or env.get("TERM") == "dumb":
        return False
    return stream.isatty()


def paint(text: str, code: str, on: bool) -> str:
    """``text`` in the SGR colour ``code`` when ``on``."""
    return f"\x1b[{code}m{text}{RESET}" if on and text else text


def highlight(text: str, spans: list[Span], on: bool, base: str | None = None) -> str:
    """``text`` with its ``spans`` in the match colour, the rest in ``base`` (if any)."""
    if not on:
        return text
    out, pos = [], 0
    for start, end in spans:
        if start < pos or start >= end:
            continue
        out.append(paint(text[pos:start], base, on) if base else text[pos:start])
        out.append(paint(text[start:end], MATCH, on))
        pos = end
    out.append(paint(text[pos:], base, on) if base else text[pos:])
    return "".join(out)


def snippet_width(env: Mapping[str, str] | None = None) -> int:
    """How many characters of a snippet fit on a line: the terminal's (or ``COLUMNS``) width
    less the indent; 100 columns when it is not known."""
    columns = shutil.get_terminal_size((100, 24)).columns
    if env is not None and env.get("COLUMNS", "").isdigit():
        columns = int(env["COLUMNS"])
    return max(MIN_WIDTH, columns - len(INDENT))


def render_hits(
    response: SearchResponse, request: SearchRequest, *, color: bool, width: int
) -> str:
    """The hits as ``engram search`` prints them (without the summary line)."""
    matcher = Matcher.of(
        request.mode,
        request.query,
        case_sensitive=request.case_sensitive,
        raw_fts=request.raw_fts,
    )
    lines = []
    for hit in response.results:
        where = f"{paint(hit.path, PATH, color)}:{paint(str(hit.line), LINE, color)}"
        title = highlight(hit.title, matcher.spans(hit.title), color, TITLE)
        date = hit.created_at or "undated"
        topics = (
            f"  {paint('[' + ', '.join(hit.topics) + ']', TOPICS, color)}" if hit.topics else ""
        )
        lines.append(f"{where}  {title}  ({date}){topics}")
        if hit.snippet:
            lines.append(INDENT + _snippet(hit.snippet, matcher, color, width))
    return "".join(line + "\n" for line in lines)


def _snippet(snippet: str, matcher: Matcher, color: bool, width: int) -> str:
    """The snippet cut to ``width`` around its first match, the matches highlighted."""
    first = matcher.spans(snippet, first=True)
    text = cut_around(snippet, width, first[0][0] if first else None)[0]
    return highlight(text, matcher.spans(text), color) if color else text


__all__ = ["COLOR_CHOICES", "highlight", "paint", "render_hits", "snippet_width", "use_color"]

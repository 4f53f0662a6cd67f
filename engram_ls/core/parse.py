"""Markdown bytes → :class:`~engram_ls.core.model.Note`. Pure, fast, and never raises.

``parse_note`` reads one file's bytes: frontmatter metadata (title, topics, date, summary),
then the body (headings, wiki and Markdown links, inline ``#tags``). Anything wrong with the
file becomes a :class:`~engram_ls.core.model.Problem` on the note; the note is still indexed.

Decisions the rules leave open, in one place:

* Line numbers count ``\\n`` only (as ripgrep does). ``\\r\\n`` is normalised to ``\\n`` before
  parsing, so CRLF and LF files give the same note; a lone ``\\r`` is an ordinary character.
* Frontmatter keys are looked up exactly first, then case-insensitively (``Tags:`` works).
* A ``title`` may be a string, a number or a date (``title: 1984``); it is stripped.
* Topic items: scalars are stringified (``true``/``false`` for booleans, ISO for dates),
  nested lists and mappings are skipped; a leading ``#`` and surrounding whitespace are
  stripped. Items of a YAML list are not split further; a plain string value is split on
  commas when it has one, else on whitespace. Topics keep the first spelling met
  (frontmatter keys in configured order, then inline tags in body order).
* Inline tags are counted wherever Obsidian counts them, including inside heading text
  (``# Meeting #project``); the heading marker itself is never a tag. A tag loses trailing
  ``/`` and ``-`` and a leading ``/`` and must then contain a letter or ``_``. Anything that
  reads as a hex colour (3, 4, 6 or 8 hex digits, e.g. ``#fff``, ``#a1b2c3``) is not a tag,
  even when it is also a word (``#cafe``).
* Fenced code: a line of 3+ backticks or tildes (any indentation, so fences inside list
  items count) opens a block that only a fence of the same character, at least as long,
  with nothing after it, closes; an unclosed fence runs to the end of the body. Inline code
  spans are single-line and at most a few thousand characters. Nothing inside code counts as
  a heading, link or tag. Indented (4-space) code blocks are not detected.
* Headings are ATX only (no setext); a closing run of ``#`` is removed only when a space
  precedes it (``# C#`` keeps its ``#``); headings with no text are skipped.
* Wiki links with an empty target (``[[#heading]]``, links into the same note) are skipped;
  ``[[a\\|b]]`` (escaped pipe in a table) works. Embeds ``![[x]]`` and ``![..](x.md)`` are
  links. Markdown link targets must end in ``.md`` (case-insensitive) before any ``#``, must
  not have a URL scheme, and are percent-decoded; reference-style links are not read.
* Dates: a key whose value is null or blank is treated as absent (templates leave
  ``date:`` empty); any other value that is not a date is a ``date`` problem.
* A binary file (NUL in its first 8 KB) keeps only its title (the file stem): no date.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from engram_ls.core.config import EngramConfig
from engram_ls.core.frontmatter import Frontmatter, parse_frontmatter, split_frontmatter
from engram_ls.core.inline import TAG_RE, is_tag_text, parse_iso_day
from engram_ls.core.model import Heading, Link, LinkKind, Note, Problem, Task
from engram_ls.core.properties import note_properties, scalar_text
from engram_ls.core.tasks.grammar import note_tasks

__all__ = [
    "BINARY_SNIFF_BYTES",
    "clean_topic",
    "dedupe_topics",
    "in_code_span",
    "in_fence",
    "mask_code",
    "parse_date_value",
    "parse_note",
]

_UTF8_BOM = b"\xef\xbb\xbf"
BINARY_SNIFF_BYTES = 8192
"""A NUL in the first 8 KB means binary (the parser, and the editors of topics)."""
_MAX_DATE_CHARS = 64

# --- dates -------------------------------------------------------------------------------------

_ISO_START_RE = re.compile(r"[0-9]{4}-?[0-9]{2}")
_FILE_DATE_RE = re.compile(r"(?<![0-9])[0-9]{4}-[0-9]{2}-[0-9]{2}(?![0-9])")
_TIME_DIRECTIVE_RE = re.compile(r"%[HIMSfXcTRr]")

# --- body --------------------------------------------------------------------------------------

_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)
# Every body pattern starts with a literal character so that ``re`` can skip ahead to it;
# the conditions on what precedes that character are lookbehinds placed after it.
_CODE_SPAN_RE = re.compile(r"`(?<!``)(`*)(?!`)[^\n]{1,4000}?(?<!`)`\1(?!`)")
_NON_NEWLINE_RUN_RE = re.compile(r"[^\n]+")
_HEADING_RE = re.compile(r"#(?<![^\n ]#)(#{0,5})[ \t]+([^\n]*)")
LINK_RE = re.compile(
    r"\[(?:\[(?P<wiki>[^\[\]\n]+)\]\]"
    r"|(?P<text>[^\[\]\n]*)\]\(\s*"
    r"(?:<(?P<angle>[^<>\n]+)>|(?P<plain>[^\s()<>]+))"
    r"""(?:\s+(?:"[^"\n]*"|'[^'\n]*'))?\s*\))"""
)
URL_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def parse_note(path: str, data: bytes, config: EngramConfig) -> Note:
    """Parse one note's bytes. Pure; never raises, whatever the bytes.

    ``path`` is the vault-relative POSIX path; its stem is the fallback title and may carry
    the date (``2024-03-05 standup.md``). Only the first ``config.limits.max_note_bytes``
    bytes are read (cut on a character boundary, reported as ``too-large``).
    """
    stem = _stem(path)
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        binary = Problem("binary", "the file contains NUL bytes; only its name is indexed")
        return Note(path=path, title=stem, problems=(binary,))

    problems: list[Problem] = []
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    cap = config.limits.max_note_bytes
    if len(data) > cap:
        cut = _utf8_boundary(data, cap)
        problems.append(
            Problem(
                "too-large",
                f"the note is {len(data)} bytes; only the first {cut} bytes are indexed",
            )
        )
        data = data[:cut]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        problems.append(
            Problem(
                "encoding",
                f"the file is not valid UTF-8 (first bad byte at offset {exc.start}); "
                "undecodable bytes were replaced",
                line=data.count(b"\n", 0, exc.start) + 1,
            )
        )
    if "\r" in text:
        text = text.replace("\r\n", "\n")

    frontmatter: Frontmatter | None = None
    meta: Mapping[Any, Any] = {}
    body, body_line = text, 1
    block = split_frontmatter(text) if text.startswith("---") else None
    if block is not None:
        frontmatter = parse_frontmatter(block)
        problems.extend(frontmatter.problems)
        meta = frontmatter.data
        body, body_line = block.body, block.body_line

    fields = _Fields(meta)
    scan = _scan_body(body, body_line, want_tags=config.inline_tags)

    topics = dedupe_topics(_frontmatter_topics(fields, config.topic_keys), scan.tags)
    created = _note_date(fields, frontmatter, config.date_formats, config.date_keys, problems)
    if created is None:
        created = _date_from_name(stem)

    title, title_line = _title(fields, frontmatter, scan.headings, stem)
    return Note(
        path=path,
        title=title,
        title_line=title_line,
        topics=topics,
        created_at=created[0] if created else None,
        created_ts=created[1] if created else None,
        summary=_summary(fields, config.summary_keys),
        aliases=_aliases(fields),
        headings=scan.headings,
        links=scan.links,
        body=body,
        body_line=body_line,
        problems=tuple(problems),
        properties=note_properties(meta),
        tasks=scan.tasks,
    )


# --- dates -------------------------------------------------------------------------------------


def parse_date_value(value: object, formats: Sequence[str] = ()) -> tuple[str, str | None] | None:
    """Read a date from a frontmatter value: ``(YYYY-MM-DD, ISO timestamp or None)`` or None.

    Accepts YAML ``date`` and ``datetime`` objects, ISO strings (``2024-03-05``,
    ``2024-03-05T10:00:00``, with ``Z`` or an offset, ``2024-03-05 10:00``, also the basic
    ``20240305`` form) and strings matching one of the strftime ``formats``. The
    timestamp is given only when the value has a time of day; it keeps the offset if any.
    Never raises.
    """
    if isinstance(value, dt.datetime):
        return value.date().isoformat(), value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat(), None
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or len(text) > _MAX_DATE_CHARS:
        return None
    day = parse_iso_day(text)
    if day is not None:
        return day.isoformat(), None
    if _ISO_START_RE.match(text):
        try:
            return dt.date.fromisoformat(text).isoformat(), None
        except ValueError:
            pass
        try:
            stamp = dt.datetime.fromisoformat(text)
        except (ValueError, OverflowError):
            pass
        else:
            return stamp.date().isoformat(), stamp.isoformat()
    for fmt in formats:
        try:
            stamp = dt.datetime.strptime(text, fmt)
        except (ValueError, TypeError, OverflowError):
            continue
        if _TIME_DIRECTIVE_RE.search(fmt):
            return stamp.date().isoformat(), stamp.isoformat()
        return stamp.date().isoformat(), None
    return None


def _note_date(
    fields: _Fields,
    frontmatter: Frontmatter | None,
    formats: Sequence[str],
    keys: Sequence[str],
    problems: list[Problem],
) -> tuple[str, str | None] | None:
    for key in keys:
        found = fields.get(key)
        if found is None:
            continue
        actual_key, value = found
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        parsed = parse_date_value(value, formats)
        if parsed is not None:
            return parsed
        line = frontmatter.key_line(actual_key) if frontmatter else None
        shown = frontmatter.raw_value(actual_key) if frontmatter else None
        if not shown:
            shown = value if isinstance(value, str) else f"a {type(value).__name__}"
        if len(shown) > 60:
            shown = shown[:57] + "..."
        problems.append(Problem("date", f"'{actual_key}' is not a date: {shown}", line=line))
    return None


def _date_from_name(stem: str) -> tuple[str, str | None] | None:
    for match in _FILE_DATE_RE.finditer(stem):
        day = parse_iso_day(match.group())
        if day is not None:
            return day.isoformat(), None
    return None


# --- frontmatter fields ------------------------------------------------------------------------


class _Fields:
    """Frontmatter lookup: the exact key first, then the first key equal ignoring case."""

    __slots__ = ("_folded", "_meta")

    def __init__(self, meta: Mapping[Any, Any]) -> None:
        self._meta = meta
        self._folded: dict[str, str] | None = None

    def get(self, key: str) -> tuple[str, Any] | None:
        meta = self._meta
        if not meta:
            return None
        if key in meta:
            return key, meta[key]
        if self._folded is None:
            folded: dict[str, str] = {}
            for name in meta:
                if isinstance(name, str):
                    folded.setdefault(name.casefold(), name)
            self._folded = folded
        actual = self._folded.get(key.casefold())
        return None if actual is None else (actual, meta[actual])


def _title(
    fields: _Fields, frontmatter: Frontmatter | None, headings: Sequence[Heading], stem: str
) -> tuple[str, int]:
    """The note's title and the 1-based line it is written on (``Note.title_line``)."""
    found = fields.get("title")
    if found is not None:
        text = scalar_text(found[1]) if not isinstance(found[1], bool) else None
        if text and text.strip():
            line = frontmatter.key_line(found[0]) if frontmatter is not None else None
            return text.strip(), line or 1
    for heading in headings:
        if heading.level == 1:
            return heading.text, heading.line
    return stem, 1


def _summary(fields: _Fields, keys: Sequence[str]) -> str | None:
    for key in keys:
        found = fields.get(key)
        if found is not None and isinstance(found[1], str) and found[1].strip():
            return found[1].strip()
    return None


_ALIAS_KEYS = ("aliases", "alias")
_MAX_ALIASES = 100


def _values(fields: _Fields, keys: Sequence[str], split: Callable[[str], list[str]]) -> list[str]:
    """The items of the frontmatter ``keys``: a string value cut by ``split``, a list's
    scalars, or one scalar (as text; ``""`` for what has none)."""
    items: list[str] = []
    for key in keys:
        found = fields.get(key)
        if found is None:
            continue
        value = found[1]
        if isinstance(value, str):
            items.extend(split(value))
        elif isinstance(value, list | tuple):
            items.extend(scalar_text(item) or "" for item in value)
        else:
            items.append(scalar_text(value) or "")
    return items


def _aliases(fields: _Fields) -> tuple[str, ...]:
    """Frontmatter ``aliases`` (or ``alias``): a list of scalars, or one string (split on
    commas when it has one, as Obsidian reads it); stripped, empty and repeated names dropped."""
    out: list[str] = []
    seen: set[str] = set()
    for name in _values(fields, _ALIAS_KEYS, lambda value: value.split(",")):
        name = name.strip()
        if name and "\n" not in name and name.casefold() not in seen and len(out) < _MAX_ALIASES:
            seen.add(name.casefold())
            out.append(name)
    return tuple(out)


def _split_topics(value: str) -> list[str]:
    return value.split(",") if "," in value else value.split()


def _frontmatter_topics(fields: _Fields, keys: Sequence[str]) -> list[str]:
    return [clean_topic(item) for item in _values(fields, keys, _split_topics)]


def clean_topic(item: str) -> str:
    """A topic as written, without surrounding space and leading ``#``."""
    return item.strip().lstrip("#").strip()


def dedupe_topics(*groups: Iterable[str]) -> tuple[str, ...]:
    """The topics of ``groups`` in order, empty ones and case-insensitive repeats left out."""
    seen: set[str] = set()
    out: list[str] = []
    for group in groups:
        for topic in group:
            if not topic:
                continue
            key = topic.casefold()
            if key not in seen:
                seen.add(key)
                out.append(topic)
    return tuple(out)


# --- body --------------------------------------------------------------------------------------


class _BodyScan:
    __slots__ = ("headings", "links", "tags", "tasks")

    def __init__(
        self,
        headings: tuple[Heading, ...],
        links: tuple[Link, ...],
        tags: list[str],
        tasks: tuple[Task, ...],
    ) -> None:
        self.headings = headings
        self.links = links
        self.tags = tags
        self.tasks = tasks


def _scan_body(body: str, body_line: int, *, want_tags: bool) -> _BodyScan:
    masked = mask_code(body)
    headings = _headings(body, masked, body_line) if "#" in masked else ()
    links = _links(body, masked, body_line) if "[" in masked else ()
    tags = _inline_tags(masked) if want_tags and "#" in masked else []
    return _BodyScan(headings, links, tags, note_tasks(body, masked, body_line, headings))


def mask_code(body: str) -> str:
    """The body with fenced code and inline code spans blanked (same length, same lines)."""
    masked = body
    if "```" in body or "~~~" in body:
        pieces: list[str] = []
        last = 0
        for start, end in _fenced_ranges(body):
            pieces.append(body[last:start])
            pieces.append(_blank(body[start:end]))
            last = end
        if pieces:
            pieces.append(body[last:])
            masked = "".join(pieces)
    if "`" in masked:
        masked = _CODE_SPAN_RE.sub(_blank_match, masked)
    return masked


def _fenced_ranges(body: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """The fenced code blocks of ``body[start:end]`` as offset ranges (an unclosed one runs
    to ``end``)."""
    stop = len(body) if end is None else end
    ranges: list[tuple[int, int]] = []
    fence_char = ""
    fence_len = 0
    fence_start = 0
    for match in _FENCE_RE.finditer(body, start, stop):
        run, rest = match.group(1), match.group(2)
        if not fence_char:
            if run[0] == "`" and "`" in rest:
                continue  # a backtick fence's info string cannot hold backticks
            fence_char, fence_len, fence_start = run[0], len(run), match.start()
        elif run[0] == fence_char and len(run) >= fence_len and not rest.strip():
            ranges.append((fence_start, match.end()))
            fence_char = ""
    if fence_char:
        ranges.append((fence_start, stop))
    return ranges


def in_fence(text: str, body_start: int, line_end: int) -> bool:
    """Whether the line of ``text`` that ends at offset ``line_end`` is a fence line or lies in
    a fenced code block of the body starting at ``body_start`` (only the body up to the line
    is read)."""
    if text.find("```", body_start, line_end) < 0 and text.find("~~~", body_start, line_end) < 0:
        return False
    line_start = max(text.rfind("\n", body_start, line_end) + 1, body_start)
    if _FENCE_RE.fullmatch(text, line_start, line_end):
        return True
    return any(s <= line_start <= e for s, e in _fenced_ranges(text, body_start, line_end))


def in_code_span(line: str, at: int) -> bool:
    """Whether column ``at`` of ``line`` is in an inline code span (or after a backtick that
    no span closes, where one is still being typed)."""
    if "`" not in line[:at]:
        return False
    spans = [m.span() for m in _CODE_SPAN_RE.finditer(line)]
    if any(s <= at < e for s, e in spans):
        return True
    rest = list(line[:at])
    for s, e in spans:
        if s < at:
            rest[s : min(e, at)] = [" "] * (min(e, at) - s)
    return "`" in rest


def _blank(text: str) -> str:
    return _NON_NEWLINE_RUN_RE.sub(_blank_match, text)


def _blank_match(match: re.Match[str]) -> str:
    return " " * (match.end() - match.start())


def _headings(body: str, masked: str, body_line: int) -> tuple[Heading, ...]:
    out: list[Heading] = []
    line, counted = body_line, 0
    for match in _HEADING_RE.finditer(masked):
        start = match.start()
        line_start = masked.rfind("\n", 0, start) + 1
        if start - line_start > 3 or masked[line_start:start].strip(" "):
            continue  # a '#' in the middle of a line (or indented 4+) is no heading
        text = body[match.start(2) : match.end(2)].rstrip()
        if text[-1:] == "#":
            without_closing = text.rstrip("#")
            if not without_closing or without_closing[-1] in " \t":
                text = without_closing.rstrip()
        text = text.lstrip()
        if text:
            line += masked.count("\n", counted, line_start)
            counted = line_start
            out.append(Heading(len(match.group(1)) + 1, text, line))
    return tuple(out)


def _links(body: str, masked: str, body_line: int) -> tuple[Link, ...]:
    out: list[Link] = []
    line, counted = body_line, 0
    for match in LINK_RE.finditer(masked):
        wiki = match.group("wiki")
        if wiki is not None:
            target, anchor, label = _wiki_parts(wiki)
            kind: LinkKind = "wiki"
        else:
            target, anchor, label = _markdown_parts(match, body)
            kind = "markdown"
        if target:
            start = match.start()
            line += masked.count("\n", counted, start)
            counted = start
            out.append(Link(target, kind, line, anchor, label))
    return tuple(out)


def _wiki_parts(inner: str) -> tuple[str, str | None, str | None]:
    """``target#anchor|alias`` → (target, anchor, alias); an empty target means skip."""
    target, bar, alias = inner.partition("|")
    if bar and target[-1:] == "\\":  # [[a\|b]] inside a table
        target = target[:-1]
    if "#" in target:
        target, _, anchor = target.partition("#")
        return target.strip(), anchor.strip() or None, alias.strip() or None
    return target.strip(), None, alias.strip() or None


def _markdown_parts(match: re.Match[str], body: str) -> tuple[str, str | None, str | None]:
    """Target, anchor and text of a ``[text](path.md#anchor)`` link; empty target: not a note."""
    destination = match.group("plain") or match.group("angle")
    if URL_SCHEME_RE.match(destination):
        return "", None, None
    path, _, anchor = destination.strip().partition("#")
    if path[-3:].lower() != ".md":
        return "", None, None
    label = body[match.start("text") : match.end("text")].strip()
    if "%" in path:
        path = unquote(path)
    if "%" in anchor:
        anchor = unquote(anchor)
    return path, anchor.strip() or None, label or None


def _inline_tags(masked: str) -> list[str]:
    tags: list[str] = []
    for match in TAG_RE.finditer(masked):
        tag = match.group(1).rstrip("/-").lstrip("/")
        if is_tag_text(tag):
            tags.append(tag)
    return tags


# --- bytes -------------------------------------------------------------------------------------


def _stem(path: str) -> str:
    name = path.rpartition("/")[2]
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem else name


def _utf8_boundary(data: bytes, cap: int) -> int:
    """The largest cut ``<= cap`` that does not split a UTF-8 sequence."""
    cut = cap
    # a continuation byte (10xxxxxx) at the cut belongs to a character that started before it
    while cut > 0 and cap - cut < 3 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut

"""Links between notes: where they are in a text, what they point to, how a move rewrites them.

The rules (docs/links.md is the user-facing version):

* A wiki-link ``[[Target]]``, ``[[Target#Heading]]``, ``[[Target|Alias]]`` names a note by:
  its file stem (case-insensitive; a trailing ``.md`` is ignored), else its title, else one of
  its frontmatter ``aliases``. ``[[folder/Target]]`` (a path-qualified link) names the note
  whose vault path, without ``.md``, is ``folder/Target`` or ends with ``/folder/Target`` (any
  case); ``[[./x]]`` and ``[[../x]]`` are relative to the linking note's folder.
* A Markdown link ``[text](rel/path.md#anchor)`` names the note at that path relative to the
  linking note's folder (percent-decoded: ``%20`` is a space), or relative to the vault root
  when it starts with ``/``. A path that leaves the vault is ignored (neither resolved nor
  reported). URLs with a scheme (``https:``, ``mailto:``) are not note links.
* Several notes matching at the first rule that matches: the link is *ambiguous*; none: it
  is *broken*.
* An anchor names a heading of the target: equal ignoring case, or equal as a slug
  (``#my-heading`` for ``## My Heading``); ``^block`` references are not checked.

``link_key`` gives every link one lookup key (the case-folded last path part of the target,
without ``.md``). A note is found by the keys of its stem, title and aliases, so backlinks are an
indexed lookup of those keys followed by resolving each candidate link with the rules above.

Columns in this module are code points of a line; lines are 0-based (``LinkSpan``,
``TextEdit``) unlike the 1-based lines of ``model``. Pure: the index is reached through the
``Lookup`` protocol.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol
from urllib.parse import unquote

from engram_ls.core.frontmatter import split_frontmatter
from engram_ls.core.model import LinkKind
from engram_ls.core.parse import LINK_RE, URL_SCHEME_RE, mask_code

__all__ = [
    "LinkSpan",
    "Lookup",
    "NoteRef",
    "Resolution",
    "Resolver",
    "TextEdit",
    "apply_edits",
    "heading_matches",
    "link_at",
    "link_key",
    "scan_links",
    "stem_key",
]

How = Literal["stem", "path", "title", "alias", "relative", "none", "outside"]

_SLUG_DROP_RE = re.compile(r"[^\w\- ]")
_MD_UNSAFE = frozenset(" ()<>%")


def link_key(target: str) -> str:
    """The lookup key of a link target or of a note name: its last path part, without a
    trailing ``.md``, stripped and case-folded."""
    name = target.strip().rstrip("/").rpartition("/")[2]
    if name[-3:].lower() == ".md":
        name = name[:-3]
    return name.strip().casefold()


def stem_key(path: str) -> str:
    """The lookup key of a note's file name (``a/My Note.md`` → ``my note``)."""
    return link_key(path)


def slug(text: str) -> str:
    """A heading as a GitHub-style anchor: lower case, punctuation dropped, spaces → ``-``."""
    return _SLUG_DROP_RE.sub("", text.strip().casefold()).replace(" ", "-")


def heading_matches(anchor: str, heading: str) -> bool:
    """Whether a link anchor names this heading (same text ignoring case, or same slug)."""
    anchor = anchor.strip()
    return anchor.casefold() == heading.strip().casefold() or slug(anchor) == slug(heading)


def checkable_anchor(anchor: str | None) -> str | None:
    """The heading an anchor names (the last part of ``A#B``), or None for none/block refs."""
    if not anchor:
        return None
    last = anchor.rpartition("#")[2].strip()
    return None if not last or last.startswith("^") else last


# --- finding links in a text -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LinkSpan:
    """One link in a text. ``line`` is 0-based; columns are code points of that line."""

    line: int
    start: int
    end: int
    """The whole link, ``[[...]]`` or ``[text](...)``."""
    target_start: int
    target_end: int
    """The target as written (encoded, without anchor, alias or angle brackets)."""
    kind: LinkKind
    target: str
    """Decoded target (what the index stores)."""
    anchor: str | None
    label: str | None
    raw_target: str
    angle: bool = False
    """A Markdown destination written in ``<...>``."""


def scan_links(text: str) -> list[LinkSpan]:
    """Every note link in a note's text (outside frontmatter and code), in order.

    Finds exactly the links the indexer stores (same patterns), with their positions.
    """
    bom = 1 if text.startswith("\ufeff") else 0
    if bom:
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    body, first_line = text, 0
    if text.startswith("---"):
        block = split_frontmatter(text)
        if block is not None:
            body, first_line = block.body, block.body_line - 1
    if "[" not in body:
        return []
    masked = mask_code(body)
    out: list[LinkSpan] = []
    line, counted, line_start = first_line, 0, 0
    for match in LINK_RE.finditer(masked):
        start = match.start()
        newlines = masked.count("\n", counted, start)
        if newlines:
            line += newlines
            line_start = masked.rfind("\n", 0, start) + 1
        counted = start
        span = _span(match, body, line, line_start)
        if span is not None:
            if bom and span.line == 0:
                span = _shift(span, 1)
            out.append(span)
    return out


def _shift(span: LinkSpan, by: int) -> LinkSpan:
    return LinkSpan(
        span.line,
        span.start + by,
        span.end + by,
        span.target_start + by,
        span.target_end + by,
        span.kind,
        span.target,
        span.anchor,
        span.label,
        span.raw_target,
        span.angle,
    )


def _span(match: re.Match[str], body: str, line: int, line_start: int) -> LinkSpan | None:
    start, end = match.start() - line_start, match.end() - line_start
    if match.group("wiki") is not None:
        inner_start = match.start("wiki")
        inner = body[inner_start : match.end("wiki")]
        target_part, bar, alias = inner.partition("|")
        if bar and target_part[-1:] == "\\":
            target_part = target_part[:-1]
        path_part, _, anchor = target_part.partition("#")
        stripped = path_part.strip()
        if not stripped:
            return None
        t0 = inner_start + (len(path_part) - len(path_part.lstrip()))
        return LinkSpan(
            line,
            start,
            end,
            t0 - line_start,
            t0 - line_start + len(stripped),
            "wiki",
            stripped,
            anchor.strip() or None,
            alias.strip() or None,
            stripped,
        )
    angle = match.group("angle") is not None
    group = "angle" if angle else "plain"
    destination = match.group(group)
    d0 = match.start(group)
    if URL_SCHEME_RE.match(destination):
        return None
    lead = len(destination) - len(destination.lstrip())
    raw_path, _, anchor = destination.strip().partition("#")
    if raw_path[-3:].lower() != ".md":
        return None
    label = body[match.start("text") : match.end("text")].strip()
    path = unquote(raw_path) if "%" in raw_path else raw_path
    if "%" in anchor:
        anchor = unquote(anchor)
    t0 = d0 + lead - line_start
    return LinkSpan(
        line,
        start,
        end,
        t0,
        t0 + len(raw_path),
        "markdown",
        path,
        anchor.strip() or None,
        label or None,
        raw_path,
        angle,
    )


def link_at(text: str, line: int, col: int) -> LinkSpan | None:
    """The link whose span holds (``line``, ``col``), the end included."""
    for span in scan_links(text):
        if span.line == line and span.start <= col <= span.end:
            return span
        if span.line > line:
            break
    return None


# --- resolution --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NoteRef:
    """A note as link features need it."""

    id: int
    path: str
    title: str
    summary: str | None = None
    topics: tuple[str, ...] = ()


class Lookup(Protocol):
    """Index queries the resolver needs (``core/index/links.py`` implements them)."""

    def by_stem(self, key: str) -> list[NoteRef]: ...
    def by_title(self, key: str) -> list[NoteRef]: ...
    def by_alias(self, key: str) -> list[NoteRef]: ...
    def by_path(self, path: str) -> NoteRef | None: ...


@dataclass(frozen=True, slots=True)
class Resolution:
    notes: tuple[NoteRef, ...]
    how: How
    path: str | None = None
    """For path-like links: the vault path the link names (also when no note is there)."""

    @property
    def note(self) -> NoteRef | None:
        return self.notes[0] if len(self.notes) == 1 else None

    @property
    def broken(self) -> bool:
        return not self.notes and self.how != "outside"

    @property
    def ambiguous(self) -> bool:
        return len(self.notes) > 1


def _strip_md(target: str) -> str:
    return target[:-3] if target[-3:].lower() == ".md" else target


def _join(source: str, target: str) -> str | None:
    """``target`` relative to ``source``'s folder (``/x`` from the vault root); None when the
    result leaves the vault."""
    if "\x00" in target or "\\" in target:
        return None
    if target.startswith("/"):
        joined = posixpath.normpath(target.lstrip("/"))
    else:
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), target))
    if joined in (".", "..") or joined.startswith("../") or joined.startswith("/"):
        return None
    return joined


class Resolver:
    """Resolves link targets with one ``Lookup``; remembers answers for its lifetime."""

    def __init__(self, lookup: Lookup) -> None:
        self.lookup = lookup
        self._cache: dict[tuple[str, str, str], Resolution] = {}

    def resolve(self, source: str, kind: LinkKind, target: str) -> Resolution:
        folder = posixpath.dirname(source) if kind == "markdown" or target[:1] == "." else ""
        key = (folder, kind, target)
        found = self._cache.get(key)
        if found is None:
            found = self._resolve(source, kind, target)
            self._cache[key] = found
        return found

    def _by_path(self, path: str, how: How) -> Resolution:
        note = self.lookup.by_path(path)
        if note is None:  # same path in another case
            folded = path.casefold()
            matches = [
                n for n in self.lookup.by_stem(stem_key(path)) if n.path.casefold() == folded
            ]
            return Resolution(tuple(matches), how if matches else "none", path)
        return Resolution((note,), how, path)

    def _resolve(self, source: str, kind: LinkKind, target: str) -> Resolution:
        target = target.strip()
        if kind == "markdown":
            if URL_SCHEME_RE.match(target):
                return Resolution((), "outside")
            path = _join(source, target)
            if path is None:
                return Resolution((), "outside")
            return self._by_path(path, "relative")
        name = _strip_md(target).strip()
        if not name or "\x00" in name:
            return Resolution((), "none")
        if name.startswith(("./", "../")):
            path = _join(source, name + ".md")
            if path is None:
                return Resolution((), "outside")
            return self._by_path(path, "relative")
        lookup = self.lookup
        folded = name.casefold()
        if "/" in name.strip("/"):
            want = folded.strip("/")
            candidates = lookup.by_stem(link_key(name))
            exact = [n for n in candidates if _strip_md(n.path).casefold() == want]
            if exact:
                return Resolution(tuple(exact), "path", exact[0].path)
            suffix = [n for n in candidates if _strip_md(n.path).casefold().endswith("/" + want)]
            if suffix:
                return Resolution(tuple(suffix), "path")
        else:
            folded = folded.strip("/")
            stems = lookup.by_stem(folded)
            if stems:
                return Resolution(tuple(stems), "stem")
        titles = lookup.by_title(folded)
        if titles:
            return Resolution(tuple(titles), "title")
        aliases = lookup.by_alias(folded)
        if aliases:
            return Resolution(tuple(aliases), "alias")
        return Resolution((), "none")


# --- edits -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, order=True)
class TextEdit:
    """Replace ``[start, end)`` (code points) of 0-based ``line`` with ``new_text``."""

    line: int
    start: int
    end: int
    new_text: str


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """``text`` with non-overlapping single-line edits applied (line breaks kept as they are)."""
    lines = text.split("\n")
    for edit in sorted(edits, reverse=True):
        if edit.line >= len(lines):
            continue
        row = lines[edit.line]
        lines[edit.line] = row[: edit.start] + edit.new_text + row[edit.end :]
    return "\n".join(lines)


def encode_md_path(path: str) -> str:
    """A path as a Markdown link destination: spaces, parentheses, ``<>`` and ``%`` encoded."""
    if not any(c in _MD_UNSAFE for c in path):
        return path
    return "".join(f"%{ord(c):02X}" if c in _MD_UNSAFE else c for c in path)


def relative_path(from_note: str, to_note: str) -> str:
    """The path of ``to_note`` relative to ``from_note``'s folder."""
    return posixpath.relpath(to_note, posixpath.dirname(from_note) or ".")


@dataclass(slots=True)
class FileEdits:
    """The edits of one file (named by its path before the move) and the text they apply to."""

    path: str
    text: str
    edits: list[TextEdit] = field(default_factory=list)

    @property
    def new_text(self) -> str:
        return apply_edits(self.text, self.edits)


@dataclass(slots=True)
class MovePlan:
    """What moving notes changes: each moved note (old → new) and the edits of each file."""

    moves: dict[str, str]
    files: list[FileEdits]

    @property
    def links(self) -> int:
        return sum(len(f.edits) for f in self.files)


def new_target(
    span: LinkSpan,
    resolution: Resolution,
    source: str,
    new_source: str,
    new_path: str,
    paths_after: Callable[[str], list[str]],
) -> str | None:
    """The new target text of a link to a note moving to ``new_path``, written from
    ``new_source``; None when the link needs no change."""
    kind = span.kind
    if kind == "markdown":
        if span.raw_target.startswith("/"):
            rel = "/" + new_path
        else:
            rel = relative_path(new_source, new_path)
            if span.raw_target.startswith("./") and not rel.startswith("../"):
                rel = "./" + rel
        if rel == span.target:
            return None
        return rel if span.angle else encode_md_path(rel)
    keep_md = span.target[-3:].lower() == ".md"
    suffix = span.target[-3:] if keep_md else ""
    how = resolution.how
    if how == "relative":
        rel = _strip_md(relative_path(new_source, new_path))
        if not rel.startswith("../"):
            rel = "./" + rel
        if rel == _strip_md(span.target):
            return None
        return rel + suffix
    if how == "stem":
        new_stem = _strip_md(posixpath.basename(new_path))
        if paths_after(stem_key(new_path)) == [new_path]:
            if stem_key(new_path) == link_key(span.target):
                return None
            return new_stem + suffix
        return _strip_md(new_path) + suffix
    if how == "path":
        want = _strip_md(span.target).strip().strip("/").casefold()
        still = [
            p
            for p in paths_after(link_key(span.target))
            if _strip_md(p).casefold() == want or _strip_md(p).casefold().endswith("/" + want)
        ]
        if still == [new_path]:
            return None  # ``[[projects/x]]`` still names it after ``projects`` moved
        return _strip_md(new_path) + suffix
    return None  # by title or alias: a move does not change those


def plan_links(
    moves: dict[str, str],
    sources: Sequence[str],
    read_text: Callable[[str], str | None],
    resolver: Resolver,
    paths_after: Callable[[str], list[str]],
) -> MovePlan:
    """The link edits that keep links working when notes move (``moves``: old → new paths).

    ``sources`` are the notes that may link to a moved note (plus the moved notes, whose own
    relative links move with them); ``read_text`` gives a note's current text (the editor's
    buffer or the file), None to skip it; ``paths_after`` lists the note paths with a stem key
    once the move is done. Resolution uses the state before the move.
    """
    files: list[FileEdits] = []
    for source in sources:
        text = read_text(source)
        if text is None:
            continue
        new_source = moves.get(source, source)
        found = FileEdits(source, text)
        for span in scan_links(text):
            resolution = resolver.resolve(source, span.kind, span.target)
            note = resolution.note
            if note is None:
                continue
            target_moves = note.path in moves
            if not target_moves and new_source == source:
                continue
            new_path = moves.get(note.path, note.path)
            replacement = new_target(span, resolution, source, new_source, new_path, paths_after)
            if replacement is not None and replacement != span.raw_target:
                found.edits.append(
                    TextEdit(span.line, span.target_start, span.target_end, replacement)
                )
        if found.edits:
            files.append(found)
    return MovePlan(dict(moves), files)

"""Immutable domain objects shared by every layer.

Line numbers in the core are 1-based (as ripgrep and people count); the LSP adapter converts
them to 0-based positions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from engram_ls.core.properties import Prop

LinkKind = Literal["wiki", "markdown"]


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int


@dataclass(frozen=True, slots=True)
class Link:
    target: str
    kind: LinkKind
    line: int
    anchor: str | None = None
    label: str | None = None


@dataclass(frozen=True, slots=True)
class Problem:
    """Something wrong with a note that did not stop it from being indexed.

    ``code`` is one of: ``yaml`` (malformed frontmatter), ``frontmatter-type`` (frontmatter is not
    a mapping), ``date`` (a date key whose value does not parse), ``encoding`` (bytes that are not
    UTF-8), ``binary`` (NUL bytes), ``too-large`` (body cut at the configured cap),
    ``unclosed-frontmatter`` (an opening ``---`` with no closing line).
    """

    code: str
    message: str
    line: int | None = None


@dataclass(frozen=True, slots=True)
class Note:
    """Everything the index keeps about one Markdown file."""

    path: str
    """Vault-relative POSIX path, e.g. ``area/2024/note.md``."""
    title: str
    topics: tuple[str, ...] = ()
    """Frontmatter topics then inline tags, deduplicated case-insensitively, first spelling kept."""
    created_at: str | None = None
    """``YYYY-MM-DD`` or None when the note has no parseable date."""
    created_ts: str | None = None
    """Full ISO timestamp when the source gave a time of day."""
    summary: str | None = None
    aliases: tuple[str, ...] = ()
    """Other names of the note (frontmatter ``aliases``/``alias``), for wiki-links."""
    headings: tuple[Heading, ...] = ()
    links: tuple[Link, ...] = ()
    body: str = ""
    """Text after the frontmatter (cut at the configured cap)."""
    body_line: int = 1
    """1-based line of the file on which ``body`` starts."""
    problems: tuple[Problem, ...] = field(default=())
    properties: tuple[Prop, ...] = ()
    """Every frontmatter value, typed (``core.properties``): what ``where`` compares."""

"""A note as the chunks that are embedded: its sections, split at headings, of bounded size.

Each chunk is what one vector stands for. Small neighbouring sections are merged up to
``TARGET_CHARS`` (a note of the generated vault has five short sections: one vector each
would be five times the vectors for little gain), a long one is cut at line ends into pieces
of at most ``MAX_CHARS``, and a note gives at most ``MAX_CHUNKS`` (a 50 MB note costs the
same as a 128 KB one; the rest of it is not embedded). The note's title heads every chunk's
text and its summary the first chunk's, so that a section is found in its note's context.

A chunk's key is the hash of the model's key and the text embedded: unchanged text under the
same model is never embedded twice, whatever note, path or line it moved to.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass

from engram_ls.core.model import Note
from engram_ls.core.search.hits import make_snippet
from engram_ls.core.search.snippet import HEADING, MARKUP, TITLE, line_kind

TARGET_CHARS = 800
MAX_CHARS = 1600
MAX_CHUNKS = 64
SNIPPET_CHARS = 300
_URL = re.compile(r"\(?<?https?://[^\s)>\]]+[)>]?")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True, slots=True)
class Chunk:
    line: int
    """1-based file line where the chunk's text starts."""
    text: str
    """What is embedded: the note's title, then the section's text."""
    snippet: str
    """The chunk's own text as one line of at most ``SNIPPET_CHARS`` (``make_snippet``)."""


def chunk_key(model_key: str, text: str) -> bytes:
    return hashlib.blake2b(f"{model_key}\0{text}".encode(), digest_size=16).digest()


def _sections(note: Note) -> list[tuple[int, list[str]]]:
    """(first file line, lines) of the body before the first heading and of each heading."""
    lines = note.body.split("\n")
    starts = sorted({h.line - note.body_line for h in note.headings if h.line >= note.body_line})
    cuts = [0, *[s for s in starts if 0 < s < len(lines)], len(lines)]
    out: list[tuple[int, list[str]]] = []
    for a, b in itertools.pairwise(cuts):
        part = lines[a:b]
        if any(x.strip() for x in part):
            out.append((note.body_line + a, part))
    return out


def _pieces(first: int, lines: list[str]) -> list[tuple[int, str]]:
    """A section as (line, text) pieces of at most MAX_CHARS, cut at line ends (a line longer
    than that is cut too), fenced code left out, links' addresses dropped."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    size = 0
    start = first
    fenced = False
    for i, raw in enumerate(lines):
        if _FENCE.match(raw):
            fenced = not fenced
            continue
        if fenced:
            continue
        text = (_URL.sub("", raw) if "://" in raw else raw).strip()
        if not text:
            continue
        while text:
            room = MAX_CHARS - size
            if len(text) > room and buf:
                out.append((start, "\n".join(buf)))
                buf, size = [], 0
                continue
            if not buf:
                start = first + i
            take, text = text[:MAX_CHARS], text[MAX_CHARS:]
            buf.append(take)
            size += len(take) + 1
    if buf:
        out.append((start, "\n".join(buf)))
    return out


def _shown(text: str) -> str:
    """What a chunk's snippet shows: its lines but headings and markup (the title and the
    section's heading say where the chunk is, not what it says), else the text as it is."""
    kept = [line for line in text.split("\n") if line_kind(line) not in (TITLE, HEADING, MARKUP)]
    return "\n".join(kept) or text


def chunk_note(note: Note) -> list[Chunk]:
    """The chunks of a note, in file order; a note without text gives one chunk, its title
    (and summary)."""
    pieces: list[tuple[int, str]] = []
    for first, lines in _sections(note):
        for line, text in _pieces(first, lines):
            last = pieces[-1] if pieces else None
            if last is not None and len(last[1]) + len(text) < TARGET_CHARS:
                pieces[-1] = (last[0], last[1] + "\n" + text)
            else:
                pieces.append((line, text))
            if len(pieces) > MAX_CHUNKS:
                break
        if len(pieces) > MAX_CHUNKS:
            break
    pieces = pieces[:MAX_CHUNKS]
    head = note.title.strip()
    summary = (note.summary or "").strip()
    if not pieces:
        text = "\n".join(x for x in (head, summary) if x)
        return [Chunk(line=1, text=text, snippet=make_snippet(summary or head, SNIPPET_CHARS))]
    chunks: list[Chunk] = []
    for n, (line, text) in enumerate(pieces):
        lead = [head, summary] if n == 0 and summary else [head]
        chunks.append(
            Chunk(
                line=line,
                text="\n".join([*lead, text]).strip(),
                snippet=make_snippet(_shown(text), SNIPPET_CHARS),
            )
        )
    return chunks


__all__ = ["MAX_CHARS", "MAX_CHUNKS", "TARGET_CHARS", "Chunk", "chunk_key", "chunk_note"]

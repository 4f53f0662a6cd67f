"""Link navigation over one vault's index: resolve, complete, backlinks, problems, related
notes and move plans. Functions take an open connection (the caller holds a read
transaction) and the vault; ``Engram`` in ``service.py`` wraps them."""

from __future__ import annotations

import posixpath
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engram_ls.core.errors import EngramError, InvalidRequest, NotFound
from engram_ls.core.index.links import LinkQueries, NameMatch
from engram_ls.core.links import (
    LinkSpan,
    MovePlan,
    NoteRef,
    Resolution,
    Resolver,
    checkable_anchor,
    heading_matches,
    link_key,
    plan_links,
    scan_links,
    stem_key,
)
from engram_ls.core.model import LinkKind
from engram_ls.core.vault import Vault

ReadText = Callable[[str], str | None]

MAX_MOVED_NOTES = 20_000
"""A move of more notes than this at once is refused (the edit would be unwieldy)."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where a link goes: the resolution, and the heading's 1-based line when it names one."""

    resolution: Resolution
    heading_line: int | None = None
    heading: str | None = None


@dataclass(frozen=True, slots=True)
class Backlink:
    """A link to a note, at its exact place (0-based line, code-point columns)."""

    source: str
    span: LinkSpan


@dataclass(frozen=True, slots=True)
class LinkProblem:
    span: LinkSpan
    code: str
    """``broken-link``, ``ambiguous-link`` or ``broken-anchor``."""
    message: str
    candidates: tuple[str, ...] = ()
    suggested_path: str | None = None
    """For a broken link: where a new note would make it resolve (vault path), if anywhere."""


def _inside(vault: Vault, notes: Sequence[NoteRef]) -> tuple[NoteRef, ...]:
    ok = vault.inside(n.path for n in notes)
    return tuple(n for n in notes if n.path in ok)


def resolve(
    conn: sqlite3.Connection,
    vault: Vault,
    source: str,
    kind: LinkKind,
    target: str,
    anchor: str | None,
) -> Target:
    queries = LinkQueries(conn)
    found = Resolver(queries).resolve(source, kind, target)
    notes = _inside(vault, found.notes)
    resolution = Resolution(notes, found.how, found.path)
    note = resolution.note
    wanted = checkable_anchor(anchor)
    if note is None or wanted is None:
        return Target(resolution)
    for line, _level, text in queries.headings(note.id):
        if heading_matches(wanted, text):
            return Target(resolution, line, text)
    return Target(resolution)


def complete(
    conn: sqlite3.Connection, vault: Vault, prefix: str, limit: int
) -> tuple[list[NameMatch], bool]:
    """Up to ``limit`` notes named (title, stem or alias) starting with ``prefix``, one entry
    per note, exact names first, then titles, stems, aliases; and whether there are more."""
    key = prefix.strip().casefold()
    found = LinkQueries(conn).complete(key, limit + 1)
    order = {"title": 0, "stem": 1, "alias": 2}
    found.sort(
        key=lambda m: (m.name.casefold() != key, order[m.how], m.name.casefold(), m.note.path)
    )
    seen: set[int] = set()
    out: list[NameMatch] = []
    more = any(sum(1 for m in found if m.how == how) > limit for how in order)
    for match in found:
        if match.note.id in seen:
            continue
        seen.add(match.note.id)
        out.append(match)
    inside = vault.inside(m.note.path for m in out)
    out = [m for m in out if m.note.path in inside]
    if len(out) > limit:
        more = True
        out = out[:limit]
    counts = LinkQueries(conn).stem_counts(stem_key(m.note.path) for m in out)
    named: list[NameMatch] = []
    for m in out:
        stem = m.note.path.rpartition("/")[2][:-3]
        unique = counts.get(stem_key(m.note.path), 0) <= 1
        named.append(NameMatch(m.note, m.name, m.how, stem if unique else m.note.path[:-3]))
    return named, more


def note_headings(conn: sqlite3.Connection, path: str) -> list[tuple[int, int, str]]:
    queries = LinkQueries(conn)
    note = queries.by_path(path)
    return queries.headings(note.id) if note is not None else []


def _names(queries: LinkQueries, note: NoteRef) -> set[str]:
    keys = {stem_key(note.path), link_key(note.title)}
    keys.update(link_key(a) for a in queries.aliases_of(note.id))
    return {k for k in keys if k}


def read_file_text(vault: Vault, rel: str, *, strict: bool = True) -> str | None:
    """A note's text, or None when it cannot be read; when it is not UTF-8, None too with
    ``strict`` (text that is edited and written back: never rewritten), else its bytes
    decoded as the index parsed them (an undecodable byte is U+FFFD), for reading only
    (backlinks, related notes: the index holds such a note's links)."""
    data = vault.read_or_none(rel)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None if strict else data.decode("utf-8", errors="replace")


def backlinks(
    conn: sqlite3.Connection,
    vault: Vault,
    path: str,
    heading: str | None,
    read_text: ReadText,
    limit: int,
) -> list[Backlink]:
    """Links to ``path`` (to its ``heading`` when given), found through the index's link keys
    and confirmed by resolving each link in its note's current text."""
    queries = LinkQueries(conn)
    note = queries.by_path(path)
    if note is None:
        return []
    resolver = Resolver(queries)
    sources = sorted({row.source for row in queries.links_with_keys(_names(queries, note))})
    out: list[Backlink] = []
    for source in sorted(vault.inside(sources)):
        text = read_text(source)
        if text is None:
            continue
        for span in scan_links(text):
            found = resolver.resolve(source, span.kind, span.target).note
            if found is None or found.id != note.id:
                continue
            if heading is not None:
                wanted = checkable_anchor(span.anchor)
                if wanted is None or not heading_matches(wanted, heading):
                    continue
            out.append(Backlink(source, span))
            if len(out) >= limit:
                return out
    return out


def named_headings(links: Sequence[Backlink], headings: Sequence[str]) -> list[int | None]:
    """For each of a note's backlinks (``backlinks`` with no heading), the index in
    ``headings`` of the first heading its anchor names, or None (no anchor, a block ref, or
    no such heading)."""
    out: list[int | None] = []
    for link in links:
        wanted = checkable_anchor(link.span.anchor)
        out.append(
            None
            if wanted is None
            else next((i for i, h in enumerate(headings) if heading_matches(wanted, h)), None)
        )
    return out


@dataclass(frozen=True, slots=True)
class LinkTitle:
    """A wiki link written with a note's file name, and that note's title."""

    span: LinkSpan
    title: str
    path: str


def link_titles(
    conn: sqlite3.Connection, vault: Vault, source: str, spans: Sequence[LinkSpan]
) -> list[LinkTitle]:
    """The titles of the notes that wiki links without a label (``[[2024-01-15 kickoff]]``)
    name by file name or path, where the title says something the link does not (a title
    equal to the link text, ignoring case, is left out); links by title or alias already
    show it."""
    resolver = Resolver(LinkQueries(conn))
    out: list[LinkTitle] = []
    for span in spans:
        if span.kind != "wiki" or span.label:
            continue
        found = resolver.resolve(source, span.kind, span.target)
        if found.how not in ("stem", "path"):
            continue
        notes = _inside(vault, found.notes)
        if len(notes) != 1:
            continue
        title = notes[0].title.strip()
        shown = span.target.strip().rpartition("/")[2]
        if shown[-3:].lower() == ".md":
            shown = shown[:-3]
        if title and title.casefold() != shown.casefold():
            out.append(LinkTitle(span, title, notes[0].path))
    return out


def _suggested_path(
    vault: Vault, source: str, span: LinkSpan, resolution: Resolution
) -> str | None:
    if span.kind == "markdown" or resolution.how == "relative":
        path = resolution.path
    else:
        name = span.target.strip().strip("/")
        if name[-3:].lower() == ".md":
            name = name[:-3]
        if "/" in name:
            path = name + ".md"
        else:
            folder = posixpath.dirname(source)
            path = f"{folder}/{name}.md" if folder else f"{name}.md"
    if path is None:
        return None
    try:
        rel = vault.rel(path)
    except EngramError:
        return None
    if not rel or not vault.filter.is_note(rel) or not vault.contains(rel):
        return None
    return rel


def problems(conn: sqlite3.Connection, vault: Vault, source: str, text: str) -> list[LinkProblem]:
    """Broken, ambiguous and anchor-less links of one note's text (links leaving the vault and
    URLs are ignored)."""
    queries = LinkQueries(conn)
    resolver = Resolver(queries)
    headings: dict[int, list[tuple[int, int, str]]] = {}
    out: list[LinkProblem] = []
    for span in scan_links(text):
        found = resolver.resolve(source, span.kind, span.target)
        if found.how == "outside":
            continue
        notes = _inside(vault, found.notes)
        if not notes:
            shown = span.target
            out.append(
                LinkProblem(
                    span,
                    "broken-link",
                    f"no note named {shown!r}" if span.kind == "wiki" else f"no note at {shown!r}",
                    suggested_path=_suggested_path(vault, source, span, found),
                )
            )
        elif len(notes) > 1:
            paths = tuple(n.path for n in notes)
            listed = ", ".join(paths[:5]) + (", …" if len(paths) > 5 else "")
            out.append(
                LinkProblem(
                    span,
                    "ambiguous-link",
                    f"{span.target!r} names {len(paths)} notes: {listed}",
                    candidates=paths,
                )
            )
        else:
            wanted = checkable_anchor(span.anchor)
            if wanted is None:
                continue
            note = notes[0]
            if note.id not in headings:
                headings[note.id] = queries.headings(note.id)
            if not any(heading_matches(wanted, h[2]) for h in headings[note.id]):
                out.append(
                    LinkProblem(span, "broken-anchor", f"{note.path} has no heading {wanted!r}")
                )
    return out


def related(
    conn: sqlite3.Connection, vault: Vault, path: str, read_text: ReadText, limit: int
) -> dict[str, Any]:
    """Outgoing links, backlinks and notes sharing topics of one note."""
    queries = LinkQueries(conn)
    note = queries.by_path(path)
    if note is None:
        raise NotFound(f"no such note in the index: {path}", data={"path": path})
    resolver = Resolver(queries)
    outgoing: list[dict[str, Any]] = []
    for row in queries.outgoing(note.id)[: limit * 4]:
        kind: LinkKind = "wiki" if row.kind == "wiki" else "markdown"
        found = resolver.resolve(path, kind, row.target)
        if found.how == "outside":
            continue
        notes = _inside(vault, found.notes)
        target = notes[0] if len(notes) == 1 else None
        outgoing.append(
            {
                "target": row.target,
                "anchor": row.anchor,
                "line": row.line,
                "path": target.path if target else None,
                "title": target.title if target else None,
                "status": "ok" if target else ("ambiguous" if notes else "broken"),
            }
        )
        if len(outgoing) >= limit:
            break
    back = backlinks(conn, vault, path, None, read_text, limit * 4)
    incoming: list[dict[str, Any]] = []
    seen: set[str] = set()
    titles: dict[str, str] = {}
    for link in back:
        if link.source in seen:
            continue
        seen.add(link.source)
        ref = queries.by_path(link.source)
        titles[link.source] = ref.title if ref else link.source
        incoming.append(
            {"path": link.source, "title": titles[link.source], "line": link.span.line + 1}
        )
        if len(incoming) >= limit:
            break
    sharing = [
        {"path": ref.path, "title": ref.title, "shared_topics": shared}
        for ref, shared in queries.sharing_topics(note.id, limit)
        if ref.path in vault.inside([ref.path])
    ]
    return {
        "path": note.path,
        "title": note.title,
        "topics": list(note.topics),
        "outgoing": outgoing,
        "backlinks": incoming,
        "sharing_topics": sharing,
    }


def expand_moves(
    conn: sqlite3.Connection, vault: Vault, moves: Sequence[tuple[str, str]]
) -> dict[str, str]:
    """Note-level moves (old → new vault paths) for moves of notes or folders."""
    queries = LinkQueries(conn)
    out: dict[str, str] = {}
    for old_raw, new_raw in moves:
        old, new = vault.rel(old_raw), vault.rel(new_raw)
        if not old or not new:
            raise InvalidRequest("a move needs a note or folder of the vault, not its root")
        if old == new:
            continue
        if queries.by_path(old) is not None:
            if not vault.filter.is_note(new):
                raise InvalidRequest(
                    f"{new} is not a note path (a .md file, not hidden or excluded)",
                    data={"path": new},
                )
            out[old] = new
            continue
        if new == old or new.startswith(old + "/"):
            raise InvalidRequest(f"cannot move {old} into itself", data={"path": new})
        notes = queries.under(old)
        if not notes:
            if vault.abs(old).exists():
                continue  # a folder without notes, or a file that is not a note
            raise NotFound(f"no note or folder {old} in the vault", data={"path": old})
        for note in notes:
            out[note.path] = new + note.path[len(old) :]
        if len(out) > MAX_MOVED_NOTES:
            raise InvalidRequest(f"more than {MAX_MOVED_NOTES} notes move at once")
    return out


def plan_move(
    conn: sqlite3.Connection, vault: Vault, moves: dict[str, str], read_text: ReadText
) -> MovePlan:
    """The link edits that keep every link to and from the moved notes working."""
    queries = LinkQueries(conn)
    keys: set[str] = set()
    moved_refs: list[NoteRef] = []
    for old in moves:
        note = queries.by_path(old)
        if note is not None:
            moved_refs.append(note)
            keys |= _names(queries, note)
    sources = {row.source for row in queries.links_with_keys(keys)}
    sources |= set(moves)
    staying = sorted(vault.inside(sources))
    new_stems: dict[str, list[str]] = {}
    for new in moves.values():
        new_stems.setdefault(stem_key(new), []).append(new)

    def paths_after(key: str) -> list[str]:
        others = [n.path for n in queries.by_stem(key) if n.path not in moves]
        return sorted(others + new_stems.get(key, []))

    return plan_links(moves, staying, read_text, Resolver(queries), paths_after)


def fuse_related(found: dict[str, Any], limit: int) -> list[dict[str, Any]]:
    """One ranking of a note's neighbours from ``related`` and ``similar``: reciprocal rank
    fusion (``hits.fuse_ranks``, with hybrid search's ``RRF_K``) of its links (in the order it
    makes them), its backlinks and the notes nearest it by meaning, each hit naming why
    (``reasons``: ``link``, ``backlink``, ``meaning``), its line (where to open it) and a
    snippet; ``score`` in [0, 1] (1: first in all three)."""
    from engram_ls.core.search.hits import fuse_ranks
    from engram_ls.core.search.semantic_path import RRF_K

    lists = {
        "link": [str(o["path"]) for o in found.get("outgoing", []) if o.get("path")],
        "backlink": [str(b["path"]) for b in found.get("backlinks", [])],
        "meaning": [str(m["path"]) for m in found.get("similar", [])],
    }
    titles: dict[str, str] = {}
    for kind in ("outgoing", "backlinks", "similar"):
        for item in found.get(kind, []):
            if item.get("path") and item.get("title"):
                titles.setdefault(str(item["path"]), str(item["title"]))
    near = {str(m["path"]): m for m in found.get("similar", [])}
    out: list[dict[str, Any]] = []
    for path, score in fuse_ranks(list(lists.values()), RRF_K)[:limit]:
        meaning = near.get(path, {})
        out.append(
            {
                "path": path,
                "title": titles.get(path, path),
                "score": round(score, 4),
                "line": meaning.get("line", 1),
                "snippet": meaning.get("snippet", ""),
                "reasons": [reason for reason, paths in lists.items() if path in paths],
            }
        )
    return out

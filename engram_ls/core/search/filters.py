"""The filters of a search plan as SQL pieces over the index (``Filters``), with the topics'
names resolved to their ids (``resolve``): what the text, literal, listing and semantic
answers of the index path share."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from engram_ls.core.globs import compile_glob, is_glob
from engram_ls.core.index.rows import folder_range
from engram_ls.core.index.snapshot_cache import Memo
from engram_ls.core.search.plan import Plan, TopicKey
from engram_ls.core.search.where import All, AnyOf, condition
from engram_ls.core.search.where_bits import LISTED, NEWEST_FIRST, NoteBits, evaluate

NESTED_AS_WHERE = 32
"""A topic with up to this many nested under it is filtered as their united bitmaps."""

LAST_DAY = "9999-12-31"
FIRST_DAY = "0000-01-01"


@dataclass(slots=True)
class Filters:
    """The filters of a plan as SQL pieces."""

    driver: int | None
    """Topic id whose ``note_topics`` rows drive the query (None: drive from ``notes``)."""
    any_ids: list[int]
    """For ``any`` with several topics: the topic ids (drive from their union)."""
    all_others: list[list[int]]
    """For ``all``: the other topics a note must have, each with those nested under it (a
    note needs one of each list)."""
    exclude: list[int]
    date_lo: str | None
    date_hi: str | None
    path_kind: str | None
    path: str | None
    where: NoteBits | None = None
    """The notes passing the ``where`` conditions (checked in SQL by ``engram_where(id)``,
    which the searcher registers)."""
    sizes: dict[int, int] = field(default_factory=dict)
    """Notes of each topic of the filter, by topic id."""

    @property
    def only_where(self) -> bool:
        """Whether the ``where`` conditions are the only filter."""
        return self.where is not None and dataclasses.replace(self, where=None).empty

    @property
    def empty(self) -> bool:
        return (
            self.driver is None
            and not self.any_ids
            and not self.exclude
            and self.date_lo is None
            and self.path is None
            and self.where is None
        )

    def note_conditions(
        self,
        alias: str = "n",
        *,
        dates: bool = True,
        note_id: str | None = None,
        properties: bool = True,
    ) -> tuple[list[str], list[Any]]:
        """Conditions on a ``notes`` row for everything but the driving topic.

        ``note_id`` is the SQL expression of the note's id for the topic conditions (default
        ``{alias}.id``), so that they can be checked without reading the notes row; without
        ``properties``, the ``where`` conditions are left to the caller.
        """
        nid = note_id or f"{alias}.id"
        where: list[str] = []
        params: list[Any] = []
        if dates and self.date_lo is not None:
            where.append(f"{alias}.created_at >= ? AND {alias}.created_at <= ?")
            params += [self.date_lo, self.date_hi]
        if self.path is not None:
            sql, more = path_condition(f"{alias}.path", self.path, self.path_kind)
            where.append(sql)
            params += more
        for group in self.all_others:
            marks = ",".join("?" * len(group))
            where.append(
                f"EXISTS (SELECT 1 FROM note_topics x WHERE x.note_id = {nid}"
                f" AND x.topic_id IN ({marks}))"
            )
            params += group
        if self.exclude:
            marks = ",".join("?" * len(self.exclude))
            where.append(
                f"NOT EXISTS (SELECT 1 FROM note_topics x WHERE x.note_id = {nid}"
                f" AND x.topic_id IN ({marks}))"
            )
            params += self.exclude
        if self.where is not None and properties:
            where.append(f"engram_where({nid})")
        return where, params

    def topic_conditions(self, alias: str = "n") -> tuple[list[str], list[Any]]:
        """All conditions on a ``notes`` row, the topic filter included (for row probes)."""
        where, params = self.note_conditions(alias)
        ids = [self.driver] if self.driver is not None else self.any_ids
        if ids:
            marks = ",".join("?" * len(ids))
            where.insert(
                0,
                f"EXISTS (SELECT 1 FROM note_topics t WHERE t.note_id = {alias}.id"
                f" AND t.topic_id IN ({marks}))",
            )
            params = [*ids, *params]
        return where, params

    def ids_query(self, ordered: bool) -> tuple[str, list[Any]]:
        """SQL selecting matching note ids (``id``, ``day`` columns), newest first if ordered."""
        if self.driver is not None or self.any_ids:
            # Dates are bounded on note_topics' key and topic probes use its note id: only a
            # path scope needs the notes row.
            where, params = self.note_conditions("n", dates=False, note_id="nt.note_id")
            conds = []
            p: list[Any] = []
            if self.driver is not None:
                conds.append("nt.topic_id = ?")
                p.append(self.driver)
            else:
                conds.append(f"nt.topic_id IN ({','.join('?' * len(self.any_ids))})")
                p += self.any_ids
            if self.date_lo is not None:
                conds.append("nt.created_at >= ? AND nt.created_at <= ?")
                p += [self.date_lo, self.date_hi]
            needs_note = self.path is not None
            join = " JOIN notes n ON n.id = nt.note_id" if needs_note else ""
            all_where = " AND ".join(conds + where)
            if self.driver is not None:
                sql = f"SELECT nt.note_id AS id, nt.created_at AS day FROM note_topics nt{join}"
                sql += f" WHERE {all_where}"
                if ordered:
                    sql += " ORDER BY nt.created_at DESC, nt.note_id DESC"
            else:
                sql = (
                    "SELECT nt.note_id AS id, max(nt.created_at) AS day FROM note_topics nt"
                    f"{join} WHERE {all_where} GROUP BY nt.note_id"
                )
                if ordered:
                    sql += " ORDER BY day DESC, id DESC"
            return sql, p + params
        if self.where is not None and self.only_where:
            # The notes of the conditions drive, listed (the bitmap's ids).
            sql = LISTED + (NEWEST_FIRST if ordered else "")
            return sql, [json.dumps(self.where.ids())]
        where, params = self.note_conditions("n")
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        sql = f"SELECT n.id AS id, coalesce(n.created_at, '') AS day FROM notes n{clause}"
        if ordered:
            sql += " ORDER BY n.created_at DESC, n.id DESC"
        return sql, params


def path_condition(column: str, scope: str, kind: str | None) -> tuple[str, list[Any]]:
    """SQL of ``plan.in_scope``: ``column`` (a notes path) in the folder or note ``scope``,
    or matching the glob (``engram_glob``: ``register_glob``)."""
    if kind == "glob":
        folder = folder_of_glob(scope)
        if folder == "":  # `**`: every path
            return "1", []
        if folder is not None:  # `FOLDER/**`: every path under FOLDER/, one range of the index
            return f"{column} >= ? AND {column} < ?", [folder + "/", folder + "0"]
        return f"engram_glob(?, {column})", [scope]
    # One range of the paths' index (the note, and every path under the folder, sort between
    # the scope and the scope followed by '0', the character after '/'), then the exact test.
    return (
        f"{column} >= ? AND {column} < ? AND ({column} = ? OR substr({column}, ?, 1) = '/')",
        [scope, scope + "0", scope, len(scope) + 1],
    )


def folder_of_glob(pattern: str) -> str | None:
    """The folder whose every path a glob matches and nothing else: ``""`` for ``**``, ``a/b``
    for ``a/b/**`` (no glob character, backslash or empty part before ``/**``); None for any
    other glob. Such a glob is a range of the paths' index, where ``engram_glob`` would test
    every note (100 ms at 100,000 notes)."""
    if pattern == "**":
        return ""
    folder = pattern.removesuffix("/**")
    if folder == pattern or not folder or is_glob(folder) or "\\" in folder:
        return None
    if any(part in ("", ".", "..") for part in folder.split("/")):
        return None
    return folder


def register_glob(conn: sqlite3.Connection) -> None:
    """``engram_glob(pattern, path)``, which ``path_condition`` calls for a glob."""
    conn.create_function("engram_glob", 2, _glob_match, deterministic=True)


def _glob_match(pattern: str, path: str) -> int:
    return 1 if compile_glob(pattern).match(path) else 0


def resolve(
    conn: sqlite3.Connection, plan: Plan, where_sets: Memo[Hashable, int] | None = None
) -> Filters | None:
    """The plan's filters, topic names resolved to ids and the ``where`` tree to its notes (its
    conditions' bitmaps kept in ``where_sets`` for the index state); None when they can match
    nothing."""

    keys: dict[int, str] = {}

    def ids(t: TopicKey) -> list[tuple[int, int]]:
        """(id, notes) of the topic and, unless exact, of those nested under it."""
        sql = "SELECT id, notes, key FROM topics WHERE key = ?"
        params = [t.key]
        if not t.exact:
            sql += " OR (key >= ? AND key < ?)"
            params += list(folder_range(t.key))  # key/...: the same bounds as a folder's
        found = [(int(i), int(n), str(k)) for i, n, k in conn.execute(sql, params)]
        keys.update((i, k) for i, _, k in found)
        return [(i, n) for i, n, _ in found]

    inc = [ids(t) for t in plan.include]
    exc = [found for t in plan.exclude for found in ids(t)]
    driver: int | None = None
    any_ids: list[int] = []
    others: list[list[int]] = []
    if plan.include:
        groups = inc if plan.tags_all else [list(dict.fromkeys(x for g in inc for x in g))]
        if not all(groups):
            return None
        # The group of the fewest notes drives; one topic drives from its own rows.
        groups.sort(key=lambda g: sum(n for _, n in g))
        tree = plan.where
        if len(groups[0]) == 1:
            driver = groups[0][0][0]
        elif (
            not plan.tags_all
            and len(groups[0]) <= NESTED_AS_WHERE
            and all(len(keys[i]) < 500 for i, _ in groups[0])
        ):
            # A topic and those nested under it: their notes' bitmaps, united (kept for the
            # index state, and paged from the notes in date order) instead of grouping their
            # note_topics rows by note on each search.
            group = AnyOf(tuple(condition("file.tags", "=", keys[i]) for i, _ in groups[0]))
            tree = group if tree is None else All((tree, group))
        else:
            any_ids = [i for i, _ in groups[0]]
        others = [[i for i, _ in g] for g in groups[1:]]
    else:
        tree = plan.where
    where = None
    if tree is not None:
        where = evaluate(conn, tree, where_sets)
        if not where.bits:
            return None
    has_dates = plan.date_from is not None or plan.date_to is not None
    return Filters(
        driver=driver,
        any_ids=any_ids,
        all_others=others,
        exclude=list(dict.fromkeys(i for i, _ in exc)),
        date_lo=(plan.date_from or FIRST_DAY) if has_dates else None,
        date_hi=(plan.date_to or LAST_DAY) if has_dates else None,
        path_kind=plan.path_kind,
        path=plan.path,
        where=where,
        sizes={i: n for i, n in [*(x for g in inc for x in g), *exc]},
    )


__all__ = ["FIRST_DAY", "LAST_DAY", "Filters", "path_condition", "register_glob", "resolve"]

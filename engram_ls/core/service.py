"""The vault service: one vault, its index, sync and search, as every front end uses them.

Front ends (CLI, language server, MCP server) hold an ``Engram`` and call ``sync``,
``apply_changes``, ``search``, ``status`` and ``topics``. A missing, damaged or locked index
never stops a search: it is answered by scanning the files and says so (``served_by: scan``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from engram_ls.core import navigation as nav
from engram_ls.core.bases.query import query as bases_query
from engram_ls.core.config import CONFIG_DIR, INDEX_FILE, EngramConfig, load_config
from engram_ls.core.errors import (
    EngramError,
    IndexStale,
    IndexUnavailable,
    InvalidRequest,
    NotFound,
    SearchTimeout,
)
from engram_ls.core.git import GitRevision
from engram_ls.core.health import IndexHealth, Reading
from engram_ls.core.index import db, prop_stats
from engram_ls.core.index import symbols as sym
from engram_ls.core.index.links import NameMatch, title_lines
from engram_ls.core.index.paths import PathChoices, path_choices
from engram_ls.core.index.prop_stats import PropertyCount, ValueCount
from engram_ls.core.index.store import Index, IndexStatus
from engram_ls.core.index.symbol_match import TOPIC_READ_BYTES, SymbolHit, topic_line
from engram_ls.core.librarian import add_topics_to_file
from engram_ls.core.links import LinkSpan, MovePlan
from engram_ls.core.model import LinkKind, Note
from engram_ls.core.search import (
    IndexInfo,
    SearchRequest,
    SearchResponse,
    make_plan,
    parse_request,
    require_text,
)
from engram_ls.core.search.index_path import IndexSearcher
from engram_ls.core.search.request import SEMANTIC_MODES
from engram_ls.core.search.scan_path import ScanSearcher
from engram_ls.core.search.semantic_path import SemanticSearcher, similar_notes
from engram_ls.core.semantic.engine import EmbedReport, Semantic
from engram_ls.core.sync import Change, ProgressFn, Syncer, SyncReport, read_note
from engram_ls.core.tasks.edit import toggle_task
from engram_ls.core.tasks.query import query_tasks, task_symbols
from engram_ls.core.topic_edit import TopicEdit
from engram_ls.core.vault import Vault

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class TopicCount:
    name: str
    notes: int
    nested: int
    """Notes that have the topic or a topic nested under it (``a/b`` under ``a``): what a tag
    filter ``a`` passes."""


@dataclass(frozen=True, slots=True)
class Indexed:
    """How a note that the service wrote reached the index. The note is on disk either way;
    ``indexed`` is False when the index could not take it yet (full disk, lock held too long):
    ``warning`` says so, and the index, marked behind, catches up (searches scan meanwhile)."""

    generation: int
    indexed: bool
    warning: str | None = None


SEARCHES_S = 0.2
"""A search this recent means more may come: a background embedding pass waits."""


def default_index_path(root: Path, config: EngramConfig) -> Path:
    env = os.environ.get("ENGRAM_INDEX")
    if env:
        return Path(env).expanduser()
    if config.index_path:
        p = Path(config.index_path).expanduser()
        return p if p.is_absolute() else root / p
    return root / CONFIG_DIR / INDEX_FILE


class Engram:
    """One vault and its index."""

    def __init__(
        self,
        root: Path,
        *,
        config: EngramConfig | None = None,
        index_path: Path | None = None,
        read_only: bool = False,
    ) -> None:
        """``read_only``: answer from the index file as it is, never create or write it
        (a missing or unusable one means answers by scanning, and writes raise)."""
        self.config_warnings: list[str] = []
        if config is None:
            config, self.config_warnings = load_config(Path(root))
        self.config = config
        self.vault = Vault(Path(root), config)
        self.index = Index(
            index_path or default_index_path(self.vault.root, config), read_only=read_only
        )
        self.syncer = Syncer(self.vault, self.index)
        self.health = IndexHealth(self.index, self.vault.root)
        """Opened, unavailable, behind; every read and write of the index goes through it."""
        self.semantic = Semantic(self.vault.root, config, self.health, read_note)
        """Search by meaning: the model, the embedding passes (``embed``), their status."""
        self.revision = GitRevision(self.vault.root)
        """The vault's git revision, in every status and search answer."""
        self.last_search = 0.0
        """``time.monotonic()`` of the last search (background checks wait for a quiet time)."""
        self.semantic.busy = lambda: time.monotonic() - self.last_search < SEARCHES_S

    @property
    def unavailable(self) -> str | None:
        """Why the index cannot be used right now (None when it can)."""
        return self.health.unavailable

    @property
    def behind(self) -> str | None:
        """Why the index may be missing changes (None when it is not); see ``IndexHealth``."""
        return self.health.behind

    @property
    def readable(self) -> bool:
        """Whether reads may use the index (see ``IndexHealth.readable``)."""
        return self.health.readable

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        """Open (or create, or replace a damaged) index. Never raises: failures mean scan."""
        self.health.open()

    def close(self) -> None:
        self.semantic.close()
        self.index.close()

    def __enter__(self) -> Engram:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sync ------------------------------------------------------------------------------

    def sync(
        self, *, full: bool = False, progress: ProgressFn | None = None, workers: int | None = None
    ) -> SyncReport:
        """Reconcile the index with the vault (builds or resumes a build when needed)."""

        def work() -> SyncReport:
            self.syncer.start_workers(full=full, workers=workers)
            try:
                return self.syncer.reconcile(full=full, progress=progress, workers=workers)
            finally:
                self.syncer.stop_workers()

        return self._writing(work, reconcile=True)

    def apply_changes(self, changes: Sequence[Change]) -> SyncReport:
        """Apply one batch of changes; after a failed write, reconcile the whole vault instead
        (the batch's files are on disk, so the reconcile covers them too)."""
        return self._writing(lambda: self.syncer.apply_changes(changes))

    def catch_up(self) -> SyncReport | None:
        """Reconcile if the index may be missing changes (``behind``) or could not be opened;
        None when it is up to date. Front ends call it on a back-off timer after a failure."""
        if self.behind is None and self.readable:
            return None
        return self.sync()

    def _writing(self, work: Callable[[], SyncReport], *, reconcile: bool = False) -> SyncReport:
        return self.health.write(work, self.syncer.reconcile, whole=reconcile)

    # -- reading ---------------------------------------------------------------------------

    def _vault_present(self) -> None:
        if not self.vault.root.is_dir():
            raise NotFound(
                f"vault folder does not exist: {self.vault.root}",
                data={"path": str(self.vault.root)},
            )

    def status(self) -> IndexStatus:
        """The index's state; ``stale`` while it is missing changes (a write failed and the
        catch-up has not finished), as searches, which scan meanwhile, report it too; with
        the vault's git revision (``source_revision``)."""
        st = self.health.status()
        semantic = self._semantic_status(st)
        return dataclasses.replace(
            st,
            source_revision=self.revision.current(),
            semantic=semantic,
            capabilities={
                "semantic": semantic.available,
                "model": semantic.model,
                "dims": semantic.dims,
            },
        )

    def _semantic_status(self, st: IndexStatus) -> Any:
        if st.state in ("ready", "stale"):
            with self.health.reading() as r:
                if r.read:
                    return self.semantic.status(r.conn)
        return self.semantic.status(None)

    def _by_meaning(self, r: Reading, searcher: IndexSearcher) -> SemanticSearcher:
        """The semantic searcher of one read of the index (``r`` servable)."""
        st = r.status
        state = (self.index.opened_file(), st.generation if st else 0)
        return SemanticSearcher(r.conn, searcher, self.semantic, state, st.notes if st else 0)

    def prepare_semantic(self) -> None:
        """Read into memory now what searches by meaning read again and again: the chunks'
        codes (1.4 s at 100,000 notes), the notes' dates and the large topics' sets in use, so
        that the first search by meaning does not wait for the one and the first with dates or
        such a topic after a change does not list its notes in SQL: the servers call it after
        each pass (a one-off search, the CLI's, never does)."""
        with self.health.reading() as r:
            if r.servable:
                searcher = IndexSearcher(
                    r.conn, self.vault, self.config, topic_notes=self.index.topic_notes
                )
                self._by_meaning(r, searcher).prepare()

    def embed(
        self, *, progress: ProgressFn | None = None, stop: threading.Event | None = None
    ) -> EmbedReport:
        """Embed the notes whose chunks are missing or out of date (``Semantic.embed_pending``):
        the background work of the servers, and of ``engram index``."""
        return self.semantic.embed_pending(progress=progress, stop=stop)

    def verify(self) -> tuple[str, str] | None:
        """Check the whole index file and answer damage found (``IndexHealth.verify``):
        (reason, what was found), or None when it is intact or cannot be checked now."""
        return self.health.verify()

    def read_note(self, rel: str) -> Note | None:
        """Parse one note from disk (used by the scan path)."""
        parsed = read_note(os.fspath(self.vault.root), rel, self.config)
        return parsed[2] if parsed else None

    def search(
        self,
        request: SearchRequest | Mapping[str, Any],
        *,
        cancel: threading.Event | None = None,
    ) -> SearchResponse:
        t0 = time.perf_counter()
        self.last_search = time.monotonic()
        req = parse_request(request)
        self._vault_present()
        plan = make_plan(req, self.vault, self.config, cancel)
        by_meaning = plan.mode in SEMANTIC_MODES and bool(plan.query.strip())
        if by_meaning:
            self.semantic.model()  # UnsupportedMode (with the install command) when it cannot
            if not self.index.read_only:
                self.semantic.catch_up()
        served: IndexInfo | None = None
        hits: list[Any] = []
        total = 0
        try:
            with self.health.reading(fresh=True, cancel=plan.cancel, deadline=plan.deadline) as r:
                if r.servable:
                    self._fresh_enough(req, r.status)
                    searcher = IndexSearcher(
                        r.conn,
                        self.vault,
                        self.config,
                        postings=self.index.postings,
                        topic_notes=self.index.topic_notes,
                        topic_names=self.index.topic_names,
                        where_sets=self.index.where_sets,
                    )
                    coverage = None
                    if by_meaning:
                        meaning = self._by_meaning(r, searcher)
                        hits, total = meaning.run(plan)
                        coverage = meaning.coverage()
                    else:
                        hits, total = searcher.run(plan)
                    served = dataclasses.replace(r.served(searcher.served_by), semantic=coverage)
        except db.Interrupted:
            plan.check()
            raise SearchTimeout("the search ran past its deadline") from None
        if served is None:
            served = r.served("scan")
            if req.require_index:
                raise self._cannot_serve(served, r)
            if by_meaning:
                raise r.unavailable(f"a {plan.mode} search needs the index (it has the vectors)")
            hits, total = ScanSearcher(self.vault, self.config, self.read_note).run(plan)
        return SearchResponse(
            results=hits,
            total=total,
            truncated=total > plan.offset + len(hits),
            index=dataclasses.replace(served, source_revision=self.revision.current()),
            elapsed_ms=(time.perf_counter() - t0) * 1000,
        )

    def _fresh_enough(self, req: SearchRequest, status: IndexStatus | None) -> None:
        """IndexStale when ``req.max_staleness_ms`` is given and the index was last in line
        with the files longer ago (or when that is not known)."""
        if req.max_staleness_ms is None or status is None:
            return
        age = self.health.sync_age_ms(status)
        if age is None or age > req.max_staleness_ms:
            said = "never" if age is None else f"{age:.0f} ms ago"
            raise IndexStale(
                f"the index was last in line with the files {said}; the request allows"
                f" {req.max_staleness_ms} ms",
                data={
                    "state": status.state,
                    "staleness_ms": None if age is None else round(age),
                    "max_staleness_ms": req.max_staleness_ms,
                },
            )

    def _cannot_serve(self, served: IndexInfo, r: Reading) -> IndexStale:
        """The error of a ``require_index`` request that only a scan could answer."""
        if r.error is None and self.readable and self.behind is not None:
            why = f"it may be missing changes: {self.behind}"
        elif r.error is None and r.status is not None:
            why = f"it is {r.status.state}"
        else:
            why = r.unavailable().message
        return IndexStale(
            f"the index cannot answer ({why}) and require_index forbids scanning the files",
            data={"state": served.state},
        )

    def query(self, **kw: Any) -> dict[str, Any]:
        """One view of an Obsidian base, from the index (``core.bases.query.query``)."""
        return bases_query(self, **kw)

    def tasks(self, request: Any, *, today: dt.date | None = None) -> dict[str, Any]:
        """The tasks a request asks for (``core.tasks.query.query_tasks``)."""
        return query_tasks(self, request, today=today)

    def toggle_task(self, path: str, line: int, **kw: Any) -> dict[str, Any]:
        """Mark a task done or not done on disk (``core.tasks.edit.toggle_task``)."""
        return toggle_task(self, path, line, **kw)

    def topics(self, prefix: str = "", limit: int = 100) -> list[TopicCount]:
        """Known topics, most used first, optionally starting with ``prefix`` (any case).

        Served by the index when it can; otherwise counted by reading every note.
        """
        if limit < 1 or limit > 10_000:
            raise InvalidRequest("limit must be between 1 and 10000")
        _text("prefix", prefix)
        key = prefix.strip().lstrip("#").casefold()
        self._vault_present()
        with self.health.reading(fresh=True) as r:
            if r.servable:
                return [TopicCount(*t) for t in self.index.topics(key, limit, r.conn)]
        counts: dict[str, Counter[str]] = {}
        nested: Counter[str] = Counter()
        for f in self.vault.walk():
            note = self.read_note(f.path)
            keys = {t.casefold() for t in note.topics} if note else set()
            for topic in note.topics if note else ():
                counts.setdefault(topic.casefold(), Counter())[topic] += 1
            parts = {"/".join(k.split("/")[:d]) for k in keys for d in range(1, k.count("/") + 2)}
            nested.update(parts)
        found = []
        for k, total in nested.items():
            if not k.startswith(key):
                continue
            sp = counts.get(k)
            if sp is None:  # a parent no note names itself: spelled as a child spells it
                child = next(c for c in sorted(counts) if c.startswith(k + "/"))
                name = max(counts[child], key=lambda s: counts[child][s])[: len(k)]
                found.append(TopicCount(name, 0, total))
            else:
                found.append(
                    TopicCount(min(sp, key=lambda s: (-sp[s], s)), sum(sp.values()), total)
                )
        found.sort(key=lambda t: (-t.nested, -t.notes, t.name.casefold()))
        return found[:limit]

    def properties(
        self, prefix: str = "", limit: int = 100, *, names: Sequence[str] | None = None
    ) -> list[PropertyCount]:
        """The vault's frontmatter properties (``prop_stats.listed``); from the index only."""
        _text("prefix", prefix)
        read = partial(prop_stats.listed, prefix=prefix, limit=limit, names=names)
        return self._links(lambda conn, _v: read(conn), what="properties")

    def property_values(self, name: str) -> tuple[PropertyCount | None, list[ValueCount] | None]:
        """A property's counts and values (``prop_stats.about``); from the index only."""
        _text("name", name)
        key = name.strip().casefold()
        return self._links(lambda conn, _v: prop_stats.about(conn, key), what="properties")

    def write_note(self, path: str, content: str, *, overwrite: bool = False) -> Indexed:
        """Write a note (atomically) and index it before returning.

        Only ``.md`` paths inside the vault; an existing note is replaced only with
        ``overwrite``. Once the note is written nothing raises: an index that cannot take it
        comes back as ``indexed: False`` (see ``Indexed``).
        """
        _text("content", content)
        rel = self.vault.rel(path)
        if not rel or not self.vault.filter.is_note(rel):
            raise InvalidRequest(f"not a note path of this vault (a .md file, not hidden): {path}")
        try:
            self.vault.write(rel, content.encode("utf-8"), overwrite=overwrite)
        except FileExistsError:
            raise InvalidRequest(
                f"{rel} exists; pass overwrite=true to replace it", data={"path": rel}
            ) from None
        except OSError as exc:
            raise IndexUnavailable(f"cannot write {rel}: {exc.strerror or exc}") from exc
        return self._index_written(rel)

    def add_topics(self, path: str, topics: Sequence[str]) -> tuple[TopicEdit | None, Indexed]:
        """Add topics to a note's frontmatter (only its topic entry changes; the write is
        atomic and refused if the note changed meanwhile) and index it before returning.

        Returns the edit (None when the note already had them) and how the index took it.
        """
        if not topics:
            raise InvalidRequest("give at least one topic")
        if len(topics) > 100:
            raise InvalidRequest(f"{len(topics)} topics given; at most 100 at once")
        edit = add_topics_to_file(self.vault.root, path, topics, self.config)
        if edit is None:
            return None, Indexed(self.status().generation, indexed=True)
        return edit, self._index_written(self.vault.rel(path))

    def _index_written(self, rel: str) -> Indexed:
        """Index a note just written. The write happened: an index that cannot be updated is
        reported as such, never as a failed write (the failure marked the index behind, so
        the next write or catch-up reconciles it)."""
        try:
            report = self.apply_changes([Change("changed", rel)])
        except IndexUnavailable as exc:
            return Indexed(
                self.status().generation,
                indexed=False,
                warning=f"{rel} was written, but the index could not be updated"
                f" ({exc.message}); it will catch up, and searches read the files until then",
            )
        return Indexed(report.generation, indexed=True)

    def problems(self) -> list[dict[str, Any]]:
        """Every recorded note problem: ``{path, code, message, line}``, by path."""
        with self.health.reading() as r:
            if r.read:
                return self.index.problems()
        return []

    def symbols(
        self,
        query: str,
        *,
        limit: int | None = None,
        cancel: threading.Event | None = None,
    ) -> list[SymbolHit]:
        """Workspace symbols: note titles, headings and topics whose name holds ``query``'s
        characters in order, best first (``core/index/symbol_match.py`` has the ranking), at most
        ``limit`` (default ``limits.workspace_symbols``); an empty query lists recent notes.

        Served by the index alone (never a walk of the vault): an index that cannot be opened
        gives no symbols; one being built gives what it holds so far. A note points at the line
        its title is written on; a topic at the newest note using it, on the line that names it
        (else line 1).
        """
        cap = self.config.limits.workspace_symbols if limit is None else limit
        if not self.vault.root.is_dir():
            return []
        self.health.check_file()
        if not self.readable or cap < 1 or (cancel is not None and cancel.is_set()):
            return []
        deadline = time.monotonic() + self.config.limits.deadline_ms / 1000
        found: tuple[list[SymbolHit], dict[int, str | None]] | None = None
        try:
            with self.health.reading(
                cancel=cancel, deadline=deadline, steps=sym.PROGRESS_STEPS
            ) as r:
                if r.read:
                    runner = sym.second_thread(self.index, cancel, deadline)
                    hits = sym.SymbolSearch(r.conn, query, cap, runner=runner).run()
                    hits = sorted(hits + task_symbols(r.conn, query), key=lambda h: h.rank)[:cap]
                    homes = {
                        h.ref: sym.topic_note(r.conn, h.ref) for h in hits if h.kind == "topic"
                    }
                    titles = title_lines(r.conn, [h.ref for h in hits if h.kind == "note"])
                    hits = [
                        h.at(h.path, titles.get(h.ref, 1)) if h.kind == "note" else h for h in hits
                    ]
                    found = hits, homes
        except db.Interrupted:
            if cancel is not None and cancel.is_set():
                return []
            raise SearchTimeout("the symbol search ran past its deadline") from None
        if found is None:
            raise r.unavailable()
        return self._placed(*found)

    def _placed(self, hits: list[SymbolHit], homes: dict[int, str | None]) -> list[SymbolHit]:
        """The hits inside the vault, each topic at the newest note using it (on the line
        that names it), or left out when it has none."""
        paths = {h.path for h in hits if h.kind != "topic"}
        inside = self.vault.inside(paths | {p for p in homes.values() if p is not None})
        placed: list[SymbolHit] = []
        for hit in hits:
            if hit.kind == "topic":
                home = homes.get(hit.ref)
                if home is None or home not in inside:
                    continue
                placed.append(hit.at(home, self._topic_line(home, hit.name)))
            elif hit.path in inside:
                placed.append(hit)
        return placed

    def _topic_line(self, rel: str, topic: str) -> int:
        try:
            head = self.vault.read(rel, TOPIC_READ_BYTES)[0]
        except (OSError, EngramError):
            return 1
        return topic_line(head.decode("utf-8", errors="replace"), topic)

    # -- links -----------------------------------------------------------------------------

    def _links(self, fn: Callable[..., T], *args: Any, what: str = "links") -> T:
        """Run a ``core.navigation`` function on the index (a read transaction). Links (and
        property counts) are answered by the index only: while it cannot answer,
        IndexUnavailable."""
        with self.health.reading() as r:
            if r.servable:
                return fn(r.conn, self.vault, *args)
        raise r.unavailable(f"{what} need a built index")

    def read_text(self, rel: str, *, strict: bool = True) -> str | None:
        """A note's text from disk: None when unreadable, and when not UTF-8 with ``strict``
        (for edits), else decoded as the index parsed it (``nav.read_file_text``)."""
        return nav.read_file_text(self.vault, rel, strict=strict)

    def _read_lenient(self, rel: str) -> str | None:
        return self.read_text(rel, strict=False)

    def _note_path(self, path: str) -> str:
        rel = self.vault.rel(path)
        if not rel or not self.vault.filter.is_note(rel):
            raise InvalidRequest(f"not a note of this vault: {path}", data={"path": path})
        self.vault.resolve_inside(rel)
        return rel

    def resolve_link(
        self, source: str, kind: LinkKind, target: str, anchor: str | None = None
    ) -> nav.Target:
        """Where a link in note ``source`` goes (``docs/links.md`` has the rules)."""
        return self._links(nav.resolve, self.vault.rel(source), kind, target, anchor)

    def link_completions(self, prefix: str, limit: int = 50) -> tuple[list[NameMatch], bool]:
        """Notes whose title, file name or alias starts with ``prefix`` (any case), at most
        ``limit``, and whether there are more."""
        return self._links(nav.complete, prefix, limit)

    def path_completions(self, typed: str, limit: int = 100) -> PathChoices:
        """Folders (most notes first) and notes (newest first) whose vault-relative path
        starts with ``typed`` (any case), one level below its last ``/``, at most ``limit``
        (``core.index.paths``); from the index only."""
        _text("path", typed)
        if limit < 1 or limit > 10_000:
            raise InvalidRequest("limit must be between 1 and 10000")
        return self._links(
            lambda conn, _vault: path_choices(conn, typed, limit), what="path completions"
        )

    def note_headings(self, path: str) -> list[tuple[int, int, str]]:
        """(line, level, text) of a note's headings, from the index."""
        return self._links(lambda conn, _vault: nav.note_headings(conn, path))

    def backlinks(
        self,
        path: str,
        heading: str | None = None,
        *,
        read_text: nav.ReadText | None = None,
        limit: int = 1000,
    ) -> list[nav.Backlink]:
        """Links to a note (or to one of its headings), at their exact places."""
        rel = self._note_path(path)
        return self._links(nav.backlinks, rel, heading, read_text or self._read_lenient, limit)

    def link_titles(self, source: str, spans: Sequence[LinkSpan]) -> list[nav.LinkTitle]:
        """The titles of the notes that ``spans`` (links of note ``source``) name by file
        name (``nav.link_titles``)."""
        return self._links(nav.link_titles, self.vault.rel(source), spans)

    def link_problems(self, source: str, text: str) -> list[nav.LinkProblem]:
        """Broken, ambiguous and anchor-less links in a note's text."""
        return self._links(nav.problems, self.vault.rel(source), text)

    def related_notes(self, path: str, limit: int = 20) -> dict[str, Any]:
        """A note's outgoing links, backlinks, the notes sharing its topics, the notes nearest
        it by meaning (``similar``: empty without the semantic extra or before its notes are
        embedded) and all of them in one ranking (``related``, ``nav.fuse_related``)."""
        if limit < 1 or limit > 200:
            raise InvalidRequest("limit must be between 1 and 200")
        rel = self._note_path(path)
        out = self._links(nav.related, rel, self._read_lenient, limit)
        out["similar"] = similar_notes(self, rel, limit)
        out["related"] = nav.fuse_related(out, limit)
        return out

    def plan_move(
        self, moves: Sequence[tuple[str, str]], *, read_text: nav.ReadText | None = None
    ) -> MovePlan:
        """The link edits that keep links working when notes or folders move (old → new);
        computed from the index before anything moves."""

        def plan(conn: sqlite3.Connection, vault: Vault) -> MovePlan:
            expanded = nav.expand_moves(conn, vault, moves)
            return nav.plan_move(conn, vault, expanded, read_text or self.read_text)

        return self._links(plan)

    def move(self, old: str, new: str, *, dry_run: bool = False) -> MovePlan:
        """Move a note or folder and update every link to (and relative link in) what moved.

        Edited notes are replaced atomically and refused when they changed since they were
        read; then the file or folder is renamed and the index updated. ``dry_run``: plan only.
        """
        old_rel, new_rel = self.vault.rel(old), self.vault.rel(new)
        source = self.vault.abs(old_rel)
        if not old_rel or not source.exists():
            raise NotFound(f"nothing to move at {old_rel or old}", data={"path": old_rel})
        self.vault.resolve_inside(old_rel)
        self.vault.check_folders(old_rel)  # early answers; the move itself checks again
        self.vault.check_folders(new_rel)
        target = self.vault.abs(new_rel)
        if target.exists() or target.is_symlink():
            raise InvalidRequest(f"{new_rel} exists already", data={"path": new_rel})
        if source.is_file() and not self.vault.filter.is_note(new_rel):
            raise InvalidRequest(
                f"{new_rel} is not a note path (a .md file)", data={"path": new_rel}
            )
        plan = self.plan_move([(old_rel, new_rel)])
        if dry_run:
            return plan
        for edits in plan.files:
            if self.read_text(edits.path) != edits.text:
                raise InvalidRequest(
                    f"{edits.path} changed while the move was planned; nothing was moved",
                    data={"path": edits.path},
                )
            try:
                self.vault.write(edits.path, edits.new_text.encode("utf-8"), overwrite=True)
            except OSError as exc:
                raise IndexUnavailable(f"cannot write {edits.path}: {exc.strerror or exc}") from exc
        try:
            self.vault.move(old_rel, new_rel)
        except FileExistsError:
            raise InvalidRequest(f"{new_rel} exists already", data={"path": new_rel}) from None
        except OSError as exc:
            raise InvalidRequest(
                f"cannot move {old_rel} to {new_rel}: {exc.strerror or exc}"
            ) from exc
        changes = [Change("renamed", old_rel, new_rel)]
        changes += [Change("changed", f.path) for f in plan.files if f.path not in plan.moves]
        self.apply_changes(changes)
        return plan


def _text(name: str, value: str) -> None:
    """InvalidRequest unless ``value`` is text that can be stored (see ``require_text``)."""
    try:
        require_text(value)
    except ValueError as exc:
        raise InvalidRequest(f"{name}: {exc}") from None


__all__ = ["Change", "Engram", "Indexed", "TopicCount", "default_index_path"]

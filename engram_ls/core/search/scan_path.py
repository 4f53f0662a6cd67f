"""Answering a search plan without the index, by reading the files.

Used while the index is missing, damaged or being built. The meaning is the same as on the
index path: the same filters, the same notion of a word (``fts.tokenize``), ripgrep for literal
and regex. Ranking of text matches is simpler (term occurrences instead of BM25) and topics are
returned in each note's own spelling; the set of results is the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from engram_ls.core import ripgrep
from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import UnsupportedMode
from engram_ls.core.index import fts
from engram_ls.core.model import Note
from engram_ls.core.search.hits import Found, SearchHit, newest_first, page_hits, snippet_line
from engram_ls.core.search.plan import Plan
from engram_ls.core.search.where import note_facts
from engram_ls.core.vault import Vault

ReadNote = Callable[[str], "Note | None"]
"""Reads and parses one vault-relative path; None when it cannot be read."""

PREFILTER_MIN = 64
"""From this many candidate files on, a text scan first asks ripgrep which files can match."""
_NON_ASCII_BYTE = r"(?-u:[\x80-\xFF])"


@dataclass(slots=True)
class _Match:
    score: float
    note: Note

    @property
    def path(self) -> str:
        return self.note.path


class ScanSearcher:
    """Answers a plan by reading the files."""

    def __init__(self, vault: Vault, config: EngramConfig, read: ReadNote) -> None:
        self.vault = vault
        self.config = config
        self.read = read

    def _candidates(self, plan: Plan) -> Iterable[str]:
        under = ""
        if plan.path is not None and plan.path_kind == "folder":
            if self.vault.abs(plan.path).is_file():
                return [plan.path] if self.vault.filter.is_note(plan.path) else []
            under = plan.path
        found: list[str] = []
        for f in self.vault.walk(under):
            plan.check()  # a walk of a large vault takes seconds
            if plan.path_kind != "glob" or plan.path_ok(f.path):
                found.append(f.path)
        return sorted(found)

    def _prefilter(self, plan: Plan, paths: list[str]) -> list[str]:
        """The files that can match a text query, found by ripgrep instead of parsing all.

        A superset, never fewer: a file is kept when its bytes hold the query's longest word
        (any case) or any non-ASCII byte (accents, ``ß`` and ligatures fold to ASCII words;
        Latin-1 files too), or when its path might (titles come from file names).
        """
        if len(paths) < PREFILTER_MIN:
            return paths
        needle = max((tok for term in plan.terms for tok in term.tokens), key=len, default="")
        if not needle:
            return paths
        pattern = f"(?i){needle}|{_NON_ASCII_BYTE}" if needle.isascii() else _NON_ASCII_BYTE
        try:
            found = ripgrep.files_containing(
                self.vault.root, pattern, paths, deadline=plan.deadline, cancel=plan.cancel
            )
        except UnsupportedMode:  # no rg: read every file
            return paths
        return [p for p in paths if p in found or not p.isascii() or needle in p.casefold()]

    def _meta_ok(self, plan: Plan, note: Note) -> bool:
        if not (
            plan.path_ok(note.path)
            and plan.date_ok(note.created_at)
            and plan.topics_ok(note.topics)
        ):
            return False
        if plan.where is None:
            return True
        st = self.vault.stat(note.path)
        if st is None:  # gone since it was read
            return False
        return plan.where_ok(note_facts(note, st.size, st.mtime_ns, self.vault.born(note.path)))

    def run(self, plan: Plan) -> tuple[list[SearchHit], int]:
        grep = plan.mode in ("literal", "regex") and bool(plan.query)
        text = plan.mode == "text" and bool(plan.query)
        if text and plan.raw_fts:
            raise UnsupportedMode(
                "raw FTS5 queries need the index, which cannot serve right now; "
                "retry without raw_fts, or once the index is built"
            )
        matched: list[_Match] = []
        if grep:
            counts = plan.grep(self.vault.root).count(list(self._candidates(plan)))
            for path in sorted(counts):
                plan.check()
                note = self.read(path)
                if note is not None and self._meta_ok(plan, note):
                    matched.append(_Match(float(counts[path]), note))
        else:
            candidates: Iterable[str] = self._candidates(plan)
            if text:
                candidates = self._prefilter(plan, list(candidates))
            for path in candidates:
                plan.check()
                note = self.read(path)
                if note is None or not self._meta_ok(plan, note):
                    continue
                if not text:
                    matched.append(_Match(0.0, note))
                    continue
                fields = [note.title, note.summary or "", " ".join(note.topics), note.body]
                tokens = [fts.tokenize(f) for f in fields]
                if all(any(fts.matches([t], toks) for toks in tokens) for t in plan.terms):
                    hits = sum(fts.count_hits(plan.terms, toks) for toks in tokens)
                    matched.append(_Match(float(hits), note))
        if text:
            matched.sort(key=lambda m: m.path)
            matched.sort(key=lambda m: m.score, reverse=True)
        else:
            newest_first(
                matched,
                day=lambda m: m.note.created_at,
                score=(lambda m: m.score) if grep else None,
            )
        page = matched[plan.offset : plan.offset + plan.limit]
        firsts: dict[str, ripgrep.FirstMatch] = {}
        if grep:
            firsts = plan.grep(self.vault.root).first([m.path for m in page])

        def found(m: _Match) -> Found:
            note, first = m.note, firsts.get(m.path)
            if first is not None:
                line, text = first.line, first.text
            else:
                line, text = snippet_line(note.body, note.body_line, note.summary, plan)
            return Found(note.path, note.title, note.created_at, note.topics, m.score, line, text)

        results = page_hits(self.vault, plan, self.config, page, found)
        return results, len(matched)

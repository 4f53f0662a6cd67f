"""The keyword librarian: suggest topics from ``keyword_topics`` and write them into notes.

:func:`suggest_topics` finds the topics of the configured ``keyword_topics`` whose keyword
occurs in a note. :class:`Librarian` walks a vault, plans each note's missing topics as a
byte-preserving topic edit (:mod:`engram_ls.core.topic_edit`), and, when asked to apply,
writes each note atomically, skipping any note that changed on disk after it was read.
Optionally it moves notes that cannot be decoded into a quarantine folder inside the vault
(never deleting them), with a log of what moved. :func:`add_topics_to_file` is the same edit
for one note on disk (the MCP ``add_topics`` tool). Every note is read through the vault's one
reader (:meth:`~engram_ls.core.vault.Vault.read`: regular files only, size-capped).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

from engram_ls.core.config import EngramConfig, load_config
from engram_ls.core.edits import (
    NoteChanged,
    read_for_edit,
    replace_if_unchanged,
    undecodable,
)
from engram_ls.core.errors import EngramError, InvalidRequest, NotFound
from engram_ls.core.parse import clean_topic, parse_note
from engram_ls.core.serialize import OMIT_EMPTY, json_text, rounded
from engram_ls.core.topic_edit import TopicEdit, add_topics_edit
from engram_ls.core.vault import Vault

__all__ = [
    "DEFAULT_QUARANTINE",
    "QUARANTINE_LOG",
    "REGEX_PREFIX",
    "KeywordRule",
    "Librarian",
    "LibrarianReport",
    "NoteChanged",
    "NoteOutcome",
    "add_topics_to_file",
    "keyword_rules",
    "suggest_topics",
]

REGEX_PREFIX = "re:"
"""A ``keyword_topics`` key starting with this is a Python regular expression."""
DEFAULT_QUARANTINE = ".engram/quarantine"
"""A quarantine folder that is never indexed (everything under ``.engram/`` is ignored)."""
QUARANTINE_LOG = "quarantine.log.jsonl"
"""The log inside the quarantine folder: one JSON object per moved file."""


# --- keyword suggestions -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class KeywordRule:
    """One ``keyword_topics`` entry, compiled."""

    keyword: str
    pattern: re.Pattern[str]
    topic: str


@lru_cache(maxsize=32)
def _compile_rules(items: tuple[tuple[str, str], ...]) -> tuple[KeywordRule, ...]:
    rules: list[KeywordRule] = []
    for keyword, topic in items:
        cleaned = clean_topic(str(topic))
        if not cleaned:
            raise InvalidRequest(f"keyword_topics: '{keyword}' maps to an empty topic")
        if keyword.startswith(REGEX_PREFIX):
            source = keyword[len(REGEX_PREFIX) :]
            if not source:
                raise InvalidRequest(f"keyword_topics: '{keyword}' has an empty regex")
            try:
                pattern = re.compile(source)
            except re.error as exc:
                raise InvalidRequest(
                    f"keyword_topics: '{keyword}' is not a valid regular expression: {exc}"
                ) from None
        else:
            words = keyword.split()
            if not words:
                raise InvalidRequest("keyword_topics: an empty keyword")
            body = r"\s+".join(re.escape(word) for word in words)
            pattern = re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)
        rules.append(KeywordRule(keyword, pattern, cleaned))
    return tuple(rules)


def keyword_rules(config: EngramConfig) -> tuple[KeywordRule, ...]:
    """The compiled ``keyword_topics``; InvalidRequest names a bad entry."""
    return _compile_rules(tuple(config.keyword_topics.items()))


def suggest_topics(text: str, config: EngramConfig) -> list[str]:
    """Topics of ``config.keyword_topics`` whose keyword occurs in the note and that it lacks.

    The note's title (frontmatter ``title``) and body are searched; frontmatter values are not.
    A plain keyword matches as a whole word or phrase, ignoring case (``sql`` matches ``SQL,``
    but not ``sqlite``; whitespace inside a keyword matches any run of whitespace). A key that
    starts with ``re:`` is a Python regular expression searched anywhere, case-sensitive
    unless it starts with ``(?i)``. A topic the note already has (frontmatter or inline tag,
    case-insensitively) is not suggested. Topics come in the order of the keyword map, once.
    """
    rules = keyword_rules(config)
    if not rules:
        return []
    note = parse_note("", text.encode("utf-8", errors="surrogatepass"), config)
    have = {t.casefold() for t in note.topics}
    haystack = f"{note.title}\n{note.body}" if note.title else note.body
    out: list[str] = []
    for rule in rules:
        key = rule.topic.casefold()
        if key in have:
            continue
        if rule.pattern.search(haystack):
            have.add(key)
            out.append(rule.topic)
    return out


# --- files ---------------------------------------------------------------------------------


def add_topics_to_file(
    root: Path, rel: str, add: Sequence[str], config: EngramConfig
) -> TopicEdit | None:
    """Add topics to one note on disk: read, edit, write atomically. None when nothing to add.

    ``rel`` is vault-relative (or absolute inside the vault); a path that leaves the vault
    raises OutsideVault. The file is replaced only if it still has the bytes that were read
    (else NoteChanged, and nothing is written); its permissions and a BOM are kept.
    """
    vault = Vault(Path(root), config)
    rel_path = vault.rel(rel)
    if not rel_path or not vault.filter.is_note(rel_path):
        raise InvalidRequest(f"not a note path of this vault (a .md file, not hidden): {rel}")
    try:
        data, st = read_for_edit(vault, rel_path)
    except FileNotFoundError:
        raise NotFound(f"no such note: {rel_path}", data={"path": rel_path}) from None
    except OSError as exc:
        raise InvalidRequest(f"cannot read {rel_path}: {exc.strerror or exc}") from exc
    reason = undecodable(data)
    if reason is not None:
        raise InvalidRequest(f"{rel_path}: {reason[1]}", data={"path": rel_path})
    text = data.decode("utf-8")
    edit = add_topics_edit(text, add, config)
    if edit is None:
        return None
    replace_if_unchanged(vault, rel_path, data, st, edit.apply(text).encode("utf-8"))
    return edit


# --- the librarian -------------------------------------------------------------------------

NoteStatus = Literal[
    "planned", "applied", "skipped-changed", "failed", "quarantine-planned", "quarantined"
]
STATUSES: tuple[NoteStatus, ...] = (
    "planned",
    "applied",
    "skipped-changed",
    "failed",
    "quarantine-planned",
    "quarantined",
)


@dataclass(frozen=True, slots=True)
class NoteOutcome:
    """What the librarian did (or would do) with one note."""

    path: str
    status: NoteStatus
    topics: tuple[str, ...] = field(default=(), metadata=OMIT_EMPTY)
    """Topics the note gains (planned or applied)."""
    message: str | None = field(default=None, metadata=OMIT_EMPTY)
    """Why a note was skipped, failed or quarantined."""
    moved_to: str | None = field(default=None, metadata=OMIT_EMPTY)
    """Quarantine: the vault-relative path the note was (or would be) moved to."""


@dataclass(frozen=True, slots=True)
class LibrarianReport:
    """One run: every note that gains topics, was skipped, failed or quarantined."""

    apply: bool
    """False for a dry run (nothing was written or moved)."""
    scanned: int
    """Notes read."""
    unchanged: int
    """Notes with nothing to add."""
    topics_added: int = field(init=False)
    """Topics planned (dry run) or written (apply)."""
    counts: dict[str, int] = field(init=False)
    """Notes per status (every status present, zero when none)."""
    quarantine: str | None
    """The vault-relative quarantine folder, when one was given."""
    notes: tuple[NoteOutcome, ...] = ()
    """The notes that gain topics, were skipped, failed or quarantined, by path."""
    elapsed_s: float = field(default=0.0, metadata=rounded(3))
    """Wall time of the run."""

    def __post_init__(self) -> None:
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for note in self.notes:
            counts[note.status] += 1
        wanted = "applied" if self.apply else "planned"
        added = sum(len(n.topics) for n in self.notes if n.status == wanted)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "topics_added", added)

    def paths(self, *statuses: NoteStatus) -> list[str]:
        return [n.path for n in self.notes if n.status in statuses]


class Librarian:
    """Suggests topics for every note of a vault from ``keyword_topics`` and writes them.

    ``before_write`` (for tests and front ends) is called with a note's path after its edit is
    planned and just before it is written.
    """

    def __init__(
        self,
        root: Path,
        config: EngramConfig | None = None,
        *,
        before_write: Callable[[str], None] | None = None,
    ) -> None:
        self.warnings: list[str] = []
        if config is None:
            config, self.warnings = load_config(Path(root))
        self.config = config
        self.vault = Vault(Path(root), config)
        self.before_write = before_write
        self.rules = keyword_rules(config)  # a bad regex fails here, before anything is read

    def quarantine_folder(self, folder: str) -> str:
        """Check a quarantine folder: inside the vault, not the root, never indexed."""
        rel = self.vault.rel(folder)
        if not rel:
            raise InvalidRequest("the quarantine folder cannot be the vault root")
        self.vault.resolve_inside(rel)
        parts = rel.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if not any(self.vault.filter.dir_excluded(prefix) for prefix in prefixes):
            raise InvalidRequest(
                f"the quarantine folder '{rel}' would be indexed; use a folder under .engram/ "
                f"(for example {DEFAULT_QUARANTINE}) or a hidden folder, or add '{rel}/**' to "
                "exclude in .engram/config.yaml",
                data={"path": rel},
            )
        return rel

    def run(self, apply: bool = False, quarantine: str | None = None) -> LibrarianReport:
        """Plan (and with ``apply`` write) the suggested topics of every note.

        A dry run reads only. With ``apply`` every note is written atomically, and one that
        changed on disk after it was read is skipped (``skipped-changed``). With
        ``quarantine`` (a vault-relative folder that is not indexed), notes that are not
        UTF-8 text are moved there (``quarantined``; planned only in a dry run); without it
        they are reported as ``failed``. Running again after a finished or interrupted run
        only does what is left.
        """
        started = time.perf_counter()
        qrel = self.quarantine_folder(quarantine) if quarantine is not None else None
        outcomes: list[NoteOutcome] = []
        scanned = unchanged = 0
        for entry in sorted(self.vault.walk(), key=lambda f: f.path):
            scanned += 1
            outcome = self._one(entry.path, apply, qrel)
            if outcome is None:
                unchanged += 1
            else:
                outcomes.append(outcome)
        elapsed = time.perf_counter() - started
        return LibrarianReport(apply, scanned, unchanged, qrel, tuple(outcomes), elapsed)

    def _one(self, rel: str, apply: bool, qrel: str | None) -> NoteOutcome | None:
        try:
            data, st = read_for_edit(self.vault, rel)
        except EngramError as exc:
            return NoteOutcome(rel, "failed", message=exc.message)
        except OSError as exc:
            return NoteOutcome(rel, "failed", message=f"cannot read: {exc.strerror or exc}")
        bad = undecodable(data)
        if bad is not None:
            if qrel is None:
                return NoteOutcome(
                    rel, "failed", message=f"{bad[1]}; --quarantine DIR moves such files aside"
                )
            return self._quarantine(rel, qrel, bad, apply)
        text = data.decode("utf-8")
        try:
            add = suggest_topics(text, self.config)
            if not add:
                return None
            edit = add_topics_edit(text, add, self.config)
        except EngramError as exc:
            return NoteOutcome(rel, "failed", message=exc.message)
        if edit is None:
            return None
        gained = tuple(add)
        if not apply:
            return NoteOutcome(rel, "planned", gained)
        if self.before_write is not None:
            self.before_write(rel)
        try:
            replace_if_unchanged(self.vault, rel, data, st, edit.apply(text).encode("utf-8"))
        except NoteChanged as exc:
            return NoteOutcome(rel, "skipped-changed", gained, message=exc.message)
        except OSError as exc:
            return NoteOutcome(rel, "failed", gained, message=f"cannot write: {exc}")
        return NoteOutcome(rel, "applied", gained)

    def _quarantine(self, rel: str, qrel: str, reason: tuple[str, str], apply: bool) -> NoteOutcome:
        target_rel = self._free_target(qrel, rel)
        if not apply:
            return NoteOutcome(rel, "quarantine-planned", message=reason[1], moved_to=target_rel)
        try:
            self.vault.move(rel, target_rel)
        except (OSError, EngramError) as exc:
            return NoteOutcome(rel, "failed", message=f"could not quarantine: {exc}")
        entry = {
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "from": rel,
            "to": target_rel,
            "reason": reason[0],
            "message": reason[1],
        }
        try:
            with open(self.vault.abs(qrel) / QUARANTINE_LOG, "a", encoding="utf-8") as log:
                log.write(json_text(entry) + "\n")
                log.flush()
                os.fsync(log.fileno())
        except OSError as exc:
            return NoteOutcome(
                rel,
                "quarantined",
                message=f"{reason[1]} (the log could not be written: {exc})",
                moved_to=target_rel,
            )
        return NoteOutcome(rel, "quarantined", message=reason[1], moved_to=target_rel)

    def _free_target(self, qrel: str, rel: str) -> str:
        """``<quarantine>/<rel>``, or ``name.1.md``, ``name.2.md``, ... when that is taken."""
        first = f"{qrel}/{rel}"
        if not os.path.lexists(self.vault.abs(first)):
            return first
        folder, _, name = first.rpartition("/")
        stem, dot, ext = name.rpartition(".")
        if not dot:
            stem, ext = name, ""
        for n in range(1, 10_000):
            candidate = f"{folder}/{stem}.{n}{'.' + ext if ext else ''}"
            if not os.path.lexists(self.vault.abs(candidate)):
                return candidate
        raise InvalidRequest(f"no free name for {rel} in the quarantine folder")

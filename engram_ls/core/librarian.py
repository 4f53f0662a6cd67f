"""Keyword tagging and write-back: set a note's topics by editing only its topic entry.

Two layers:

* **The edit** (``topic_edit``, ``add_topics_edit``) works on the decoded text of one note and
  returns a :class:`TopicEdit`: a range of whole lines and their replacement. Only the lines of
  the topic entry (the ``topics:`` / ``tags:`` key line and its continuation lines) are
  replaced; every other line, the key order, comments, quoting, line endings and the body stay
  as they are. Before an edit is returned, the edited text is parsed again with the project's
  own parser (:func:`~engram_ls.core.parse.parse_note`): the other frontmatter keys must load
  to the same values, the body must be the same, and the note's frontmatter topics must be
  exactly the ones asked for. An edit that fails this check is never returned (a different
  rendering is tried, else :class:`~engram_ls.core.errors.InvalidRequest` is raised).
* **The librarian** (:class:`Librarian`) walks a vault, suggests topics from the configured
  ``keyword_topics`` (:func:`suggest_topics`), and, when asked to apply, writes each note
  atomically, skipping any note that changed on disk after it was read. Optionally it moves
  notes that cannot be decoded into a quarantine folder inside the vault (never deleting them),
  with a log of what moved.

Lines are the pieces of the text split on ``\\n`` (each keeps its ``\\r\\n`` or ``\\n``; a lone
``\\r`` is an ordinary character, as in the parser). A leading BOM (``\\ufeff``) is not part of
any line: line numbers and edits ignore it and :meth:`TopicEdit.apply` keeps it, which is what
an LSP client that strips the BOM from its document model expects.

Rendering rules (see docs/librarian.md):

* The entry keeps its style: a flow list ``[a, b]`` stays a flow list (spacing kept), a block
  list keeps its item indentation and the lines (quoting, comments) of the items it keeps; a
  string value (``tags: a, b``) stays a comma- (or space-) separated string when that string
  reads back as exactly the topics, else it becomes a flow list. ``tags:`` with no value gets
  block items; ``tags: null`` / ``~`` becomes a flow list.
* With no topic key, one line ``<first topic_keys entry>: [a, b]`` is added just before the
  closing fence. A note without frontmatter gets ``---`` / ``topics: [a, b]`` / ``---``
  prepended, in the note's line ending.
* Topics are plain where YAML reads them back as the same string, else double-quoted.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import yaml

from engram_ls.core.config import EngramConfig, load_config
from engram_ls.core.errors import EngramError, InvalidRequest, LimitExceeded, NotFound
from engram_ls.core.frontmatter import parse_frontmatter, split_frontmatter
from engram_ls.core.parse import parse_note
from engram_ls.core.vault import Vault

try:
    from yaml import CSafeLoader as _YamlLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _YamlLoader  # type: ignore[assignment]

__all__ = [
    "DEFAULT_QUARANTINE",
    "QUARANTINE_LOG",
    "REGEX_PREFIX",
    "KeywordRule",
    "Librarian",
    "LibrarianReport",
    "NoteChanged",
    "NoteOutcome",
    "TopicEdit",
    "add_topics_edit",
    "add_topics_to_file",
    "keyword_rules",
    "suggest_topics",
    "topic_edit",
]

BOM = "\ufeff"
REGEX_PREFIX = "re:"
"""A ``keyword_topics`` key starting with this is a Python regular expression."""
DEFAULT_QUARANTINE = ".engram/quarantine"
"""A quarantine folder that is never indexed (everything under ``.engram/`` is ignored)."""
QUARANTINE_LOG = "quarantine.log.jsonl"
"""The log inside the quarantine folder: one JSON object per moved file."""

_BINARY_SNIFF_BYTES = 8192  # as the parser: NUL in the first 8 KB means binary
_NO_CAP = 1 << 40


class NoteChanged(InvalidRequest):
    """The note changed on disk between reading it and writing the edit; nothing was written."""


# --- the edit ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicEdit:
    """Replace lines ``start``..``end`` (0-based, end exclusive) of a note by ``text``.

    Lines are split on ``\\n``; a leading BOM is not counted (it stays in front of line 0).
    ``start == end`` is a pure insertion before line ``start``. ``text`` is whole lines, each
    with its line ending. ``topics`` are the note's frontmatter topics after the edit, in the
    order the parser reports them. For an LSP ``TextEdit`` the range is
    ``(start, 0)``–``(end, 0)``.
    """

    start: int
    end: int
    text: str
    topics: tuple[str, ...]

    def apply(self, text: str) -> str:
        """The full note text with this edit applied (a leading BOM is kept)."""
        bom = BOM if text.startswith(BOM) else ""
        lines = _split_lines(text[len(bom) :])
        if not 0 <= self.start <= self.end <= len(lines):
            raise InvalidRequest("the topic edit does not fit this text (has the note changed?)")
        head = "".join(lines[: self.start])
        return bom + head + self.text + "".join(lines[self.end :])


def topic_edit(text: str, topics: Sequence[str], config: EngramConfig) -> TopicEdit | None:
    """The edit that makes the note's frontmatter topics exactly ``topics``; None if they are.

    ``topics`` are cleaned as the parser cleans them (surrounding space and a leading ``#``
    dropped, empty ones skipped) and deduplicated case-insensitively, first spelling kept.
    The edited key is the first of ``config.topic_keys`` the note has (``tags:`` in a note
    that uses ``tags:``), else the first of ``config.topic_keys``. Raises InvalidRequest when
    the frontmatter cannot be edited safely (malformed YAML, the key holds a mapping, another
    topic key holds topics that are not asked for, ...).
    """
    wanted = _clean_topics(topics)
    doc = _Doc.read(text, config)
    if doc.current == wanted:
        return None
    wanted_folded = {t.casefold() for t in wanted}
    for key, held in doc.secondary_topics():
        extra = [t for t in held if t.casefold() not in wanted_folded]
        if extra:
            raise InvalidRequest(
                f"the frontmatter key '{key}' also holds topics ({', '.join(extra)}) that are "
                "not in the requested list; edit it by hand",
                data={"key": key, "topics": extra},
            )
    return doc.edit(wanted, wanted)


def add_topics_edit(text: str, add: Sequence[str], config: EngramConfig) -> TopicEdit | None:
    """The edit that appends the topics of ``add`` the note does not have yet; None if none.

    Existing topics keep their order and spelling; a topic counts as present when any topic
    key of the frontmatter has it (case-insensitively). Inline ``#tags`` in the body are not
    frontmatter topics and do not count. Raises as :func:`topic_edit`.
    """
    doc = _Doc.read(text, config)
    have = {t.casefold() for t in doc.current}
    missing = [t for t in _clean_topics(add) if t.casefold() not in have]
    if not missing:
        return None
    primary = [*doc.primary_topics(), *missing]
    expected = _dedupe([*primary, *doc.current])
    return doc.edit(primary, expected)


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
        cleaned = _clean_topic(str(topic))
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
        data, st = _read(vault, rel_path)
    except FileNotFoundError:
        raise NotFound(f"no such note: {rel_path}", data={"path": rel_path}) from None
    except OSError as exc:
        raise InvalidRequest(f"cannot read {rel_path}: {exc.strerror or exc}") from exc
    reason = _undecodable(data)
    if reason is not None:
        raise InvalidRequest(f"{rel_path}: {reason[1]}", data={"path": rel_path})
    text = data.decode("utf-8")
    edit = add_topics_edit(text, add, config)
    if edit is None:
        return None
    _replace_if_unchanged(vault, rel_path, data, st, edit.apply(text).encode("utf-8"))
    return edit


MAX_EDIT_BYTES = 64 * 1024 * 1024
"""A note larger than this is not edited: it is read through the vault's one reader (regular
files only: a FIFO or a device named ``x.md`` never blocks or floods it) with this cap, so
no file can make an edit hold more than this in memory."""


def _read(vault: Vault, rel: str) -> tuple[bytes, os.stat_result]:
    data, st = vault.read(rel, MAX_EDIT_BYTES + 1)
    if len(data) > MAX_EDIT_BYTES:
        raise LimitExceeded(
            f"{rel} is larger than {MAX_EDIT_BYTES // (1024 * 1024)} MiB; it is not edited",
            data={"path": rel, "max_bytes": MAX_EDIT_BYTES},
        )
    return data, st


def _undecodable(data: bytes) -> tuple[str, str] | None:
    """(reason code, message) when the bytes are not a text note, else None."""
    if b"\x00" in data[:_BINARY_SNIFF_BYTES]:
        return "binary", "the file contains NUL bytes (binary), it cannot be edited as text"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "invalid-utf8", f"the file is not valid UTF-8 (first bad byte at offset {exc.start})"
    return None


def _replace_if_unchanged(
    vault: Vault, rel: str, old: bytes, old_stat: os.stat_result, new: bytes
) -> None:
    """Atomically replace note ``rel`` by ``new`` if it still holds ``old`` (else NoteChanged);
    the note keeps its permissions."""

    def unchanged() -> None:
        try:
            data, now = vault.read(rel, len(old) + 1)
            same = (now.st_mtime_ns, now.st_size) == (old_stat.st_mtime_ns, old_stat.st_size)
            same = same and data == old
        except OSError:  # gone, or no longer a regular file
            same = False
        if not same:
            raise NoteChanged(
                f"{rel} changed on disk since it was read; it was not written",
                data={"path": rel},
            )

    vault.write(rel, new, overwrite=True, check=unchanged)


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
    topics: tuple[str, ...] = ()
    """Topics the note gains (planned or applied)."""
    message: str | None = None
    """Why a note was skipped, failed or quarantined."""
    moved_to: str | None = None
    """Quarantine: the vault-relative path the note was (or would be) moved to."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "status": self.status}
        if self.topics:
            out["topics"] = list(self.topics)
        if self.message is not None:
            out["message"] = self.message
        if self.moved_to is not None:
            out["moved_to"] = self.moved_to
        return out


@dataclass(frozen=True, slots=True)
class LibrarianReport:
    """One run: every note that gains topics, was skipped, failed or quarantined."""

    apply: bool
    """False for a dry run (nothing was written or moved)."""
    scanned: int
    unchanged: int
    """Notes with nothing to add."""
    notes: tuple[NoteOutcome, ...] = ()
    quarantine: str | None = None
    """The vault-relative quarantine folder, when one was given."""
    elapsed_s: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        """Notes per status (every status present, zero when none)."""
        counts: dict[str, int] = dict.fromkeys(STATUSES, 0)
        for note in self.notes:
            counts[note.status] += 1
        return counts

    @property
    def topics_added(self) -> int:
        """Topics planned (dry run) or written (apply)."""
        wanted = "applied" if self.apply else "planned"
        return sum(len(n.topics) for n in self.notes if n.status == wanted)

    def paths(self, *statuses: NoteStatus) -> list[str]:
        return [n.path for n in self.notes if n.status in statuses]

    def to_dict(self) -> dict[str, Any]:
        return {
            "apply": self.apply,
            "scanned": self.scanned,
            "unchanged": self.unchanged,
            "topics_added": self.topics_added,
            "counts": dict(self.counts),
            "quarantine": self.quarantine,
            "notes": [n.to_dict() for n in self.notes],
            "elapsed_s": round(self.elapsed_s, 3),
        }


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
        return LibrarianReport(
            apply=apply,
            scanned=scanned,
            unchanged=unchanged,
            notes=tuple(outcomes),
            quarantine=qrel,
            elapsed_s=time.perf_counter() - started,
        )

    def _one(self, rel: str, apply: bool, qrel: str | None) -> NoteOutcome | None:
        try:
            data, st = _read(self.vault, rel)
        except EngramError as exc:
            return NoteOutcome(rel, "failed", message=exc.message)
        except OSError as exc:
            return NoteOutcome(rel, "failed", message=f"cannot read: {exc.strerror or exc}")
        bad = _undecodable(data)
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
            _replace_if_unchanged(self.vault, rel, data, st, edit.apply(text).encode("utf-8"))
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
                log.write(json.dumps(entry, ensure_ascii=False) + "\n")
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


# --- text internals ------------------------------------------------------------------------

_ITEM_RE = re.compile(r"([ \t]*)-([ \t]+|$)")
_ANY_ITEM_RE = re.compile(r"^( *)-( +)\S", re.MULTILINE)
_FENCE_CONTENT_RE = re.compile(r"---[ \t]*")
_YAML_BREAKS = frozenset("\n\r\x85\u2028\u2029")
_PLAIN_BAD_START = frozenset("-?:,[]{}#&*!|>'\"%@` \t")

Style = Literal["block", "flow", "string", "insert"]


def _split_lines(text: str) -> list[str]:
    """Lines split on ``\\n``, each keeping its ending; no empty piece after a final break."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def _content(line: str) -> str:
    """A line without its ``\\n`` / ``\\r\\n``."""
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    return line


def _ending(line: str, default: str = "\n") -> str:
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith("\n"):
        return "\n"
    return default


def _clean_topic(item: str) -> str:
    return item.strip().lstrip("#").strip()


def _clean_topics(topics: Sequence[str]) -> tuple[str, ...]:
    if isinstance(topics, str):
        raise InvalidRequest("topics must be a list of strings, not one string")
    cleaned: list[str] = []
    for topic in topics:
        if not isinstance(topic, str):
            raise InvalidRequest(f"a topic must be a string, got {type(topic).__name__}")
        item = _clean_topic(topic)
        if any(ch in _YAML_BREAKS for ch in item):
            raise InvalidRequest(f"a topic cannot contain a line break: {item!r}")
        cleaned.append(item)
    return _dedupe(cleaned)


def _dedupe(topics: Sequence[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    out: list[str] = []
    for topic in topics:
        key = topic.casefold()
        if topic and key not in seen:
            seen.add(key)
            out.append(topic)
    return tuple(out)


def _printable(ch: str) -> bool:
    code = ord(ch)
    return (
        0x20 <= code <= 0x7E
        or 0xA0 <= code <= 0xD7FF
        or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
        or 0x10000 <= code <= 0x10FFFF
    ) and ch not in _YAML_BREAKS


def _double_quoted(value: str) -> str:
    out = ['"']
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif _printable(ch):
            out.append(ch)
        elif ch == "\t":
            out.append("\\t")
        else:
            code = ord(ch)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _single_quoted(value: str) -> str | None:
    if not all(_printable(ch) or ch == "\t" for ch in value):
        return None
    return "'" + value.replace("'", "''") + "'"


def _loads_as(source: str, expected: Any) -> bool:
    try:
        return bool(yaml.load(source, Loader=_YamlLoader) == expected)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):
        return False


def _plain_ok(value: str, *, flow: bool) -> bool:
    """Whether ``value`` can be written unquoted and read back as the same string."""
    if not value or value[0] in _PLAIN_BAD_START or value != value.strip():
        return False
    if not all(_printable(ch) for ch in value):
        return False
    if ": " in value or " #" in value or value.endswith(":"):
        return False
    if flow and any(ch in value for ch in ",[]{}"):
        return False
    return _loads_as(f"[{value}]" if flow else f"- {value}", [value])


def _scalar(value: str, *, flow: bool) -> str:
    return value if _plain_ok(value, flow=flow) else _double_quoted(value)


def _split_comment(rest: str) -> tuple[str, str]:
    """The text after ``key:`` → (value source, trailing comment with its leading space)."""
    quote = ""
    i, n = 0, len(rest)
    while i < n:
        ch = rest[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                if quote == "'" and rest[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                quote = ""
        elif ch in "'\"" and (i == 0 or rest[i - 1] in " \t[,{"):
            quote = ch
        elif ch == "#" and (i == 0 or rest[i - 1] in " \t"):
            j = i
            while j > 0 and rest[j - 1] in " \t":
                j -= 1
            return rest[:j], rest[j:]
        i += 1
    value = rest.rstrip(" \t")
    return value, rest[len(value) :]


def _flow_tokens(source: str) -> list[str] | None:
    """The item sources of a one-line flow list ``[a, "b", c]``; None when not that simple."""
    if not (source.startswith("[") and source.endswith("]")):
        return None
    inner = source[1:-1]
    tokens: list[str] = []
    quote = ""
    start = 0
    i, n = 0, len(inner)
    while i < n:
        ch = inner[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                if quote == "'" and inner[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                quote = ""
        elif ch in "'\"" and not inner[start:i].strip():
            quote = ch
        elif ch in "[]{}#":
            return None
        elif ch == ",":
            tokens.append(inner[start:i].strip())
            start = i + 1
        i += 1
    if quote:
        return None
    last = inner[start:].strip()
    if last or tokens:
        tokens.append(last)
    if tokens and not tokens[-1]:
        tokens.pop()  # a trailing comma
    if any(not token for token in tokens):
        return None
    return tokens


def _same(a: Any, b: Any) -> bool:
    """Equal values, where NaN equals NaN (``x: .nan`` must not fail the check)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(type(a) is type(b) and a == b)


def _topics_config(config: EngramConfig, keys: Sequence[str]) -> EngramConfig:
    limits = config.limits.model_copy(update={"max_note_bytes": _NO_CAP})
    return config.model_copy(
        update={"topic_keys": tuple(keys), "inline_tags": False, "limits": limits}
    )


def _parsed_topics(front: str, keys: Sequence[str], config: EngramConfig) -> tuple[str, ...]:
    """The frontmatter topics the parser reads from ``front`` under ``keys``."""
    if not keys:
        return ()
    note = parse_note(
        "", front.encode("utf-8", errors="surrogatepass"), _topics_config(config, keys)
    )
    return note.topics


def _lookup(data: dict[Any, Any], key: str) -> str | None:
    """The parser's lookup: the exact key, else the first key equal ignoring case."""
    if key in data:
        return key
    folded = key.casefold()
    for name in data:
        if isinstance(name, str) and name.casefold() == folded:
            return name
    return None


@dataclass(slots=True)
class _Entry:
    """The topic entry: the key line and its continuation lines, ``lines[first:end]``."""

    key: str
    first: int
    end: int
    prefix: str
    """The key as written, up to and including the colon."""
    gap: str
    """Whitespace between the colon and the value (" " when there is no value)."""
    value: str
    """The value source on the key line, without a comment."""
    comment: str
    """Trailing comment (and whitespace) of the key line."""


class _Doc:
    """A note's text, analysed for a topic edit."""

    def __init__(
        self,
        text: str,
        config: EngramConfig,
        lines: list[str],
        close: int | None,
        data: dict[Any, Any],
        front: str,
        body: str,
    ) -> None:
        self.text = text
        self.config = config
        self.lines = lines
        self.close = close
        """0-based line of the closing fence; None when the note has no frontmatter."""
        self.data = data
        self.front = front
        """The normalised frontmatter block (fences included), for the parser."""
        self.body = body
        """The normalised text after the frontmatter."""
        keys = [k for k in (_lookup(data, key) for key in config.topic_keys) if k is not None]
        self.keys: list[str] = list(dict.fromkeys(keys))
        self.primary: str | None = self.keys[0] if self.keys else None
        self.current = _parsed_topics(front, config.topic_keys, config) if data else ()

    @classmethod
    def read(cls, text: str, config: EngramConfig) -> _Doc:
        if not config.topic_keys:
            raise InvalidRequest("no topic_keys are configured, so a note cannot have topics")
        head = text[:_BINARY_SNIFF_BYTES].encode("utf-8", "surrogatepass")
        if b"\x00" in head[:_BINARY_SNIFF_BYTES]:
            raise InvalidRequest("the note contains NUL bytes (binary); it is not edited")
        plain = text[1:] if text.startswith(BOM) else text
        lines = _split_lines(plain)
        norm = plain.replace("\r\n", "\n") if "\r" in plain else plain
        block = split_frontmatter(norm) if norm.startswith("---") else None
        if block is None:
            return cls(text, config, lines, None, {}, "", norm)
        if not block.closed or block.close_line is None:
            raise InvalidRequest(
                "the frontmatter opened on line 1 has no closing '---' line; close it first"
            )
        loaded = parse_frontmatter(block)
        if loaded.problems:
            problem = loaded.problems[0]
            where = f" (line {problem.line})" if problem.line else ""
            raise InvalidRequest(
                f"cannot edit the topics safely: {problem.message}{where}",
                data={"code": problem.code, "line": problem.line},
            )
        front = norm[: block.end]
        return cls(text, config, lines, block.close_line - 1, dict(loaded.data), front, block.body)

    # -- reading -------------------------------------------------------------------------

    def primary_topics(self) -> tuple[str, ...]:
        return _parsed_topics(self.front, [self.primary], self.config) if self.primary else ()

    def secondary_topics(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(key, _parsed_topics(self.front, [key], self.config)) for key in self.keys[1:]]

    def entry(self) -> _Entry | None:
        """The primary key's lines, or None when the note has no topic key."""
        if self.primary is None or self.close is None:
            return None
        key = self.primary
        value = self.data[key]
        if isinstance(value, dict):
            raise InvalidRequest(
                f"the frontmatter key '{key}' holds a mapping, not a list of topics",
                data={"key": key},
            )
        name = re.escape(key)
        key_re = re.compile(rf"(?:{name}|\"{name}\"|'{name}')[ \t]*:(?=[ \t]|$)")
        found = [
            (i, m)
            for i in range(1, self.close)
            if (m := key_re.match(_content(self.lines[i]))) is not None
        ]
        if len(found) != 1:
            why = "appears more than once" if found else "is not written as a plain 'key:' line"
            raise InvalidRequest(
                f"the frontmatter key '{key}' {why}; edit its topics by hand",
                data={"key": key},
            )
        first, match = found[0]
        end = first + 1
        probe = first + 1
        while probe < self.close:
            content = _content(self.lines[probe])
            stripped = content.strip(" \t")
            if not stripped or stripped.startswith("#"):
                probe += 1  # blank or comment: part of the entry only if more follows
                continue
            if content[0] in " \t" or _ITEM_RE.match(content):
                probe += 1
                end = probe
                continue
            break
        rest = _content(self.lines[first])[match.end() :]
        source, comment = _split_comment(rest)
        stripped_value = source.lstrip(" \t")
        gap = source[: len(source) - len(stripped_value)] or " "
        return _Entry(key, first, end, match.group(0), gap, stripped_value, comment)

    # -- editing -------------------------------------------------------------------------

    def edit(self, primary: Sequence[str], expected: Sequence[str]) -> TopicEdit:
        """Set the primary key's list to ``primary``; the parse must give ``expected``."""
        expected_t = tuple(expected)
        candidates = self._candidates(list(primary))
        for start, end, new_lines in candidates:
            old = self.lines[start:end]
            head = 0
            while head < min(len(old), len(new_lines)) and old[head] == new_lines[head]:
                head += 1
            tail = 0
            while (
                tail < min(len(old), len(new_lines)) - head
                and old[len(old) - 1 - tail] == new_lines[len(new_lines) - 1 - tail]
            ):
                tail += 1
            edit = TopicEdit(
                start=start + head,
                end=end - tail,
                text="".join(new_lines[head : len(new_lines) - tail]),
                topics=expected_t,
            )
            if self._verified(edit, expected_t):
                return edit
        raise InvalidRequest(
            "the topics could not be written without changing other frontmatter; edit them by hand",
            data={"topics": list(expected_t)},
        )

    def _verified(self, edit: TopicEdit, expected: tuple[str, ...]) -> bool:
        """Parse the edited text again: same body, same other keys, exactly ``expected``."""
        new_text = edit.apply(self.text)
        plain = new_text[1:] if new_text.startswith(BOM) else new_text
        norm = plain.replace("\r\n", "\n") if "\r" in plain else plain
        block = split_frontmatter(norm) if norm.startswith("---") else None
        if block is None or not block.closed or block.body != self.body:
            return False
        loaded = parse_frontmatter(block)
        if loaded.problems or not isinstance(loaded.data, dict):
            return False
        key = self.primary or self.config.topic_keys[0]
        before = {k: v for k, v in self.data.items() if k != key}
        after = {k: v for k, v in loaded.data.items() if k != key}
        if not _same(before, after) or key not in loaded.data:
            return False
        front = norm[: block.end]
        return _parsed_topics(front, self.config.topic_keys, self.config) == expected

    def _candidates(self, topics: list[str]) -> list[tuple[int, int, list[str]]]:
        """(start, end, replacement lines) to try, the preferred rendering first."""
        if self.close is None:
            nl = _ending(self.lines[0]) if self.lines else "\n"
            key = self.config.topic_keys[0]
            line = f"{_render_key(key)}: {_flow(topics, None)}{nl}"
            return [(0, 0, [f"---{nl}", line, f"---{nl}"])]
        entry = self.entry()
        if entry is None:
            nl = _ending(self.lines[self.close - 1])
            key = self.config.topic_keys[0]
            return [(self.close, self.close, [f"{_render_key(key)}: {_flow(topics, None)}{nl}"])]
        value = self.data[entry.key]
        old = self.lines[entry.first : entry.end]
        nl = _ending(old[0])
        flow_line = f"{entry.prefix}{entry.gap}{_flow(topics, None)}{entry.comment}{nl}"
        out: list[list[str]] = []
        if isinstance(value, list):
            if entry.value.startswith("["):
                source = entry.value if entry.end == entry.first + 1 else None
                line = _flow(topics, (source, value) if source is not None else None)
                out.append([f"{entry.prefix}{entry.gap}{line}{entry.comment}{nl}"])
            elif not entry.value:
                out.append(self._block(entry, topics, value))
        elif value is None and not entry.value:
            out.append(self._block(entry, topics, []))
        elif value is not None and entry.end == entry.first + 1:
            rendered = _string(topics, entry.value, value)
            if rendered is not None:
                out.append([f"{entry.prefix}{entry.gap}{rendered}{entry.comment}{nl}"])
        out.append([flow_line])
        return [(entry.first, entry.end, lines) for lines in out]

    def _block(self, entry: _Entry, topics: list[str], value: list[Any]) -> list[str]:
        """The entry as a block list: kept item lines reused, new items in the same indent."""
        key_line = self.lines[entry.first]
        body = self.lines[entry.first + 1 : entry.end]
        items: list[tuple[int, str]] = []  # (index in body, topic or "")
        simple = True
        for index, line in enumerate(body):
            content = _content(line)
            stripped = content.strip(" \t")
            if not stripped or stripped.startswith("#"):
                continue
            if _ITEM_RE.match(content):
                items.append((index, ""))
            else:
                simple = False  # a multi-line item: rebuild the list
        if not simple or len(items) != len(value):
            comments = [line for line in body if _content(line).strip(" \t").startswith("#")]
            prefix = self._item_prefix(None)
            nl = _ending(key_line)
            return [key_line, *comments, *(f"{prefix}{_scalar(t, flow=False)}{nl}" for t in topics)]
        items = [(index, _item_topic(item)) for (index, _), item in zip(items, value, strict=True)]
        prefix = self._item_prefix(body[items[0][0]] if items else None)
        wanted = set(topics)
        kept: dict[str, int] = {}
        drop: set[int] = set()
        for index, topic in items:
            if topic and (topic not in wanted or topic in kept):
                drop.add(index)
            elif topic:
                kept[topic] = index
        kept_order = [topic for index, topic in items if topic and index not in drop]
        if kept_order != [t for t in topics if t in kept]:
            # reordered: comments first (in order), then the items as asked, then the rest
            comments = [
                line
                for index, line in enumerate(body)
                if index not in {i for i, _ in items} and _content(line).strip(" \t")
            ]
            nl = _ending(key_line)
            lines = [key_line, *comments]
            for topic in topics:
                lines.append(
                    _with_ending(body[kept[topic]], nl)
                    if topic in kept
                    else f"{prefix}{_scalar(topic, flow=False)}{nl}"
                )
            lines.extend(_with_ending(body[i], nl) for i, topic in items if not topic)
            return lines
        slots: list[list[str]] = [[line] if i not in drop else [] for i, line in enumerate(body)]
        head: list[str] = []  # new items before every kept item
        tail: list[str] = []  # new items when there is no kept item before them
        last_item = max((i for i, _ in items if i not in drop), default=None)
        anchor: int | None = None  # the body index the next new item follows
        for topic in topics:
            if topic in kept:
                anchor = kept[topic]
                continue
            if anchor is not None:
                nl = _ending(slots[anchor][-1])
                slots[anchor].append(f"{prefix}{_scalar(topic, flow=False)}{nl}")
            elif kept:
                head.append(topic)
            else:
                tail.append(topic)
        lines = [key_line]
        first_kept = min(kept.values()) if kept else None
        for i, group in enumerate(slots):
            if i == first_kept:
                nl = _ending(group[0])
                lines.extend(f"{prefix}{_scalar(t, flow=False)}{nl}" for t in head)
            lines.extend(group)
        if tail:
            nl = _ending(lines[-1])
            new = [f"{prefix}{_scalar(t, flow=False)}{nl}" for t in tail]
            if last_item is not None:  # after the last remaining (non-topic) item
                position = 1 + sum(len(group) for group in slots[: last_item + 1])
                lines[position:position] = new
            else:
                lines.extend(new)
        return lines

    def _item_prefix(self, line: str | None) -> str:
        """``indent + '-' + gap`` of new block items: the list's own, the note's, or ``  - ``."""
        if line is not None:
            match = _ITEM_RE.match(_content(line))
            if match is not None and match.group(2):
                return f"{match.group(1)}-{match.group(2)}"
        found = _ANY_ITEM_RE.search(self.front)
        if found is not None:
            return f"{found.group(1)}-{found.group(2)}"
        return "  - "


def _with_ending(line: str, nl: str) -> str:
    return line if line.endswith("\n") else line + nl


def _item_topic(value: Any) -> str:
    """The topic the parser reads from one list item ("" for none)."""
    if isinstance(value, str):
        return _clean_topic(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        try:
            return _clean_topic(str(value))
        except ValueError:
            return ""
    if isinstance(value, dt.date):
        return value.isoformat()
    return ""


def _render_key(key: str) -> str:
    return key if _plain_ok(key, flow=False) and ":" not in key else _double_quoted(key)


def _flow(topics: Sequence[str], original: tuple[str, list[Any]] | None) -> str:
    """``[a, b]``, reusing the item sources and the spacing of ``original`` where it can."""
    separator, pad = ", ", ""
    reuse: dict[str, str] = {}
    if original is not None:
        source, values = original
        inner = source[1:-1]
        if "," in inner and ", " not in inner:
            separator = ","
        if inner.startswith(" ") and inner.strip():
            pad = " "
        tokens = _flow_tokens(source)
        if tokens is not None and len(tokens) == len(values):
            for token, value in zip(tokens, values, strict=True):
                reuse.setdefault(_item_topic(value), token)
    items = [reuse.get(t) or _scalar(t, flow=True) for t in topics]
    if not items:
        return "[]"
    return f"[{pad}{separator.join(items)}{pad}]"


def _string(topics: Sequence[str], source: str, value: Any) -> str | None:
    """The topics as one string in the style of ``source``; None when it cannot be one."""
    if not topics or any("," in t for t in topics):
        return None
    spaced = isinstance(value, str) and "," not in value and len(value.split()) > 1
    if spaced and any(ch.isspace() for t in topics for ch in t):
        spaced = False
    joined = (" " if spaced else ", ").join(topics)
    if source[:1] == "'":
        return _single_quoted(joined)
    if source[:1] == '"':
        return _double_quoted(joined)
    return _scalar(joined, flow=False)

"""Diagnostics contributor: the core's problems with the note being edited.

The open buffer is parsed exactly as the indexer parses a file (``parse_note`` on its UTF-8
bytes, in the thread pool) and each :class:`~engram_ls.core.model.Problem` becomes a
diagnostic on its line (``source="engram"``, ``code`` = the problem code): malformed YAML,
frontmatter that is not a mapping, an unclosed ``---``, NUL bytes (errors); unparseable
dates, a note over the size cap (warnings). A buffer is always valid text, so whether the
*file* is valid UTF-8 is checked on disk when the note is opened or saved (``encoding``,
warning) and kept until the next check. When checks run: ``lsp/diagnostics.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from engram_ls.core.config import EngramConfig
from engram_ls.core.model import Problem
from engram_ls.core.parse import parse_note
from engram_ls.core.vault import Vault
from engram_ls.lsp import convert
from engram_ls.lsp.diagnostics import Check
from engram_ls.lsp.document import strip_cr

if TYPE_CHECKING:
    from engram_ls.lsp.server import EngramLanguageServer

DISK_CODES = frozenset({"encoding"})
"""Problems only the file on disk can have (the editor's buffer is already decoded)."""
_KEPT = "problems.disk"
"""The file's problems in a document's memo, kept between readings of the file."""

Found = list[tuple[Problem, str]]
"""Problems with the text of their line."""


def check_text(
    rel: str, text: str, config: EngramConfig, disk: Vault | None, kept: tuple[Problem, ...]
) -> tuple[Found, tuple[Problem, ...]]:
    """Problems of the buffer (plus the file's, read again from ``disk`` when given, else
    ``kept``) with their line texts, and the file's problems. Blocking; never raises."""
    if disk is not None:
        kept = _disk_problems(rel, disk, config)
    note = parse_note(rel, text.encode("utf-8", "replace"), config)
    problems = list(note.problems)
    codes = {p.code for p in problems}
    problems.extend(p for p in kept if p.code not in codes)
    lines = text.split("\n") if problems else []
    found: Found = []
    for problem in problems:
        index = max((problem.line or 1) - 1, 0)
        found.append((problem, strip_cr(lines[index]) if index < len(lines) else ""))
    return found, kept


def _disk_problems(rel: str, vault: Vault, config: EngramConfig) -> tuple[Problem, ...]:
    data = vault.read_or_none(rel, config.limits.max_note_bytes + 1)
    if data is None:
        return ()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        note = parse_note(rel, data, config)
        return tuple(p for p in note.problems if p.code in DISK_CODES)
    return ()


async def diagnose(ls: EngramLanguageServer, check: Check) -> list[types.Diagnostic]:
    vault = check.vault
    disk = vault.engram.vault if check.read_disk else None
    kept = check.memo.get(_KEPT, ())
    found, check.memo[_KEPT] = await ls.run(
        check_text, check.rel, check.text, vault.config, disk, kept
    )
    units = check.doc.position_codec.client_num_units
    return [convert.problem_diagnostic(p, line, units) for p, line in found]

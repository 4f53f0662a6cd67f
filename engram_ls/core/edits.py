"""Editing a note in place, safely: the one way the librarian, topic edits and task toggles
read a note to edit and write it back.

A note is read through the vault's one reader, capped (``read_for_edit``); its bytes must be
text (``undecodable``); the edit is written atomically and only if the file still holds the
bytes that were read (``replace_if_unchanged``: else ``NoteChanged``, and nothing is written).
"""

from __future__ import annotations

import os

from engram_ls.core.errors import InvalidRequest, LimitExceeded
from engram_ls.core.parse import BINARY_SNIFF_BYTES
from engram_ls.core.vault import Vault


class NoteChanged(InvalidRequest):
    """The note changed on disk between reading it and writing the edit; nothing was written."""


MAX_EDIT_BYTES = 64 * 1024 * 1024
"""A note larger than this is not edited: it is read through the vault's one reader (regular
files only: a FIFO or a device named ``x.md`` never blocks or floods it) with this cap, so
no file can make an edit hold more than this in memory."""


def read_for_edit(vault: Vault, rel: str) -> tuple[bytes, os.stat_result]:
    data, st = vault.read(rel, MAX_EDIT_BYTES + 1)
    if len(data) > MAX_EDIT_BYTES:
        raise LimitExceeded(
            f"{rel} is larger than {MAX_EDIT_BYTES // (1024 * 1024)} MiB; it is not edited",
            data={"path": rel, "max_bytes": MAX_EDIT_BYTES},
        )
    return data, st


def undecodable(data: bytes) -> tuple[str, str] | None:
    """(reason code, message) when the bytes are not a text note, else None."""
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return "binary", "the file contains NUL bytes (binary), it cannot be edited as text"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return "invalid-utf8", f"the file is not valid UTF-8 (first bad byte at offset {exc.start})"
    return None


def replace_if_unchanged(
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


__all__ = ["MAX_EDIT_BYTES", "NoteChanged", "read_for_edit", "replace_if_unchanged", "undecodable"]

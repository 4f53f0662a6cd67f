"""The vault's source revision: the git ``HEAD`` commit of the repository holding the vault,
and whether the vault's files differ from it (``dirty``).

The commit is read from the repository's files (``.git/HEAD``, loose refs, ``packed-refs``;
a ``.git`` file pointing elsewhere, as in worktrees and submodules, is followed), never by
running git: a few small reads per call. ``dirty`` needs the work tree compared with git's
index, which only git does correctly (racy timestamps, filters, ignore rules): ``git status
--porcelain`` runs with a timeout, no pager, no prompts, no optional locks, fsmonitor off, in
the vault folder, limited to the vault's files (its ``.engram`` folder left out, so the index
file does not make every vault dirty); its answer is kept ``DIRTY_TTL_S`` and then renewed in
the background (``GitRevision``).

Anything unexpected (no repository, a ``.git`` that is a symlink, a branch with no commit yet,
a damaged ref, git missing or too slow) gives a revision of None or ``dirty`` None, never an
error: the revision describes an answer, it never stops one.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engram_ls.core.config import CONFIG_DIR
from engram_ls.core.contained import read_fd

DIRTY_TTL_S = 2.0
"""How long a ``git status`` answer is reused before a background thread asks again. Measured
here on the shared real vault (885 notes, a git repository made for it): ``git status`` took
7-13 ms a call (p95 11-31 ms on a busy machine), so asked at every search it would have
tripled a 3 ms search; reading the commit takes 0.1-0.2 ms."""
DIRTY_TIMEOUT_S = 1.0
"""Longest wait for ``git status``; past it ``dirty`` is None (unknown)."""
SLOW_TTL_S = 60.0
"""How long a ``git status`` that timed out or failed is not tried again."""
MAX_REF_BYTES = 4096
MAX_PACKED_REFS_BYTES = 64 * 1024 * 1024
MAX_SYMREF_HOPS = 5
_SHA = re.compile(rb"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_REF = re.compile(r"^refs/(?:[A-Za-z0-9._\-+@]+/)*[A-Za-z0-9._\-+@]+$")
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class SourceRevision:
    commit: str
    """The ``HEAD`` commit (hex)."""
    dirty: bool | None
    """Whether the vault's files differ from that commit (changed, added, deleted or untracked
    notes); None when git could not tell in time."""


def _read(path: Path, limit: int) -> bytes | None:
    """A regular file's bytes (never through a symlink at the last step), or None."""
    try:
        return read_fd(os.open(path, _READ_FLAGS), limit, os.fspath(path))[0]
    except OSError:
        return None


def find_git_dir(root: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) of the repository whose work tree holds ``root``, or None.

    The nearest ``.git`` from ``root`` up: a folder, or a file ``gitdir: <path>`` (worktrees,
    submodules). A ``.git`` that is a symlink is never followed (None)."""
    for folder in (root, *root.parents):
        entry = folder / ".git"
        try:
            mode = entry.lstat().st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode):
            return None
        if stat.S_ISDIR(mode):
            git_dir = entry
        else:
            text = _read(entry, MAX_REF_BYTES)
            if text is None or not text.startswith(b"gitdir:"):
                return None
            try:
                target = text[len(b"gitdir:") :].strip().decode("utf-8")
            except UnicodeDecodeError:
                return None
            git_dir = folder / target
            if not git_dir.is_dir():
                return None
        common = git_dir
        found = _read(git_dir / "commondir", MAX_REF_BYTES)
        if found is not None:
            try:
                common = git_dir / found.strip().decode("utf-8")
            except UnicodeDecodeError:
                return None
        return git_dir, common
    return None


def head_commit(git_dir: Path, common: Path) -> str | None:
    """The commit ``HEAD`` names (following symbolic refs, loose then packed), or None (a
    branch without a commit yet, a damaged or unusual ref)."""
    value = _read(git_dir / "HEAD", MAX_REF_BYTES)
    for _ in range(MAX_SYMREF_HOPS):
        if value is None:
            return None
        value = value.strip()
        if _SHA.match(value):
            return value.decode("ascii")
        if not value.startswith(b"ref:"):
            return None
        try:
            ref = value[4:].strip().decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not _REF.match(ref) or ".." in ref or "/." in ref:
            return None
        value = _read(git_dir / ref, MAX_REF_BYTES)
        if value is None and common != git_dir:
            value = _read(common / ref, MAX_REF_BYTES)
        if value is None:
            value = _packed(common, ref)
    return None


def _packed(common: Path, ref: str) -> bytes | None:
    data = _read(common / "packed-refs", MAX_PACKED_REFS_BYTES)
    if data is None:
        return None
    want = b" " + ref.encode("utf-8")
    for line in data.split(b"\n"):
        if line.endswith(want) and not line.startswith((b"#", b"^")):
            return line[: -len(want)]
    return None


def work_tree_dirty(root: Path, timeout_s: float = DIRTY_TIMEOUT_S) -> bool | None:
    """Whether ``git status`` finds changes under ``root`` (its ``.engram`` folder left out);
    None when git is missing, fails, or takes longer than ``timeout_s``."""
    env = dict(os.environ)
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", LC_ALL="C")
    for key in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(key, None)  # the vault's own repository, whatever the caller's environment
    argv = [
        "git",
        "--no-pager",
        "-c",
        "core.fsmonitor=false",
        "status",
        "--porcelain",
        "-z",
        "--untracked-files=normal",
        "--",
        ".",
        f":(exclude){CONFIG_DIR}",
    ]
    try:
        done = subprocess.run(
            argv,
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return bool(done.stdout)


class GitRevision:
    """The source revision of one vault, as cheap to ask for as a search needs: the commit is
    read at every call (a few small file reads, 0.1-0.2 ms). ``dirty`` is computed once
    (and again at once when the commit changes); after that, an answer older than ``ttl_s``
    is still given while a background thread asks ``git status`` again, so no search waits for
    git once the first answer is known: ``dirty`` is at most ``ttl_s`` plus one ``git status``
    behind the files."""

    def __init__(self, root: Path, ttl_s: float = DIRTY_TTL_S) -> None:
        self.root = root
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._dirty: tuple[str, bool | None, float] | None = None
        """(commit, dirty, until when it holds, in ``time.monotonic()``)."""
        self._refreshing = False
        """A background ``git status`` is running."""

    def current(self) -> SourceRevision | None:
        found = find_git_dir(self.root)
        if found is None:
            return None
        commit = head_commit(*found)
        if commit is None:
            return None
        with self._lock:
            cached = self._dirty
            if cached is not None and cached[0] == commit:
                if time.monotonic() >= cached[2] and not self._refreshing:
                    self._refreshing = True
                    threading.Thread(
                        target=self._refresh, args=(commit, True), name="engram-git", daemon=True
                    ).start()
                return SourceRevision(commit, cached[1])
        return SourceRevision(commit, self._refresh(commit, False))

    def _refresh(self, commit: str, background: bool) -> bool | None:
        try:
            dirty = work_tree_dirty(self.root)
            ttl = self.ttl_s if dirty is not None else max(self.ttl_s, SLOW_TTL_S)
            with self._lock:
                self._dirty = (commit, dirty, time.monotonic() + ttl)
            return dirty
        finally:
            if background:
                with self._lock:
                    self._refreshing = False


__all__ = ["GitRevision", "SourceRevision", "find_git_dir", "head_commit", "work_tree_dirty"]

"""The vault on disk: root discovery, walking with ignore rules (globs: ``core/globs.py``),
path containment.

Every path that leaves this module is vault-relative and POSIX-style (``area/2024/note.md``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_mod
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path, PurePosixPath
from urllib.parse import quote_from_bytes

from engram_ls.core.config import CONFIG_DIR, EngramConfig
from engram_ls.core.errors import InvalidRequest, NotFound, OutsideVault
from engram_ls.core.globs import compile_glob

ALWAYS_IGNORED_DIRS = frozenset({".git", CONFIG_DIR, "node_modules"})


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


@dataclass(frozen=True, slots=True)
class FileStat:
    path: str
    """Vault-relative POSIX path."""
    mtime_ns: int
    size: int


class PathFilter:
    """Decides which files are notes, from the config's include/exclude globs."""

    def __init__(self, config: EngramConfig) -> None:
        includes = tuple(config.include) or ("**/*.md",)
        self._all_md = includes == ("**/*.md",)
        self._include = [compile_glob(p) for p in includes]
        self._exclude = [compile_glob(p) for p in config.exclude]

    def dir_excluded(self, rel_dir: str) -> bool:
        name = rel_dir.rsplit("/", 1)[-1]
        if name in ALWAYS_IGNORED_DIRS or name.startswith("."):
            return True
        probe = rel_dir + "/"
        return any(rx.match(rel_dir) or rx.match(probe) for rx in self._exclude)

    def is_note(self, rel_path: str) -> bool:
        if not rel_path.endswith(".md"):
            return False
        parts = rel_path.split("/")
        if any(p in ALWAYS_IGNORED_DIRS or p.startswith(".") or p in ("", "..") for p in parts):
            return False
        if not self.file_matches(rel_path):
            return False
        return not any(self.dir_excluded("/".join(parts[:i])) for i in range(1, len(parts)))

    def file_matches(self, rel_path: str) -> bool:
        """Include/exclude globs only (the walk has already pruned excluded folders)."""
        if self._all_md and not self._exclude:
            return rel_path.endswith(".md")
        if not any(rx.match(rel_path) for rx in self._include):
            return False
        return not any(rx.match(rel_path) for rx in self._exclude)


class Vault:
    """A folder of notes. Holds no note data; every call goes to the file system."""

    def __init__(self, root: Path, config: EngramConfig) -> None:
        if not root.is_dir():
            raise NotFound(f"vault folder does not exist: {root}", data={"path": str(root)})
        self.root = root.resolve()
        self._root_s = self.root.as_posix()
        self.config = config
        self.filter = PathFilter(config)

    # -- paths -----------------------------------------------------------------------------

    def rel(self, path: str | os.PathLike[str]) -> str:
        """Normalize an absolute or vault-relative path to a vault-relative POSIX path.

        Raises OutsideVault for anything that would leave the vault (``..``, another root,
        NUL bytes), InvalidRequest for a path no file can have (a lone surrogate). Does not
        require the path to exist and does not follow symlinks.
        """
        raw = os.fspath(path)
        if "\x00" in raw:
            raise OutsideVault("path contains a NUL byte", data={"path": raw})
        try:
            os.fsencode(raw)
        except UnicodeEncodeError:  # a lone surrogate from JSON ("\ud800"): no file has it
            raise InvalidRequest(f"path is not valid text: {raw!r}") from None
        fast = _plain_rel(raw, self._root_s)
        if fast is not None:
            return fast
        p = Path(raw)
        if p.is_absolute():
            try:
                p = p.relative_to(self.root)
            except ValueError:
                try:
                    p = Path(os.path.normpath(raw)).relative_to(self.root)
                except ValueError:
                    raise OutsideVault(
                        f"path is outside the vault: {raw}", data={"path": raw}
                    ) from None
        posix = PurePosixPath(p.as_posix())
        parts = [part for part in posix.parts if part not in ("", ".")]
        if any(part == ".." for part in parts) or posix.is_absolute():
            raise OutsideVault(f"path leaves the vault: {raw}", data={"path": raw})
        return "/".join(parts)

    def abs(self, rel_path: str) -> Path:
        return self.root / rel_path if rel_path else self.root

    def resolve_inside(self, path: str | os.PathLike[str]) -> Path:
        """The real path of a vault file, after symlinks, checked to stay inside the vault."""
        rel = self.rel(path)
        real = Path(os.path.realpath(self.abs(rel)))
        if real != self.root and not real.is_relative_to(self.root):
            raise OutsideVault(f"path resolves outside the vault: {rel}", data={"path": rel})
        return real

    def contains(self, rel_path: str) -> bool:
        try:
            self.resolve_inside(rel_path)
        except OutsideVault:
            return False
        return True

    def inside(self, rel_paths: Iterable[str]) -> set[str]:
        """Those of ``rel_paths`` (index paths: relative, no ``..``) that stay inside the vault.

        Cheap for many results: each folder on the way is ``lstat``-ed once per call, and a
        real path is resolved only where a symlink appears. A missing file cannot escape.
        """
        root_s = os.fspath(self.root)
        links: dict[str, bool] = {"": False}

        def is_link(rel: str) -> bool:
            known = links.get(rel)
            if known is None:
                try:
                    known = stat_mod.S_ISLNK(os.lstat(os.path.join(root_s, rel)).st_mode)
                except OSError:
                    known = False
                links[rel] = known
            return known

        def escapes(rel: str) -> bool:
            real = os.path.realpath(os.path.join(root_s, rel))
            return not (real == root_s or real.startswith(root_s + os.sep))

        ok: set[str] = set()
        for rel in rel_paths:
            parts = rel.split("/")
            if rel.startswith("/") or "\x00" in rel or ".." in parts:
                continue
            chain = ["/".join(parts[: i + 1]) for i in range(len(parts))]
            if any(is_link(c) for c in chain) and escapes(rel):
                continue
            ok.add(rel)
        return ok

    def uri(self, rel_path: str) -> str:
        """The ``file://`` URI of a vault path (as ``Path.as_uri`` would give, but cheaper)."""
        return "file://" + quote_from_bytes(os.fsencode(f"{self._root_s}/{rel_path}"))

    # -- walking ---------------------------------------------------------------------------

    def walk(self, under: str = "") -> Iterator[FileStat]:
        """Every note under ``under`` (a vault-relative folder), with mtime and size, in no
        particular order.

        Symlinked folders are not entered (no loops, no escapes); a symlinked file counts only
        when its target is inside the vault. Unreadable folders are skipped.
        """
        stack: list[tuple[str, str]] = [(os.fspath(self.abs(under)), under)]
        while stack:
            abs_dir, rel_dir = stack.pop()
            try:
                it = os.scandir(abs_dir)
            except OSError:
                continue
            with it:
                for entry in it:
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    got = self._entry(entry, rel)
                    if got is True:
                        stack.append((entry.path, rel))
                    elif got:
                        yield got

    def walk_sorted(self, under: str = "") -> Iterator[FileStat]:
        """The notes of ``walk``, in the order of their paths: Python's ``str`` order, which is
        SQLite's ``BINARY`` order of the same paths as UTF-8 (both compare code points).

        One folder is listed at a time (its entries, plus the unvisited entries of the folders
        above it), so memory follows the largest folder, not the vault. A folder ``x`` sorts
        as ``x/``: every path under it shares that prefix, and no name holds a ``/``, so the
        folder's block of paths falls exactly where ``x/`` falls among its siblings.
        """

        def listing(abs_dir: str) -> list[tuple[str, os.DirEntry[str]]]:
            """A folder's entries, last first (popped as they are visited, so that the stat
            each caches goes with it)."""
            try:
                with os.scandir(abs_dir) as it:
                    keyed = [(f"{e.name}/" if _is_folder(e) else e.name, e) for e in it]
            except OSError:
                return []
            keyed.sort(key=itemgetter(0), reverse=True)
            return keyed

        stack = [(under, listing(os.fspath(self.abs(under))))]
        while stack:
            rel_dir, entries = stack[-1]
            if not entries:
                stack.pop()
                continue
            entry = entries.pop()[1]
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            got = self._entry(entry, rel)
            if got is True:
                stack.append((rel, listing(entry.path)))
            elif got:
                yield got

    def _entry(self, entry: os.DirEntry[str], rel: str) -> FileStat | bool:
        """What the walk makes of one entry: a note's stat, True for a folder to enter, or
        False (anything else: excluded, not a note, unreadable, a symlink leaving the vault)."""
        name = entry.name
        try:
            if entry.is_dir(follow_symlinks=False):
                return not self.filter.dir_excluded(rel)
            if not name.endswith(".md") or name.startswith("."):
                return False
            if entry.is_symlink():
                if not self.contains(rel):
                    return False
                st = os.stat(entry.path)
            else:
                st = entry.stat(follow_symlinks=False)
        except OSError:
            return False
        if not stat_mod.S_ISREG(st.st_mode) or not self.filter.file_matches(rel):
            return False
        return FileStat(rel, st.st_mtime_ns, st.st_size)

    def stat(self, rel_path: str) -> FileStat | None:
        """Stat one note; None when it is missing, not a regular file, or not a note."""
        if not self.filter.is_note(rel_path):
            return None
        p = f"{self._root_s}/{rel_path}" if rel_path else self._root_s
        try:
            st = os.lstat(p)
            if stat_mod.S_ISLNK(st.st_mode):
                if not self.contains(rel_path):
                    return None
                st = os.stat(p)
        except OSError:
            return None
        if not stat_mod.S_ISREG(st.st_mode):
            return None
        return FileStat(rel_path, st.st_mtime_ns, st.st_size)


def _plain_rel(raw: str, root: str) -> str | None:
    """``raw`` as a vault-relative path when it already is one in normal form (or is such a
    path under ``root``), without building Path objects; None when it needs the full rules."""
    if os.sep != "/" or os.altsep:
        return None
    if raw.startswith("/"):
        if not raw.startswith(root + "/"):
            return None
        raw = raw[len(root) + 1 :]
    parts = raw.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return raw


def read_regular(path: str | os.PathLike[str], limit: int = -1) -> bytes:
    """The bytes of a regular file (at most ``limit``). Anything else (a FIFO, a device, a
    folder put where a note was) raises OSError instead of blocking or reading forever."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb", closefd=True) as fh:
        if not stat_mod.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        return fh.read(limit)


def atomic_write(
    path: Path,
    data: bytes,
    *,
    overwrite: bool,
    mode: int | None = None,
    check: Callable[[], None] | None = None,
) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never a part.

    Without ``overwrite`` an existing file is left alone and FileExistsError is raised (the
    check and the creation are one atomic step: a hard link of the finished temporary file).
    ``mode`` sets the new file's permissions. ``check`` runs once the new content is on disk,
    just before it replaces the file; raising there leaves the file untouched, so the window
    for a concurrent writer is only the check itself.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if check is not None:
            check()
        if overwrite:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    with contextlib.suppress(OSError):  # the rename itself survives a crash
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


VAULT_MARKERS = (CONFIG_DIR, ".obsidian")
"""A folder holding one of these is a vault (``engram index DIR`` creates the first)."""


def find_vault_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` holding ``.engram/`` or ``.obsidian/``; None
    when there is none (any folder is not a vault: indexing ``/tmp`` by accident would write
    an index of everything below it)."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).is_dir() for marker in VAULT_MARKERS):
            return folder
    return None


def choose_vault_root(arg: str | None) -> Path:
    """The vault a command means: ``arg``, else ``$ENGRAM_VAULT`` (each used as given), else
    the nearest folder at or above the current one holding ``.engram/`` or ``.obsidian/``.

    Raises NotFound when none applies: nothing is indexed implicitly.
    """
    if arg:
        root = Path(arg).expanduser()
    elif os.environ.get("ENGRAM_VAULT"):
        root = Path(os.environ["ENGRAM_VAULT"]).expanduser()
    else:
        cwd = Path.cwd()
        found = find_vault_root(cwd)
        if found is None:
            raise NotFound(
                f"no vault here (no .engram/ or .obsidian/ at or above {cwd}); run "
                "`engram index DIR` to make DIR a vault, or name the vault (VAULT argument, "
                "--vault or $ENGRAM_VAULT)",
                data={"path": str(cwd)},
            )
        return found
    if not root.is_dir():
        raise NotFound(f"vault folder not found: {root}")
    return root

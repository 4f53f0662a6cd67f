"""The vault on disk: root discovery, walking with ignore rules (globs: ``core/globs.py``),
path containment.

Every path that leaves this module is vault-relative and POSIX-style (``area/2024/note.md``).

Containment is checked at the moment of use, never only before: every read, stat, write,
move and folder scan of a note goes through the functions under "containment" below
(``open_in``, ``stat_in``, ``read_in``, ``write_in``, ``move_in``, the walk), which open each
folder from the vault root down with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's
descriptor and act on the file relative to the last one. A folder swapped for a symlink
after any check is still refused, because the check *is* the open.

Why not Linux ``openat2(RESOLVE_BENEATH)`` through ctypes: it follows symlinked folders that
stay inside the vault, which the walk has never entered, so reads and event paths would see
notes a cold build does not index (and the index must equal a fresh build); it is Linux-only
(a portable fallback would be this code anyway). ``openat`` with ``O_NOFOLLOW`` is POSIX and
gives exactly the walk's meaning: no symlinked folder is ever entered; a symlinked *file*
counts when its target is inside the vault, which is mapped to a vault path with
``realpath`` and then opened through descriptors with ``O_NOFOLLOW`` again, so a target
swapped after the mapping is refused (or mapped again), never followed out.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat as stat_mod
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import NamedTuple
from urllib.parse import quote_from_bytes

from engram_ls.core.config import CONFIG_DIR, EngramConfig
from engram_ls.core.errors import EngramError, InvalidRequest, NotFound, OutsideVault
from engram_ls.core.globs import compile_glob

ALWAYS_IGNORED_DIRS = frozenset({".git", CONFIG_DIR, "node_modules"})


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


class FileStat(NamedTuple):
    """A note's path and stat. A tuple, like the index's ``(path, mtime_ns, size)`` rows: the
    reconcile compares a file with its row in one step, and a walk of 100,000 notes makes
    them in a tenth of the time a frozen dataclass takes (0.02 s against 0.12 s)."""

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
        """Include/exclude globs only (the walk has already pruned excluded folders), of a
        path that is text: a name whose bytes are not UTF-8 (``\udcff`` once decoded) is no
        note, since the index, its answers and every protocol carry paths as UTF-8 text."""
        if not rel_path.isascii() and not _utf8(rel_path):
            return False
        if self._all_md and not self._exclude:
            return rel_path.endswith(".md")
        if not any(rx.match(rel_path) for rx in self._include):
            return False
        return not any(rx.match(rel_path) for rx in self._exclude)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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

    def inside(self, rel_paths: Iterable[str], *, regular: bool = False) -> set[str]:
        """Those of ``rel_paths`` (index paths: relative, no ``..``) that stay inside the vault;
        with ``regular``, only regular files (a symlinked file: its target), as ripgrep must be
        given them (it waits on a FIFO, follows a symlink anywhere). Each folder on the way is
        ``lstat``-ed once per call, a real path resolved only where a symlink appears. A missing
        file cannot escape (nor is it regular)."""
        root_s = os.fspath(self.root)
        modes: dict[str, int | None] = {"": stat_mod.S_IFDIR}

        def mode(rel: str) -> int | None:
            if rel not in modes:
                try:
                    modes[rel] = os.lstat(os.path.join(root_s, rel)).st_mode
                except OSError:
                    modes[rel] = None
            return modes[rel]

        def is_link(rel: str) -> bool:
            found = mode(rel)
            return found is not None and stat_mod.S_ISLNK(found)

        linked: dict[str, bool] = {"": False}

        def through_link(folder: str) -> bool:  # a folder on the way (or itself) is a symlink
            if folder not in linked:
                linked[folder] = through_link(folder.rpartition("/")[0]) or is_link(folder)
            return linked[folder]

        def escapes(rel: str) -> bool:
            real = os.path.realpath(os.path.join(root_s, rel))
            return not (real == root_s or real.startswith(root_s + os.sep))

        def is_regular(rel: str) -> bool:
            found = mode(rel)
            if found is not None and stat_mod.S_ISLNK(found):
                try:
                    found = os.stat(os.path.join(root_s, rel)).st_mode
                except OSError:
                    return False
            return found is not None and stat_mod.S_ISREG(found)

        ok: set[str] = set()
        for rel in rel_paths:
            if rel.startswith("/") or "\x00" in rel or "/../" in f"/{rel}/":
                continue
            linking = through_link(rel.rpartition("/")[0]) or is_link(rel)
            if linking and escapes(rel):
                continue
            if regular and not is_regular(rel):
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

        Folders are scanned through descriptors opened without following symlinks, so a
        symlinked folder is never entered (no loops, no escapes), even one swapped in while
        the walk runs; a symlinked file counts only when its target is inside the vault.
        Unreadable folders are skipped.
        """
        return self._walk(under, ordered=False)

    def walk_sorted(self, under: str = "") -> Iterator[FileStat]:
        """The notes of ``walk``, in the order of their paths: Python's ``str`` order, which is
        SQLite's ``BINARY`` order of the same paths as UTF-8 (both compare code points).

        One folder is listed at a time (its entries, plus the unvisited entries of the folders
        above it), so memory follows the largest folder, not the vault. A folder ``x`` sorts
        as ``x/``: every path under it shares that prefix, and no name holds a ``/``, so the
        folder's block of paths falls exactly where ``x/`` falls among its siblings.
        """
        return self._walk(under, ordered=True)

    def _walk(self, under: str, *, ordered: bool) -> Iterator[FileStat]:
        """Depth first, holding a descriptor for each folder on the current path only."""
        try:
            top = _open_folder(self._root_s, under.split("/") if under else [])
        except OSError:
            return
        stack: list[tuple[str, int, list[tuple[str, bool, os.DirEntry[str]]]]] = []
        try:
            stack.append((under, top, _listing(top, ordered)))
            while stack:
                rel_dir, dfd, entries = stack[-1]
                if not entries:
                    stack.pop()
                    os.close(dfd)
                    continue
                name, is_dir, entry = entries.pop()
                rel = f"{rel_dir}/{name}" if rel_dir else name
                if is_dir:
                    if self.filter.dir_excluded(rel):
                        continue
                    try:
                        sub = os.open(name, _DIR_FLAGS, dir_fd=dfd)
                    except OSError:  # gone, unreadable, or swapped for a symlink meanwhile
                        continue
                    stack.append((rel, sub, _listing(sub, ordered)))
                    continue
                got = self._file_at(entry, rel)
                if got is not None:
                    yield got
        finally:
            for _, fd, _ in stack:
                os.close(fd)

    def _file_at(self, entry: os.DirEntry[str], rel: str) -> FileStat | None:
        """The stat of note ``rel`` (``entry`` of the folder the walk holds open: its stat is
        taken relative to that folder's descriptor); None for anything else (not a note,
        excluded, not a regular file, a symlink leaving the vault)."""
        name = entry.name
        if not name.endswith(".md") or name.startswith("."):
            return None
        try:
            st = entry.stat(follow_symlinks=False)
            if stat_mod.S_ISLNK(st.st_mode):
                st = stat_in(self._root_s, rel)
        except (OSError, OutsideVault):
            return None
        if not stat_mod.S_ISREG(st.st_mode) or not self.filter.file_matches(rel):
            return None
        return FileStat(rel, st.st_mtime_ns, st.st_size)

    def stat(self, rel_path: str) -> FileStat | None:
        """Stat one note; None when it is missing, not a regular file, not a note, or reached
        through a symlinked folder (which the walk never enters) or a symlink leaving the
        vault: what enters the index from an event is what a cold walk would find."""
        if not self.filter.is_note(rel_path):
            return None
        try:
            st = stat_in(self._root_s, rel_path)
        except (OSError, OutsideVault):
            return None
        if not stat_mod.S_ISREG(st.st_mode):
            return None
        return FileStat(rel_path, st.st_mtime_ns, st.st_size)

    # -- file operations (all through ``open_in`` and friends below) -----------------------

    def read(self, rel_path: str, limit: int = -1) -> tuple[bytes, os.stat_result]:
        """The bytes (at most ``limit``) and stat of a regular vault file. OutsideVault when the
        path leaves the vault (``..``, a symlinked folder, a symlink out); OSError when it is
        missing or not a regular file (a FIFO or device never blocks or floods the reader)."""
        return read_in(self._root_s, self.rel(rel_path), limit)

    def read_or_none(self, rel_path: str, limit: int = -1) -> bytes | None:
        """``read``'s bytes, or None when the note cannot be read: gone, not a regular file
        (a FIFO is never waited on), outside the vault. For readers that show what they can."""
        try:
            return self.read(rel_path, limit)[0]
        except (OSError, ValueError, EngramError):
            return None

    def write(
        self,
        rel_path: str,
        data: bytes,
        *,
        overwrite: bool,
        check: Callable[[], None] | None = None,
    ) -> None:
        """Write a vault file atomically (``write_in``)."""
        write_in(self._root_s, self.rel(rel_path), data, overwrite=overwrite, check=check)

    def check_folders(self, rel_path: str) -> None:
        """Refuse (OutsideVault) a path whose existing folders include a symlink or a file:
        the early answer of a write or move, before any work; the operation checks again."""
        check_folders(self._root_s, self.rel(rel_path))

    def move(self, old: str, new: str) -> None:
        """Move a vault file or folder without replacing anything (``move_in``)."""
        move_in(self._root_s, self.rel(old), self.rel(new))


def _listing(dfd: int, ordered: bool) -> list[tuple[str, bool, os.DirEntry[str]]]:
    """(name, is a folder, entry) of the entries of the folder open as ``dfd``, last first
    when ``ordered`` (popped as they are visited); empty when it cannot be listed. An entry's
    ``stat`` is ``fstatat`` on ``dfd`` (which the walk keeps open until the folder is done)."""
    try:
        with os.scandir(dfd) as it:
            items = [(e.name, _is_folder(e), e) for e in it]
    except OSError:
        return []
    if ordered:
        items.sort(key=lambda item: f"{item[0]}/" if item[1] else item[0], reverse=True)
    return items


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


# --- containment (see the module docstring) ------------------------------------------------

_ROOT_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_DIR_FLAGS = _ROOT_FLAGS | os.O_NOFOLLOW
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_LINK_ERRNOS = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})
"""What ``open(O_NOFOLLOW)`` of a symlink gives (Linux ELOOP, FreeBSD EMLINK; ENOTDIR for a
symlink opened as a folder)."""
MAX_LINK_HOPS = 8
"""Symlinked files followed one after another before a path counts as a loop."""


def _split(rel: str) -> tuple[list[str], str]:
    """(folders, name) of a vault-relative POSIX path."""
    folder, _, name = rel.rpartition("/")
    return (folder.split("/") if folder else []), name


def _open_folder(root: str, parts: Sequence[str], *, create: bool = False) -> int:
    """A descriptor of the vault folder ``parts`` (a list of names), opened from the root one
    component at a time without following symlinks; with ``create``, missing folders are made
    on the way (``mkdirat``: a name that appears as a symlink meanwhile is refused, not
    followed). OSError (ELOOP, ENOTDIR) for a folder that is a symlink or not a folder."""
    fd = os.open(root, _ROOT_FLAGS)
    try:
        for name in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_folders(root: str, rel: str) -> None:
    """OutsideVault when a folder of ``rel`` that exists is a symlink or not a folder."""
    parts, _ = _split(rel)
    fd = os.open(root, _ROOT_FLAGS)
    try:
        for name in parts:
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno in _LINK_ERRNOS:
                    raise _refusal(rel, exc) from None
                raise
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)


def _link_rel(root: str, rel: str) -> str:
    """The vault path a symlinked note ``rel`` points at (OutsideVault when outside)."""
    real = os.path.realpath(os.path.join(root, rel))
    if not real.startswith(root + os.sep):
        raise OutsideVault(f"path resolves outside the vault: {rel}", data={"path": rel})
    return real[len(root) + 1 :].replace(os.sep, "/")


def _refusal(rel: str, exc: OSError) -> OutsideVault:
    return OutsideVault(
        f"path goes through a symlinked folder or is not a file: {rel}",
        data={"path": rel, "reason": exc.strerror or str(exc)},
    )


def open_in(root: str, rel: str) -> int:
    """A read-only, non-blocking descriptor of vault file ``rel`` (``root``: the vault's real
    path). No folder on the way may be a symlink (OutsideVault); a symlinked file is followed
    only to a target inside the vault. FileNotFoundError when it is missing; the caller checks
    the file type (a FIFO or a device opens, without blocking)."""
    hops = 0
    while True:
        dfd, name = _folder_of(root, rel)
        try:
            return os.open(name, _READ_FLAGS, dir_fd=dfd)
        except OSError as exc:
            if exc.errno not in _LINK_ERRNOS:
                raise
            if not stat_mod.S_ISLNK(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode):
                raise
        finally:
            os.close(dfd)
        hops += 1
        if hops > MAX_LINK_HOPS:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", rel)
        rel = _link_rel(root, rel)


def stat_in(root: str, rel: str) -> os.stat_result:
    """The stat of vault file ``rel`` under the rules of ``open_in`` (a symlinked file: its
    target's), without opening it."""
    hops = 0
    while True:
        dfd, name = _folder_of(root, rel)
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        finally:
            os.close(dfd)
        if not stat_mod.S_ISLNK(st.st_mode):
            return st
        hops += 1
        if hops > MAX_LINK_HOPS:
            raise OSError(errno.ELOOP, "too many levels of symbolic links", rel)
        rel = _link_rel(root, rel)


def read_fd(fd: int, limit: int = -1, name: str = "") -> tuple[bytes, os.stat_result]:
    """The bytes (at most ``limit``) and stat of an open regular file; closes ``fd``. Anything
    else (a FIFO, a device, a folder) raises OSError instead of blocking or reading forever."""
    with open(fd, "rb", closefd=True) as fh:
        st = os.fstat(fh.fileno())
        if not stat_mod.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", name)
        return fh.read(limit), st


def read_in(root: str, rel: str, limit: int = -1) -> tuple[bytes, os.stat_result]:
    """The bytes (at most ``limit``) and stat of the regular vault file ``rel``: the one
    reader of notes (``open_in`` then ``read_fd``)."""
    return read_fd(open_in(root, rel), limit, rel)


def read_regular(path: str | os.PathLike[str], limit: int = -1) -> bytes:
    """The bytes (at most ``limit``) of a regular file that is not a note (the config file);
    notes are read with ``read_in``. A FIFO or device raises OSError, never blocks."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC  # a symlinked config file is fine
    return read_fd(os.open(path, flags), limit, os.fspath(path))[0]


NAME_MAX = 255
"""Bytes of one file or folder name on the file systems Engram runs on."""
_TMP_PREFIX_CHARS = 64
"""Characters of the note's name kept in its temporary file's name (which must stay short
enough for a note whose own name is near ``NAME_MAX``)."""


def _check_names(rel: str) -> None:
    for part in rel.split("/"):
        if len(os.fsencode(part)) > NAME_MAX:
            raise InvalidRequest(
                f"a name in the path is longer than {NAME_MAX} bytes: {part[:40]}…",
                data={"path": rel, "max_name_bytes": NAME_MAX},
            )


def _folder_of(root: str, rel: str, *, create: bool = False) -> tuple[int, str]:
    """(descriptor of the folder holding ``rel``, its name there), by ``_open_folder``; a
    folder on the way that is a symlink or not a folder is OutsideVault."""
    parts, name = _split(rel)
    try:
        return _open_folder(root, parts, create=create), name
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS:
            raise _refusal(rel, exc) from None
        raise


def write_in(
    root: str,
    rel: str,
    data: bytes,
    *,
    overwrite: bool,
    check: Callable[[], None] | None = None,
) -> None:
    """Write vault file ``rel`` so that readers see the old file or the new one, never a part.

    Missing folders are created and every folder is opened from the root without following
    symlinks (OutsideVault for a symlinked folder); the temporary file is created in the
    note's own folder through that descriptor (``O_EXCL | O_NOFOLLOW``) and renamed (or
    linked) there, so the bytes can never land outside the vault, and a failed write leaves
    no temporary file behind. Overwriting a symlinked note writes its target inside the vault.
    Without ``overwrite`` an existing file is left alone and FileExistsError is raised (the
    check and the creation are one atomic step: a hard link of the finished temporary file).
    An existing note keeps its permissions; a new one gets the umask's (as any editor's).
    ``check`` runs once the new content is on disk, just before it replaces the file; raising
    there leaves the file untouched, so the window for a concurrent writer is only the check.
    InvalidRequest for a name over ``NAME_MAX`` bytes or a target that is not a regular file.
    """
    _check_names(rel)
    for _ in range(MAX_LINK_HOPS + 1):
        dfd, name = _folder_of(root, rel, create=True)
        try:
            try:
                old: os.stat_result | None = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except FileNotFoundError:
                old = None
            if old is not None and stat_mod.S_ISLNK(old.st_mode) and overwrite:
                target = _link_rel(root, rel)
            else:
                if old is not None and not stat_mod.S_ISREG(old.st_mode) and overwrite:
                    raise InvalidRequest(f"{rel} is not a regular file", data={"path": rel})
                mode = stat_mod.S_IMODE(old.st_mode) if old is not None else None
                _write_at(dfd, name, data, overwrite=overwrite, mode=mode, check=check)
                return
        finally:
            os.close(dfd)
        rel = target
    raise OSError(errno.ELOOP, "too many levels of symbolic links", rel)


def _write_at(
    dfd: int,
    name: str,
    data: bytes,
    *,
    overwrite: bool,
    mode: int | None,
    check: Callable[[], None] | None,
) -> None:
    tmp = f".{name[:_TMP_PREFIX_CHARS]}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o666, dir_fd=dfd)  # the umask applies, as for any new file
    try:
        with open(fd, "wb", closefd=True) as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if check is not None:
            check()
        if overwrite:
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        else:
            os.link(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)
    with contextlib.suppress(OSError):  # the rename itself survives a crash
        os.fsync(dfd)


def move_in(root: str, old: str, new: str) -> None:
    """Move vault file or folder ``old`` to ``new`` without replacing anything there.

    Both folders are opened from the root without following symlinks (OutsideVault when
    either goes through a symlinked folder, so nothing moves out of the vault through a
    link, and missing destination folders are only ever created inside it), and the rename is
    made between those descriptors. A file is moved by a hard link then an unlink (never
    replacing an existing name), or renamed where hard links are not possible. A symlinked
    file is moved as the link itself. FileNotFoundError when ``old`` is missing,
    FileExistsError when ``new`` exists.
    """
    _check_names(new)
    src, old_name = _folder_of(root, old)
    try:
        st = os.stat(old_name, dir_fd=src, follow_symlinks=False)
        dst, new_name = _folder_of(root, new, create=True)
        try:
            if _exists_at(dst, new_name):
                raise FileExistsError(errno.EEXIST, "exists already", new)
            if stat_mod.S_ISDIR(st.st_mode):
                os.rename(old_name, new_name, src_dir_fd=src, dst_dir_fd=dst)
                return
            try:
                os.link(old_name, new_name, src_dir_fd=src, dst_dir_fd=dst, follow_symlinks=False)
            except FileExistsError:
                raise
            except OSError:  # no hard links here (another file system, FAT, ...)
                if _exists_at(dst, new_name):  # pragma: no cover - raced by another writer
                    raise FileExistsError(errno.EEXIST, "exists already", new) from None
                os.rename(old_name, new_name, src_dir_fd=src, dst_dir_fd=dst)
                return
            os.unlink(old_name, dir_fd=src)
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _exists_at(dfd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


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

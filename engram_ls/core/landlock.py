"""ripgrep confined to the vault by the kernel: Linux Landlock on the threads that start it.

ripgrep opens the files it is given by path. Whatever was checked before (``Vault.inside``),
a folder on the way can be swapped for a symlink to outside while it runs, and ripgrep then
reads, counts and prints a file outside the vault (a race, not a missed check: every path
resolved inside when it was checked). Landlock closes it where Linux has it (5.13 and later,
when enabled): a thread restricts itself to reading files and folders beneath the vault root
(and ripgrep's own binary and the system's shared libraries, which its start reads), and
every process it starts inherits the restriction, so the kernel refuses each read that
resolves outside, at the moment of the read, at no cost per file.

A restriction cannot be lifted, so each vault root has its own launcher threads (``Confined``)
that restrict themselves once and then only start processes and read their pipes. Where the
system has no Landlock, or a confined ``rg --version`` does not run (a library elsewhere),
``Confined.run`` runs the call on the caller's thread as before: the race is then open, and the
answer is the same as without this module.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import logging
import os
import queue
import subprocess
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from engram_ls.core.contained import libc_function, linux_unified

log = logging.getLogger(__name__)

T = TypeVar("T")

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
READ_FILE = 1 << 2
READ_DIR = 1 << 3
SYSTEM_FILES = ("/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache", os.devnull)
"""What starting a dynamically linked program reads besides itself (those that exist), and
the empty input it is given."""
THREADS = 4
"""Launcher threads a vault root at most: searches on other threads run ripgrep four at a
time (the servers' request workers are fewer)."""
IDLE_S = 30.0
"""A launcher thread without work this long ends (a test run opens thousands of vaults)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall() -> Callable[..., int] | None:
    """libc's ``syscall`` where Landlock's have the numbers above (``linux_unified``), its
    arguments given as their ctypes types."""
    return libc_function("syscall", None, ctypes.c_long) if linux_unified() else None


def available() -> bool:
    """Whether this system has Landlock (its ABI version can be asked)."""
    fn = _syscall()
    if fn is None:
        return False
    version = ctypes.c_uint32(_CREATE_RULESET_VERSION)
    return bool(fn(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0), version) >= 1)


def restrict_thread(readable: list[tuple[str, int]]) -> None:
    """Restrict the calling thread (and what it starts) to reading files and listing folders
    beneath the paths of ``readable`` (each with its rights: ``READ_FILE``, ``READ_DIR``);
    anything else it may still do. OSError when it cannot (no Landlock, a path missing)."""
    fn = _syscall()
    if fn is None:
        raise OSError(38, "Landlock is not available here")
    attr = _RulesetAttr(READ_FILE | READ_DIR)
    size = ctypes.c_size_t(ctypes.sizeof(attr))
    ruleset = fn(ctypes.c_long(_CREATE_RULESET), ctypes.byref(attr), size, ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path, rights in readable:
            fd = os.open(path, getattr(os, "O_PATH", 0o10000000) | os.O_CLOEXEC)
            try:
                rule = _PathBeneath(rights, fd)
                kind, flags = ctypes.c_int(_RULE_PATH_BENEATH), ctypes.c_uint32(0)
                at = ctypes.c_int(ruleset)
                if fn(ctypes.c_long(_ADD_RULE), at, kind, ctypes.byref(rule), flags) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        prctl = libc_function("prctl", [ctypes.c_int, *[ctypes.c_ulong] * 4], ctypes.c_int)
        if prctl is None or prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        at = ctypes.c_int(ruleset)
        if fn(ctypes.c_long(_RESTRICT_SELF), at, ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(ruleset)


class Confined:
    """Launcher threads confined to reading beneath ``root`` (and ``program``, the binary they
    start, and ``SYSTEM_FILES``): ``run(call)`` runs ``call`` on one of them (``THREADS`` at
    most, each gone after ``IDLE_S`` without work), or on the caller's thread where they cannot
    be confined (``confined`` says which, once the first call found out)."""

    def __init__(self, root: str, program: str) -> None:
        self.root = root
        self.program = program
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._alive = 0
        self._idle = 0
        self.confined: bool | None = None
        """Whether calls run confined: None until the first call finds out."""

    def run(self, call: Callable[[], T]) -> T:
        if self.confined is None:
            self._probe()
        if not self.confined:
            return call()
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            if not self._idle and self._alive < THREADS:
                self._alive += 1
                threading.Thread(target=self._serve, name="engram-rg", daemon=True).start()
            self._jobs.put((call, future))
        try:
            return future.result()
        except _Unconfined:
            return call()

    def _probe(self) -> None:
        """Find out, on a thread of its own, whether a confined thread can start the program."""
        done: queue.SimpleQueue[bool] = queue.SimpleQueue()

        def probe() -> None:
            try:
                self._confine()
            except (OSError, subprocess.SubprocessError) as exc:
                log.info("ripgrep runs unconfined for %s: %s", self.root, exc)
                done.put(False)
            else:
                done.put(True)

        threading.Thread(target=probe, name="engram-rg-probe", daemon=True).start()
        found = done.get()
        with self._lock:
            if self.confined is None:
                self.confined = found

    def _confine(self) -> None:
        readable = [(self.root, READ_FILE | READ_DIR), (self.program, READ_FILE)]
        readable += [(p, READ_FILE) for p in SYSTEM_FILES if os.path.exists(p)]
        restrict_thread(readable)
        probe = subprocess.run(
            [self.program, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            check=False,
        )
        if probe.returncode != 0:
            raise OSError(f"{self.program} does not start confined: {probe.stderr[:200]!r}")

    def _serve(self) -> None:
        try:
            self._confine()
        except (OSError, subprocess.SubprocessError) as exc:  # it could a moment ago
            log.warning("ripgrep runs unconfined for %s: %s", self.root, exc)
            with self._lock:
                self.confined = False
                self._alive -= 1
            while True:  # this thread may be restricted and rg unable to start: callers run it
                try:
                    _, future = self._jobs.get_nowait()
                except queue.Empty:
                    return
                future.set_exception(_Unconfined())
        while True:
            with self._lock:
                self._idle += 1
            try:
                job = self._jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with self._lock:
                    self._idle -= 1
                    if self._jobs.empty():  # a job put meanwhile was put under the lock
                        self._alive -= 1
                        return
                continue
            with self._lock:
                self._idle -= 1
            call, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as exc:  # the caller's to see
                future.set_exception(exc)


class _Unconfined(Exception):
    """A launcher thread could not confine itself: the caller runs the call."""


_CONFINED: dict[tuple[str, str], Confined] = {}
_CONFINED_LOCK = threading.Lock()


def confined(root: str, program: str) -> Confined:
    """The launcher of ``root`` (one a vault root and program, for the process's life)."""
    key = (root, program)
    with _CONFINED_LOCK:
        found = _CONFINED.get(key)
        if found is None:
            found = _CONFINED[key] = Confined(root, program)
        return found


__all__ = ["READ_DIR", "READ_FILE", "Confined", "available", "confined", "restrict_thread"]

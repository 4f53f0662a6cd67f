from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "vaults"
EXAMPLE = ROOT / "examples" / "vault"
SHARED_VAULTS = ROOT.parent / "shared" / "vaults"
REAL_VAULT = SHARED_VAULTS / "dwarvesf-brain"

sys.path.insert(0, str(ROOT / "benchmarks"))

# pytest caches the test modules it rewrites for assertions only where Python may write
# bytecode. Where the environment says it may not (PYTHONDONTWRITEBYTECODE), every worker
# rewrote every test module on every run: 3 s of CPU per worker. The test run caches them, as
# scripts/install.sh compiles Engram's own modules.
sys.dont_write_bytecode = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A ``serial`` test measures time, which other tests running beside it would distort: on a
    pytest-xdist worker it is skipped with the way to run it (scripts/test.sh does, after)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    skip = pytest.mark.skip(reason="serial: runs alone, with `pytest -n 0 -m serial`")
    for item in items:
        if item.get_closest_marker("serial") is not None:
            item.add_marker(skip)


def copy_tree(src: Path, dest: Path) -> Path:
    """Copy a vault for a test to change; the copy is writable even if the source is not."""
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns("index.sqlite*"))
    for path in [dest, *dest.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
    return dest


@contextlib.contextmanager
def _environment(cwd: Path | None, env: Mapping[str, str | None]) -> Iterator[None]:
    """``env`` set (a None value unsets), and ``cwd`` the current folder, for the block."""
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def in_process(
    main: Callable[[list[str]], int],
    prog: str,
    *args: str,
    cwd: Path | None = None,
    env: Mapping[str, str | None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``PROG ARGS`` by calling its ``main`` in this process, its stdout and stderr captured, its
    exit status what ``main`` returns (or argparse's ``SystemExit``)."""
    out, err = io.StringIO(), io.StringIO()
    captured = contextlib.redirect_stdout(out), contextlib.redirect_stderr(err)
    with _environment(cwd, env or {}), captured[0], captured[1]:
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: exit 2 after its message on stderr
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if isinstance(exc.code, str):
                err.write(exc.code + "\n")
    return subprocess.CompletedProcess([prog, *args], code, out.getvalue(), err.getvalue())


def engram_in_process(
    *args: str, cwd: Path | None = None, env: Mapping[str, str | None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``engram ARGS`` in this process (``in_process``): for the tests where no process
    behaviour is under test. The entry point, signals, stdin, argv bytes, terminals and a
    clean stdout of the real process are tested with real processes."""
    from engram_ls.cli import main

    return in_process(main, "engram", *args, cwd=cwd, env=env)


@pytest.fixture
def vault_copy(tmp_path: Path) -> Callable[[str], Path]:
    """Copy a fixture vault (``tags``, ``hostile``, ``example`` or ``real``) into tmp_path."""

    def make(name: str) -> Path:
        if name == "example":
            src = EXAMPLE
        elif name == "real":
            if not REAL_VAULT.is_dir():
                pytest.skip("the shared real vault is not present")
            src = REAL_VAULT
        else:
            src = DATA / name
        return copy_tree(src, tmp_path / f"vault-{name}")

    return make


@pytest.fixture
def generated(tmp_path: Path) -> Callable[..., Path]:
    """A deterministic synthetic vault of N notes (benchmarks/generate_vault.py)."""

    def make(notes: int, seed: int = 1, name: str = "gen", shape: str = "standard") -> Path:
        import generate_vault

        out = tmp_path / name
        generate_vault.generate(out, notes, seed, shape=shape)
        return out

    return make


def git(root: Path, *args: str) -> str:
    """Run the real ``git`` in ``root`` (author set, the user's own configuration left out);
    its stdout."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    argv = ["git", "-c", "user.name=Engram Test", "-c", "user.email=test@example.invalid", *args]
    done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def git_vault(tmp_path: Path) -> Callable[..., tuple[Path, str]]:
    """A vault that is a git repository: two notes committed; ``dirty=True`` then changes one
    note and adds an untracked one. Returns (root, HEAD commit)."""

    def make(name: str = "git-vault", *, dirty: bool = False) -> tuple[Path, str]:
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        root = tmp_path / name
        root.mkdir()
        (root / "alpha.md").write_text("---\ntags: [memory]\n---\n# Alpha\nhello world\n")
        (root / "beta.md").write_text("# Beta\nanother note\n")
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "two notes")
        if dirty:
            with (root / "alpha.md").open("a") as fh:
                fh.write("an uncommitted line\n")
            (root / "gamma.md").write_text("# Gamma\nnot committed\n")
        return root, git(root, "rev-parse", "HEAD")

    return make


@pytest.fixture
def unmakeable_index(tmp_path: Path) -> Path:
    """An index path that can never be created: its folder is a regular file."""
    blocker = tmp_path / "a-file-not-a-folder"
    blocker.write_text("not a folder")
    return blocker / "index.sqlite"

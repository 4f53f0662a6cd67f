"""The index folder stays out of git: a vault under git shows no untracked index files after
``engram index``, a vault's own ``config.yaml`` beside the index can still be committed, and a
``.gitignore`` the user wrote there is never replaced."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_cli import engram

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def test_index_is_not_untracked(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    shutil.rmtree(root / ".engram", ignore_errors=True)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "notes")
    assert engram("index", str(root)).returncode == 0
    assert (root / ".engram" / "index.sqlite").is_file()
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    (root / ".engram" / "config.yaml").write_text("inline_tags: true\n", "utf-8")
    assert git(root, "status", "--porcelain", "--untracked-files=all") == "?? .engram/config.yaml\n"


def test_a_users_gitignore_is_kept(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    shutil.rmtree(root / ".engram", ignore_errors=True)
    (root / ".engram").mkdir()
    (root / ".engram" / ".gitignore").write_text("index.sqlite*\n", "utf-8")
    assert engram("index", str(root)).returncode == 0
    assert (root / ".engram" / ".gitignore").read_text("utf-8") == "index.sqlite*\n"

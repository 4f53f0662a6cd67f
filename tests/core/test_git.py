"""The vault's source revision (core/git.py) against the real ``git``: the commit read from
the repository's files equals ``git rev-parse HEAD`` in every layout git writes (loose and
packed refs, detached HEAD, worktrees, a vault in a subfolder), and ``dirty`` is what ``git
status`` says of the vault's files. Anything odd gives None, never an error."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core.git import GitRevision, SourceRevision, find_git_dir, head_commit
from tests.conftest import git

GitVault = Callable[..., tuple[Path, str]]


def revision(root: Path) -> SourceRevision | None:
    return GitRevision(root, ttl_s=0).current()


def test_a_folder_in_no_repository_has_no_revision(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n")
    assert revision(tmp_path) is None


def test_clean_and_dirty(git_vault: GitVault) -> None:
    root, head = git_vault()
    assert revision(root) == SourceRevision(head, dirty=False)
    (root / "beta.md").write_text("# Beta\nchanged\n")
    assert revision(root) == SourceRevision(head, dirty=True)


def test_an_untracked_note_is_dirty(git_vault: GitVault) -> None:
    root, head = git_vault()
    (root / "new.md").write_text("# New\n")
    assert revision(root) == SourceRevision(head, dirty=True)


def test_the_index_folder_does_not_make_the_vault_dirty(git_vault: GitVault) -> None:
    root, head = git_vault()
    (root / ".engram").mkdir()
    (root / ".engram" / "index.sqlite").write_bytes(b"not committed, not ignored")
    assert revision(root) == SourceRevision(head, dirty=False)


def test_packed_refs_and_detached_head(git_vault: GitVault) -> None:
    root, head = git_vault()
    git(root, "pack-refs", "--all")
    assert not any((root / ".git" / "refs" / "heads").iterdir())
    assert revision(root) == SourceRevision(head, dirty=False)
    (root / "beta.md").write_text("# Beta\nsecond\n")
    git(root, "commit", "-q", "-am", "second")
    second = git(root, "rev-parse", "HEAD")
    assert second != head
    assert revision(root) == SourceRevision(second, dirty=False)  # loose ref beside packed
    git(root, "checkout", "-q", "--detach", head)
    assert revision(root) == SourceRevision(head, dirty=False)


def test_a_vault_in_a_subfolder_of_a_repository(tmp_path: Path, git_vault: GitVault) -> None:
    repo, _ = git_vault("repo")
    vault = repo / "notes"
    vault.mkdir()
    (vault / "n.md").write_text("# N\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "notes")
    head = git(repo, "rev-parse", "HEAD")
    assert revision(vault) == SourceRevision(head, dirty=False)
    (repo / "alpha.md").write_text("outside the vault folder\n")
    assert revision(vault) == SourceRevision(head, dirty=False)  # only the vault's files count
    (vault / "n.md").write_text("# N\nchanged\n")
    assert revision(vault) == SourceRevision(head, dirty=True)


def test_a_worktree_whose_git_is_a_file(tmp_path: Path, git_vault: GitVault) -> None:
    repo, head = git_vault("repo")
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "other", str(other))
    assert (other / ".git").is_file()
    assert revision(other) == SourceRevision(head, dirty=False)
    (other / "alpha.md").write_text("# Alpha\nedited in the worktree\n")
    git(other, "commit", "-q", "-am", "in the worktree")
    wt_head = git(other, "rev-parse", "HEAD")
    assert revision(other) == SourceRevision(wt_head, dirty=False)
    assert revision(repo) == SourceRevision(head, dirty=False)


def test_a_branch_without_a_commit_has_no_revision(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    (tmp_path / "a.md").write_text("# A\n")
    assert revision(tmp_path) is None


def test_a_git_symlink_is_never_followed(tmp_path: Path, git_vault: GitVault) -> None:
    repo, _ = git_vault("repo")
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / ".git").symlink_to(repo / ".git")
    assert find_git_dir(vault) is None and revision(vault) is None


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(b"ref: refs/heads/../../../../etc/passwd\n", id="ref-escape"),
        pytest.param(b"ref: /etc/passwd\n", id="absolute-ref"),
        pytest.param(b"ref: refs/heads/missing\n", id="missing-ref"),
        pytest.param(b"\xff\xfe garbage", id="not-utf8"),
        pytest.param(b"x" * 100_000, id="huge"),
        pytest.param(b"", id="empty"),
    ],
)
def test_odd_heads_give_none(git_vault: GitVault, head: bytes) -> None:
    root, _ = git_vault()
    (root / ".git" / "HEAD").write_bytes(head)
    assert revision(root) is None


def test_odd_git_files_give_none(tmp_path: Path) -> None:
    (tmp_path / ".git").write_bytes(b"gitdir: /nonexistent/place\n")
    assert revision(tmp_path) is None
    (tmp_path / ".git").write_bytes(b"\xff" * 10)
    assert revision(tmp_path) is None
    found = find_git_dir(tmp_path)
    assert found is None or head_commit(*found) is None


def test_git_missing_gives_unknown_dirty(
    git_vault: GitVault, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, head = git_vault(dirty=True)
    monkeypatch.setenv("PATH", os.devnull)  # no git to run: the commit is still read
    assert revision(root) == SourceRevision(head, dirty=None)


def test_the_dirty_answer_is_kept_briefly(git_vault: GitVault) -> None:
    root, head = git_vault()
    kept = GitRevision(root, ttl_s=3600)
    assert kept.current() == SourceRevision(head, dirty=False)
    (root / "beta.md").write_text("# Beta\nchanged\n")
    assert kept.current() == SourceRevision(head, dirty=False)  # within its time
    git(root, "commit", "-q", "-am", "now committed")
    new_head = git(root, "rev-parse", "HEAD")
    assert kept.current() == SourceRevision(new_head, dirty=False)  # a new commit: asked again


def test_an_old_answer_is_renewed_in_the_background(git_vault: GitVault) -> None:
    """Past its time the kept answer is still given at once, and a background ``git status``
    renews it for the next caller: no search waits for git once the first answer is known."""
    root, head = git_vault()
    kept = GitRevision(root, ttl_s=0)
    assert kept.current() == SourceRevision(head, dirty=False)
    (root / "beta.md").write_text("# Beta\nchanged\n")
    end = time.monotonic() + 20
    while kept.current() != SourceRevision(head, dirty=True):
        assert time.monotonic() < end, "the background git status never renewed the answer"
        time.sleep(0.02)

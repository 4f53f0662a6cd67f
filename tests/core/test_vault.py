from __future__ import annotations

import os
from pathlib import Path

import pytest

from engram_ls.core.config import EngramConfig
from engram_ls.core.errors import NotFound, OutsideVault
from engram_ls.core.vault import Vault, compile_glob, find_vault_root


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        pytest.param("**/*.md", "a.md", True, id="doublestar-root"),
        pytest.param("**/*.md", "a/b/c.md", True, id="doublestar-deep"),
        pytest.param("*.md", "a/b/c.md", True, id="bare-name-any-depth"),
        pytest.param("a/*.md", "a/b/c.md", False, id="star-no-slash"),
        pytest.param("a/**", "a/b/c.md", True, id="folder-all"),
        pytest.param("a/", "a/b/c.md", True, id="trailing-slash"),
        pytest.param("meetings/2024-??-*.md", "meetings/2024-03-x.md", True, id="question"),
        pytest.param("[ab].md", "c.md", False, id="class-miss"),
        pytest.param("[!ab].md", "c.md", True, id="class-negated"),
        pytest.param("archive/**", "archived/x.md", False, id="no-prefix-bleed"),
    ],
)
def test_compile_glob(pattern: str, path: str, expected: bool) -> None:
    assert bool(compile_glob(pattern).match(path)) is expected


def make_tree(root: Path, files: list[str]) -> None:
    for rel in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("# x\n", encoding="utf-8")


def test_walk_ignores_hidden_tooling_and_excluded(tmp_path: Path) -> None:
    make_tree(
        tmp_path,
        [
            "a.md",
            "b/c.md",
            "b/d.txt",
            ".git/x.md",
            ".obsidian/y.md",
            ".engram/z.md",
            "node_modules/p/readme.md",
            "archive/old.md",
            ".hidden.md",
        ],
    )
    vault = Vault(tmp_path, EngramConfig(exclude=("archive/**",)))
    assert sorted(f.path for f in vault.walk()) == ["a.md", "b/c.md"]
    assert vault.filter.is_note("b/c.md")
    assert not vault.filter.is_note("archive/old.md")
    assert not vault.filter.is_note(".git/x.md")


def test_walk_does_not_follow_symlinks_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    make_tree(outside, ["secret.md"])
    root = tmp_path / "vault"
    make_tree(root, ["in.md"])
    os.symlink(outside / "secret.md", root / "leak.md")
    os.symlink(outside, root / "leakdir")
    os.symlink(root, root / "loop")
    os.symlink(root / "in.md", root / "alias.md")
    vault = Vault(root, EngramConfig())
    assert sorted(f.path for f in vault.walk()) == ["alias.md", "in.md"]
    with pytest.raises(OutsideVault):
        vault.resolve_inside("leak.md")


@pytest.mark.parametrize(
    "bad",
    ["../x.md", "a/../../x.md", "/etc/passwd", "a\x00b.md"],
    ids=["up", "deep-up", "abs", "nul"],
)
def test_rel_rejects_escapes(tmp_path: Path, bad: str) -> None:
    vault = Vault(tmp_path, EngramConfig())
    with pytest.raises(OutsideVault):
        vault.rel(bad)


def test_rel_accepts_absolute_inside(tmp_path: Path) -> None:
    vault = Vault(tmp_path, EngramConfig())
    assert vault.rel(tmp_path / "a" / "b.md") == "a/b.md"
    assert vault.rel("./a//b.md") == "a/b.md"


def test_a_path_that_changes_while_it_is_resolved_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symlinked folder swapped back for a folder between the ``lstat`` and the ``readlink``
    of its resolution (``os.path.realpath`` raises EINVAL): a typed refusal or the path left
    out, never an ``OSError`` from the middle of a search or an edit."""
    from engram_ls.core import contained

    root = tmp_path / "vault"
    (root / "real").mkdir(parents=True)
    (root / "real" / "n.md").write_text("# N\n")
    (root / "link").symlink_to(root / "real", target_is_directory=True)
    vault = Vault(root, EngramConfig())
    assert vault.inside(["link/n.md", "real/n.md"]) == {"link/n.md", "real/n.md"}

    def changing(path: object) -> str:
        raise OSError(22, "Invalid argument", os.fspath(path))  # type: ignore[arg-type]

    monkeypatch.setattr(os.path, "realpath", changing)
    assert vault.inside(["link/n.md", "real/n.md"]) == {"real/n.md"}  # no symlink: no resolve
    with pytest.raises(OutsideVault):
        vault.resolve_inside("link/n.md")
    assert not vault.contains("link/n.md")
    with pytest.raises(OutsideVault):
        contained._link_rel(os.fspath(root), "link/n.md")


def test_missing_vault_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        Vault(tmp_path / "nope", EngramConfig())


def test_find_vault_root(tmp_path: Path) -> None:
    (tmp_path / ".engram").mkdir()
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert find_vault_root(deep) == tmp_path.resolve()


def test_stat_read_and_write_agree_with_the_walk_on_symlinks(tmp_path: Path) -> None:
    """Whatever the walk leaves out, an event path (``stat``) leaves out too: no symlinked
    folder, even one pointing inside; a symlinked note counts when it points inside."""
    root = tmp_path / "vault"
    make_tree(root, ["real/in.md", "top.md"])
    os.symlink(root / "real", root / "alias")
    os.symlink(root / "real" / "in.md", root / "link.md")
    vault = Vault(root, EngramConfig())
    walked = {f.path for f in vault.walk()}
    assert walked == {"real/in.md", "top.md", "link.md"}
    for rel in ["real/in.md", "top.md", "link.md", "alias/in.md"]:
        assert (vault.stat(rel) is not None) == (rel in walked), rel
    assert vault.read("link.md")[0] == b"# x\n"
    with pytest.raises(OutsideVault):
        vault.read("alias/in.md")
    with pytest.raises(OutsideVault):
        vault.write("alias/new.md", b"x", overwrite=False)
    assert not (root / "real" / "new.md").exists()
    vault.write("link.md", b"# y\n", overwrite=True)  # writes the target, keeps the link
    assert os.path.islink(root / "link.md")
    assert (root / "real" / "in.md").read_bytes() == b"# y\n"


@pytest.mark.parametrize(
    "rel",
    ["a/b.md", "x~y_z-1.2.md", "a b/c#.md", "é/x.md", "%41.md", "a?b&c.md", "emoji 🙂.md", ""],
)
def test_a_note_s_uri_is_its_path_s_file_uri(tmp_path: Path, rel: str) -> None:
    """Whatever the characters of the vault's folder and of the note's path (the common ones
    taken as they are, the others quoted), the URI is ``Path.as_uri``'s."""
    root = tmp_path / "a vault 100% é"
    root.mkdir()
    vault = Vault(root, EngramConfig())
    assert vault.uri(rel) == (root.resolve() / rel).as_uri() + ("/" if not rel else "")


def test_inside_answers_the_same_with_openat2_as_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Vault.inside`` asks ``openat2(RESOLVE_BENEATH)`` first where Linux has it: the same
    answer as its own walk of each path (symlinked folders and files followed while inside,
    any way out refused, a FIFO or a missing file not regular), on every kind of path; the
    ordinary ones and those through a relative symlink inside are answered by ``openat2``
    itself (so it is in use), the rest by the walk."""
    from engram_ls.core import contained

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n")
    root = tmp_path / "vault"
    (root / "real").mkdir(parents=True)
    (root / "real" / "n.md").write_text("# N\n")
    (root / "rel-dir").symlink_to("real", target_is_directory=True)
    (root / "abs-dir").symlink_to(root / "real", target_is_directory=True)
    (root / "out-dir").symlink_to("../outside", target_is_directory=True)
    (root / "abs-out-dir").symlink_to(outside, target_is_directory=True)
    (root / "real" / "rel-file.md").symlink_to("n.md")
    (root / "real" / "out-file.md").symlink_to("../../outside/secret.md")
    (root / "real" / "dangling.md").symlink_to("gone.md")
    os.mkfifo(root / "real" / "fifo.md")
    paths = [
        "real/n.md",
        "rel-dir/n.md",
        "abs-dir/n.md",
        "out-dir/secret.md",
        "abs-out-dir/secret.md",
        "real/rel-file.md",
        "real/out-file.md",
        "real/dangling.md",
        "real/fifo.md",
        "real/missing.md",
        "real/n.md/below.md",
        "real/../../outside/secret.md",
        "/etc/passwd",
    ]
    vault = Vault(root, EngramConfig())
    inside = {"real/n.md", "rel-dir/n.md", "abs-dir/n.md", "real/rel-file.md"}
    answers = {r: vault.inside(paths, regular=r) for r in (False, True)}
    assert answers[True] == inside
    missing = {"real/dangling.md", "real/missing.md", "real/n.md/below.md"}  # cannot escape
    assert answers[False] == inside | missing | {"real/fifo.md"}
    if contained._load_openat2() is not None:
        assert contained.beneath(os.fspath(root), paths, regular=True) >= {
            "real/n.md",
            "rel-dir/n.md",
            "real/rel-file.md",
        }
    monkeypatch.setattr(contained, "_openat2", [None])
    assert contained.beneath(os.fspath(root), paths) == set()
    assert {r: vault.inside(paths, regular=r) for r in (False, True)} == answers

"""``engram mv``: move a note or folder and rewrite the links to it, as a user runs it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.test_cli import engram


def test_mv_dry_run_then_move(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("links")
    (root / ".engram").mkdir()  # a vault, found from the current folder
    before = {p: p.read_bytes() for p in root.rglob("*.md")}
    proc = engram("mv", "alpha.md", "archive/Alpha Renamed.md", "--dry-run", cwd=root)
    assert proc.returncode == 0, proc.stderr
    assert "index.md:7: Alpha -> Alpha Renamed" in proc.stdout
    assert "projects/gamma.md:8: ../alpha.md -> ../archive/Alpha%20Renamed.md" in proc.stdout
    assert "would move alpha.md to archive/Alpha Renamed.md (1 note); would update 6 links" in (
        proc.stdout
    )
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == before

    proc = engram("mv", "alpha.md", "archive/Alpha Renamed.md", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["moved"] == {"alpha.md": "archive/Alpha Renamed.md"}
    assert sorted(f["path"] for f in data["files"]) == [
        "index.md",
        "projects/gamma.md",
        "two/Dup.md",
    ]
    assert not (root / "alpha.md").exists()
    assert (root / "archive/Alpha Renamed.md").read_bytes() == before[root / "alpha.md"]
    assert (root / "two/Dup.md").read_text(
        encoding="utf-8"
    ) == "# Dup two\n\nSee [[Alpha Renamed]].\n"

    # the index follows: a search finds the note at its new path
    proc = engram("search", "--vault", str(root), "--json", "--no-sync", "--path", "archive")
    assert [r["path"] for r in json.loads(proc.stdout)["results"]] == ["archive/Alpha Renamed.md"]
    proc = engram("search", "--vault", str(root), "--json", "--no-sync", "--path", "alpha.md")
    assert json.loads(proc.stdout)["total"] == 0

    # a folder, with --vault and vault-relative paths
    proc = engram("mv", "--vault", str(root), "--relative", "projects", "work/projects")
    assert proc.returncode == 0, proc.stderr
    assert (root / "work/projects/gamma.md").exists()
    gamma = (root / "work/projects/gamma.md").read_text(encoding="utf-8")
    assert "[alpha](../../archive/Alpha%20Renamed.md)" in gamma
    assert "[gamma intro](work/projects/gamma.md#intro)" in (root / "index.md").read_text("utf-8")


def test_mv_refuses_hostile_paths(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("links")
    (root / ".engram").mkdir()  # a vault, found from the current folder
    before = {p: p.read_bytes() for p in root.rglob("*.md")}
    for args in (
        ("alpha.md", "../escaped.md"),
        ("../outside.md", "x.md"),
        ("alpha.md", "beta.md"),
        ("alpha.md", "/etc/alpha.md"),
    ):
        proc = engram("mv", *args, cwd=root)
        assert proc.returncode == 2, (args, proc.stdout)
        assert "engram: error:" in proc.stderr and "[ENGRAM_" in proc.stderr
    assert {p: p.read_bytes() for p in root.rglob("*.md")} == before
    assert not (root.parent / "escaped.md").exists()

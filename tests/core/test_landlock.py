"""The launcher threads that start ripgrep confined to a vault (``core/landlock.py``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from engram_ls.core import landlock
from engram_ls.core.ripgrep import rg_binary


def test_a_confined_launcher_reads_inside_and_is_refused_outside(tmp_path: Path) -> None:
    """Calls run on a launcher thread that the kernel lets read only beneath the root: a file
    inside reads, one outside (also through a symlink inside) is refused at the read."""
    if not landlock.available():
        pytest.skip("no Landlock on this system")
    root = tmp_path / "vault"
    root.mkdir()
    (root / "in.md").write_text("inside\n", encoding="utf-8")
    (tmp_path / "out.md").write_text("outside\n", encoding="utf-8")
    (root / "link.md").symlink_to("../out.md")
    launcher = landlock.Confined(str(root), rg_binary())
    assert launcher.run(lambda: threading.current_thread().name) == "engram-rg"
    assert launcher.confined is True
    assert launcher.run((root / "in.md").read_text) == "inside\n"
    for outside in (tmp_path / "out.md", root / "link.md"):
        with pytest.raises(PermissionError):
            launcher.run(outside.read_text)
    assert (tmp_path / "out.md").read_text() == "outside\n"  # the caller's thread is free


def test_a_launcher_that_cannot_confine_itself_hands_the_call_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The probe confined a thread, the launcher thread then could not: its call runs on the
    caller's thread (never on a thread restricted without rg able to start), and the later
    calls too."""
    answers = iter([None])

    def confine(self: landlock.Confined) -> None:
        if next(answers, "refused") == "refused":
            raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(landlock.Confined, "_confine", confine)
    launcher = landlock.Confined("/", "rg")
    me = threading.current_thread()
    assert launcher.run(threading.current_thread) is me
    assert launcher.confined is False
    assert launcher.run(threading.current_thread) is me

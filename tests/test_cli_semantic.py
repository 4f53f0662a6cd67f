"""Search by meaning from the ``engram`` command: ``index`` embeds, ``search --mode semantic``
and ``hybrid`` answer, an edit on disk is found by meaning at the next search."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import engram_in_process as engram

INSTALL = " -m pip install wordllama==0.4.0.post1 "
"""What a missing extra's message says: this Python's pip and the extra's requirements (Engram
is not on the package index: ``pip install 'engram-ls[semantic]'`` cannot work)."""


def _first(proc: object) -> str:
    data = json.loads(proc.stdout)  # type: ignore[attr-defined]
    return str(data["results"][0]["path"])


def test_index_embeds_and_search_answers_by_meaning(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    proc = engram("index", str(root))
    assert proc.returncode == 0
    assert "embedded 31 notes" in proc.stdout
    query = "how to ship a python library"
    proc = engram("search", "--vault", str(root), "--json", query)
    assert json.loads(proc.stdout)["total"] == 0  # no note has these words
    for mode in ("semantic", "hybrid"):
        proc = engram("search", "--vault", str(root), "--mode", mode, "--json", query)
        assert proc.returncode == 0, proc.stderr
        assert _first(proc) == "reference/python-packaging.md"
    for mode in ("semantic", "hybrid"):  # read-only: the index as it is, never written
        proc = engram("search", "--vault", str(root), "--mode", mode, "--no-sync", query)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("reference/python-packaging.md:")
    status = json.loads(engram("status", str(root), "--json").stdout)
    assert status["semantic"]["state"] == "ready"
    assert status["capabilities"] == {
        "semantic": True,
        "model": "wordllama/l2_supercat_256",
        "dims": 256,
    }
    human = engram("status", str(root)).stdout
    assert "semantic:   ready, 31 of 31 notes embedded" in human


def test_an_edit_on_disk_is_found_by_meaning(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    assert engram("index", "--no-semantic", str(root)).returncode == 0
    (root / "inbox/pets.md").write_text(
        "# Office animals\n\nShould we adopt a puppy or a kitten for the team?\n", "utf-8"
    )
    proc = engram(
        "search", "--vault", str(root), "--mode", "semantic", "--json", "getting a pet dog or cat"
    )
    assert proc.returncode == 0, proc.stderr
    assert _first(proc) == "inbox/pets.md"


def test_semantic_off_is_a_clear_error(vault_copy: Callable[[str], Path]) -> None:
    root = vault_copy("example")
    (root / ".engram").mkdir(exist_ok=True)
    (root / ".engram/config.yaml").write_text("semantic:\n  enabled: false\n")
    proc = engram("search", "--vault", str(root), "--mode", "semantic", "anything")
    assert proc.returncode == 2
    assert "ENGRAM_UNSUPPORTED_MODE" in proc.stderr and "semantic.enabled" in proc.stderr
    assert proc.stdout == ""


_WITHOUT_EXTRA = """
import sys
sys.modules["numpy"] = None  # as if the semantic extra were not installed: find_spec says None
from engram_ls.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_without_the_extra_the_modes_name_the_install_command(
    vault_copy: Callable[[str], Path],
) -> None:
    """A real process in which numpy cannot be found: ``semantic`` and ``hybrid`` are refused
    with the install command, status says ``unavailable``, every other mode answers."""
    import subprocess
    import sys

    root = vault_copy("example")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", _WITHOUT_EXTRA, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    assert run("index", str(root)).returncode == 0
    for mode in ("semantic", "hybrid"):
        proc = run("search", "--vault", str(root), "--mode", mode, "a python library")
        assert proc.returncode == 2 and proc.stdout == ""
        assert "ENGRAM_UNSUPPORTED_MODE" in proc.stderr
        assert INSTALL in proc.stderr and "engram-ls[semantic]" not in proc.stderr
    status = json.loads(run("status", str(root), "--json").stdout)
    assert status["semantic"]["state"] == "unavailable"
    assert status["capabilities"] == {"semantic": False, "model": None, "dims": None}
    assert json.loads(run("search", "--vault", str(root), "--json", "packaging").stdout)["total"]


def test_without_the_default_models_package_status_says_so(
    vault_copy: Callable[[str], Path],
) -> None:
    """numpy and the rest installed, but not the package that holds the default model: status
    and related notes still answer (search by meaning ``unavailable``, with the reason), and a
    search by meaning names the install command."""
    import subprocess
    import sys

    root = vault_copy("example")
    code = _WITHOUT_EXTRA.replace('sys.modules["numpy"]', 'sys.modules["wordllama"]')
    run = [sys.executable, "-c", code]
    assert subprocess.run([*run, "index", str(root)], capture_output=True).returncode == 0
    status = subprocess.run([*run, "status", str(root), "--json"], capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    semantic = json.loads(status.stdout)["semantic"]
    assert semantic["state"] == "unavailable" and INSTALL in semantic["error"]
    proc = subprocess.run(
        [*run, "search", "--vault", str(root), "--mode", "semantic", "a python library"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and INSTALL in proc.stderr

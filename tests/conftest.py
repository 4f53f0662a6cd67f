from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "vaults"
EXAMPLE = ROOT / "examples" / "vault"
SHARED_VAULTS = ROOT.parent / "shared" / "vaults"
REAL_VAULT = SHARED_VAULTS / "dwarvesf-brain"

sys.path.insert(0, str(ROOT / "benchmarks"))


def copy_tree(src: Path, dest: Path) -> Path:
    """Copy a vault for a test to change; the copy is writable even if the source is not."""
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns("index.sqlite*"))
    for path in [dest, *dest.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)
    return dest


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

    def make(notes: int, seed: int = 1, name: str = "gen") -> Path:
        import generate_vault

        out = tmp_path / name
        generate_vault.generate(out, notes, seed)
        return out

    return make

"""The source distribution: its metadata, that it holds every file of the repository its
tests need, and that tests run from it (an unpacked sdist is a checkout)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

NAME = "engram_ls-0.1.0"


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sdist")
    # No isolation: the dev extra brings build and setuptools, so nothing is downloaded.
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (found,) = out.glob("*.tar.gz")
    return found


def names(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tar:
        return {m.name.removeprefix(f"{NAME}/") for m in tar.getmembers() if m.isfile()}


def test_the_metadata_names_the_license_and_the_typing(sdist: Path) -> None:
    with tarfile.open(sdist) as tar:
        member = tar.extractfile(f"{NAME}/PKG-INFO")
        assert member is not None
        info = member.read().decode()
    assert "License-Expression: MIT" in info
    assert "License-File: LICENSE" in info
    assert "Requires-Python: >=3.11" in info
    assert "Classifier: Typing :: Typed" in info
    inside = names(sdist)
    assert {"LICENSE", "engram_ls/py.typed", "README.md"} <= inside


def test_it_holds_every_file_of_the_repository_but_git_s_own(sdist: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist, say): nothing to compare with")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    wanted = {p for p in tracked.split("\0") if p and Path(p).name != ".gitignore"}
    missing = sorted(wanted - names(sdist))
    assert missing == []
    # and no build output, editor downloads or indexes
    stray = [
        n
        for n in names(sdist)
        if "/node_modules/" in n or n.endswith((".pyc", ".vsix", ".so")) or "index.sqlite" in n
    ]
    assert stray == []


def test_tests_run_from_the_unpacked_sdist(sdist: Path, tmp_path: Path) -> None:
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    tree = tmp_path / NAME
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("CI", None)  # a user's machine: editor tests skip with their reasons
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            "tests/core/test_parse.py",
            "tests/test_cli.py",
            "tests/test_docs_examples.py",
            "tests/test_architecture.py",
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert " passed" in proc.stdout
    # The package the tests imported is the unpacked one, not the checkout's.
    probe = subprocess.run(
        [sys.executable, "-c", "import engram_ls, tests.conftest as c; print(engram_ls.__file__)"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.stdout.strip().startswith(str(tree)), probe.stdout + probe.stderr

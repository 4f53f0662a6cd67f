"""What to do when a tool an editor test needs is missing.

On a contributor's machine (``CI`` unset) the test is skipped with what is missing and how to
get it; ``./scripts/test.sh`` runs everything else. Under ``CI=true`` (or ``CI=1``) the editor
tests are mandatory: a missing tool fails the test, as ``scripts/install_vscode.sh`` fails there.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def mandatory() -> bool:
    """Whether the editor tests must run (CI=true or CI=1, as scripts/install_vscode.sh reads it)."""
    return os.environ.get("CI", "").lower() in ("1", "true")


def missing(what: str, hint: str) -> NoReturn:
    if mandatory():
        pytest.fail(
            f"{what} is missing: {hint} (CI=true: editor tests are mandatory)", pytrace=False
        )
    pytest.skip(f"{what} is missing: {hint} (under CI=true this fails)")

"""When the servers' background integrity check runs (core/check.py): the first one, of an
index just opened, gives way to the searches an editor sends first."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engram_ls.core import check
from engram_ls.core.config import EngramConfig, Limits
from engram_ls.core.service import Engram


@pytest.fixture
def engram(generated: Callable[..., Path]) -> Engram:
    e = Engram(generated(50), config=EngramConfig(limits=Limits(check_interval_s=0)))
    e.open()
    e.sync()
    yield e
    e.close()


def _checks(engram: Engram, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    done: list[float] = []

    def verify() -> None:
        done.append(time.monotonic())

    monkeypatch.setattr(engram, "verify", verify)
    return done


def _searching(engram: Engram, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        engram.search({"query": "index", "limit": 1})
        time.sleep(0.05)


def test_the_first_check_waits_for_a_quiet_moment(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check, "QUIET_S", 0.5)
    done = _checks(engram, monkeypatch)
    checker = check.IntegrityChecker(engram)
    checker.start()
    try:
        _searching(engram, 2.0)
        assert not done, "checked while the searches came"
        stopped = time.monotonic()
        deadline = stopped + 10
        while not done and time.monotonic() < deadline:
            time.sleep(0.05)
        assert done and done[0] - stopped >= 0.4, "checked at the first quiet moment"
    finally:
        checker.stop()


def test_the_first_check_runs_at_last_however_busy(
    engram: Engram, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check, "QUIET_S", 0.5)
    monkeypatch.setattr(check, "FIRST_WITHIN_S", 1.0)
    done = _checks(engram, monkeypatch)
    started = time.monotonic()
    checker = check.IntegrityChecker(engram)
    checker.start()
    try:
        _searching(engram, 3.0)
        assert len(done) == 1 and 0.9 <= done[0] - started < 2.9
    finally:
        checker.stop()

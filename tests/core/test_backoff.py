"""The one retry back-off (``core/backoff.py``) that the language server and the watcher use."""

from __future__ import annotations

from engram_ls.core.backoff import FIRST_S, LONGEST_S, Backoff


def test_waits_double_up_to_the_longest_and_start_again_after_a_success() -> None:
    backoff = Backoff()
    assert backoff.delay == FIRST_S == 0.5
    waits = [backoff.failed() for _ in range(8)]
    assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, LONGEST_S, LONGEST_S, LONGEST_S]
    assert backoff.delay == LONGEST_S == 30.0
    backoff.succeeded()
    assert backoff.delay == FIRST_S


def test_bounds_can_be_given() -> None:
    backoff = Backoff(0.1, 0.3)
    assert [backoff.failed() for _ in range(3)] == [0.2, 0.3, 0.3]

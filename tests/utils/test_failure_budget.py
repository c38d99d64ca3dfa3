"""FailureBudget (ding_lite/utils/failure_budget.py): the in-a-row and per-window guards, counted by hand."""
from __future__ import annotations

import pytest

from ding_lite.utils.failure_budget import BudgetSpent, FailureBudget

pytestmark = pytest.mark.unittest


def test_failures_in_a_row_stop_after_max_restarts() -> None:
    budget = FailureBudget(max_in_a_row=2, keys=("k.in_a_row", "k.per_window"))
    assert budget.record_failure(0) is None  # restart 1
    assert budget.record_failure(0) is None  # restart 2
    assert budget.record_failure(0) == BudgetSpent("2 restart(s) in a row", "k.in_a_row", 2)
    assert budget.total == 3


def test_healthy_units_or_a_whole_unit_clear_the_count() -> None:
    budget = FailureBudget(max_in_a_row=1, clear_after=3)
    assert budget.record_failure(0) is None
    budget.record_success(2)  # not yet healthy: 2 of 3 units
    assert budget.record_failure(0) is not None  # 2 in a row > 1
    budget = FailureBudget(max_in_a_row=1, clear_after=3)
    for _ in range(50):  # a failure every 3rd unit never adds up
        assert budget.record_failure(0) is None
        budget.record_success(3)
    assert budget.in_a_row == 0 and budget.total == 50
    assert budget.record_failure(0) is None
    budget.record_success(1, clear=True)  # an episode ended: healthy at once
    assert budget.in_a_row == 0
    budget.record_success(5)  # successes before a failure do not count towards the next one
    assert budget.record_failure(0) is None
    assert budget.record_failure(0) is not None


def test_failures_within_the_window_stop_even_with_recoveries_in_between() -> None:
    budget = FailureBudget(max_in_a_row=1, max_per_window=3, window=100, keys=("a", "b"), unit="env steps")
    for now in (10, 30, 50):  # 3 restarts within 100 steps are allowed
        assert budget.record_failure(now) is None
        budget.record_success(clear=True)
    assert budget.in_window(109) == 3
    assert budget.record_failure(109) == BudgetSpent("3 restart(s) within 100 env steps", "b", 3)
    assert budget.in_window(110) == 3  # the failure at 10 left the window at 110 (the one at 109 came in)


def test_failures_spread_wider_than_the_window_never_stop() -> None:
    budget = FailureBudget(max_in_a_row=1, max_per_window=2, window=100)
    for k in range(1000):  # one failure every 50 units: 2 in any window of 100
        assert budget.record_failure(50 * k) is None
        budget.record_success(clear=True)
    assert budget.total == 1000


def test_limits_of_zero_and_bad_settings() -> None:
    assert FailureBudget(max_in_a_row=0).record_failure(0) is not None
    assert FailureBudget(max_in_a_row=5, max_per_window=0, window=10).record_failure(0).key == "max_per_window"
    with pytest.raises(ValueError, match="max_in_a_row=-1"):
        FailureBudget(max_in_a_row=-1)
    with pytest.raises(ValueError, match="window=0"):
        FailureBudget(max_in_a_row=1, max_per_window=1, window=0)

"""The one seed plan: the seeds every pipeline derives from ``-s``, pinned (changing one changes every result)."""
from __future__ import annotations

import dataclasses

import pytest

from ding_lite.utils.seed import EVAL_SEED_OFFSET, SeedPlan


def test_seed_plan_numbers_are_pinned() -> None:
    plan = SeedPlan(7)
    assert (plan.collector, plan.evaluator, plan.final_eval, plan.eval_players) == (7, 1007, 2007, 8)
    assert [plan.collector_actor(k, 4) for k in range(3)] == [7, 11, 15]
    assert [plan.specialist(k) for k in range(3)] == [8, 9, 10]
    assert EVAL_SEED_OFFSET == 1000


def test_seed_plan_is_immutable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        SeedPlan(0).seed = 1  # type: ignore[misc]

"""GSL's pure pieces on hand cases: plateau detector, worst variations and their split, success filter, steps."""
from __future__ import annotations

import pytest

from ding_lite.errors import ConfigError
from ding_lite.gsl.plateau import (
    PlateauDetector,
    PlateauEvaluator,
    keep_successful,
    split_variations,
    step_accounting,
    worst_variations,
)
from ding_lite.worker.evaluator import InteractionEvaluator

pytestmark = pytest.mark.unittest


def test_plateau_after_patience_evaluations_without_a_gain_above_tol() -> None:
    det = PlateauDetector(patience=2, tol=0.1)
    assert [det.update(x) for x in (1.0, 1.05, 1.08)] == [False, False, True]
    det = PlateauDetector(patience=2, tol=0.1)
    # 1.2 beats 1.0 + 0.1 and resets the count; 1.25 does not beat 1.2 + 0.1; a drop counts as no gain
    assert [det.update(x) for x in (1.0, 1.05, 1.2, 1.25, 0.5)] == [False, False, False, False, True]
    assert det.best == 1.2 and det.stale == 2


def test_plateau_detector_rejects_bad_settings() -> None:
    with pytest.raises(ConfigError, match="plateau_patience"):
        PlateauDetector(0, 0.1)
    with pytest.raises(ConfigError, match="plateau_tol"):
        PlateauDetector(3, -1.0)


TABLE = {"0": {"return_mean": 1.0, "success_rate": 1.0}, "1": {"return_mean": 0.2, "success_rate": 0.0},
         "2": {"return_mean": 0.5, "success_rate": 0.5}, "3": {"return_mean": 0.1, "success_rate": 0.0},
         "4": {"return_mean": 0.9, "success_rate": 0.5}}


def test_worst_variations_by_success_then_return_then_id() -> None:
    assert worst_variations(TABLE, 3) == [3, 1, 2]
    no_success = {k: {"return_mean": v["return_mean"], "success_rate": None} for k, v in TABLE.items()}
    assert worst_variations(no_success, 2) == [3, 1]
    with pytest.raises(ConfigError, match="gsl.n_low=6"):
        worst_variations(TABLE, 6)


def test_split_is_disjoint_round_robin_and_covers_all() -> None:
    assert split_variations([3, 1, 2, 9, 7], 2) == [[2, 3, 7], [1, 9]]
    assert split_variations([3, 1, 2], 3) == [[3], [1], [2]]
    with pytest.raises(ConfigError, match="gsl.n_specialists=4 is more than the 3 low variations"):
        split_variations([3, 1, 2], 4)


def test_keep_successful_keeps_only_successes_in_order() -> None:
    episodes = [("a", True), ("b", False), ("c", True)]
    assert keep_successful(episodes, lambda e: e[1]) == [("a", True), ("c", True)]


def test_step_accounting_sums_every_phase_specialists_included() -> None:
    steps = step_accounting(1000, [200, 300], 50, 400)
    assert steps == {"phase1": 1000, "specialists": [200, 300], "demos": 50, "phase2": 400, "total": 1950}
    with pytest.raises(ValueError):
        step_accounting(1000, [-1], 0, 0)


def test_the_plateau_evaluator_takes_every_key_of_the_interaction_one() -> None:
    """Phase I swaps the user's evaluator for the plateau one: a key the user may set on the interaction evaluator
    (``video_every``, ...) must stay a known key there, with the same default."""
    assert {k: v for k, v in PlateauEvaluator.config.items() if k in InteractionEvaluator.config} == {
        **InteractionEvaluator.config, "type": "plateau"}

"""The interaction evaluator (ding_lite/worker/evaluator.py): exactly n episodes, same seeds, stop decision."""
from __future__ import annotations

import logging
from types import SimpleNamespace

import numpy as np
import pytest
from fake_envs import counting_env_fns
from rollout_probe import RolloutBlockProbe

from ding_lite.envs import BaseEnvManager
from ding_lite.errors import ConfigError
from ding_lite.worker import InteractionEvaluator

pytestmark = pytest.mark.unittest


class ZeroPolicy:
    """Eval mode acting 0 everywhere; counts its resets and the observations it saw."""

    def __init__(self) -> None:
        self.resets = 0
        self.batches = 0

    def forward(self, obs: np.ndarray) -> dict:
        self.batches += 1
        return {"action": np.zeros(len(obs), dtype=np.int64)}

    def reset(self, env_ids=None) -> None:
        self.resets += 1


def _evaluator(stop_value=None, n_episode: int = 7) -> tuple[InteractionEvaluator, ZeroPolicy]:
    # 3 envs; episode k of env i lasts base_i + k steps and returns as much (reward 1 per step with action 0)
    manager = BaseEnvManager(counting_env_fns([1, 5, 3]))
    policy = ZeroPolicy()
    evaluator = InteractionEvaluator(dict(eval_freq=10), manager, SimpleNamespace(forward=policy.forward,
                                                                                  reset=policy.reset),
                                     n_episode, stop_value, seed=0)
    return evaluator, policy


def test_runs_exactly_n_episodes_spread_over_the_envs() -> None:
    evaluator, policy = _evaluator()
    try:
        result = evaluator.eval(train_iter=12, env_step=345)
    finally:
        evaluator.close()
    # 7 episodes over 3 envs: quotas 3, 2, 2, each env's first episodes (not the first 7 to end overall):
    # env 0: 1, 2, 3; env 1: 5, 6; env 2: 3, 4  -> mean 24 / 7
    assert len(result.returns) == 7 and len(result.lengths) == 7
    assert sorted(result.returns.tolist()) == [1, 2, 3, 3, 4, 5, 6]
    np.testing.assert_array_equal(result.returns, result.lengths)
    assert result.mean == pytest.approx(24 / 7)
    assert result.std == pytest.approx(np.std([1, 2, 3, 5, 6, 3, 4]))
    assert (result.train_iter, result.env_step) == (12, 345)
    assert policy.resets == 1
    assert policy.batches == 11  # until the slowest quota is met: env 1 needs 5 + 6 steps (env 0: 6, env 2: 7)
    assert result.stop is False and result.improved is True


def test_evaluations_repeat_the_same_episodes_and_track_the_best() -> None:
    evaluator, _ = _evaluator()
    try:
        first = evaluator.eval()
        second = evaluator.eval()
    finally:
        evaluator.close()
    np.testing.assert_array_equal(first.returns, second.returns)
    assert first.improved and not second.improved  # equal is not an improvement
    assert evaluator.best_return == pytest.approx(24 / 7)


@pytest.mark.parametrize("stop_value,stop", [(24 / 7, True), (3.0, True), (3.5, False), (None, False)])
def test_stop_decision(stop_value, stop: bool) -> None:
    evaluator, _ = _evaluator(stop_value=stop_value)
    try:
        assert evaluator.eval(train_iter=0).stop is False  # the untrained policy never stops a run
        assert evaluator.eval(train_iter=1).stop is stop
    finally:
        evaluator.close()


def test_should_eval_every_eval_freq_iterations() -> None:
    evaluator, _ = _evaluator()
    try:
        assert evaluator.should_eval(0)  # the first call always evaluates
        evaluator.eval(train_iter=0)
        assert not evaluator.should_eval(9)
        assert evaluator.should_eval(10)
        evaluator.eval(train_iter=13)
        assert not evaluator.should_eval(22) and evaluator.should_eval(23)
    finally:
        evaluator.close()


def test_fewer_episodes_than_envs_and_bad_count() -> None:
    evaluator, _ = _evaluator(n_episode=2)
    try:
        result = evaluator.eval()
    finally:
        evaluator.close()
    np.testing.assert_array_equal(sorted(result.returns), [1, 5])  # envs 0 and 1 run one episode each, env 2 none
    with pytest.raises(ConfigError, match="env.n_evaluator_episode must be at least 1, got 0"):
        _evaluator(n_episode=0)


def test_an_evaluation_runs_inside_the_policys_rollout_weights_block() -> None:
    policy, probe = ZeroPolicy(), RolloutBlockProbe()
    mode = SimpleNamespace(forward=probe.watch(policy.forward), reset=policy.reset,
                           rollout_weights=probe.rollout_weights)
    evaluator = InteractionEvaluator(dict(eval_freq=10), BaseEnvManager(counting_env_fns([1, 2])), mode, 3, None,
                                     seed=0)
    try:
        evaluator.eval()
        assert (probe.entries, probe.outside_calls, probe.inside) == (1, 0, False) and policy.batches > 0
    finally:
        evaluator.close()


def test_an_episode_over_the_step_cap_is_cut_there_and_its_env_plays_its_share(caplog) -> None:
    """The eval step cap: env 1's episodes (50 and 51 steps) are cut at 10 steps, as a time limit would cut them,
    and counted with the 10 they returned so far; env 1 then plays its second episode, cut too (before, it played
    no more, and the evaluation counted 6 of its 7 episodes). A policy that stalls, e.g. one that never presses FIRE
    in Breakout, still cannot keep an evaluation running."""
    manager = BaseEnvManager(counting_env_fns([1, 50, 3]))
    policy = ZeroPolicy()
    evaluator = InteractionEvaluator(dict(eval_freq=10, max_episode_steps=10), manager,
                                     SimpleNamespace(forward=policy.forward, reset=policy.reset), 7, None, seed=0)
    logger = logging.getLogger("ding_lite")
    logger.addHandler(caplog.handler)  # whatever earlier tests did to the logger's propagation
    try:
        result = evaluator.eval()
    finally:
        logger.removeHandler(caplog.handler)
        evaluator.close()
    assert sorted(result.returns.tolist()) == [1, 2, 3, 3, 4, 10, 10] and sorted(result.lengths)[-2:] == [10, 10]
    assert policy.batches == 20  # env 1's second cut, at 2 x 10 steps, is the last to come (env 0: 6 steps, env 2: 7)
    # an evaluation given no train_iter (the final one, -m eval) names none; before, 'at train_iter 0'
    assert "warning: evaluation: 2 of 7 episode(s) cut at policy.eval.evaluator.max_episode_steps=10" in caplog.text


@pytest.mark.parametrize("cap", [0, -3, 2.5, True])
def test_a_bad_step_cap_is_a_config_error(cap) -> None:
    with pytest.raises(ConfigError, match="max_episode_steps must be a positive int or None"):
        InteractionEvaluator(dict(max_episode_steps=cap), None, None, 3)


def test_an_episode_that_never_ends_is_reported_while_the_evaluation_waits(caplog, monkeypatch) -> None:
    """Without a step cap an evaluation waits for every episode; an env without a time limit would make it wait
    forever, silently. Past LONG_EPISODE steps of one episode a warning names the env and the two settings (here
    LONG_EPISODE is 2,000 and env 1's first episode lasts 5,000 steps)."""
    from ding_lite.worker import episodes

    monkeypatch.setattr(episodes, "LONG_EPISODE", 2000)
    manager = BaseEnvManager(counting_env_fns([1, 5000, 3]))
    policy = ZeroPolicy()
    evaluator = InteractionEvaluator(dict(eval_freq=10), manager,
                                     SimpleNamespace(forward=policy.forward, reset=policy.reset), 3, None, seed=0)
    logger = logging.getLogger("ding_lite")
    logger.addHandler(caplog.handler)
    try:
        result = evaluator.eval()
    finally:
        logger.removeHandler(caplog.handler)
        evaluator.close()
    assert sorted(result.returns.tolist()) == [1, 3, 5000]
    warnings = {r.getMessage() for r in caplog.records if "without ending" in r.getMessage()}  # once, however captured
    assert warnings == {"warning: env 1's episode has run 2,000 steps without ending, and this evaluation (or demo "
                        "collection) waits for it: if the env has no time limit, set env.max_episode_steps or "
                        "policy.eval.evaluator.max_episode_steps"}

"""SAC (ding_lite/policy/sac.py): random actions before learning starts, squashed samples in the env's bounds, the
deterministic eval action, the temperature, one-step samples, and bad settings."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from qac_helpers import batch, continuous_policy

from ding_lite.data.keys import ACTION, NEXT_OBS, OBS, REWARD, TERMINATED, TRUNCATED, VALID
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest


def test_uniform_random_actions_until_learning_starts_then_the_policy() -> None:
    policy = continuous_policy("sac", "policy.learning_starts=100")
    obs = np.zeros((4000, 3), np.float32)
    random = policy.collect_mode.forward(obs, env_step=99)[ACTION]
    assert random.shape == (4000, 1) and random.dtype == np.float32
    assert random.min() >= -2 and random.max() <= 2 and random.min() < -1.9 and random.max() > 1.9
    assert abs(random.mean()) < 0.1 and random.std() == pytest.approx(4 / np.sqrt(12), rel=0.05)  # U(-2, 2)
    sampled = policy.collect_mode.forward(obs, env_step=100)[ACTION]
    mu, log_std = policy._model.actor(torch.zeros(1, 3))
    # one observation for all rows: samples of tanh(N(mu, std)) * 2, inside the bounds, centred on 2 tanh(mu)
    assert (np.abs(sampled) < 2).all() and sampled.std() > 0.1
    assert np.median(sampled) == pytest.approx(2 * np.tanh(mu.item()), abs=0.1)
    assert log_std.item() != 0


def test_eval_takes_the_mode_rescaled_to_the_bounds() -> None:
    policy = continuous_policy("sac", "policy.model.action_low=[0.0]", "policy.model.action_high=[4.0]")
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    mu, _ = policy._model.actor(torch.from_numpy(obs))
    expected = torch.tanh(mu) * 2 + 2  # scale (4 - 0) / 2, bias (4 + 0) / 2
    np.testing.assert_allclose(policy.eval_mode.forward(obs)[ACTION], expected.detach().numpy(), rtol=1e-6)
    np.testing.assert_array_equal(policy.eval_mode.forward(obs)[ACTION], policy.eval_mode.forward(obs)[ACTION])


def test_target_entropy_defaults_to_minus_the_action_dimension_and_alpha_to_its_start_value() -> None:
    policy = continuous_policy("sac", "policy.learn.alpha=0.5")
    assert policy._target_entropy == -1.0
    assert policy._temperature.log_alpha.exp().item() == pytest.approx(0.5)
    assert continuous_policy("sac", "policy.learn.target_entropy=-3")._target_entropy == -3.0
    log = policy.learn_mode.forward(batch())
    assert log["alpha"].item() == pytest.approx(0.5)  # the update's alpha is the one before its own step
    assert sorted(policy._learn_state) == ["model", "optimizer_actor", "optimizer_critic", "target_critic",
                                           "temperature", "train_steps"]


def test_a_fixed_temperature_stays_and_has_no_loss() -> None:
    policy = continuous_policy("sac", "policy.learn.auto_alpha=False", "policy.learn.alpha=0.3")
    for k in range(3):
        log = policy.learn_mode.forward(batch(seed=k))
    assert "alpha_loss" not in log and log["alpha"].item() == pytest.approx(0.3)
    assert "alpha_loss" not in policy.learn_mode.monitor_vars()


def test_the_temperature_falls_when_the_policy_is_more_random_than_its_target() -> None:
    # a target entropy of -5 for one action dim: the initial policy is far more random, so alpha must fall
    policy = continuous_policy("sac", "policy.learn.target_entropy=-5", "policy.learn.learning_rate_alpha=0.01")
    start = policy._temperature.log_alpha.item()
    for k in range(20):
        policy.learn_mode.forward(batch(seed=k))
    assert policy._temperature.log_alpha.item() < start - 0.1


@pytest.mark.parametrize("written", [True, False])
def test_an_update_does_not_depend_on_the_units_of_the_action_bounds(written: bool) -> None:
    # SB3 and DI-engine take log pi of the action in [-1, 1]: the same policy on bounds +-1e-3 or +-100 must update
    # as on +-1. log pi of the env-unit action is lower by sum(log scale): against the target entropy that made alpha
    # grow without end on +-1e-3, and in the critics' targets it added -alpha sum(log scale) to every reward
    logs, moved = [], []
    for bound in (1.0, 1e-3, 100.0):
        policy = continuous_policy("sac", f"policy.model.action_low=[{-bound}]", f"policy.model.action_high=[{bound}]",
                                   "policy.learn.learning_rate_alpha=0.1")
        if not written:  # the autograd path of the actor stage
            policy._temperature.log_alpha.register_hook(lambda grad: grad)
        torch.manual_seed(1)
        log = policy.learn_mode.forward({**batch(), ACTION: batch()[ACTION] * (bound / 2)})
        logs.append({k: float(log[k]) for k in ("target_q_mean", "q_mean", "critic_loss", "entropy", "alpha_loss")})
        moved.append(policy._temperature.log_alpha.item())
    for other in (1, 2):
        assert moved[other] == pytest.approx(moved[0], abs=1e-4)
        assert logs[other] == pytest.approx(logs[0], rel=1e-4, abs=1e-5)


def _rollout() -> dict:
    """(T=2, N=2): env 1's second row is an env-restart placeholder (invalid)."""
    return {OBS: np.arange(12, dtype=np.float32).reshape(2, 2, 3), ACTION: np.full((2, 2, 1), 0.5, np.float32),
            REWARD: np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), NEXT_OBS: np.ones((2, 2, 3), np.float32),
            TERMINATED: np.array([[True, False], [False, False]]), TRUNCATED: np.array([[False, False], [True, True]]),
            VALID: np.array([[True, True], [True, False]])}


def test_samples_are_the_valid_one_step_transitions() -> None:
    samples = continuous_policy("sac").collect_mode.get_train_sample(_rollout())
    assert sorted(samples) == sorted([OBS, ACTION, REWARD, NEXT_OBS, TERMINATED])
    assert samples[REWARD].tolist() == [1.0, 2.0, 3.0] and samples[TERMINATED].tolist() == [True, False, False]
    ignore = continuous_policy("sac", "policy.learn.ignore_done=True").collect_mode.get_train_sample(_rollout())
    assert not ignore[TERMINATED].any()  # terminations bootstrap like truncations


@pytest.mark.parametrize("override,message", [
    ("policy.learn.learning_rate_q=0", r"policy.learn.learning_rate_q must be > 0, got 0"),
    ("policy.learn.alpha=-1.0", r"policy.learn.alpha must be a finite number > 0, got -1.0"),
    ("policy.learn.alpha=inf", r"policy.learn.alpha must be a finite number > 0, got inf"),
    ("policy.model.hidden_size_list=64", r"model.hidden_size_list must be a list of positive int widths, got 64"),
    ("policy.model.hidden_size_list=True", r"model.hidden_size_list must be a list of positive int widths"),
    ("policy.model.action_low=True", r"model.action_low must be 1 finite numbers, got True"),
    ("policy.model.action_high='far'", r"model.action_high must be 1 finite numbers, got 'far'"),
    ("policy.learn.target_entropy='high'", r"policy.learn.target_entropy must be a finite number or None"),
    ("policy.learn.target_entropy=inf", r"policy.learn.target_entropy must be a finite number or None \(-dim\(A\)\), "
                                        r"got inf"),  # alpha's loss was NaN at the first update
    ("policy.learn.target_entropy=-inf", r"policy.learn.target_entropy must be a finite number or None"),
    ("policy.learn.target_theta=0.0", r"policy.learn.target_theta must be in \(0, 1\] or None"),
    ("policy.model.action_space='discrete'", r"model.action_space must be one of \('reparameterization', "
                                             r"'regression'\) for model type 'qac'"),
    ("policy.model.action_space='regression'", r"policy.model.action_space='regression': policy 'sac' drives the "
                                               r"qac model's 'reparameterization' actor"),  # TD3's actor
])
def test_bad_settings_name_their_key(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        continuous_policy("sac", override)


@pytest.mark.parametrize("policy_type", ["sac", "td3"])
def test_target_theta_none_is_hard_copies_as_the_off_policy_base_says(policy_type: str) -> None:
    # docs/sac_td3.md: target_theta None means hard copies every target_update_freq updates; SAC's and TD3's own
    # message says "(0, 1] or None", but the config check refused None ("must be a number, got None")
    policy = continuous_policy(policy_type, "policy.learn.target_theta=None", "policy.learn.target_update_freq=2")
    assert policy.cfg.learn.target_theta is None
    assert [policy._targets_due(k) for k in (1, 2, 3, 4)] == [False, True, False, True]

"""TD3 (ding_lite/policy/td3.py): exploration noise in units of the half-range and clipped to the bounds, the
smoothed target action, the noise settings."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from qac_helpers import batch, continuous_policy

from ding_lite.data.keys import ACTION
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest


def _zero_actor(policy) -> None:
    """Make pi(s) = bias (0 for bounds [-2, 2]) for every observation."""
    with torch.no_grad():
        for p in policy._model.actor.parameters():
            p.zero_()


def test_exploration_noise_is_scaled_by_the_half_range_and_clipped_to_the_bounds() -> None:
    policy = continuous_policy("td3", "policy.learning_starts=0", "policy.collect.noise_sigma=0.1")
    _zero_actor(policy)
    action = policy.collect_mode.forward(np.zeros((20000, 3), np.float32), env_step=0)[ACTION]
    assert action.std() == pytest.approx(0.1 * 2, rel=0.05) and abs(action.mean()) < 0.01
    wide = continuous_policy("td3", "policy.learning_starts=0", "policy.collect.noise_sigma=3.0")
    _zero_actor(wide)
    action = wide.collect_mode.forward(np.zeros((2000, 3), np.float32), env_step=0)[ACTION]
    assert action.min() == -2.0 and action.max() == 2.0  # clipped, never beyond the bounds
    np.testing.assert_array_equal(policy.eval_mode.forward(np.zeros((3, 3), np.float32))[ACTION], np.zeros((3, 1)))


def test_the_target_action_is_smoothed_within_its_clip_and_the_bounds() -> None:
    policy = continuous_policy("td3", "policy.learn.noise_sigma=0.2")
    next_obs = torch.zeros(5000, 3)
    target_action = policy._target_actor(next_obs)
    smoothed, bonus = policy._next_action(next_obs, {})
    noise = smoothed - target_action
    assert bonus is None
    assert noise.abs().max().item() <= 0.5 * 2 + 1e-6  # clip 0.5 of the half-range 2
    assert noise.std().item() == pytest.approx(0.2 * 2, rel=0.1)
    assert (smoothed.abs() <= 2).all()
    plain = continuous_policy("td3", "policy.learn.noise=False")
    torch.testing.assert_close(plain._next_action(next_obs, {})[0], plain._target_actor(next_obs))


def test_an_update_logs_and_keeps_its_state() -> None:
    policy = continuous_policy("td3")
    for k in range(2):
        log = policy.learn_mode.forward(batch(seed=k))
    assert {"critic_loss", "q_mean", "target_q_mean", "actor_loss"} <= set(log)
    assert sorted(policy._learn_state) == ["model", "optimizer_actor", "optimizer_critic", "target_actor",
                                           "target_critic", "train_steps"]


@pytest.mark.parametrize("override,message", [
    ("policy.learn.noise_range={'min': -0.5, 'max': 0.3}", r"policy.learn.noise_range must be dict\(min=-c, max=c\)"),
    ("policy.learn.actor_update_freq=0", r"policy.learn.actor_update_freq must be at least 1, got 0"),
    ("policy.collect.noise_sigma=-0.1", r"policy.collect.noise_sigma must be a finite number > 0, got -0.1"),
    ("policy.learn.noise_sigma=inf", r"policy.learn.noise_sigma must be a finite number > 0, got inf"),
    ("policy.model.action_space='reparameterization'", r"policy.model.action_space='reparameterization': policy "
                                                       r"'td3' drives the qac model's 'regression' actor"),  # SAC's
])
def test_bad_settings_name_their_key(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        continuous_policy("td3", override)

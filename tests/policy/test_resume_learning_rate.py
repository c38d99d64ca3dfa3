"""A checkpoint loaded into a policy keeps the config's learning rate (optim.keep_config_settings)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, ADV, LOGP, OBS, RETURN, VALUE

pytestmark = pytest.mark.unittest


def _ppo(learning_rate: float, **learn):
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type="ppo", model=dict(obs_shape=4, action_shape=2, action_space="discrete"),
                                          learn=dict(learning_rate=learning_rate, epoch_per_collect=1, batch_size=32,
                                                     **learn))))
    return build(cfg, "policy").learn_mode


def _trained_state(policy) -> dict:
    rng = np.random.default_rng(0)
    n = 64
    policy.forward({OBS: rng.normal(size=(n, 4)).astype(np.float32), ACTION: rng.integers(0, 2, n),
                    LOGP: np.full(n, np.log(0.5), np.float32), VALUE: np.zeros(n, np.float32),
                    ADV: rng.normal(size=n).astype(np.float32), RETURN: rng.normal(size=n).astype(np.float32)})
    return policy.state_dict()


def _lr(policy) -> float:
    return policy.state_dict()["optimizer"]["param_groups"][0]["lr"]


def test_a_lower_learning_rate_given_when_resuming_is_the_one_trained_with() -> None:
    """Before, torch's Optimizer.load_state_dict put the checkpoint's rate back: a run that diverged at a learning
    rate of 1e4 and was resumed with --set policy.learn.learning_rate=1e-4 (as the error advises) trained at 1e4."""
    state = _trained_state(_ppo(1e4))
    resumed = _ppo(1e-4)
    resumed.load_state_dict(state)
    assert _lr(resumed) == 1e-4
    moments = resumed.state_dict()["optimizer"]["state"][0]["exp_avg"]
    assert torch.equal(moments, state["optimizer"]["state"][0]["exp_avg"])  # the checkpoint's moments are kept
    same = _ppo(1e4)
    same.load_state_dict(state)
    assert _lr(same) == 1e4


def test_a_learning_rate_schedule_goes_on_from_its_step_at_the_configs_rate() -> None:
    state = _trained_state(_ppo(1e-3, lr_decay_iter=10))  # 2 gradient steps: the rate is 1e-3 * 0.8
    rate = state["optimizer"]["param_groups"][0]["lr"]
    same = _ppo(1e-3, lr_decay_iter=10)
    same.load_state_dict(state)
    assert _lr(same) == rate  # bit for bit: an unchanged config resumes as before
    doubled = _ppo(2e-3, lr_decay_iter=10)
    doubled.load_state_dict(state)
    assert _lr(doubled) == pytest.approx(2 * rate)
    assert doubled.state_dict()["lr_schedule"]["base_lrs"] == [2e-3]

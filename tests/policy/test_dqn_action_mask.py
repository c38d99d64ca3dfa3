"""DQN honours action masks (``obs['action_mask']``): never an illegal action in collect (ε-greedy explores among
legal ones) or eval, and the target's max ranges over the legal next actions only."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import (
    ACTION_MASK,
    NEXT_ACTION_MASK,
    NEXT_OBS,
    OBS,
    OBSERVATION,
    Q_VALUE,
    REWARD,
    TERMINATED,
    TRUNCATED,
)
from ding_lite.policy import dqn as dqn_module
from ding_lite.rl_utils.masks import MASKED_LOGIT

pytestmark = pytest.mark.unittest


def _policy(*overrides: str):
    torch.manual_seed(0)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"), policy=dict(type="dqn")),
                         overrides=["policy.model.obs_shape=2", "policy.model.action_shape=4",
                                    "policy.model.encoder_hidden_size_list=[8]", "policy.learn.double=True",
                                    *overrides])
    return build(cfg, "policy")


def test_collect_and_eval_choose_legal_actions_only():
    policy = _policy("policy.other.eps.start=1.0", "policy.other.eps.end=1.0")  # ε = 1: all exploration
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(500, 2)).astype(np.float32)
    mask = rng.random((500, 4)) < 0.5
    mask[np.arange(500), rng.integers(0, 4, 500)] = True  # at least one legal action per row
    action = policy.collect_mode.forward({OBSERVATION: obs, ACTION_MASK: mask}, env_step=0)["action"]
    assert mask[np.arange(500), action].all()
    assert len(set(action.tolist())) == 4  # exploration still reaches every action somewhere
    q = policy._model(torch.from_numpy(obs))[Q_VALUE].detach().numpy()
    greedy = policy.eval_mode.forward({OBSERVATION: obs, ACTION_MASK: mask})["action"]
    assert mask[np.arange(500), greedy].all()
    assert (greedy == np.where(mask, q, -np.inf).argmax(1)).all()
    greedy_collect = _policy("policy.other.eps.start=0.0", "policy.other.eps.end=0.0").collect_mode.forward(
        {OBSERVATION: obs, ACTION_MASK: mask})["action"]
    assert (greedy_collect == greedy).all()  # same seed, same weights: same greedy choice


def test_target_max_is_over_legal_next_actions(monkeypatch):
    policy = _policy("policy.nstep=1")
    t_len, n = 3, 2
    rollout = {OBS: np.zeros((t_len, n, 2), np.float32), NEXT_OBS: np.ones((t_len, n, 2), np.float32),
               "action": np.zeros((t_len, n), np.int64), REWARD: np.ones((t_len, n), np.float32),
               TERMINATED: np.zeros((t_len, n), bool), TRUNCATED: np.zeros((t_len, n), bool),
               NEXT_ACTION_MASK: np.tile(np.array([False, True, False, True]), (t_len, n, 1))}
    samples = policy.collect_mode.get_train_sample(rollout)
    assert samples[NEXT_ACTION_MASK].shape == (6, 4) and samples[NEXT_ACTION_MASK][:, [0, 2]].sum() == 0
    seen = {}
    original = dqn_module.double_q_target

    def spy(ret, discount, q_next_online, q_next_target):
        seen["online"] = q_next_online.clone()
        return original(ret, discount, q_next_online, q_next_target)

    monkeypatch.setattr(dqn_module, "double_q_target", spy)
    policy.learn_mode.forward(samples)
    assert (seen["online"][:, [0, 2]] == MASKED_LOGIT).all() and (seen["online"][:, [1, 3]] > MASKED_LOGIT).all()


def test_random_actions_before_learning_starts_are_legal():
    policy = _policy("policy.learning_starts=10", "policy.other.eps.start=0.0", "policy.other.eps.end=0.0")
    rng = np.random.default_rng(1)
    obs = rng.normal(size=(2000, 2)).astype(np.float32)
    mask = np.zeros((2000, 4), bool)
    mask[:, [1, 3]] = True
    action = policy.collect_mode.forward({OBSERVATION: obs, ACTION_MASK: mask}, env_step=0)["action"]
    assert set(action.tolist()) == {1, 3}  # uniform over the legal ones: both show, no illegal one
    assert abs(float((action == 1).mean()) - 0.5) < 0.05

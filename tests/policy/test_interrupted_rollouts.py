"""Policies and settled rollouts with an episode cut by an env worker failure (a placeholder row, ``valid`` False):
the placeholder never becomes a sample, and the cut episode ends, truncated, at its last real step."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import (
    ACTION,
    ADV,
    DISCOUNT_N,
    LOGP,
    NEXT_OBS,
    NEXT_OBS_N,
    OBS,
    RETURN_N,
    REWARD,
    TERMINATED,
    TRUNCATED,
    VALID,
    VALUE,
)
from ding_lite.data.rollout import settle
from ding_lite.rl_utils.gae import gae

pytestmark = pytest.mark.unittest

MARK = 777.0
ENV = dict(type="gymnasium", env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=1)


def policy_of(policy_type: str, **policy_cfg):
    cfg = compile_config(dict(env=ENV, policy=dict(type=policy_type, model=dict(obs_shape=4, action_shape=2,
                                                                                 action_space="discrete")
                                                   if policy_type == "ppo" else dict(obs_shape=4, action_shape=2),
                                                   **policy_cfg)))
    torch.manual_seed(0)
    return build(cfg, "policy")


def rollout(t_len: int, n_env: int, interrupted_at: tuple[int, int] | None) -> dict:
    """A (T, N) rollout with obs[t, n] = [t, n, 0, 0] and rewards t + 1; the placeholder row's obs is marked
    [.., .., MARK, 0], so any use of it shows. ``next_obs`` of row t is obs[t + 1] (of the placeholder: the last
    real obs, as the manager gives)."""
    obs = np.zeros((t_len + 1, n_env, 4), dtype=np.float32)
    obs[..., 0] = np.arange(t_len + 1)[:, None]
    obs[..., 1] = np.arange(n_env)[None, :]
    out = {OBS: obs[:-1].copy(), NEXT_OBS: obs[1:].copy(), ACTION: np.zeros((t_len, n_env), dtype=np.int64),
           REWARD: np.tile(np.arange(1, t_len + 1, dtype=np.float32)[:, None], (1, n_env)),
           TERMINATED: np.zeros((t_len, n_env), dtype=bool), TRUNCATED: np.zeros((t_len, n_env), dtype=bool)}
    if interrupted_at is not None:
        t, n = interrupted_at
        out[VALID] = np.ones((t_len, n_env), dtype=bool)
        out[VALID][t, n] = False
        out[OBS][t, n, 2] = MARK
        out[NEXT_OBS][t, n] = out[NEXT_OBS][t - 1, n] if t > 0 else 0.0
        out[REWARD][t, n] = 0.0
        out[TRUNCATED][t, n] = True
    return settle(out)  # as the collector hands it over


def test_dqn_cuts_before_the_placeholder() -> None:
    gamma = 0.5
    policy = policy_of("dqn", nstep=2, discount_factor=gamma)
    samples = policy.collect_mode.get_train_sample(rollout(3, 1, interrupted_at=(2, 0)))
    # row 0: r0 + γ r1 = 1 + 0.5 * 2, bootstrap from obs[2] with γ²; row 1: cut -> r1 = 2, bootstrap obs[2] with γ
    np.testing.assert_allclose(samples[RETURN_N], [2.0, 2.0])
    np.testing.assert_allclose(samples[DISCOUNT_N], [0.25, 0.5])
    np.testing.assert_array_equal(samples[NEXT_OBS_N][:, 0], [2.0, 2.0])
    assert MARK not in samples[OBS]
    # the placeholder was kept back for its window and is dropped with the next rollout
    later = policy.collect_mode.get_train_sample(rollout(3, 1, interrupted_at=None))
    assert MARK not in later[OBS] and len(later[OBS]) == 2  # 3 new rows, the last one held


def test_dqn_cuts_across_rollouts() -> None:
    """The placeholder is the first row of a rollout: the steps held back from the previous one are cut."""
    gamma = 0.5
    policy = policy_of("dqn", nstep=3, discount_factor=gamma)
    first = policy.collect_mode.get_train_sample(rollout(3, 1, interrupted_at=None))
    assert len(first[OBS]) == 1  # rows 1 and 2 wait for their 3-step windows
    second = policy.collect_mode.get_train_sample(rollout(2, 1, interrupted_at=(0, 0)))
    # held rows 1 and 2 of the first rollout (rewards 2 and 3), cut after row 2: 2 + 0.5 * 3 and 3
    np.testing.assert_allclose(second[RETURN_N][:2], [3.5, 3.0])
    np.testing.assert_allclose(second[DISCOUNT_N][:2], [0.25, 0.5])
    np.testing.assert_array_equal(second[NEXT_OBS_N][:2, 0], [3.0, 3.0])
    assert MARK not in second[OBS]


def ppo_rollout(policy, interrupted_at) -> dict:
    out = rollout(4, 2, interrupted_at)
    out[VALUE] = np.full((4, 2), 0.5, dtype=np.float32)
    out[LOGP] = np.full((4, 2), np.log(0.5), dtype=np.float32)
    return out


def test_ppo_drops_the_placeholder_and_truncates_before_it() -> None:
    policy = policy_of("ppo")
    data = ppo_rollout(policy, interrupted_at=(2, 1))
    samples = policy.collect_mode.get_train_sample(data)
    assert len(samples[OBS]) == 7 and MARK not in samples[OBS]
    # env 1's advantages at t = 0, 1 are those of an episode truncated at t = 1, bootstrapped from the critic on its
    # next_obs; t = 0 takes row 1's stored value
    with torch.no_grad():
        last = policy._model.compute_critic(torch.as_tensor(data[NEXT_OBS][1:2, 1]))[VALUE].numpy()
    next_value = np.array([data[VALUE][1, 1], last[0]], dtype=np.float32)
    adv, _ = gae(data[REWARD][:2, 1:2], data[VALUE][:2, 1:2], next_value[:, None], np.zeros((2, 1), bool),
                 np.array([[False], [True]]), 0.99, 0.95)
    env1 = samples[OBS][:, 1] == 1
    np.testing.assert_allclose(samples[ADV][env1][:2], adv[:, 0], rtol=1e-5)


@pytest.mark.parametrize("recompute_adv", [False, True])
def test_ppo_learns_without_the_placeholder(recompute_adv: bool, monkeypatch) -> None:
    policy = policy_of("ppo", recompute_adv=recompute_adv, learn=dict(batch_size=4, epoch_per_collect=2))
    samples = policy.collect_mode.get_train_sample(ppo_rollout(policy, interrupted_at=(2, 1)))
    assert (VALID in samples) == recompute_adv  # recompute_adv keeps the (T, N) layout and the valid flags
    seen = []
    step_on = policy._gradient_step
    monkeypatch.setattr(policy, "_gradient_step",
                        lambda mb, context: seen.append(torch.as_tensor(mb[OBS])) or step_on(mb, context))
    logs = policy.learn_mode.forward(samples)
    assert all(np.isfinite(float(v)) for log in logs for v in log.values())
    trained_on = torch.cat(seen)
    assert len(trained_on) == 2 * 7 and MARK not in trained_on[:, 2]  # two epochs over the 7 real rows

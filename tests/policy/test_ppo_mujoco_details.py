"""PPO's continuous-control switches (obs_norm, reward_scale, lr_decay_iter) wired through one collect and one
learn step: the statistics move after learning, the learning rate falls, and the checkpoint holds both."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.config import compile_config
from ding_lite.data.keys import OBS, REWARD
from ding_lite.entry.common import build_collector, build_env_managers, build_policy

pytestmark = pytest.mark.unittest


def test_obs_norm_reward_scale_and_lr_decay_in_one_train_step() -> None:
    cfg = compile_config(dict(
        env=dict(type="gymnasium", env_id="Pendulum-v1", collector_env_num=2, evaluator_env_num=1),
        policy=dict(type="ppo", model=dict(obs_norm=True),
                    learn=dict(epoch_per_collect=1, batch_size=32, learning_rate=1e-3, lr_decay_iter=4),
                    collect=dict(n_sample=64, reward_scale=True))))
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        policy = build_policy(cfg)
        collector = build_collector(cfg, collector_env, policy)
        rollout, _ = collector.rollout(32)
        samples = policy.collect_mode.get_train_sample(rollout)
    model = policy._model
    assert float(model.obs_norm.count) == 0  # collect does not touch the statistics
    policy.learn_mode.forward(samples)
    assert float(model.obs_norm.count) == 64
    np.testing.assert_allclose(model.obs_norm.mean.numpy(), samples[OBS].mean(0), rtol=1e-5, atol=1e-6)
    assert policy._optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * 0.5)  # 2 of 4 gradient steps done
    state = policy.learn_mode.state_dict()
    assert "lr_schedule" in state and "obs_norm.mean" in state["model"]
    fresh = build_policy(cfg)
    fresh.learn_mode.load_state_dict(state)
    assert float(fresh._model.obs_norm.count) == 64
    assert fresh._optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * 0.5)


def test_reward_scale_changes_the_advantages_only_in_scale() -> None:
    def returns(scale: bool) -> np.ndarray:
        cfg = compile_config(dict(
            env=dict(type="gymnasium", env_id="Pendulum-v1", collector_env_num=2, evaluator_env_num=1),
            policy=dict(type="ppo", collect=dict(n_sample=64, reward_scale=scale))))
        collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
        with collector_env:
            policy = build_policy(cfg, enable_field=["collect"])
            collector = build_collector(cfg, collector_env, policy)
            rollout, _ = collector.rollout(32)
        return rollout[REWARD], policy.collect_mode.get_train_sample(rollout)

    raw_reward, raw = returns(False)
    _, scaled = returns(True)
    assert np.abs(scaled["return"]).max() < np.abs(raw["return"]).max()
    assert raw_reward.min() < -1.0

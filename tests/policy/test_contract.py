"""Contract of every registered policy: build from defaults, one collect, one train step, save, load, identical
eval actions after load (STYLE rule 8). New policies are covered by registering them."""
from __future__ import annotations

import io

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.entry.common import build_collector, build_env_managers, build_policy, fill_model_shapes
from ding_lite.registry import POLICY
from ding_lite.worker.learner import as_log_list

pytestmark = pytest.mark.unittest

DISCRETE_ENV = dict(type="gymnasium", env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=1)
CONTINUOUS_ENV = dict(type="gymnasium", env_id="Pendulum-v1", collector_env_num=2, evaluator_env_num=1)


def _compiled(policy_type: str, env: dict):
    cfg = compile_config(dict(env=dict(env), policy=dict(type=policy_type)))
    cfg.policy.learn.batch_size = 8
    return cfg


def _envs_for(policy_type: str) -> list[dict]:
    """Discrete env always; the continuous one too where the policy's model can act in a Box space."""
    envs = [DISCRETE_ENV]
    if getattr(POLICY.get(policy_type), "supports_continuous", False):
        envs.append(CONTINUOUS_ENV)
    return envs


CASES = [(name, env) for name in POLICY.names() for env in _envs_for(name)]


@pytest.mark.parametrize("policy_type,env", CASES, ids=[f"{n}-{e['env_id']}" for n, e in CASES])
def test_policy_contract(policy_type: str, env: dict) -> None:
    torch.manual_seed(0)
    cfg = _compiled(policy_type, env)
    collector_env, evaluator_env = build_env_managers(cfg, seed=0)
    try:
        policy = build_policy(cfg)
        collector = build_collector(cfg, collector_env, policy)
        samples, _ = collector.collect(n_sample=64)
        assert samples, f"{policy_type}: collect produced no samples"
        batch = _train_batch(cfg, samples)
        logs = as_log_list(policy.learn_mode.forward(batch))  # a dict, or a list of one per gradient step
        assert logs and all(isinstance(log, dict) and log for log in logs), f"{policy_type}: no learn log"
        for name in policy.learn_mode.monitor_vars():
            assert all(name in log for log in logs), f"{policy_type}: monitor var '{name}' missing from a learn log"

        state = policy.learn_mode.state_dict()
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        restored_state = torch.load(buffer, weights_only=True)

        fresh_cfg = _compiled(policy_type, env)
        fill_model_shapes(fresh_cfg, evaluator_env.observation_space, evaluator_env.action_space)
        fresh = build_policy(fresh_cfg)
        fresh.learn_mode.load_state_dict(restored_state)
        obs = np.stack([evaluator_env.observation_space.sample() for _ in range(16)])
        a1 = policy.eval_mode.forward(obs)["action"]
        a2 = fresh.eval_mode.forward(obs)["action"]
        np.testing.assert_array_equal(a1, a2)
        space = evaluator_env.action_space
        if isinstance(space, gym.spaces.Discrete):
            assert all(space.contains(int(a)) for a in a1), f"{policy_type}: eval actions outside {space}"
        else:
            assert a1.shape == (16,) + space.shape, f"{policy_type}: eval actions of shape {a1.shape}"
    finally:
        collector_env.close()
        evaluator_env.close()


def _train_batch(cfg, samples: dict) -> dict:
    """On-policy policies learn from the collect itself; off-policy ones from a buffer sample."""
    if cfg.policy.on_policy:
        return samples
    from ding_lite.entry.common import build_buffer

    buf = build_buffer(cfg, seed=0)
    buf.push(samples)
    return buf.sample(cfg.policy.learn.batch_size)

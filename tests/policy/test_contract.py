"""Contract of every registered policy: build from defaults, one collect, one train step, save, load, identical
eval actions after load (STYLE rule 8); and a collect through an env worker restart stores no placeholder row as a
transition (the rollout contract, ding_lite/data/rollout.py). New policies are covered by registering them."""
from __future__ import annotations

import io

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.build import build, build_env_managers, fill_model_shapes
from ding_lite.config import compile_config
from ding_lite.envs.env_manager import StepResult
from ding_lite.errors import ConfigError
from ding_lite.policy.base_policy import resolve_discount_factor
from ding_lite.registry import POLICY_REGISTRY
from ding_lite.worker.learner import as_log_list

pytestmark = pytest.mark.unittest

DISCRETE_ENV = dict(type="gymnasium", env_id="CartPole-v1", collector_env_num=2, evaluator_env_num=1)
CONTINUOUS_ENV = dict(type="gymnasium", env_id="Pendulum-v1", collector_env_num=2, evaluator_env_num=1)


def _compiled(policy_type: str, env: dict):
    cfg = compile_config(dict(env=dict(env), policy=dict(type=policy_type)))
    cfg.policy.learn.batch_size = 8
    return cfg


def _envs_for(policy_type: str) -> list[dict]:
    """The discrete env unless the policy acts in Box spaces only (SAC, TD3); the continuous one too where the
    policy's model can act in a Box space."""
    policy_cls = POLICY_REGISTRY.get(policy_type)
    envs = [DISCRETE_ENV] if getattr(policy_cls, "supports_discrete", True) else []
    if getattr(policy_cls, "supports_continuous", False):
        envs.append(CONTINUOUS_ENV)
    return envs


CASES = [(name, env) for name in POLICY_REGISTRY.names() for env in _envs_for(name)]


@pytest.mark.parametrize("policy_type,env", CASES, ids=[f"{n}-{e['env_id']}" for n, e in CASES])
def test_policy_contract(policy_type: str, env: dict) -> None:
    torch.manual_seed(0)
    cfg = _compiled(policy_type, env)
    collector_env, evaluator_env = build_env_managers(cfg, seed=0)
    try:
        policy = build(cfg, "policy")
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        samples, _ = collector.collect(n_sample=64)
        assert samples, f"{policy_type}: collect produced no samples"
        batch = _train_batch(cfg, samples)
        logs = as_log_list(policy.learn_mode.forward(batch))
        assert logs and all(isinstance(log, dict) and log for log in logs), \
            f"{policy_type}: learn forward returned no log per gradient step"
        for log in logs:
            for name in policy.learn_mode.monitor_vars():
                assert name in log, f"{policy_type}: monitor var '{name}' missing from a learn step's log"

        state = policy.learn_mode.state_dict()
        buffer = io.BytesIO()
        torch.save(state, buffer)
        buffer.seek(0)
        restored_state = torch.load(buffer, weights_only=True)

        fresh_cfg = _compiled(policy_type, env)
        fill_model_shapes(fresh_cfg, evaluator_env.observation_space, evaluator_env.action_space)
        fresh = build(fresh_cfg, "policy")
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
            # Box-only policies stay in bounds
            if not getattr(POLICY_REGISTRY.get(policy_type), "supports_discrete", True):
                assert ((a1 >= space.low) & (a1 <= space.high)).all(), f"{policy_type}: eval actions out of bounds"
    finally:
        collector_env.close()
        evaluator_env.close()


def _train_batch(cfg, samples: dict) -> dict:
    """On-policy policies learn from the collect itself; off-policy ones from a buffer sample."""
    if cfg.policy.on_policy:
        return samples
    from ding_lite.build import build

    buf = build(cfg, "policy.other.replay_buffer", seed=0)
    buf.push(samples)
    return buf.sample(cfg.policy.learn.batch_size)


MARK = 1.0e6  # the placeholder row's reward and next observation: no real CartPole / Pendulum value comes near


def _restart_env0_at(manager, at: int) -> None:
    """Make ``manager.step`` report, at its ``at``-th call, env 0's worker as failed and restarted: its row becomes
    a placeholder (``StepResult.interrupted``) whose reward and next observation are MARK, so any use shows."""
    step, calls = manager.step, [0]

    def faulty_step(actions):
        result = step(actions)
        calls[0] += 1
        if calls[0] != at:
            return result
        next_obs, reward = result.next_obs.copy(), result.reward.copy()
        terminated, truncated = result.terminated.copy(), result.truncated.copy()
        next_obs[0], reward[0], terminated[0], truncated[0] = MARK, MARK, False, True
        interrupted = np.zeros(len(reward), dtype=bool)
        interrupted[0] = True
        episodes = [e for e in result.episodes if e.env_id != 0]  # a cut episode is not reported as ended
        return StepResult(result.obs, next_obs, reward, terminated, truncated, episodes, interrupted)

    manager.step = faulty_step


@pytest.mark.parametrize("policy_type,env", CASES, ids=[f"{n}-{e['env_id']}" for n, e in CASES])
def test_interrupted_rollout_stores_no_placeholder(policy_type: str, env: dict) -> None:
    torch.manual_seed(0)
    cfg = _compiled(policy_type, env)
    collector_env, evaluator_env = build_env_managers(cfg, seed=0)
    try:
        policy = build(cfg, "policy")
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        samples, _ = collector.collect(n_sample=16)  # runs past the first steps of every env
        _restart_env0_at(collector_env, 5)
        for _ in range(4):  # enough for sequence-cutting policies to close the sequence that met the restart
            more, _ = collector.collect(n_sample=32)
            samples = {k: np.concatenate([samples[k], more[k]]) for k in samples} if samples else more
        for key, column in samples.items():
            if np.issubdtype(np.asarray(column).dtype, np.floating):
                assert not (np.abs(column) >= MARK / 10).any(), \
                    f"{policy_type}: the placeholder row of a worker restart reached the train samples ('{key}')"
        logs = as_log_list(policy.learn_mode.forward(_train_batch(cfg, samples)))
        for log in logs:
            assert all(np.isfinite(float(v)) for v in log.values() if getattr(v, "ndim", 0) == 0), policy_type
    finally:
        collector_env.close()
        evaluator_env.close()


@pytest.mark.parametrize("policy_type", ["dqn", "ppo", "acer"])
def test_discount_factor_has_one_home_and_accepts_di_engines_positions(policy_type: str) -> None:
    def gamma(**policy):
        cfg = compile_config(dict(env=dict(DISCRETE_ENV), policy=dict(type=policy_type, **policy)))
        return resolve_discount_factor(cfg.policy)

    assert gamma(discount_factor=0.5) == 0.5
    assert gamma(collect=dict(discount_factor=0.6)) == 0.6  # DI-engine's PPO position
    assert gamma(learn=dict(discount_factor=0.7)) == 0.7  # DI-engine's ACER position
    with pytest.raises(ConfigError, match=r"policy.learn.discount_factor=0.7 and policy.collect.discount_factor=0.6 "
                                          r"disagree"):
        gamma(learn=dict(discount_factor=0.7), collect=dict(discount_factor=0.6))
    with pytest.raises(ConfigError, match=r"policy.discount_factor must be a number in \[0, 1\], got 1.5"):
        gamma(discount_factor=1.5)

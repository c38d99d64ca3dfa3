"""PPO's continuous-control switches (obs_norm, reward_scale, lr_decay_iter) wired through collects and learn steps:
the observation statistics take in each step before it is acted on, a learn-only policy (the Ray driver) merges the
samples into its statistics as the collecting one did, the learning rate falls, and checkpoints and the weights
carry the statistics (the reward scaler's too)."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from ding_lite.build import build, build_env_managers
from ding_lite.config import compile_config
from ding_lite.data.keys import OBS, REWARD, VALUE
from ding_lite.policy.ppo import DISC_RETURN
from ding_lite.utils.checkpoint import load_checkpoint, save_checkpoint

pytestmark = pytest.mark.unittest


def _cfg(**collect: object) -> object:
    return compile_config(dict(
        env=dict(type="gymnasium", env_id="Pendulum-v1", collector_env_num=2, evaluator_env_num=1),
        policy=dict(type="ppo", model=dict(obs_norm=True),
                    learn=dict(epoch_per_collect=1, batch_size=32, learning_rate=1e-3, lr_decay_iter=4),
                    collect=dict(n_sample=64, reward_scale=True, **collect))))


def test_collect_normalises_each_step_with_the_statistics_up_to_it() -> None:
    cfg = _cfg()
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        policy = build(cfg, "policy")
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        rollout, _ = collector.rollout(4)
    norm = policy._model.obs_norm
    obs = rollout[OBS].astype(np.float64)  # (4, 2, 3)
    flat = obs.reshape(-1, 3)
    assert float(norm.count) == 8
    np.testing.assert_allclose(norm.mean.numpy(), flat.mean(0), rtol=1e-10)
    np.testing.assert_allclose(norm.var.numpy(), flat.var(0), rtol=1e-10)
    # the value stored at step t is the critic on obs_t normalised by the mean and variance of rows 0..t
    for t in range(4):
        seen = obs[:t + 1].reshape(-1, 3)
        with torch.no_grad():
            norm.mean.copy_(torch.from_numpy(seen.mean(0)))
            norm.var.copy_(torch.from_numpy(seen.var(0)))
            value = policy._model.compute_critic(torch.from_numpy(rollout[OBS][t]))[VALUE]
        np.testing.assert_allclose(rollout[VALUE][t], value.numpy(), rtol=1e-5, atol=1e-6)


def test_a_learn_only_policy_merges_what_the_collecting_one_saw() -> None:
    """The parallel pipeline's split: collector actors (collect mode only) update their statistics as they step; the
    driver's learn-only policy takes the samples into its own, and its weights bring the merged statistics back."""
    cfg = _cfg()
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        actor = build(cfg, "policy", enable_field=["collect"])
        collector = build(cfg, "policy.collect.collector", collector_env, actor.collect_mode)
        samples, _ = collector.collect(64)
        driver = build(cfg, "policy", enable_field=["learn"])
        assert DISC_RETURN in samples
        driver.learn_mode.forward(samples)
        for name in ("mean", "var", "count"):
            torch.testing.assert_close(getattr(driver._model.obs_norm, name), getattr(actor._model.obs_norm, name))
        assert driver._reward_scaler.stats_dict() == pytest.approx(actor._reward_scaler.stats_dict())
        ret = actor._reward_scaler.ret.copy()
        actor.collect_mode.load_state_dict(driver.collect_mode.state_dict())  # a broadcast
        np.testing.assert_array_equal(actor._reward_scaler.ret, ret)  # each env's running return stays the actor's
        assert actor._reward_scaler.stats_dict() == pytest.approx(driver._reward_scaler.stats_dict())


def test_reward_scaler_obs_norm_and_lr_schedule_survive_a_checkpoint(tmp_path: Path) -> None:
    """A resumed run scales the next rollout's rewards exactly as the run it resumes would have (without the reward
    scaler in the checkpoint the first value loss after a resume jumped from 0.0006 to 0.15)."""
    cfg = _cfg()
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        policy = build(cfg, "policy")
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        policy.learn_mode.forward(collector.collect(64)[0])
        save_checkpoint(tmp_path / "ckpt.pth.tar", {"policy": policy.learn_mode.state_dict()})
        state = load_checkpoint(tmp_path / "ckpt.pth.tar")["policy"]  # torch.load(weights_only=True)
        assert {"reward_scaler", "lr_schedule"} <= set(state) and "obs_norm.mean" in state["model"]
        assert policy._optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * 0.5)  # 2 of 4 gradient steps done
        resumed = build(cfg, "policy")
        resumed.learn_mode.load_state_dict(state)
        assert resumed._optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * 0.5)
        rollout, _ = collector.rollout(32)
    done = rollout["terminated"] | rollout["truncated"]
    (on, on_g), (off, off_g) = (p._reward_scaler(rollout[REWARD], done) for p in (policy, resumed))
    np.testing.assert_allclose(off, on, rtol=1e-6)
    np.testing.assert_allclose(off_g, on_g, rtol=1e-6)  # each env's running return too


def test_an_older_checkpoint_without_the_reward_scaler_still_loads(caplog: pytest.LogCaptureFixture) -> None:
    cfg = _cfg()
    build_env_managers(cfg, seed=0, evaluate=False)[0].close()  # the model's shapes from the env
    policy = build(cfg, "policy")
    state = policy.learn_mode.state_dict()
    del state["reward_scaler"]
    logger = logging.getLogger("ding_lite")
    logger.addHandler(caplog.handler)  # whatever earlier tests did to the logger's propagation
    try:
        build(cfg, "policy").learn_mode.load_state_dict(state)
    finally:
        logger.removeHandler(caplog.handler)
    assert "reward scale starts afresh" in caplog.text


def test_reward_scale_changes_the_advantages_only_in_scale() -> None:
    def returns(scale: bool) -> tuple[np.ndarray, dict]:
        cfg = compile_config(dict(
            env=dict(type="gymnasium", env_id="Pendulum-v1", collector_env_num=2, evaluator_env_num=1),
            policy=dict(type="ppo", collect=dict(n_sample=64, reward_scale=scale))))
        collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
        with collector_env:
            policy = build(cfg, "policy", enable_field=["collect"])
            collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
            rollout, _ = collector.rollout(32)
        return rollout[REWARD], policy.collect_mode.get_train_sample(rollout)

    raw_reward, raw = returns(False)
    _, scaled = returns(True)
    assert np.abs(scaled["return"]).max() < np.abs(raw["return"]).max()
    assert raw_reward.min() < -1.0

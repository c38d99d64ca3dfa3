"""``policy.cuda=True``: models and batches on the GPU where there is one (image batches through pinned memory, uint8
frames moved before the float conversion); without one, a warning and the CPU. The GPU half runs only on a GPU."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from ding_lite.build import build
from ding_lite.config import compile_config

pytestmark = pytest.mark.unittest


def _pong_shaped_dqn(cuda: bool):
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type="dqn", cuda=cuda, model=dict(obs_shape=[4, 84, 84], action_shape=6,
                                                                            encoder_hidden_size_list=[32]))))
    return build(cfg, "policy")


def _frames(n: int) -> np.ndarray:
    return np.random.default_rng(0).integers(0, 256, (n, 4, 84, 84), dtype=np.uint8)


def _batch(n: int) -> dict:
    return {"obs": _frames(n), "action": np.zeros(n, dtype=np.int64), "return_n": np.ones(n, dtype=np.float32),
            "discount_n": np.full(n, 0.99, dtype=np.float32), "next_obs_n": _frames(n)}


def test_cuda_without_a_gpu_warns_and_trains_on_the_cpu(caplog, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    logger = logging.getLogger("ding_lite")
    logger.addHandler(caplog.handler)  # an experiment logger set up by an earlier test may stop propagation
    try:
        with caplog.at_level(logging.WARNING, logger="ding_lite"):
            policy = _pong_shaped_dqn(cuda=True)
    finally:
        logger.removeHandler(caplog.handler)
    assert "CUDA is not available" in caplog.text and policy.device.type == "cpu"
    assert policy.collect_mode.forward(_frames(3), env_step=0)["action"].shape == (3,)
    assert np.isfinite(float(policy.learn_mode.forward(_batch(8))["loss"]))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_keeps_models_and_batches_on_the_gpu() -> None:
    policy = _pong_shaped_dqn(cuda=True)
    assert all(p.is_cuda for p in policy._model.parameters())
    tensors = policy.batch_tensors(_batch(8))
    assert tensors["obs"].is_cuda and tensors["obs"].dtype == torch.uint8
    obs = policy.obs_tensor(_frames(2))
    assert obs.is_cuda and obs.dtype == torch.float32
    assert np.isfinite(float(policy.learn_mode.forward(_batch(8))["loss"]))
    assert policy.collect_mode.forward(_frames(3), env_step=0)["action"].shape == (3,)


def _ppo(cuda: bool, obs_shape: list[int], continuous: bool):
    model = dict(obs_shape=obs_shape, action_shape=3 if continuous else 6,
                 action_space="continuous" if continuous else "discrete", encoder_hidden_size_list=[32],
                 share_encoder=not continuous, obs_norm=continuous)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type="ppo", cuda=cuda, model=model,
                                          learn=dict(epoch_per_collect=2, batch_size=6, grad_clip_value=0.5))))
    return build(cfg, "policy")


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a GPU"))])
@pytest.mark.parametrize("continuous", [False, True])
def test_ppo_learns_on_its_device_with_the_fused_step(device: str, continuous: bool) -> None:
    """A PPO learn call (a ragged last minibatch, the clip inside the fused Adam step, advantages normalised per
    minibatch, deferred statistics) and a rollout-block forward on the policy's device: the weights move, every
    step's log is finite."""
    obs_shape = [11] if continuous else [4, 84, 84]
    policy = _ppo(device == "cuda", obs_shape, continuous)
    assert policy.device.type == device
    n = 16  # minibatches of 6, 6 and 4
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(n, 11)).astype(np.float32) if continuous else _frames(n)
    action = rng.normal(size=(n, 3)).astype(np.float32) if continuous else rng.integers(0, 6, n)
    batch = {"obs": obs, "action": action, "logp": np.full(n, -1.0, dtype=np.float32),
             "value": np.zeros(n, dtype=np.float32), "adv": rng.normal(size=n).astype(np.float32),
             "return": rng.normal(size=n).astype(np.float32)}
    before = [p.detach().clone() for p in policy._model.parameters()]
    for _ in range(2):  # the second call takes the direct fused path (the first one created Adam's state)
        logs = policy.learn_mode.forward(batch)
        assert len(logs) == 2 * 3
        for log in logs:
            assert {"approx_kl", "clipfrac", "total_loss"} <= set(log) and "_log_ratio" not in log
            assert all(np.isfinite(float(v)) for v in log.values())
    assert any(not torch.equal(a, b) for a, b in zip(before, policy._model.parameters(), strict=True))
    with policy.collect_mode.rollout_weights():
        out = policy.collect_mode.forward(obs[:3], env_step=0)
    assert out["action"].shape[0] == 3 and np.isfinite(out["logp"]).all()


def test_a_parallel_actor_without_cuda_acts_on_the_cpu_without_a_warning_of_its_own(caplog, monkeypatch) -> None:
    """`-m parallel` with policy.cuda=True on a machine without CUDA warned once per process: the learner's, then
    every collector's and the evaluator's (Ray's prefix on each). The learner warns; an actor's policy acts on the
    CPU quietly, from its own copy of the config."""
    from ding_lite.build import fill_model_shapes_from_env, load_config
    from ding_lite.distributed.actors import CollectorShell, EvaluatorShell

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    from conftest import DIZOO_CARTPOLE

    cfg = load_config(DIZOO_CARTPOLE / "cartpole_dqn_config.py", overrides=["policy.cuda=True"])
    fill_model_shapes_from_env(cfg)
    with caplog.at_level(logging.WARNING, logger="ding_lite"):
        collector, evaluator = CollectorShell(cfg, seed=0), EvaluatorShell(cfg, seed=0)
    try:
        assert "policy.cuda=True" not in caplog.text
        assert collector.cfg.policy.cuda is False and evaluator.policy.device == torch.device("cpu")
        assert cfg.policy.cuda is True  # the driver's config as it was
        with caplog.at_level(logging.WARNING, logger="ding_lite"):
            build(cfg, "policy", enable_field=["learn"])  # the learner's warning stays
        assert caplog.text.count("warning: policy.cuda=True but CUDA is not available") == 1
    finally:
        collector.close()
        evaluator.close()

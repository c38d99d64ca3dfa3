"""``policy.cuda=True``: models and batches on the GPU where there is one (image batches through pinned memory, uint8
frames moved before the float conversion); without one, a warning and the CPU. The GPU half runs only on a GPU."""
from __future__ import annotations

import logging

import numpy as np
import pytest
import torch

from ding_lite.config import compile_config
from ding_lite.entry.common import build_policy

pytestmark = pytest.mark.unittest


def _pong_shaped_dqn(cuda: bool):
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type="dqn", cuda=cuda, model=dict(obs_shape=[4, 84, 84], action_shape=6,
                                                                            encoder_hidden_size_list=[32]))))
    return build_policy(cfg)


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

"""DQN with prioritized replay: priorities flow back as an explicit field, IS weights scale the loss, and it
solves CartPole (algotest)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from ding_lite.build import build, build_env_managers
from ding_lite.config import compile_config
from ding_lite.data.keys import INDEX, PRIORITY, WEIGHT
from ding_lite.data.prioritized import PrioritizedBuffer
from ding_lite.entry import serial_pipeline
from ding_lite.registry import BUFFER_REGISTRY
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config


def prioritized_dqn_config():
    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.policy.priority = True
    main.policy.priority_IS_weight = True
    main.policy.other.replay_buffer.update(alpha=0.6, beta=0.4, anneal_step=2000)
    create.replay_buffer = dict(type="prioritized")
    return main, create


@BUFFER_REGISTRY.register("spy_prioritized")
class SpyPrioritizedBuffer(PrioritizedBuffer):
    """Records every update_priority call."""

    updates: list[tuple[np.ndarray, np.ndarray]] = []

    def update_priority(self, indices, priorities):
        SpyPrioritizedBuffer.updates.append((np.array(indices), np.array(priorities)))
        super().update_priority(indices, priorities)


@pytest.mark.unittest
def test_pipeline_feeds_td_errors_back_as_priorities(tmp_path) -> None:
    SpyPrioritizedBuffer.updates.clear()
    main, create = prioritized_dqn_config()
    create.replay_buffer = dict(type="spy_prioritized")
    main.env.update(collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1)
    main.policy.learn.update(batch_size=8, update_per_collect=2)
    result = serial_pipeline((main, create), seed=0, max_train_iter=6, exp_dir=tmp_path / "exp", progress=False)
    assert result["train_iter"] == 6 and len(SpyPrioritizedBuffer.updates) == 6
    for ids, priorities in SpyPrioritizedBuffer.updates:
        assert ids.shape == priorities.shape == (8,) and ids.dtype == np.int64
        assert (priorities > 0).all()  # |TD error| + 1e-6


@pytest.mark.unittest
def test_importance_weights_scale_the_loss() -> None:
    main, create = prioritized_dqn_config()
    main.env.update(collector_env_num=2, evaluator_env_num=1)
    cfg = compile_config(main, create)
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        torch.manual_seed(0)
        policy = build(cfg, "policy")
        samples, _ = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode).collect(n_sample=32)
    buffer = PrioritizedBuffer(cfg.policy.other.replay_buffer, seed=0)
    buffer.push(samples)
    batch = buffer.sample(16)
    assert batch[WEIGHT].shape == (16,) and INDEX in batch
    batch[WEIGHT] = np.zeros(16, dtype=np.float32)  # all weights 0: no loss at all
    out = policy.learn_mode.forward(batch)
    assert float(out["loss"]) == 0.0 and out[PRIORITY].shape == (16,)


@pytest.mark.algotest
@pytest.mark.parametrize("seed", [0, 1])
def test_dqn_prioritized_solves_cartpole(seed: int, tmp_path) -> None:
    result = serial_pipeline(prioritized_dqn_config(), seed=seed, max_env_step=20000, exp_dir=tmp_path / "exp",
                             progress=False)
    assert result["stop"] and result["eval_return"] >= 195, result

"""Learning: the dizoo CartPole configs of DQN and PPO reach the stop value 195 for seeds 0, 1, 2; PPO reaches -250 on
Pendulum-v1 for seeds 0, 1, 2 (CI runs seed 0 of Pendulum; seeds 1 and 2 carry the ``benchmark`` mark, ``pytest -m
"algotest or benchmark"`` runs them).

Each run prints its env steps and wall seconds (``pytest -s -m algotest tests/entry/test_learning.py`` shows them).
"""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, DIZOO_PENDULUM

from ding_lite.entry.serial import serial_pipeline

pytestmark = pytest.mark.algotest

BUDGET = 30_000  # env steps; both solve in about 1-2k, the budget only keeps a broken run from going on forever


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("algo", ["dqn", "ppo"])
def test_cartpole_reaches_195(algo: str, seed: int, tmp_path: Path, record_property) -> None:
    result = serial_pipeline(DIZOO_CARTPOLE / f"cartpole_{algo}_config.py", seed=seed, max_env_step=BUDGET,
                             exp_dir=tmp_path / "exp", progress=False)
    line = (f"{algo} CartPole-v1 seed {seed}: eval {result['eval_return']:.1f} after {result['env_step']} env steps, "
            f"{result['train_iter']} train iterations, {result['wall_seconds']:.2f} s")
    print(line)
    record_property("env_step", result["env_step"])
    record_property("wall_seconds", result["wall_seconds"])
    assert result["stop"] is True, line
    assert result["eval_return"] >= 195, line


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.benchmark),
                                  pytest.param(2, marks=pytest.mark.benchmark)])
def test_pendulum_ppo_reaches_minus_250(seed: int, tmp_path: Path) -> None:
    """Continuous PPO (diagonal Gaussian) on Pendulum-v1: about 50k env steps (seeds 0-19 reach -250 within 148k),
    10-20 s per seed here."""
    result = serial_pipeline(DIZOO_PENDULUM / "pendulum_ppo_config.py", seed=seed, max_env_step=150_000,
                             exp_dir=tmp_path / "exp", progress=False)
    line = (f"ppo Pendulum-v1 seed {seed}: eval {result['eval_return']:.1f} after {result['env_step']} env steps, "
            f"{result['wall_seconds']:.2f} s")
    print(line)
    assert result["stop"] is True and result["eval_return"] >= -250, line

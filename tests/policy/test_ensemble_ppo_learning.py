"""EPPO learns CartPole-v1 (algotest). Pendulum-v1 (~40-80k env steps) is too slow for CI: it is measured by
``python benchmarks/eppo_vs_ppo.py --env pendulum``."""
from __future__ import annotations

import pytest

from ding_lite.entry import serial_pipeline
from tests.conftest import DIZOO_CARTPOLE

pytestmark = pytest.mark.algotest


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eppo_solves_cartpole(tmp_path, seed):
    # The acceptance bar is 195; the test asks for 450 so that it cannot pass on a lucky initial ensemble (seed 1's
    # untrained mixture already scores ~400 at iteration 0) and shows the ensemble actually learned.
    result = serial_pipeline(str(DIZOO_CARTPOLE / "cartpole_eppo_config.py"), seed=seed, max_env_step=30_000,
                             exp_dir=tmp_path / "exp", overrides=("env.stop_value=450",), strict=True,
                             progress=False)
    line = (f"eppo CartPole-v1 seed {seed}: eval {result['eval_return']:.1f} (bar 450) after {result['env_step']} env "
            f"steps, {result['train_iter']} train iterations")
    print(line)
    assert result["stop"] and result["eval_return"] >= 450 and result["train_iter"] > 0, line

"""Weights and optimiser state that go NaN or inf while every loss stays finite (BaseLearner.check_weights)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch
from conftest import DIZOO_CARTPOLE, run_cli

from ding_lite.errors import DivergedError
from ding_lite.utils.checkpoint import load_checkpoint
from ding_lite.worker.learner import BaseLearner, first_non_finite

pytestmark = pytest.mark.unittest


class _AdamPolicy:
    """A learn mode with one linear layer and Adam, stepped on the batch's inputs times ``scale``."""

    def __init__(self) -> None:
        torch.manual_seed(0)
        self.net = torch.nn.Linear(4, 1)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=1e-3)
        self.learn_mode = self

    def forward(self, batch: dict) -> dict:
        loss = self.net(batch["obs"]).pow(2).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return {"loss": loss.detach()}

    def state_dict(self) -> dict:
        return {"model": self.net.state_dict(), "optimizer": self.opt.state_dict()}


def test_adam_moments_that_overflow_with_a_finite_loss_stop_the_run_before_a_checkpoint(tmp_path: Path) -> None:
    """Before, observations of 1e14 gave DQN on CartPole finite losses (~1e25) but gradients above 1.8e19, whose
    squares overflow Adam's exp_avg_sq to inf in float32: the weights never moved again (m / inf = 0), the run ended
    with exit code 0 and every checkpoint held the inf moments."""
    policy = _AdamPolicy()
    learner = BaseLearner({"hook": {"save_ckpt_after_run": False}}, policy, tmp_path)
    learner.train({"obs": torch.ones(8, 4)}, env_step=8)
    good = learner.save_checkpoint("ckpt_best")
    assert good is not None and learner.finite_at == 1
    logs = learner.train({"obs": torch.full((8, 4), 1e14)}, env_step=16)
    assert torch.isfinite(logs[0]["loss"]) and all(torch.isfinite(p).all() for p in policy.net.parameters())
    with pytest.raises(DivergedError, match=r"^training diverged by train iter 2 \(env step 16\): the policy's "
                                            r"optimizer\.state\.0\.exp_avg_sq holds inf \(finite at train iter 1\) "
                                            r"while every loss was finite; very large observations or rewards"):
        learner.save_checkpoint("ckpt_best")
    assert first_non_finite(load_checkpoint(good)["policy"]) is None  # the good one is not replaced


def test_first_non_finite_names_nan_and_inf_in_nested_state() -> None:
    state = {"model": {"w": torch.ones(3)}, "opt": [{"m": torch.tensor([1.0, float("nan")])}],
             "count": torch.tensor([2**31 - 1]), "lr": float("inf")}  # ints and plain floats are not weights
    assert first_non_finite(state) == ("opt[0].m", "NaN")
    assert first_non_finite({"a": torch.tensor([float("-inf")])}) == ("a", "inf")
    assert first_non_finite({"model": {"w": torch.ones(2)}}) is None


def test_a_run_whose_adam_moments_overflow_fails_at_its_next_evaluation(tmp_path: Path) -> None:
    """At the CLI: one line, exit code 2, at the first evaluation after the overflow; no checkpoint holds it."""
    (tmp_path / "huge_obs_xyz.py").write_text(textwrap.dedent("""
        import gymnasium as gym
        import numpy as np
        from ding_lite.registry import ENV_REGISTRY

        @ENV_REGISTRY.register('huge_obs_xyz')
        class HugeObs(gym.Wrapper):
            def __init__(self, cfg=None):
                super().__init__(gym.make('CartPole-v1', disable_env_checker=True))
                self.observation_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)

            def reset(self, **kw):
                obs, info = self.env.reset(**kw)
                return (obs * 1e14).astype(np.float32), info

            def step(self, action):
                obs, r, term, trunc, info = self.env.step(action)
                return (obs * 1e14).astype(np.float32), r, term, trunc, info
        """))
    proc = run_cli("-c", str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), "-s", "0", "--max-env-step", "300",
                   "--no-progress", "--exp-name", "exp", "--set", "env.type=huge_obs_xyz",
                   "env.import_names=['huge_obs_xyz']", "env.stop_value=1e9", cwd=tmp_path,
                   extra_pythonpath=[str(tmp_path)])
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ding_lite: error:")]
    assert errors == [proc.stderr.strip().splitlines()[-1]], proc.stderr  # the log's lines, then one error line
    assert errors[0].startswith("ding_lite: error: training diverged by train iter 40 (env step 120): ")
    assert "exp_avg_sq holds inf (finite at train iter 0)" in errors[0]
    for ckpt in (tmp_path / "exp" / "ckpt").glob("*.pth.tar"):
        assert first_non_finite(load_checkpoint(ckpt)["policy"]) is None, ckpt

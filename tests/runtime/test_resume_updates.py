"""A checkpoint that --resume starts from is written between updates (ding_lite/worker/learner.py ``one_update``):
never with the weights of one step and the counters of another (a forward that makes several steps, as PPO's
epochs), nor with some of a collect's replay updates made and the rest lost; and the replay ratio's fraction of an
update owed goes with it (ding_lite/policy/replay.py, runtime/train_loop.py)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import DIZOO_CARTPOLE

from ding_lite.entry import serial_pipeline
from ding_lite.policy.replay import ReplaySchedule
from ding_lite.utils.checkpoint import load_checkpoint
from ding_lite.utils.events import read_scalars
from ding_lite.worker.learner import BaseLearner

pytestmark = pytest.mark.unittest


class _StepsPolicy:
    """A learn mode whose forward makes ``steps`` gradient steps at once (returns one log per step); its weight is
    the number of steps made so far."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.made = 0
        self.learn_mode = self

    def forward(self, batch: dict) -> list[dict]:
        self.made += self.steps
        return [{"loss": torch.tensor(1.0)} for _ in range(self.steps)]

    def state_dict(self) -> dict:
        return {"made": torch.tensor(self.made)}


def _names(ckpt: Path) -> list[str]:
    return sorted(p.name for p in ckpt.iterdir())


def test_a_checkpoint_due_within_a_forwards_steps_holds_the_weights_it_names(tmp_path: Path) -> None:
    """Before, iteration_3 held train_iter 3 and the weights after step 8: a resume from it made the steps 4-8
    again and counted 5 iterations fewer than the weights had."""
    policy = _StepsPolicy(8)
    learner = BaseLearner({"hook": {"save_ckpt_after_iter": 3}}, policy, tmp_path)
    learner.train({}, env_step=256)
    learner.train({}, env_step=512)
    assert _names(tmp_path / "ckpt") == ["iteration_16.pth.tar", "iteration_8.pth.tar"]
    for n in (8, 16):
        state = load_checkpoint(tmp_path / "ckpt" / f"iteration_{n}.pth.tar")
        assert state["train_iter"] == n == int(state["policy"]["made"])


class _Buffer:
    def __init__(self) -> None:
        self.rows = 0

    def push(self, samples: dict) -> None:
        self.rows += len(samples["x"])

    def __len__(self) -> int:
        return self.rows

    def sample(self, n: int) -> dict:
        return {"x": np.zeros(n)}


def test_a_checkpoint_due_within_a_collects_replay_updates_is_written_after_them(tmp_path: Path) -> None:
    """Before, a checkpoint at iteration 2 of a collect's 3 updates was resumed with the third never made."""
    policy = _StepsPolicy(1)
    learner = BaseLearner({"hook": {"save_ckpt_after_iter": 2}}, policy, tmp_path)
    schedule = ReplaySchedule({"type": "dqn", "learn": {"batch_size": 1, "update_per_collect": 3}})
    schedule.train(_Buffer(), {"x": np.zeros(8)}, 8, learner.train, learner.one_update)
    assert _names(tmp_path / "ckpt") == ["iteration_3.pth.tar"]
    assert load_checkpoint(tmp_path / "ckpt" / "iteration_3.pth.tar")["train_iter"] == 3


def test_an_update_left_by_an_error_writes_no_checkpoint(tmp_path: Path) -> None:
    learner = BaseLearner({"hook": {"save_ckpt_after_iter": 1}}, _StepsPolicy(1), tmp_path)
    with pytest.raises(RuntimeError), learner.one_update(2):
        learner.train({}, env_step=8)
        raise RuntimeError("diverged")
    assert not (tmp_path / "ckpt").exists() or _names(tmp_path / "ckpt") == []


def test_a_resumed_run_makes_the_updates_the_replay_ratio_owed(tmp_path: Path) -> None:
    """replay_ratio=0.3 with 8 samples per collect is 2.4 updates per collect: before, the fraction owed at the
    checkpoint was lost, and the resumed run made fewer updates than an uninterrupted one."""
    config = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
    sets = ("policy.learn.replay_ratio=0.3", "env.collector_env_num=4", "env.evaluator_env_num=1",
            "env.n_evaluator_episode=1", "policy.eval.final_episodes=0", "policy.eval.evaluator.eval_freq=100000")
    whole = serial_pipeline(config, max_env_step=160, exp_dir=tmp_path / "whole", overrides=sets, progress=False)
    serial_pipeline(config, max_env_step=104, exp_dir=tmp_path / "cut", overrides=sets, progress=False)
    resumed = serial_pipeline(config, max_env_step=160, exp_dir=tmp_path / "cut", resume=True, overrides=sets,
                              progress=False)
    assert resumed["env_step"] == whole["env_step"] == 160
    assert resumed["train_iter"] == whole["train_iter"]


def test_a_run_resumed_between_evaluations_evaluates_when_the_uninterrupted_one_does(tmp_path: Path) -> None:
    """Before, the resumed run evaluated at its first iteration (50) and every eval_freq from there (90), not at 80."""
    config = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
    sets = ("env.evaluator_env_num=1", "env.n_evaluator_episode=1", "policy.eval.final_episodes=0",
            "policy.eval.evaluator.eval_freq=40", "policy.learn.learner.hook.save_ckpt_after_iter=50")
    serial_pipeline(config, max_train_iter=120, exp_dir=tmp_path / "whole", overrides=sets, progress=False)
    serial_pipeline(config, max_train_iter=60, exp_dir=tmp_path / "cut", overrides=sets, progress=False)
    (tmp_path / "cut" / "ckpt" / "iteration_60.pth.tar").unlink()  # as if killed after iteration_50
    serial_pipeline(config, max_train_iter=120, exp_dir=tmp_path / "cut", resume=True, overrides=sets,
                    progress=False)
    whole, cut = (read_scalars(tmp_path / name / "log").series["eval/return_mean_iter"].steps
                  for name in ("whole", "cut"))
    assert cut == whole == [0, 40, 80, 120]

"""--resume of a SAC run: the policy's learn state (networks, target critics, optimisers, temperature, update count)
comes back from the checkpoint, the replay buffer does not (it is not checkpointed): learning starts are not repeated
(no random actions), and updates wait until the buffer holds a batch again."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import DIZOO_PENDULUM, run_cli

from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint

pytestmark = pytest.mark.unittest

SAC = str(DIZOO_PENDULUM / "pendulum_sac_config.py")
SETTINGS = ["--set", "policy.learning_starts=400", "--set", "policy.learn.batch_size=64",
            "--set", "policy.eval.final_episodes=0", "--set", "policy.eval.evaluator.eval_freq=100000",
            "--exp-name", "exp", "--no-progress"]


def test_a_resumed_sac_run_keeps_its_learn_state_and_refills_its_buffer(tmp_path: Path) -> None:
    first = run_cli("-m", "serial", "-c", SAC, "--max-env-step", "600", *SETTINGS, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    ckpt = latest_checkpoint(tmp_path / "exp" / "ckpt")
    state = load_checkpoint(ckpt)
    assert state["env_step"] == 600 and state["train_iter"] == 600 - 400 + 8  # from the collect reaching step 400
    assert {"target_critic", "temperature", "optimizer_actor", "optimizer_critic", "train_steps"} <= set(
        state["policy"])
    assert state["policy"]["train_steps"]["count"] == state["train_iter"]
    assert torch.is_tensor(state["policy"]["temperature"]["log_alpha"])

    resumed = run_cli("-m", "serial", "-c", SAC, "--max-env-step", "1000", "--resume", *SETTINGS, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    # 8 env steps per collect: the emptied buffer holds a batch of 64 again after 8 collects (env step 664); from that
    # collect on, 8 updates each up to env step 1000: (1000 - 664) / 8 + 1 = 43 collects
    assert result["env_step"] == 1000 and result["train_iter"] == state["train_iter"] + 43 * 8

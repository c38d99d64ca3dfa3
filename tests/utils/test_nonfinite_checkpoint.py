"""A checkpoint whose weights hold NaN or inf (an older ding_lite could write one after its run diverged) is refused
where it is loaded: -m eval, --load-ckpt and -m collect_demo played on with it in silence (DQN's argmax over NaN
values is action 0)."""
from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import pytest
import torch
from conftest import DIZOO_CARTPOLE, run_cli

from ding_lite.build import build, fill_model_shapes, load_config
from ding_lite.errors import CheckpointError
from ding_lite.utils.checkpoint import load_policy_weights, save_checkpoint

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")


def _policy() -> object:
    cfg = load_config(DQN)
    env = gym.make("CartPole-v1")
    fill_model_shapes(cfg, env.observation_space, env.action_space)
    torch.manual_seed(0)
    return build(cfg, "policy")


def _nan_checkpoint(folder: Path) -> tuple[Path, str]:
    """A DQN checkpoint with a NaN in one weight; returns its path and that tensor's key in the policy's state."""
    state = _policy().learn_mode.state_dict()
    key = next(k for k, v in state["model"].items() if v.is_floating_point())
    state["model"][key][0] = float("nan")
    path = folder / "diverged.pth.tar"
    save_checkpoint(path, {"policy": state, "train_iter": 5, "env_step": 320})
    return path, key


def test_loading_nan_weights_names_the_file_and_the_tensor(tmp_path: Path) -> None:
    path, key = _nan_checkpoint(tmp_path)
    policy = _policy()
    message = rf"^{path}: its policy\.model\.{key} holds NaN \(the weights of a run that diverged\)"
    with pytest.raises(CheckpointError, match=message):
        load_policy_weights(policy.eval_mode, path)
    with pytest.raises(CheckpointError, match=message):
        load_policy_weights(policy.eval_mode, path, model_only=True)


@pytest.mark.parametrize("mode", [["-m", "eval", "--n-episode", "1"], ["-m", "collect_demo", "--n-episode", "1"],
                                  ["--max-env-step", "64"]])
def test_the_cli_refuses_a_nan_checkpoint_in_one_line(tmp_path: Path, mode: list[str]) -> None:
    path, key = _nan_checkpoint(tmp_path)
    proc = run_cli(*mode, "-c", DQN, "--load-ckpt", str(path), "--exp-name", "exp", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("ding_lite: error: ") and f"{path}: its policy.model.{key} holds NaN" in error, error
    assert not (tmp_path / "exp" / "result.json").exists()

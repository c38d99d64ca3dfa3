"""An env that breaks gymnasium's API, or whose reset / step gives what the collectors cannot take, is refused in one
line before the run writes anything: its probe (built to read the spaces) is reset and stepped once under the base
env manager. Before, the error came at the first collect, after the experiment folder, its total_config.py and its
logs were written, and a second run with the env fixed had to take the next free folder (``<name>_1``)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.cli import main
from ding_lite.envs.probe import try_reset_and_step
from ding_lite.errors import EnvError

pytestmark = pytest.mark.unittest

ENV_MODULE = """
import gymnasium as gym
import numpy as np
from ding_lite.registry import ENV_REGISTRY

@ENV_REGISTRY.register('{name}')
class ProbedEnv(gym.Env):
    def __init__(self, cfg=None):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
    def reset(self, seed=None, options=None):
        {reset}
    def step(self, action):
        {step}
"""
GOOD_RESET = "return np.zeros(3, np.float32), {}"
GOOD_STEP = "return np.zeros(3, np.float32), 1.0, False, False, {}"

CASES = {  # name: (reset body, step body, what the one line says after the env's name)
    "probe_old_reset_xyz": ("return np.zeros(3, np.float32)", GOOD_STEP,
                            "its reset returned an array of shape (3,), not (observation, info)"),
    "probe_old_step_xyz": (GOOD_RESET, "return np.zeros(3, np.float32), 1.0, False, {}",
                           "its step returned a tuple of 4 values, not (observation, reward, terminated, truncated, "
                           "info)"),
    "probe_wrong_shape_xyz": ("return np.zeros(4, np.float32), {}", GOOD_STEP,
                              "gave an observation of shape (4,), but its observation space says (3,)"),
    "probe_text_reward_xyz": (GOOD_RESET, "return np.zeros(3, np.float32), 'high', False, False, {}",
                              "a reward must be one number (gymnasium's step returns a float), got 'high'"),
    "probe_raising_step_xyz": (GOOD_RESET, "raise KeyError('joint_7')", "its step raised KeyError: 'joint_7'"),
}


def _config(folder: Path, name: str, reset: str, step: str, manager: str = "base") -> str:
    (folder / f"{name}.py").write_text(textwrap.dedent(ENV_MODULE).format(name=name, reset=reset, step=step))
    (folder / "cfg.py").write_text(
        f"main_config = dict(env=dict(type='{name}', import_names=['{name}'], collector_env_num=2, "
        f"evaluator_env_num=1, manager=dict(type='{manager}')), policy=dict(type='dqn'))\n")
    return "cfg.py"


@pytest.mark.parametrize("name", list(CASES))
def test_a_broken_env_is_refused_in_one_line_before_anything_is_written(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.chdir(tmp_path)
    reset, step, expected = CASES[name]
    config = _config(tmp_path, name, reset, step)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["-c", config, "--max-env-step", "200", "--exp-name", "exp", "--no-progress"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"ding_lite: error: env '{name}', reset and stepped once before the run starts: "), \
        lines[0]
    assert expected in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before, "something was written"


def test_a_working_env_runs_and_its_probe_does_not_move_the_runs_seeds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An env that draws from numpy's global generator: the probe's reset and step happen before the run seeds the
    # process, so two runs of one seed still log the same returns.
    monkeypatch.chdir(tmp_path)
    step = ("return np.random.uniform(-1, 1, 3).astype(np.float32), float(np.random.rand()), "
            "bool(np.random.rand() < 0.1), False, {}")
    config = _config(tmp_path, "probe_global_rng_xyz", GOOD_RESET, step)
    logs = []
    for exp in ("a", "b"):
        assert main(["-c", config, "--max-env-step", "256", "--exp-name", exp, "--no-progress",
                     "--set", "policy.eval.final_episodes=0"]) == 0
        logs.append([line.split("] ", 1)[-1] for line in (tmp_path / exp / "log" / "train.log").read_text()
                     .splitlines() if "return" in line])
    assert logs[0] and logs[0] == logs[1]


def test_under_the_subprocess_manager_the_env_is_not_stepped_in_the_main_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    # a worker's env is the worker's to time out and restart: the main process only reads its spaces
    monkeypatch.chdir(tmp_path)
    config = _config(tmp_path, "probe_worker_step_xyz", GOOD_RESET, "return np.zeros(3, np.float32), 1.0, False, {}",
                     manager="subprocess")
    assert main(["-c", config, "--max-env-step", "200", "--exp-name", "exp", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "env 0's step returned a tuple of 4 values" in err and "before the run starts" not in err, err


class _MaskedEnv(gym.Env):
    """Action 1 is illegal and raises: the probe must step a legal action."""

    observation_space = gym.spaces.Dict({"observation": gym.spaces.Box(0, 1, (2,), np.float32),
                                         "action_mask": gym.spaces.MultiBinary(3)})
    action_space = gym.spaces.Discrete(3, start=5)

    def reset(self, seed=None, options=None):
        return {"observation": np.zeros(2, np.float32), "action_mask": np.array([0, 0, 1], np.int8)}, {}

    def step(self, action):
        if action != 7:  # index 2 of Discrete(3, start=5)
            raise ValueError(f"illegal move {action}")
        return self.reset()[0], 0.0, True, False, {}


def test_the_probe_steps_a_legal_action_of_a_masked_env() -> None:
    try_reset_and_step(_MaskedEnv(), "env 'masked'")


def test_the_probe_names_the_env() -> None:
    class Broken(_MaskedEnv):
        def step(self, action):
            return None

    with pytest.raises(EnvError, match=r"^env 'masked', reset and stepped once before the run starts: its step "
                                       r"returned a NoneType"):
        try_reset_and_step(Broken(), "env 'masked'")

"""What an env's step gives, checked by every env manager that steps gymnasium envs (``base``, ``subprocess``).

NaN or inf stops the run with an EnvError naming the env and the step: the collector checks each rollout's rewards
and observations, the managers each episode's return and a full reset's first observations (a check per step would
cost a call per step); at the CLI that is one line and exit code 2. Before, such values went into the replay buffer
and the run ended with NaN returns and no word why. A reward given as a 1-element array counts as its number (it
failed inside numpy before); a reward of several numbers is an EnvError that says a reward is one number. An env
that does not follow gymnasium's API (an old gym reset or step, an info that is no dict, observations of another
shape than its space) is an EnvError that says which env and what (a traceback from deep inside before, and under
the subprocess manager an old-style reset went through silently: its observation's first number filled the whole
row). Observations arrive in the dtype of the observation space (a float64 array or a list from an env whose space
says float32 reached the network as float64 and failed there), flags given as 1-element arrays as bools.
"""
from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.envs.env_manager import BaseEnvManager
from ding_lite.envs.subprocess_manager import SubprocessEnvManager
from ding_lite.errors import EnvError

pytestmark = pytest.mark.unittest


class BadValueEnv(gym.Env):
    """Observes [t, 0]; reward 1. ``where``: 'reward' or 'obs' goes bad (``value``) at step ``at``, 'reset' in
    the first observation of episode ``at`` (from 0); 'array_reward': every reward is ``np.array(value)``;
    episodes last 5 steps."""

    def __init__(self, where: str, value: Any, at: int) -> None:
        self.where, self.value, self.at = where, value, at
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t, self.episode = 0, -1

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t, self.episode = 0, self.episode + 1
        obs = np.zeros(2, np.float32)
        if self.where == "reset" and self.episode == self.at:
            obs[1] = self.value
        if self.where == "old_reset":
            return obs  # type: ignore[return-value]
        return obs, {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        obs, reward = np.array([self.t, 0.0], np.float32), 1.0
        if self.t == self.at and self.where == "obs":
            obs[1] = self.value
        if self.t == self.at and self.where == "reward":
            reward = self.value
        if self.where == "array_reward":
            reward = np.array(self.value, np.float32)
        if self.t == self.at and self.where == "terminated":
            return obs, reward, self.value, False, {}
        if self.where == "wrong_shape" and self.t == self.at:
            obs = np.zeros(5, np.float32)
        if self.where == "old_step":
            return obs, reward, self.t >= 5, {}  # type: ignore[return-value]
        if self.where == "loose_types":  # what hand-written envs give: float64 arrays, lists, flags as arrays
            return obs.astype(np.float64) if self.t % 2 else obs.tolist(), reward, np.array([self.t >= 5]), \
                np.array(False), {}
        if self.where == "none_info" and self.t >= 5:
            return obs, reward, True, False, None  # type: ignore[return-value]
        return obs, reward, self.t >= 5, False, {}


def _manager(kind: str, bad_env: int, where: str, value: Any, at: int, **cfg: Any) -> Any:
    fns = [partial(BadValueEnv, where, value, at) if i == bad_env else partial(BadValueEnv, "none", 0.0, 0)
           for i in range(3)]
    return BaseEnvManager(fns) if kind == "base" else SubprocessEnvManager(fns, cfg)


@pytest.mark.parametrize("kind", ["base", "subprocess"])
@pytest.mark.parametrize("where, value, message", [
    # the managers check once per episode: the return of an episode, the first observation of the next
    ("reward", float("nan"), "env 2's episode of 5 steps has a return of nan: a reward held NaN or inf; a learner "
                             "cannot use it"),
    ("reward", float("-inf"), "env 2's episode of 5 steps has a return of -inf"),
    ("reset", float("nan"), "env 2's first observation holds NaN at its reset"),  # the run's first reset
])
def test_a_non_finite_value_stops_the_manager_naming_the_env(kind: str, where: str, value: float,
                                                             message: str) -> None:
    manager = _manager(kind, 2, where, value, 0 if where == "reset" else 3)
    with pytest.raises(EnvError, match=r"wrap it to replace or clip") as caught:
        manager.reset()
        for _ in range(20):
            manager.step(np.zeros(3, dtype=np.int64))
    assert message in str(caught.value)
    assert manager.closed  # the workers are gone with the error


class _FixedPolicy:
    """collect_mode stand-in: action 0 for every env."""

    def forward(self, obs: np.ndarray, env_step: int = 0) -> dict:
        return {"action": np.zeros(len(obs), dtype=np.int64)}

    def process_transition(self, output: dict) -> dict:
        return {"action": output["action"]}


@pytest.mark.parametrize("where, value, message", [
    ("reward", float("nan"), "env 2's reward holds NaN (nan) at the run's env step 9"),  # step 3 of 3 envs
    ("obs", float("inf"), "env 2's observation holds inf at the run's env step 9"),
    ("obs", float("-inf"), "env 2's observation holds inf at the run's env step 9"),
    # the second episode's first observation: given after step 5 (the first row of the third rollout)
    ("reset", float("nan"), "env 2's observation holds NaN at the run's env step 15"),
])
def test_the_collector_names_the_env_and_step_of_a_non_finite_value(where: str, value: float, message: str) -> None:
    from ding_lite.worker.collector import SampleCollector

    manager = _manager("base", 2, where, value, 1 if where == "reset" else 3)
    collector = SampleCollector({}, manager, _FixedPolicy())
    collector.rollout(2)  # steps 1-2 of every env: finite
    with pytest.raises(EnvError, match=r"wrap it to replace or clip") as caught:
        collector.rollout(2)  # steps 3-4
        collector.rollout(2)  # steps 5-6
    assert message in str(caught.value)
    manager.close()


def test_a_non_finite_first_observation_of_the_run(tmp_path: Path) -> None:
    manager = _manager("base", 1, "reset", float("nan"), 0)
    with pytest.raises(EnvError, match=r"env 1's first observation holds NaN at its reset"):
        manager.reset()


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_a_reward_as_a_one_element_array_is_its_number(kind: str) -> None:
    manager = _manager(kind, 1, "array_reward", [2.5], 0)
    manager.reset()
    result = manager.step(np.zeros(3, dtype=np.int64))
    assert result.reward.tolist() == [1.0, 2.5, 1.0] and result.reward.dtype == np.float32
    manager.close()


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_loose_types_arrive_as_the_spaces_say(kind: str) -> None:
    """Observations as float64 arrays or lists (the space says float32), flags as 1-element or 0-dim arrays."""
    manager = _manager(kind, 1, "loose_types", 0.0, 0)
    manager.reset()
    for t in range(1, 7):
        result = manager.step(np.zeros(3, dtype=np.int64))
        assert result.next_obs.dtype == np.float32 and result.next_obs.shape == (3, 2)
        assert result.next_obs[1].tolist() == [t if t <= 5 else t - 5, 0.0]
        assert result.terminated.dtype == bool and result.terminated.tolist() == [t == 5] * 3
        assert result.truncated.dtype == bool and not result.truncated.any()
    manager.close()


@pytest.mark.parametrize("kind", ["base", "subprocess"])
def test_an_info_that_is_no_dict_is_named(kind: str) -> None:
    manager = _manager(kind, 1, "none_info", 0.0, 0)
    manager.reset()
    with pytest.raises(EnvError, match=r"env 1's step gave info=None, not a dict: gymnasium's API"):
        for _ in range(5):
            manager.step(np.zeros(3, dtype=np.int64))
    manager.close()


@pytest.mark.parametrize("kind", ["base", "subprocess"])
@pytest.mark.parametrize("where, value, shown", [
    ("array_reward", [1.0, 2.0], r"array\(\[1\., 2\.\]"),
    # numpy made None a NaN (reported as a NaN reward) and parsed a string, under base only
    ("reward", None, "None"), ("reward", "1.0", "'1.0'")])
def test_a_reward_that_is_not_one_number_is_an_env_error(kind: str, where: str, value: Any, shown: str) -> None:
    manager = _manager(kind, 1, where, value, 1, max_retry=0)
    manager.reset()
    with pytest.raises(EnvError, match=r"env 1.*a reward must be one number \(gymnasium's step returns a float\), "
                                       rf"got {shown}"):
        manager.step(np.zeros(3, dtype=np.int64))
    manager.close()


@pytest.mark.parametrize("kind", ["base", "subprocess"])
@pytest.mark.parametrize("value, shown", [(None, "None"), ("False", "'False'"), (1.0, "1.0"), ([True, False], "")])
def test_a_flag_that_is_not_one_bool_is_an_env_error(kind: str, value: Any, shown: str) -> None:
    """numpy would read None as False and the string 'False' as True: an episode cut or run on unnoticed."""
    manager = _manager(kind, 1, "terminated", value, 1, max_retry=0)
    manager.reset()
    with pytest.raises(EnvError, match=rf"env 1: its step gave terminated={re.escape(shown)}.*: it must be one bool"):
        manager.step(np.zeros(3, dtype=np.int64))
    manager.close()


@pytest.mark.parametrize("kind", ["base", "subprocess"])
@pytest.mark.parametrize("where, message", [
    ("old_reset", "env 1's reset returned an array of shape (2,), not (observation, info): gymnasium's API has "
                  "reset return (observation, info)"),
    ("old_step", "env 1's step returned a tuple of 4 values, not (observation, reward, terminated, truncated, info)"),
    ("wrong_shape", "env 1's step gave an observation of shape (5,), but its observation space says (2,)"),
])
def test_an_env_off_gymnasiums_api_is_named(kind: str, where: str, message: str) -> None:
    manager = _manager(kind, 1, where, 0.0, 2, max_retry=0)
    with pytest.raises(EnvError) as caught:
        manager.reset()
        for _ in range(3):
            manager.step(np.zeros(3, dtype=np.int64))
    assert message in str(caught.value)
    manager.close()


def test_the_cli_says_it_in_one_line(tmp_path: Path) -> None:
    from conftest import REPO_ROOT, run_cli

    (tmp_path / "nan_env.py").write_text(
        "import gymnasium as gym\n"
        "from test_env_outputs import BadValueEnv\n"
        "gym.register('NanReward-v0', entry_point=BadValueEnv,\n"
        "             kwargs=dict(where='reward', value=float('nan'), at=4))\n")
    config = tmp_path / "nan_config.py"
    config.write_text("main_config = dict(env=dict(env_id='NanReward-v0', import_names=['nan_env'], "
                      "collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1), "
                      "policy=dict(type='dqn', learn=dict(batch_size=8), collect=dict(n_sample=8)))\n")
    proc = run_cli("-c", str(config), "--max-env-step", "200", "--no-progress", cwd=tmp_path,
                   extra_pythonpath=[str(tmp_path), str(REPO_ROOT / "tests" / "envs")])
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    # the first evaluation (before any collect) meets the NaN: the line names the evaluator's env
    assert lines[-1].startswith("ding_lite: error: evaluator env 0's "), lines
    assert "NaN" in lines[-1] and "Fix the env, or wrap it to replace or clip such values" in lines[-1]


class _NoSpaces(gym.Env):
    def __init__(self, missing: str) -> None:
        if missing != "observation_space":
            self.observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        if missing != "action_space":
            self.action_space = gym.spaces.Discrete(2)
        if missing == "not_a_space":
            self.action_space = "discrete"  # type: ignore[assignment]


@pytest.mark.parametrize("missing, message", [
    ("observation_space", "env 'no_spaces' has no observation_space: a gymnasium env sets self.observation_space"),
    ("action_space", "env 'no_spaces' has no action_space"),
    ("not_a_space", "env 'no_spaces' has an action_space of type builtins.str, not a gymnasium space"),
])
def test_an_env_without_its_spaces_is_named_when_built(missing: str, message: str) -> None:
    from ding_lite.envs.gym_env import build_env
    from ding_lite.registry import ENV_REGISTRY

    if "no_spaces" not in ENV_REGISTRY:
        ENV_REGISTRY.register("no_spaces")(lambda cfg: _NoSpaces(cfg["missing"]))
    with pytest.raises(EnvError, match=re.escape(message)):
        build_env(dict(type="no_spaces", missing=missing, import_names=[]))


class _StrictPolicy(_FixedPolicy):
    """A policy that fails on a NaN observation, as PPO's sampling does (torch.multinomial: 'probability tensor
    contains either inf, nan or element < 0')."""

    def forward(self, obs: np.ndarray, env_step: int = 0) -> dict:
        if not np.isfinite(obs).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        return super().forward(obs, env_step)


def test_a_policy_that_fails_on_a_non_finite_observation_names_the_env_not_the_policy() -> None:
    """Before, the policy's own error (a traceback from torch) surfaced before the collector's check of the rollout."""
    from ding_lite.worker.collector import SampleCollector

    manager = _manager("base", 2, "obs", float("nan"), 3)
    collector = SampleCollector({}, manager, _StrictPolicy())
    collector.rollout(2)
    with pytest.raises(EnvError, match=r"env 2's observation holds NaN at the run's env step 9: .*wrap it") as caught:
        collector.rollout(2)
    assert isinstance(caught.value.__cause__, RuntimeError)  # the policy's error is kept for a debugger
    manager.close()


@pytest.mark.parametrize("policy", [_FixedPolicy(), _StrictPolicy()])
@pytest.mark.parametrize("where, at, message", [
    ("obs", 3, "env 2's observation holds NaN at step 3 of its episode 0"),
    ("reset", 1, "env 2's observation holds NaN at step 0 of its episode 1"),  # a later episode's first observation
])
def test_an_evaluation_stops_at_a_non_finite_observation(policy: Any, where: str, at: int, message: str) -> None:
    """Before, an evaluation (or a demo collection) acted on NaN observations in silence (a greedy policy's argmax
    of NaN is action 0) and reported its returns, or failed inside the policy."""
    from ding_lite.worker.episodes import run_episodes

    manager = _manager("base", 2, where, float("nan"), at)
    with pytest.raises(EnvError, match=r"wrap it to replace or clip") as caught:
        run_episodes(manager, lambda obs: policy.forward(obs)["action"], 6)
    assert message in str(caught.value)
    manager.close()


class ScaledFrameEnv(gym.Env):
    """A uint8 frame space; from step ``at`` on the env gives the frame scaled to [0, 1] floats (a wrapper's
    normalisation), or from the start integers that fit (``at=None``: int64 in range, which cast losslessly)."""

    def __init__(self, at: int | None) -> None:
        self.at, self.t = at, 0
        self.observation_space = gym.spaces.Box(0, 255, (3,), np.uint8)
        self.action_space = gym.spaces.Discrete(2)

    def _obs(self) -> np.ndarray:
        frame = np.array([0, 128, 255], np.int64)
        return frame / 255.0 if self.at is not None and self.t >= self.at else frame

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return self._obs(), 1.0, self.t >= 4, False, {}


@pytest.mark.parametrize("kind", ["base", "subprocess"])
@pytest.mark.parametrize("at, what", [(2, "step"), (0, "reset")])
def test_an_observation_a_cast_to_the_spaces_integer_dtype_would_change_is_named(kind: str, at: int,
                                                                                 what: str) -> None:
    """Before: floats in [0, 1] for a uint8 space became zero frames in silence (numpy's cast truncates)."""
    fns = [partial(ScaledFrameEnv, None), partial(ScaledFrameEnv, at)]
    manager = BaseEnvManager(fns) if kind == "base" else SubprocessEnvManager(fns, {})
    try:
        with pytest.raises(EnvError, match=rf"env 1's {what}.* gave an observation of dtype float64 whose values "
                                           r"change when cast to its observation space's uint8 \(e.g. 0.50"):
            manager.reset()
            for _ in range(3):
                manager.step(np.zeros(2, dtype=np.int64))
    finally:
        manager.close()
    manager = BaseEnvManager([partial(ScaledFrameEnv, None)] * 2) if kind == "base" else \
        SubprocessEnvManager([partial(ScaledFrameEnv, None)] * 2, {})
    try:  # int64 values that fit uint8 arrive as uint8, as before
        assert manager.reset().dtype == np.uint8 and manager.reset()[1].tolist() == [0, 128, 255]
        assert manager.step(np.zeros(2, dtype=np.int64)).next_obs.dtype == np.uint8
    finally:
        manager.close()

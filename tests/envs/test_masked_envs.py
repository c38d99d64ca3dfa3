"""Single-agent envs with action masks (``Dict(observation=..., action_mask=...)``, ding_lite/envs/spaces.py): the env
managers hand over ``{'observation', 'action_mask'}`` batches, DQN and PPO train and evaluate on them under the
``base`` and ``subprocess`` managers without ever taking an illegal action (the test env raises on one, and its mask
changes every step), and a policy that cannot use masks is one ConfigError line before anything is written."""
from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from conftest import REPO_ROOT, run_cli
from fake_masked import N_ACTIONS, MaskedEnv, masked_config

from ding_lite.build import build_env_manager, fill_model_shapes_from_env, load_config
from ding_lite.data.keys import ACTION_MASK, OBSERVATION
from ding_lite.entry.eval import eval_pipeline
from ding_lite.entry.serial import serial_pipeline
from ding_lite.envs.gym_env import build_env
from ding_lite.envs.spaces import needs_encoding
from ding_lite.errors import ConfigError, EnvError
from ding_lite.registry import POLICY_REGISTRY

pytestmark = pytest.mark.unittest

TESTS = str(REPO_ROOT / "tests")
SECTION = dict(type="masked_env", import_names=["fake_masked"], length=5, kind="discrete", truncate=False)


@pytest.mark.parametrize("manager", ["base", "subprocess"])
def test_the_managers_stack_observation_and_bool_mask(manager: str) -> None:
    with build_env_manager({**SECTION, "kind": "box", "manager": dict(type=manager)}, 3, 0) as env:
        assert isinstance(env.observation_space, gym.spaces.Dict)
        obs = env.reset()
        assert obs[OBSERVATION].shape == (3, N_ACTIONS) and obs[OBSERVATION].dtype == np.float32  # float64 encoded
        assert obs[ACTION_MASK].shape == (3, N_ACTIONS) and obs[ACTION_MASK].dtype == np.bool_
        for _ in range(5):  # up to the episode end: the reset observation's row is put into the next obs
            result = env.step(obs[ACTION_MASK].argmax(axis=1))
            obs = result.obs
            assert obs[ACTION_MASK].any(axis=1).all() and result.next_obs[ACTION_MASK].dtype == np.bool_
        assert len(result.episodes) == 3 and (result.next_obs[OBSERVATION] != obs[OBSERVATION]).any()


def test_a_mask_of_the_wrong_length_is_an_env_error() -> None:
    env = build_env({**SECTION, "kind": "discrete"})
    inner: MaskedEnv = env.unwrapped  # type: ignore[assignment]
    env.reset(seed=0)
    inner.mask = np.ones(N_ACTIONS, dtype=np.int8)
    inner._draw = lambda: {"observation": 1, "action_mask": np.ones(3)}  # type: ignore[method-assign]
    with pytest.raises(EnvError, match=r"action_mask of shape \(3,\).*says \(4,\)"):
        env.step(1)


@pytest.mark.parametrize("space, says", [
    (gym.spaces.Dict(observation=gym.spaces.Discrete(3), action_mask=gym.spaces.MultiBinary(2), extra=gym.spaces.
                     Discrete(2)), "and nothing else; put ['extra'] under 'observation'"),
    (gym.spaces.Dict(observation=gym.spaces.Discrete(3), action_mask=gym.spaces.Box(0.0, 1.0, (2,))),
     "must be MultiBinary(A) or Box(0, 1, (A,)) of bool or int8"),
    (gym.spaces.Dict(observation=gym.spaces.Text(4), action_mask=gym.spaces.MultiBinary(2)), "no array can hold"),
])
def test_masked_spaces_that_do_not_fit_are_config_errors(space: gym.Space, says: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        needs_encoding(space, "env 'x'", gym.spaces.Discrete(2))
    assert says in str(info.value)


@pytest.mark.parametrize("policy, manager", [("dqn", "subprocess"), ("ppo", "base")])
def test_serial_and_eval_never_take_an_illegal_action(tmp_path: Path, policy: str, manager: str) -> None:
    """In process: exploration (DQN's ε starts at 1: random legal actions; PPO samples) and eval; the env raises on
    an illegal action, which would end the run with an EnvError."""
    cfg = masked_config(policy, manager, length=5, stop=False)
    result = serial_pipeline(cfg, seed=0, max_env_step=400, exp_dir=tmp_path / "exp", progress=False)
    assert result["env_step"] >= 400
    evaluated = eval_pipeline(cfg, seed=1, load_ckpt=tmp_path / "exp" / "ckpt" / "ckpt_best.pth.tar", n_episode=4)
    assert len(evaluated["returns"]) == 4


@pytest.mark.parametrize("policy, manager", [("dqn", "base"), ("ppo", "subprocess")])
def test_the_cli_trains_and_evaluates_on_a_masked_env(tmp_path: Path, policy: str, manager: str) -> None:
    (tmp_path / "masked_config.py").write_text(
        f"from fake_masked import masked_config\nmain_config = masked_config({policy!r}, {manager!r}, length=5)\n")
    train = run_cli("-m", "serial", "-c", "masked_config.py", "-s", "0", "--max-env-step", "600", "--exp-name", "exp",
                    cwd=tmp_path, extra_pythonpath=[TESTS])
    assert train.returncode == 0, train.stderr[-2000:]
    assert json.loads((tmp_path / "exp" / "result.json").read_text())["env_step"] > 0
    evaluate = run_cli("-m", "eval", "-c", "masked_config.py", "-s", "0", "--exp-name", "exp", cwd=tmp_path,
                       extra_pythonpath=[TESTS])
    assert evaluate.returncode == 0, evaluate.stderr[-2000:]


REFUSING = [name for name in POLICY_REGISTRY.names() if not POLICY_REGISTRY.get(name).supports_action_mask]


def test_dqn_and_ppo_use_masks() -> None:
    assert {"dqn", "ppo"} <= set(POLICY_REGISTRY.names()) - set(REFUSING)


@pytest.mark.parametrize("policy", REFUSING)
def test_every_policy_that_cannot_use_masks_refuses_a_masked_env(policy: str) -> None:
    cfg = load_config(dict(env=dict(SECTION), policy=dict(type=policy)))
    with pytest.raises(ConfigError, match="env 'masked_env'") as info:
        fill_model_shapes_from_env(cfg)
    assert "action mask" in str(info.value) or "continuous (Box) action space" in str(info.value)


@pytest.mark.parametrize("policy", ["acer", "ensemble_ppo", "sac"])
def test_the_cli_refuses_masks_for_such_policies_in_one_line_writing_nothing(tmp_path: Path, policy: str) -> None:
    (tmp_path / "masked_config.py").write_text(
        f"from fake_masked import masked_config\nmain_config = masked_config('ppo')\n"
        f"main_config['policy'] = dict(type={policy!r})\n")
    proc = run_cli("-m", "serial", "-c", "masked_config.py", "--exp-name", "exp", cwd=tmp_path,
                   extra_pythonpath=[TESTS])
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("ding_lite: error: ") and f"policy '{policy}'" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["masked_config.py"]


def test_the_guard_of_these_tests_works_an_illegal_action_stops_the_run() -> None:
    """The other tests rely on it: with the configs' ``max_retry=0`` an illegal action is an EnvError, not a
    restarted worker."""
    with build_env_manager(masked_config("dqn", "subprocess")["env"], 2, 0) as env:
        obs = env.reset()
        with pytest.raises(EnvError, match="IllegalAction"):
            env.step((~obs[ACTION_MASK]).argmax(axis=1))

"""A dizoo config pointed at another env with ``--set env.env_id=...``: the settings written for the config's own env
that would silently mislead there (its stop value; an env_id its env type never reads) are one-line errors naming the
key to set. Built against the other env without a learning run."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_cli

from ding_lite.config.compile import compile_config, moved_env_error
from ding_lite.config.reader import read_config
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

DIZOO = Path(__file__).resolve().parents[2] / "dizoo"
CARTPOLE_PPO = DIZOO / "classic_control/cartpole/config/cartpole_ppo_config.py"
PENDULUM_SAC = DIZOO / "classic_control/pendulum/config/pendulum_sac_config.py"
HOPPER_SAC = DIZOO / "mujoco/hopper/config/hopper_sac_config.py"
HOPPER_PPO = DIZOO / "mujoco/hopper/config/hopper_ppo_config.py"


def _compile(path: Path, *overrides: str):
    return compile_config(*read_config(path), overrides=overrides)


@pytest.mark.parametrize("path, overrides, old, new", [
    # CartPole's 195 on Acrobot (returns in [-500, 0]): the run never stopped, and nothing said why
    (CARTPOLE_PPO, ("env.type=gymnasium", "env.env_id=Acrobot-v1"), "195", "Acrobot-v1"),
    # Pendulum's -250 on MountainCarContinuous (a still car scores 0): 'stop value reached' at the first evaluation
    (PENDULUM_SAC, ("env.type=gymnasium", "env.env_id=MountainCarContinuous-v0"), "-250", "MountainCarContinuous-v0"),
    # Hopper's 6000 on InvertedPendulum (at most 1000) or Reacher (returns below 0): never reached
    (HOPPER_SAC, ("env.env_id=InvertedPendulum-v4",), "6000", "InvertedPendulum-v4"),
    (HOPPER_SAC, ("env.env_id=Reacher-v4",), "6000", "Reacher-v4"),
])
def test_stop_value_of_the_configs_env_is_refused_on_another(path, overrides, old, new) -> None:
    assert re.search(rf"env.stop_value={old} .* not for '{new}'.*set env.stop_value",
                     moved_env_error(_compile(path, *overrides)) or "")


def test_the_message_gives_gymnasiums_threshold_for_the_new_env() -> None:
    assert "reward_threshold for Acrobot-v1: -100" in moved_env_error(
        _compile(CARTPOLE_PPO, "env.type=gymnasium", "env.env_id=Acrobot-v1"))


def test_a_run_stops_in_one_line_before_anything_is_written(tmp_path) -> None:
    proc = run_cli("-c", str(CARTPOLE_PPO), "--set", "env.type=gymnasium", "env.env_id=Acrobot-v1",
                   "policy.model.obs_shape=None", "policy.model.action_shape=None", "--exp-name", "exp",
                   "--max-env-step", "2000", "--no-progress", cwd=tmp_path)  # before the fix: never stopped
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("ding_lite: error: env.stop_value=195 is a return of the config's env 'CartPole'")
    assert list(tmp_path.iterdir()) == []


def test_the_envs_own_errors_come_first(tmp_path) -> None:
    proc = run_cli("-c", str(CARTPOLE_PPO), "--set", "env.type=gymnasium", "env.env_id=Acrobt-v1", cwd=tmp_path)
    assert proc.returncode == 2 and "unknown gymnasium env id env.env_id='Acrobt-v1'" in proc.stderr, proc.stderr


@pytest.mark.parametrize("path, overrides", [
    (CARTPOLE_PPO, ("env.type=gymnasium", "env.env_id=Acrobot-v1", "env.stop_value=-100")),
    (CARTPOLE_PPO, ("env.type=gymnasium", "env.env_id=Acrobot-v1", "env.stop_value=None")),
    (CARTPOLE_PPO, ("env.type=gymnasium", "env.env_id=CartPole-v1")),  # the same task by another route
    (HOPPER_SAC, ("env.env_id=Hopper-v3",)),  # DI-engine's id of the same task
    (HOPPER_PPO, ("env.type=mujoco", "env.manager.type=base")),  # docs/envs_real.md's gymnasium route
    (HOPPER_SAC, ("env.env_id=InvertedPendulum-v4", "env.stop_value=950")),
    (CARTPOLE_PPO, ("env.type=test_unbounded_box", "env.import_names=['qac_helpers']")),  # a type alone: a route
])
def test_same_task_or_a_stop_value_set_for_the_new_env_compiles(path, overrides) -> None:
    assert moved_env_error(_compile(path, *overrides)) is None


def test_env_id_on_an_env_type_that_builds_one_env_is_an_error() -> None:
    # was a warning ('unknown config key env.env_id'), then a CartPole run reported 'stop value reached' as if it
    # were Acrobot's
    with pytest.raises(ConfigError, match=r"env.env_id='Acrobot-v1' is not read by env type 'cartpole'.*"
                                          r"env.type=gymnasium"):
        _compile(CARTPOLE_PPO, "env.env_id=Acrobot-v1", "env.stop_value=None")


def test_both_shapes_left_from_the_old_env_are_named_in_one_line(tmp_path) -> None:
    # CartPole's obs_shape=4 and action_shape=2 on Acrobot (6 numbers, 3 actions): one error per run, two runs to
    # find both
    proc = run_cli("-c", str(DIZOO / "classic_control/cartpole/config/cartpole_dqn_config.py"), "--set",
                   "env.type=gymnasium", "env.env_id=Acrobot-v1", "env.stop_value=-100", cwd=tmp_path)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "policy.model.obs_shape=4 does not fit env 'Acrobot-v1'" in lines[0]
    assert "policy.model.action_shape=2 does not fit env 'Acrobot-v1', whose discrete action space has 3" in lines[0]


def test_a_sweep_over_env_ids_under_the_configs_stop_value_is_refused_before_ray_starts(tmp_path) -> None:
    from ding_lite.sweep.checks import check_spec
    from ding_lite.sweep.space import SweepError
    from ding_lite.sweep.trials import SweepSpec

    spec = SweepSpec(config=str(PENDULUM_SAC), sweep_dir=str(tmp_path / "s"),
                     space=["env.env_id=['Pendulum-v1', 'MountainCarContinuous-v0']"], search="grid", seeds=[0],
                     metric="eval_return", mode="max", overrides=["env.type=gymnasium"], max_env_step=2000)
    with pytest.raises(SweepError, match=r"env.stop_value=-250 is a return of the config's env"):
        check_spec(spec, False)
    spec.overrides.append("env.stop_value=None")  # as docs/sweep.md advises for a sweep
    check_spec(spec, False)

"""``ding_lite -m sweep`` given bad input: one line, exit code 2, nothing written (before Ray starts)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.cli import main

pytestmark = pytest.mark.unittest
PPO = str(DIZOO_CARTPOLE / "cartpole_ppo_config.py")
GRID = ["--space", "policy.learn.learning_rate=[3e-4, 1e-3]", "--space", "policy.learn.batch_size=[64, 128]"]


BAD = {
    "key not in the config": ([*GRID[:2], "--space", "policy.learn.batch_sise=[64, 128]"],
                              "--space policy.learn.batch_sise: the config has no setting 'policy.learn.batch_sise' "
                              "(did you mean 'policy.learn.batch_size'?)"),
    "empty search space": ([], "empty search space: give at least one --space KEY=[V1,V2,...]"),
    "empty value list": (["--space", "policy.learn.batch_size=[]"],
                         "empty search space: --space 'policy.learn.batch_size=[]' lists no value"),
    "a value of the wrong type": (["--space", "policy.learn.batch_size=[64, 'big']"],
                                  "--space policy.learn.batch_size=[64, 'big']: config key 'policy.learn.batch_size' "
                                  "must be an int"),
    "a distribution in a grid": (["--space", "policy.learn.learning_rate=uniform(1e-4, 1e-3)"],
                                 "a grid search takes value lists"),
    "bad bounds": (["--search", "random", "--space", "policy.learn.learning_rate=loguniform(0, 1e-3)"],
                   "loguniform needs LOW > 0"),
    "pruning a step count": ([*GRID, "--metric", "env_step", "--pruner", "asha"],
                             "--pruner asha compares evaluation returns during a trial"),
    "resume of nothing": ([*GRID, "--resume"], "--resume: no sweep to continue in"),
    # every trial trained to its end, then failed on KeyError: 'final_eval_return' (result.json had none)
    "a metric that the runs do not record": ([*GRID, "--metric", "final_eval_return", "--set",
                                              "policy.eval.final_episodes=0"],
                                             "--metric final_eval_return needs policy.eval.final_episodes > 0"),
    "a value no trial's run could start with": (["--space", "policy.model.sigma_type=['bogus']"],
                                                "--space policy.model.sigma_type=['bogus']: model.sigma_type must be "
                                                "'fixed'"),
}


def test_a_sweep_over_a_key_the_config_needs_is_checked_with_its_values(tmp_path: Path) -> None:
    """A sweep over env ids from a config that names none: every trial's run has one, but the check before Ray
    starts refused the config itself ('env.env_id is required for env type gymnasium'). A bad id is still one
    line naming it."""
    from ding_lite.sweep.checks import check_spec
    from ding_lite.sweep.space import SweepError
    from ding_lite.sweep.trials import SweepSpec

    def spec(ids: str) -> SweepSpec:
        return SweepSpec(config=PPO, sweep_dir=str(tmp_path / "s"), space=[f"env.env_id={ids}"], search="grid",
                         seeds=[0], metric="eval_return", mode="max",
                         overrides=["env.type=gymnasium", "policy.model.obs_shape=None",
                                    "policy.model.action_shape=None", "env.stop_value=None"])

    assert [d.key for d in check_spec(spec("['CartPole-v1', 'Acrobot-v1']"), False)] == ["env.env_id"]
    with pytest.raises(SweepError, match=r"--space env.env_id=\['CartPole-v1', 'Bogus-v0'\]: unknown gymnasium "
                                         r"env id env.env_id='Bogus-v0'"):
        check_spec(spec("['CartPole-v1', 'Bogus-v0']"), False)
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_one_line_exit_2_nothing_written(case: str, tmp_path: Path, monkeypatch, capsys) -> None:
    argv, expected = BAD[case]
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "sweep", "-c", PPO, "--exp-name", "s", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ding_lite: error: "), err
    assert expected in err[0], err[0]
    assert not list(tmp_path.iterdir())


def test_a_folder_that_holds_a_sweep_needs_resume(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "sweep_spec.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    before = time.time()
    assert main(["-m", "sweep", "-c", PPO, "--exp-name", "s", *GRID]) == 2
    err = capsys.readouterr().err.strip()
    assert "the folder holds files already (a sweep?): --resume continues the sweep saved there" in err
    assert (tmp_path / "s" / "sweep_spec.json").stat().st_mtime < before + 1

"""An experiment name that starts with ``~`` (``exp_name='~/runs/x'`` in a config, or ``--exp-name=~/runs/x``, which
the shell leaves as it is) names a folder in the home folder. Before, the run made a folder literally named ``~`` in
the current directory: a trap (``rm -rf ~`` to tidy it up removes the home folder)."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.cli import main
from ding_lite.config.reader import read_saved_config
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
QUICK = ["--max-env-step", "100", "--no-progress", "--set", "policy.eval.final_episodes=0"]


@pytest.fixture
def home_and_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A home folder (``$HOME``) and another folder the command runs in."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return home, work


def test_a_leading_tilde_names_the_home_folder(home_and_work: tuple[Path, Path]) -> None:
    home, work = home_and_work
    assert main(["-c", DQN, "--exp-name=~/runs/flag", *QUICK]) == 0
    assert main(["-c", DQN, "--set", "exp_name=~/runs/config", *QUICK]) == 0
    assert list(work.iterdir()) == []  # no folder named '~' here
    for name in ("flag", "config"):
        folder = home / "runs" / name
        assert (folder / "result.json").is_file()
        assert read_saved_config(folder / "total_config.py")["exp_name"] == str(folder)
    # -m eval finds the run's checkpoint by the same name
    assert main(["-m", "eval", "-c", DQN, "--exp-name=~/runs/flag", "--n-episode", "1"]) == 0


def test_a_leading_tilde_names_the_home_folder_for_a_sweep_too(home_and_work: tuple[Path, Path],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # -m sweep made its folder with Path(...).resolve(), which leaves '~' as it is: <cwd>/~/runs/s
    from ding_lite.entry import sweep
    from ding_lite.sweep.space import SweepError

    home, _ = home_and_work
    folders = []

    def sweep_pipeline(spec, **kwargs):
        folders.append(spec.sweep_dir)
        raise SweepError("stop here")

    monkeypatch.setattr(sweep, "sweep_pipeline", sweep_pipeline)
    space = ["--space", "policy.learn.batch_size=[64, 128]"]
    assert main(["-m", "sweep", "-c", DQN, "--exp-name=~/runs/s", *space]) == 2
    assert main(["-m", "sweep", "-c", DQN, "--set", "exp_name=~/runs/x", *space]) == 2
    assert folders == [str(home / "runs" / "s"), str(home / "runs" / "x_sweep")]


@pytest.mark.parametrize("argv, said", [
    (["--exp-name", "~"], "--exp-name '~' is the home folder itself"),
    (["--exp-name=~/"], "--exp-name '~/' is the home folder itself"),
    (["--set", "exp_name=~"], "exp_name '~' is the home folder itself"),
    (["--exp-name", "runs/~"], "--exp-name 'runs/~' would make a folder literally named '~'"),
    (["--exp-name", "~no_such_user_xyz/x"], "no user 'no_such_user_xyz' has a home folder"),
    (["-m", "sweep", "--exp-name", "~", "--space", "policy.learn.batch_size=[64]"], "is the home folder itself"),
])
def test_a_tilde_that_names_no_folder_for_the_run_is_refused(home_and_work: tuple[Path, Path], capsys,
                                                             argv: list[str], said: str) -> None:
    """Before, '~' (quoted, so the shell left it) made the run in '<home>_1' beside the home folder (the home folder
    is not empty), 'runs/~' and '~nosuchuser/x' folders literally named '~...' here: a trap for a later rm -rf."""
    home, work = home_and_work
    (home / ".profile").write_text("")
    quick = [] if "sweep" in argv else QUICK
    assert main(["-c", DQN, *argv, *quick]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ding_lite: error: ") and said in err[0], err
    assert list(work.iterdir()) == [] and [p.name for p in home.iterdir()] == [".profile"]
    assert sorted(p.name for p in home.parent.iterdir()) == ["home", "work"]


def test_the_python_api_s_exp_dir_reads_a_tilde_as_exp_name_does(home_and_work: tuple[Path, Path]) -> None:
    from ding_lite.entry import serial_pipeline
    from ding_lite.errors import ConfigError

    home, work = home_and_work
    with pytest.raises(ConfigError, match=r"^exp_dir 'runs/~' would make a folder literally named '~'"):
        serial_pipeline(DQN, exp_dir="runs/~", max_env_step=64, progress=False)
    assert list(work.iterdir()) == [] and list(home.iterdir()) == []


def test_a_path_through_an_existing_tilde_folder_is_not_refused(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a '~' folder the run would make is the trap. Before, a path through one that exists was refused: from a
    directory inside it, -m serial ran (a relative name) while -m sweep failed in every trial (their absolute paths)."""
    from ding_lite.runtime.experiment import exp_folder

    work = tmp_path / "~" / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert exp_folder(str(work / "sweep" / "trial_0" / "run_seed0"), "exp_dir") == work / "sweep/trial_0/run_seed0"
    assert exp_folder("./~/work/run") == Path("~/work/run")  # here, relative: the folder named '~' exists
    with pytest.raises(ConfigError, match=r"^--exp-name 'work/~/run' would make a folder literally named '~'"):
        exp_folder("work/~/run")  # .../~/work/~ does not exist: still refused

"""An experiment name that starts with ``~`` (``exp_name='~/runs/x'`` in a config, or ``--exp-name=~/runs/x``, which
the shell leaves as it is) names a folder in the home folder. Before, the run made a folder literally named ``~`` in
the current directory: a trap (``rm -rf ~`` to tidy it up removes the home folder)."""
from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.cli import main
from ding_lite.config.reader import read_saved_config

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

"""A run folder moved or copied elsewhere: ``-c <folder>/total_config.py`` works in the folder the file is in (its
``exp_name`` still names the folder the run was written in). Before, a copy's ``--resume`` wrote its checkpoints
into the original folder, and a moved folder's ``-m eval`` looked for its checkpoint where the folder used to be."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.cli import main

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")


@pytest.fixture
def trained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    assert main(["-c", DQN, "--max-env-step", "300", "--exp-name", "orig", "--no-progress",
                 "--set", "policy.eval.final_episodes=0"]) == 0
    return tmp_path


def _checkpoints(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "ckpt").glob("iteration_*.pth.tar"))


def test_a_copys_resume_writes_into_the_copy_not_the_original(trained: Path, capsys) -> None:
    shutil.copytree(trained / "orig", trained / "copy")
    before = _checkpoints(trained / "orig")
    assert main(["-c", "copy/total_config.py", "--resume", "--max-env-step", "600", "--no-progress"]) == 0
    assert _checkpoints(trained / "orig") == before  # the original is untouched
    assert len(_checkpoints(trained / "copy")) > len(before)
    assert "copy/total_config.py names orig as its run's folder, but it is in copy" in capsys.readouterr().err


def test_a_moved_folder_is_evaluated_from_where_it_is(trained: Path) -> None:
    shutil.move(trained / "orig", trained / "moved")
    assert main(["-m", "eval", "-c", "moved/total_config.py", "--n-episode", "2"]) == 0


def test_an_explicit_exp_name_still_wins(trained: Path, capsys) -> None:
    shutil.copytree(trained / "orig", trained / "copy")
    assert main(["-c", "copy/total_config.py", "--resume", "--exp-name", "orig", "--max-env-step", "600",
                 "--no-progress"]) == 0
    assert len(_checkpoints(trained / "orig")) > len(_checkpoints(trained / "copy"))
    assert "moved or copied" not in capsys.readouterr().err


def test_run_from_inside_the_moved_folder(trained: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    # `-c total_config.py` from inside the folder: its parent is '.', which as --exp-name names no folder
    shutil.move(trained / "orig", trained / "moved")
    monkeypatch.chdir(trained / "moved")
    before = _checkpoints(trained / "moved")
    assert main(["-c", "total_config.py", "--resume", "--max-env-step", "600", "--no-progress"]) == 0
    assert len(_checkpoints(trained / "moved")) > len(before)
    assert not (trained / "moved" / "orig").exists()
    assert main(["-m", "eval", "-c", "total_config.py", "--n-episode", "1"]) == 0
    assert "names no folder" not in capsys.readouterr().err


def test_a_copied_gsl_top_folder_is_used_where_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a GSL run's top folder holds its phases' folders, not ckpt/ or log/: a copy's `-m gsl --resume` resumed the
    # original (and `-m eval` named the original's phases)
    import argparse

    from ding_lite.cli import _in_the_folder_of_its_config
    from ding_lite.gsl.plateau import PHASE1

    monkeypatch.chdir(tmp_path)
    for folder in ("orig", "copy"):
        (tmp_path / folder / PHASE1).mkdir(parents=True)
        (tmp_path / folder / "total_config.py").write_text("main_config = {'exp_name': 'orig', 'gsl': {}}\n")
    args = argparse.Namespace(config="copy/total_config.py", exp_name=None, seed=None, mode="gsl")
    assert _in_the_folder_of_its_config(args).exp_name == "copy"
    args = argparse.Namespace(config="orig/total_config.py", exp_name=None, seed=None, mode="gsl")
    assert _in_the_folder_of_its_config(args).exp_name is None

"""The command line as a user types it: repeated options, mistyped choices, per-mode help, a config that raises."""
from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.cli import main

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
PPO = str(DIZOO_CARTPOLE / "cartpole_ppo_config.py")


def _one_error_line(capsys) -> str:
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and re.match(r"ding_lite( -m \w+)?: error: ", lines[0]), out.err
    assert out.out == ""
    return lines[0]


@pytest.mark.parametrize("argv, expected", [
    # argparse keeps the last of a repeated single-valued option: '-c a.py -c b.py' trained b.py without a word
    (["-c", DQN, "-c", PPO], "argument -c/--config: given twice"),
    (["-m", "eval", "-c", DQN, "-m", "serial"], "argument -m/--mode: given twice"),
    (["-c", DQN, "--exp-name", "a", "--exp-name", "b"], "argument --exp-name: given twice"),
    (["-c", DQN, "--max-env-step", "100", "--env-step", "200"], "argument --max-env-step/--env-step: given twice"),
    (["-m", "sweep", "-c", DQN, "-c", PPO], "argument -c/--config: given twice"),
    (["-m", "plot", "run", "-o", "a.png", "-o", "b.png"], "argument -o/--output: given twice"),
])
def test_a_single_valued_option_given_twice_is_refused(argv, expected, tmp_path: Path, monkeypatch,
                                                       capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert expected in line and "give it once" in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("mode", ["serial", "sweep"])
def test_a_seed_given_twice_is_refused(mode: str, tmp_path: Path, monkeypatch, capsys) -> None:
    # '-s 0 -s 0' trained seed 0 twice, the second run into <exp>_seed0_1 (a typo of '-s 0 -s 1', silently)
    monkeypatch.chdir(tmp_path)
    assert main(["-m", mode, "-c", DQN, "-s", "0", "-s", "1", "-s", "0", "--max-env-step", "100"]) == 2
    assert "-s 0 is given twice" in _one_error_line(capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, expected", [
    (["-m", "seiral", "-c", DQN], "invalid choice: 'seiral'"),
    (["-m", "plot", "run", "--band", "ci59"], "invalid choice: 'ci59'"),
])
def test_a_mistyped_choice_says_the_nearest(argv, expected, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert expected in line and "did you mean" in line, line


def _help(capsys, *argv: str) -> str:
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


def test_each_mode_s_help_lists_the_options_it_reads_and_no_other(capsys) -> None:
    full = _help(capsys)
    for flag in ("--resume", "--n-episode", "--demo-path", "--video", "--address", "--max-env-step", "--load-ckpt",
                 "--no-progress"):
        assert flag in full
    serial = _help(capsys, "-m", "serial")
    assert "--resume" in serial and "--max-env-step" in serial and "--load-ckpt" in serial
    for flag in ("--n-episode", "--demo-path", "--video", "--address"):
        assert flag not in serial, flag
    evaluation = _help(capsys, "-m", "eval")
    assert "--n-episode" in evaluation and "--video-episodes" in evaluation and "--load-ckpt" in evaluation
    for flag in ("--resume", "--max-env-step", "--max-train-iter", "--demo-path", "--address"):
        assert flag not in evaluation, flag
    gsl = _help(capsys, "-m", "gsl")
    assert "--address" in gsl and "--resume" in gsl
    for flag in ("--max-env-step", "--max-train-iter", "--load-ckpt", "--n-episode"):
        assert flag not in gsl, flag


def test_a_config_that_raises_names_its_file_and_line(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.py").write_text(textwrap.dedent("""
        lr = 1e-3

        main_config = dict(env=dict(type='cartpole'), policy=dict(type='dqn', learning_rate=lr / zero))
        """))
    assert main(["-c", "cfg.py"]) == 2
    line = _one_error_line(capsys)
    assert "config file cfg.py failed to run at cfg.py:4: NameError: name 'zero' is not defined" in line, line


def test_a_config_whose_import_raises_names_the_config_s_line(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "helper_mod_xyz.py").write_text("x = 1\nraise RuntimeError('helper broke')\n")
    (tmp_path / "cfg.py").write_text("import os\nimport helper_mod_xyz\nmain_config = dict()\n")
    assert main(["-c", "cfg.py"]) == 2
    line = _one_error_line(capsys)
    assert "failed to run at cfg.py:2 (helper_mod_xyz.py:2): RuntimeError: helper broke" in line, line


def test_resume_of_a_folder_that_is_no_run_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("x")
    assert main(["-c", DQN, "--resume", "--exp-name", "notes", "--max-env-step", "100"]) == 2
    line = _one_error_line(capsys)
    assert "--resume: notes is not a run's folder (no total_config.py, no ckpt/)" in line, line
    assert sorted(p.name for p in (tmp_path / "notes").iterdir()) == ["todo.txt"]


@pytest.mark.parametrize("word", ["true", "yes", "1"])
def test_a_bool_key_set_to_another_word_says_how_to_write_a_bool(word: str, tmp_path: Path, monkeypatch,
                                                                 capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["-c", DQN, "--set", f"policy.cuda={word}"]) == 2
    line = _one_error_line(capsys)
    assert "config key 'policy.cuda' must be a bool" in line and "(default: False; write True or False)" in line
    assert list(tmp_path.iterdir()) == []

"""A run that fails (diverged training, an env's NaN) says so in its own folder, not only on the console: the last
line of log/train.log, and a result.json marked failed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, run_cli

pytestmark = pytest.mark.unittest


def test_a_diverged_run_ends_its_text_log_with_the_error(tmp_path: Path) -> None:
    """Before, train.log ended at the last [eval] line: someone reading the folder later could not tell a diverged
    run from one killed mid-way (neither has a result.json)."""
    proc = run_cli("-c", str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), "-s", "0", "--max-env-step", "300",
                   "--no-progress", "--exp-name", "exp", "--set", "policy.learn.learning_rate=1e4",
                   "env.stop_value=1e9", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    error = proc.stderr.strip().splitlines()[-1]
    assert error.startswith("ding_lite: error: training diverged at train iter 2 (env step 64): loss is inf; ")
    log = (tmp_path / "exp" / "log" / "train.log").read_text().splitlines()
    assert log[-1] == "[failed] " + error.removeprefix("ding_lite: error: ")
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["failed"] is True and result["stop"] is False
    assert result["stop_reason"] == "failed: " + error.removeprefix("ding_lite: error: ")
    assert result["seed"] == 0 and result["segments"] == 1 and result["exp_dir"] == "exp"


DQN_SHORT = ("-c", str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), "-s", "0", "--no-progress", "--exp-name", "exp",
             "--set", "env.stop_value=1e9")


def test_a_failed_run_writes_a_result_json_that_says_so_with_how_far_it_got(tmp_path: Path) -> None:
    """Before, a failed run wrote no result.json: -m plot and -m sweep took it for a run killed mid-way."""
    proc = run_cli(*DQN_SHORT, "policy.learn.learning_rate=1e4", "--max-env-step", "300", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["stop_reason"].startswith("failed: training diverged at train iter 2 (env step 64): loss is inf")
    assert (result["env_step"], result["train_iter"]) == (64, 1)  # the update that diverged is not counted
    assert isinstance(result["eval_return"], float) and result["best_eval_return"] == result["eval_return"]
    assert result["stop_value"] == 1e9 and result["env_restarts"] == 0 and "final_eval_return" not in result


def test_a_resumed_run_that_fails_replaces_the_earlier_segments_result(tmp_path: Path) -> None:
    """Before, the first segment's result.json (budget spent) stayed after its --resume diverged."""
    assert run_cli(*DQN_SHORT, "--max-env-step", "128", cwd=tmp_path).returncode == 0
    before = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert before["failed"] is False and before["stop_reason"] is None and before["env_step"] == 128
    proc = run_cli(*DQN_SHORT, "policy.learn.learning_rate=1e4", "--max-env-step", "600", "--resume", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    result = json.loads((tmp_path / "exp" / "result.json").read_text())
    assert result["failed"] is True and result["stop_reason"].startswith("failed: training diverged at train iter ")
    assert result["segments"] == 2 and result["env_step"] >= 128 and result["best_eval_return"] is not None

"""A run that fails (diverged training, an env's NaN) says so in its own log/train.log, not only on the console."""
from __future__ import annotations

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
    assert not (tmp_path / "exp" / "result.json").exists()

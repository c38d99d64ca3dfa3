"""Resume after SIGKILL (ding_lite/entry/serial.py, worker/learner.py): a run killed after its first checkpoint
continues with --resume from that checkpoint's train_iter and env_step."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE, cli_env, run_cli

from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")
# checkpoint every 20 iterations; a stop value no run reaches, so only SIGKILL or the budget ends it
SETTINGS = ["--set", "policy.learn.learner.hook.save_ckpt_after_iter=20", "--set", "env.stop_value=100000",
            "--exp-name", "exp", "-s", "0"]


def _kill_after_first_checkpoint(cwd: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite", "-m", "serial", "-c", DQN, *SETTINGS,
                             "--max-env-step", "1000000"], cwd=cwd, env=cli_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while latest_checkpoint(cwd / "exp" / "ckpt") is None:
            assert proc.poll() is None, "the run ended before writing a checkpoint"
            assert time.monotonic() < deadline, "no checkpoint within the time limit"
            time.sleep(0.02)
    finally:
        proc.kill()  # SIGKILL: no cleanup, no final checkpoint, no result.json
        proc.wait()
    assert proc.returncode == -9


def test_resume_after_sigkill_continues_from_the_checkpoint(tmp_path: Path) -> None:
    _kill_after_first_checkpoint(tmp_path)
    exp = tmp_path / "exp"
    assert not (exp / "result.json").exists()
    for path in (exp / "ckpt").glob("iteration_*.pth.tar"):
        load_checkpoint(path)  # every checkpoint the killed run left is complete (atomic writes)
    latest = latest_checkpoint(exp / "ckpt")
    state = load_checkpoint(latest)
    train_iter, env_step = state["train_iter"], state["env_step"]
    assert train_iter > 0 and train_iter % 20 == 0 and env_step > 0

    proc = run_cli("-m", "serial", "-c", DQN, *SETTINGS, "--resume", "--max-train-iter", str(train_iter + 10),
                   cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0] == f"loaded exp/ckpt/{latest.name} (train_iter {train_iter}, env_step {env_step})"
    # the first evaluation of the resumed run happens at the checkpoint's counters
    first_eval = re.match(r"\[eval\] iter +(\d+) +env_step +(\d+)", lines[1])
    assert first_eval and (int(first_eval[1]), int(first_eval[2])) == (train_iter, env_step), lines[1]
    result = json.loads((exp / "result.json").read_text())
    assert result["train_iter"] == train_iter + 10  # counting went on from the checkpoint, not from 0
    assert result["env_step"] > env_step
    assert load_checkpoint(exp / "ckpt" / f"iteration_{train_iter + 10}.pth.tar")["env_step"] == result["env_step"]
    assert f"loaded exp/ckpt/{latest.name}" in (exp / "log" / "train.log").read_text()

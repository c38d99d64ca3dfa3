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


def test_checkpoints_keep_the_best_eval_return_and_a_resumed_run_keeps_its_bar(tmp_path: Path) -> None:
    """ckpt_best is replaced only by a policy better than every earlier one, across a resume too."""
    from ding_lite.entry.serial import serial_pipeline

    overrides = ("policy.learn.learner.hook.save_ckpt_after_iter=40", "policy.eval.evaluator.eval_freq=40",
                 "env.stop_value=100000")
    first = serial_pipeline(DQN, seed=0, max_train_iter=120, exp_dir=tmp_path / "exp", overrides=overrides,
                            progress=False)
    state = load_checkpoint(latest_checkpoint(tmp_path / "exp" / "ckpt"))
    assert state["best_eval_return"] == pytest.approx(first["best_eval_return"])
    best_before = load_checkpoint(tmp_path / "exp" / "ckpt" / "ckpt_best.pth.tar")["best_eval_return"]
    second = serial_pipeline(DQN, seed=0, max_train_iter=160, exp_dir=tmp_path / "exp", resume=True,
                             overrides=overrides, progress=False)
    assert second["best_eval_return"] >= first["best_eval_return"]
    best_after = load_checkpoint(tmp_path / "exp" / "ckpt" / "ckpt_best.pth.tar")["best_eval_return"]
    assert best_after >= best_before


def test_resume_and_load_ckpt_together_are_refused(tmp_path: Path) -> None:
    proc = run_cli("-m", "serial", "-c", DQN, "--resume", "--load-ckpt", "x.pth.tar", "--exp-name", "exp",
                   cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("ding_lite: error: --resume and --load-ckpt both name a checkpoint to start from: "
                                   "give only one")
    assert not (tmp_path / "exp").exists()


def test_config_load_ckpt_before_run_is_the_start_checkpoint(tmp_path: Path) -> None:
    from ding_lite.entry.serial import serial_pipeline

    serial_pipeline(DQN, seed=0, max_train_iter=30, exp_dir=tmp_path / "a", progress=False,
                    overrides=("env.stop_value=100000",))
    ckpt = latest_checkpoint(tmp_path / "a" / "ckpt")
    result = serial_pipeline(DQN, seed=0, max_train_iter=35, exp_dir=tmp_path / "b", progress=False,
                             overrides=("env.stop_value=100000",
                                        f"policy.learn.learner.hook.load_ckpt_before_run='{ckpt}'"))
    assert result["train_iter"] == 35  # continued from the checkpoint's 30 iterations
    assert "loaded" in (tmp_path / "b" / "log" / "train.log").read_text()

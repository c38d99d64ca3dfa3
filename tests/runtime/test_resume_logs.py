"""A run extended with ``--resume`` after it ended (ding_lite/runtime/run_record.py's RunRecord): its final
checkpoint is written after its last evaluation, and the resumed run starts by evaluating that iteration again; the
logs are cut back to before that evaluation, so that it is logged once (it was twice, at the same step, in
tensorboard and in log/train.log)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.entry.serial import serial_pipeline
from ding_lite.runtime.run_record import RunRecord
from ding_lite.utils.events import read_scalars

pytestmark = pytest.mark.unittest
PPO = str(DIZOO_CARTPOLE / "cartpole_ppo_config.py")
QUICK = ("policy.eval.final_episodes=0", "env.stop_value=None", "policy.eval.evaluator.eval_freq=1000")


def test_a_finished_run_extended_by_resume_logs_each_evaluation_once(tmp_path: Path) -> None:
    exp = tmp_path / "ppo"
    serial_pipeline(PPO, 0, max_env_step=256, exp_dir=exp, progress=False, overrides=QUICK)
    result = serial_pipeline(PPO, 0, max_env_step=512, exp_dir=exp, resume=True, progress=False, overrides=QUICK)
    steps = [int(s) for s in read_scalars(exp / "log").series["eval/return_mean"].steps]
    assert steps == [0, 256, 512] and result["env_step"] == 512
    evals = [x for x in (exp / "log" / "train.log").read_text().splitlines() if x.startswith("[eval]")]
    assert [int(x.split("env_step")[1].split()[0]) for x in evals] == [0, 256, 512]


def test_a_checkpoint_after_more_steps_keeps_the_logs_as_they_are(tmp_path: Path) -> None:
    """The cut goes back to an evaluation only where nothing ran since (an off-policy run that collects before its
    first update keeps train_iter 0, but not its env_step)."""
    record = RunRecord(tmp_path, time.perf_counter())
    position = [(0, 0)]
    record.follow(lambda: position[0])
    record.mark_eval(0, 0)
    marked = record.state()["saved_at"]
    time.sleep(0.01)
    position[0] = (0, 64)
    assert record.state()["saved_at"] > marked
    position[0] = (0, 0)
    assert record.state()["saved_at"] == marked

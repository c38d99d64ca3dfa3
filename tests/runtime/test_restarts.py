"""The env worker restarts of a whole run across --resume (ding_lite/runtime/restarts.py, wired in
ding_lite/runtime/train_loop.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ding_lite.entry.serial import serial_pipeline
from ding_lite.runtime.restarts import ENTRY, RunCounts, RunRestarts
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint
from ding_lite.utils.events import read_scalars

pytestmark = pytest.mark.unittest


def test_a_resumed_count_adds_this_segments_to_the_checkpoints() -> None:
    now = {"collector": 2}
    restarts = RunRestarts(lambda: now)
    assert restarts.state("iteration_10") == {"collector": 2}
    restarts.continue_from({"collector": 5, "evaluator": 1})
    assert restarts.per_manager() == {"collector": 7, "evaluator": 1}
    assert restarts.result(800) == {"env_restarts": 8, "env_restart_rate": 10.0}
    restarts.continue_from(None)  # a checkpoint written before the entry existed
    assert restarts.total() == 2


def test_run_counts_add_sums_and_keep_maxima() -> None:
    now = {"batches": 3, "seconds": 1.5, "lag_max": 2}
    counts = RunCounts(lambda: now, maxima=("lag_max",))
    counts.continue_from({"batches": 10, "seconds": 2.0, "lag_max": 5, "gone": 1})
    assert counts.totals() == {"batches": 13, "seconds": 3.5, "lag_max": 5, "gone": 1}
    assert counts.before("batches") == 10 and counts.before("new") == 0
    assert counts.state("resume_3") == counts.totals()


def _faulty_dqn(exp: Path) -> dict:
    """DQN on tests/faulty_env.py in the subprocess manager: every env instance raises at its 30th step, and its
    worker is restarted (2 envs: 4 restarts in 160 env steps)."""
    env = dict(type="faulty", import_names=["faulty_env"], mode="raise", fail_at=30, collector_env_num=2,
               evaluator_env_num=1, n_evaluator_episode=1, stop_value=1e9, manager=dict(type="subprocess"))
    policy = dict(type="dqn", model=dict(encoder_hidden_size_list=[16]), collect=dict(n_sample=8),
                  learn=dict(batch_size=8, update_per_collect=1), eval=dict(evaluator=dict(eval_freq=1000)))
    return dict(exp_name=str(exp), env=env, policy=policy)


def test_a_resumed_run_counts_on_from_its_checkpoints_restarts(tmp_path: Path) -> None:
    # before, the resumed segment's env managers counted from 0: env/restarts fell back in tensorboard, and
    # result.json's env_restarts were the last segment's, its rate divided by the whole run's env steps
    exp = tmp_path / "exp"
    serial_pipeline(_faulty_dqn(exp), seed=0, max_env_step=160, progress=False)
    saved = load_checkpoint(latest_checkpoint(exp / "ckpt"))[ENTRY]
    assert saved["collector"] >= 4
    result = serial_pipeline(_faulty_dqn(exp), seed=0, max_env_step=320, resume=True, progress=False)
    assert result["segments"] == 2
    assert result["env_restarts"] >= sum(saved.values()) + 4
    assert json.loads((exp / "result.json").read_text())["env_restarts"] == result["env_restarts"]
    counts = read_scalars(exp / "log").series["env/restarts"].values
    assert counts == sorted(counts) and counts[-1] >= saved["collector"] + 4, counts


def test_the_logs_restart_line_counts_the_final_evaluations_restarts(tmp_path: Path) -> None:
    # the text log's "env worker restarts" line and result.json's env_restarts count the same restarts: before, the
    # line was written before the final evaluation of the best checkpoint, whose restarts only result.json counted
    # (6 in the log, 16 in result.json for an env whose workers die every 50 steps)
    exp = tmp_path / "exp"
    result = serial_pipeline(_faulty_dqn(exp), seed=0, max_env_step=64, progress=False)
    lines = [line for line in (exp / "log" / "train.log").read_text().splitlines()
             if line.startswith("env worker restarts: ")]
    assert len(lines) == 1, lines
    evaluator = int(lines[0].rsplit("evaluator ", 1)[1].rstrip(")"))
    assert evaluator > 0  # the final evaluation's 20 episodes of 12 steps restart its one env's worker
    assert lines[0].startswith(f"env worker restarts: {result['env_restarts']} (")

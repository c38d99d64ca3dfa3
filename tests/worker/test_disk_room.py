"""A run whose budget still asks for more iteration checkpoints than the disk holds is warned of at its first
checkpoint after an update (ding_lite/worker/disk_room.py); it used to run until the disk was full, hours in."""
from __future__ import annotations

import logging
import shutil
from collections import namedtuple
from pathlib import Path

import numpy as np
import pytest

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, ADV, LOGP, OBS, RETURN, VALUE
from ding_lite.worker import disk_room
from ding_lite.worker.disk_room import DiskRoom
from ding_lite.worker.learner import BaseLearner

pytestmark = pytest.mark.unittest

Usage = namedtuple("Usage", "total used free")


def _learner(tmp_path: Path, max_env_step: int | None, keep: int = 0) -> BaseLearner:
    hook = dict(save_ckpt_after_iter=4, keep_iteration_ckpt=keep, log_show_after_iter=0, save_ckpt_after_run=False)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type="ppo", model=dict(obs_shape=4, action_shape=2, action_space="discrete"),
                                          learn=dict(epoch_per_collect=1, batch_size=64, learner=dict(hook=hook)))))
    learner = BaseLearner(cfg.policy.learn.learner, build(cfg, "policy"), tmp_path)
    learner.disk_room = DiskRoom(cfg.policy.learn.learner.hook, max_env_step, None)
    return learner


def _batch(n: int) -> dict:
    rng = np.random.default_rng(0)
    return {OBS: rng.normal(size=(n, 4)).astype(np.float32), ACTION: rng.integers(0, 2, n),
            LOGP: np.full(n, np.log(0.5), np.float32), VALUE: np.zeros(n, np.float32),
            ADV: rng.normal(size=n).astype(np.float32), RETURN: rng.normal(size=n).astype(np.float32)}


@pytest.fixture
def free_mb(monkeypatch):
    """The disk's free space, in MB, as the check reads it (the real disk is not filled)."""
    room = [0.0]
    monkeypatch.setattr(disk_room.shutil, "disk_usage", lambda path: Usage(0, 0, int(room[0] * 1e6)))
    return room


def test_a_budget_whose_checkpoints_do_not_fit_is_warned_of_once(tmp_path, free_mb, caplog) -> None:
    free_mb[0] = 1.0  # room for a few checkpoints of this PPO (~40 kB each)
    learner = _learner(tmp_path, max_env_step=10_000_000)
    with caplog.at_level(logging.WARNING, logger="ding_lite"):
        for k in range(3):  # 4 iterations (256 env steps) per train call: iteration_4, 8, 12 written
            learner.train(_batch(256), env_step=256 * (k + 1))
    lines = [r.getMessage() for r in caplog.records]
    size = (tmp_path / "ckpt" / "iteration_4.pth.tar").stat().st_size
    count = (10_000_000 - 256) // 64 // 4 + 1  # 1 iteration per 64 env steps so far: 156,246 left, one file per 4
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"warning: this run's budget still writes about {count} iteration_N.pth.tar of "
                               f"{size / 1e6:.1f} MB ({count * size / 1e9:.1f} GB), more than the 1.0 MB free")
    assert "keep_iteration_ckpt=3" in lines[0]


@pytest.mark.parametrize(("budget", "keep", "free"), [(10_000_000, 3, 1.0), (None, 0, 1.0), (2048, 0, 1.0),
                                                      (10_000_000, 0, 1e6)])
def test_no_warning_where_the_checkpoints_fit_or_are_bounded(tmp_path, free_mb, caplog, budget, keep, free) -> None:
    free_mb[0] = free
    learner = _learner(tmp_path, max_env_step=budget, keep=keep)
    with caplog.at_level(logging.WARNING, logger="ding_lite"):
        learner.train(_batch(256), env_step=256)
    assert (tmp_path / "ckpt" / "iteration_4.pth.tar").is_file()
    assert caplog.records == []


@pytest.mark.parametrize("end", ["stop", "run"])
def test_the_final_checkpoint_warns_of_nothing(tmp_path, free_mb, caplog, end) -> None:
    free_mb[0] = 1.0
    learner = _learner(tmp_path, max_env_step=10_000_000)
    learner.train(_batch(128), env_step=128)  # 2 iterations, no checkpoint yet: the next one would be checked
    with caplog.at_level(logging.WARNING, logger="ding_lite"):
        if end == "stop":
            learner.save_for_stop(env_step=128)  # a stop (and a run's end) writes no more checkpoints
        else:
            learner.end_run(env_step=128)  # save_ckpt_after_run off here: the final checkpoint by hand
            learner.save_checkpoint("iteration_2")
    assert (tmp_path / "ckpt" / "iteration_2.pth.tar").is_file()
    assert caplog.records == []


def test_the_real_disk_is_read() -> None:
    assert shutil.disk_usage(Path.cwd()).free > 0

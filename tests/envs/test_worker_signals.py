"""Signals meant for the run, not for its envs: a SIGTERM sent to the whole process group (a batch scheduler's
stop, ``kill -TERM -<pgid>``, a container's) reaches the subprocess workers too. They leave it, as Ctrl-C's SIGINT,
to the main process, which stops at a safe point and closes them: a worker ended by it would count as a failed env
(a restart, or with ``max_retry=0`` an EnvError instead of the checkpoint the stop writes)."""
from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from ding_lite.build import build_env_manager

pytestmark = pytest.mark.unittest


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_process_group_does_not_end_the_workers(sig: int) -> None:
    cfg = dict(type="gymnasium", env_id="CartPole-v1", manager=dict(type="subprocess", max_retry=0))
    with build_env_manager(cfg, 2, 0) as env:
        env.reset()
        pids = env.worker_pids()
        for pid in pids:
            os.kill(pid, sig)
        time.sleep(0.3)
        for _ in range(3):
            env.step(np.zeros(2, dtype=np.int64))  # before: EnvError "env 0 failed ...: died (killed by SIGTERM)"
        assert env.restart_count == 0
        assert env.worker_pids() == pids


def test_a_spawn_run_leaves_no_semaphore_for_the_resource_tracker(tmp_path) -> None:
    """The CLI ends a successful run with os._exit (no interpreter teardown): the shared arrays' semaphores must be
    freed when the managers close. Before, every run with env.manager.context='spawn' ended with Python's
    'UserWarning: resource_tracker: There appear to be 4 leaked semaphore objects to clean up at shutdown'."""
    from conftest import DIZOO_CARTPOLE, run_cli

    proc = run_cli("-c", str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), "--max-env-step", "80", "--no-progress",
                   "--exp-name", "exp", "--set", "env.manager.type=subprocess", "env.manager.context=spawn",
                   "env.collector_env_num=2", "env.evaluator_env_num=1", "policy.eval.final_episodes=1",
                   "policy.collect.n_sample=8", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "leaked semaphore" not in proc.stderr, proc.stderr[-2000:]

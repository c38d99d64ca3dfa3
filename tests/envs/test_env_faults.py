"""Faults of env workers under the subprocess manager: an exception in step, SIGKILL of a worker, a step that hangs
past step_timeout (and a reset past reset_timeout) are survived: the worker is restarted, the run goes on, the cut
episode never reaches the buffer as if it had ended, and the restart is reported. An env that fails every reset
ends the run with a clear EnvError. No worker process is left behind in any case."""
from __future__ import annotations

import logging
import os
import re
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import process_gone
from faulty_env import FaultyEnv, faulty_env_cfg

from ding_lite.build import build, build_env_manager, build_env_managers
from ding_lite.config import compile_config
from ding_lite.data.batch import concat_batches
from ding_lite.data.buffer import UniformBuffer
from ding_lite.data.keys import DISCOUNT_N, NEXT_OBS_N, OBS
from ding_lite.entry import serial_pipeline
from ding_lite.errors import ConfigError, EnvError
from ding_lite.registry import BUFFER_REGISTRY

pytestmark = pytest.mark.unittest

EPISODE_LEN = FaultyEnv.config["episode_len"]
GAMMA = 0.9
NSTEP = 3


def child_pids() -> list[int]:
    """Processes (running or zombie) whose parent is this test process."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[1]) == me:
                found.append(int(entry))
    return found


@pytest.fixture
def no_orphans():
    """Fails the test if it leaves a child process (a worker not ended, or ended but never reaped)."""
    before = set(child_pids())
    yield
    assert set(child_pids()) - before == set()


@pytest.fixture
def warnings_log():
    """Records the ``ding_lite`` logger's messages (its console handler does not propagate to pytest's)."""
    records: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: records.append(record.getMessage())  # type: ignore[method-assign]
    log = logging.getLogger("ding_lite")
    log.addHandler(handler)
    yield records
    log.removeHandler(handler)


@BUFFER_REGISTRY.register("recording")
class RecordingBuffer(UniformBuffer):
    """A uniform buffer that keeps a copy of everything pushed, for the checks below."""

    pushed: list[dict] = []

    def push(self, samples):
        RecordingBuffer.pushed.append({k: np.array(v) for k, v in samples.items()})
        return super().push(samples)


# ---- one manager, one fault ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["raise", "kill", "hang"])
def test_failed_step_is_cut_and_worker_restarted(mode: str, tmp_path: Path, no_orphans, warnings_log) -> None:
    env = build_env_manager(faulty_env_cfg(mode, tmp_path, fail_at=30), 3, seed=0)
    with env:
        env.reset()
        pids_before = env.worker_pids()
        cut = None
        for step in range(60):
            last_obs = env.obs.copy()
            result = env.step(np.zeros(3, dtype=np.int64))
            for e in result.episodes:  # every reported episode is a whole one
                assert e.episode_length == EPISODE_LEN and e.terminated
            if result.interrupted is not None:
                assert cut is None, "one fault only"
                cut = step
                (i,) = np.flatnonzero(result.interrupted)
                # the placeholder row: last real observation, no reward, truncated, never terminated
                np.testing.assert_array_equal(result.next_obs[i], last_obs[i])
                assert result.reward[i] == 0 and not result.terminated[i] and result.truncated[i]
                assert result.obs[i][1] == 0 and result.obs[i][0] != last_obs[i][0]  # a new episode started
                assert all(e.env_id != i for e in result.episodes)
                assert env.restart_count == 1 and env.restarts[i] == 1
                pids_after = env.worker_pids()
                assert pids_after[i] != pids_before[i] and process_gone(pids_before[i])
        assert cut == 29  # the 30th step of the env instances
    assert any(f"env {i}" in m and "restarting its worker (restart 1: 1 in a row of max_retry=3, 1 within 10000 "
                                           "steps of max_retry_per_window=10)" in m for m in warnings_log)
    cause = {"raise": "step raised RuntimeError: faulty env: step blew up", "kill": "died (killed by SIGKILL)",
             "hang": "hung: no answer to step within step_timeout=1 s"}[mode]
    assert any(cause in m for m in warnings_log), warnings_log


def test_sigkill_from_outside(no_orphans, warnings_log) -> None:
    """A worker killed between steps (as by the OOM killer) is noticed at the next step."""
    with build_env_manager(faulty_env_cfg(None), 2, seed=0) as env:
        env.reset()
        env.step(np.zeros(2, dtype=np.int64))
        victim = env.worker_pids()[1]
        os.kill(victim, signal.SIGKILL)
        result = env.step(np.zeros(2, dtype=np.int64))
        assert result.interrupted.tolist() == [False, True] and env.restart_count == 1
        assert env.step(np.zeros(2, dtype=np.int64)).interrupted is None  # and the run goes on
    assert any("env 1 died (killed by SIGKILL)" in m for m in warnings_log)


def test_reset_past_reset_timeout(tmp_path: Path, no_orphans, warnings_log) -> None:
    cfg = faulty_env_cfg("hang_reset", tmp_path, manager=dict(reset_timeout=1.0))
    with build_env_manager(cfg, 2, seed=0) as env:
        obs = env.reset()
        assert env.restart_count == 1 and (obs[:, 1] == 0).all()
    assert any("hung: no answer to reset within reset_timeout=1 s" in m for m in warnings_log)


def test_env_failing_every_reset_stops_with_clear_error(no_orphans) -> None:
    env = build_env_manager(faulty_env_cfg("reset", manager=dict(max_retry=2)), 2, seed=0)
    with pytest.raises(EnvError) as info:
        env.reset()
    message = str(info.value)
    assert message.startswith("env 0 failed after 2 restart(s) in a row: reset raised RuntimeError: faulty env: "
                              "reset always fails")
    assert "env.manager.max_retry (now 2)" in message
    assert env.closed


def test_max_retry_bounds_restarts_of_a_step_that_always_fails(no_orphans) -> None:
    env = build_env_manager(faulty_env_cfg("raise", manager=dict(max_retry=2)), 1, seed=0)
    with pytest.raises(EnvError, match=r"env 0 failed after 2 restart\(s\) in a row: step raised RuntimeError: "
                                       r"faulty env: step blew up \(at .*faulty_env\.py:\d+, in step\)\. "
                                       r".*env.manager.max_retry \(now 2\)"):
        for _ in range(100):
            env.step(np.zeros(1, dtype=np.int64))
    assert env.restart_count == 2


def test_an_env_that_breaks_the_api_is_not_restarted(no_orphans) -> None:
    """A step that returns gym's old 4-tuple would do so again in a new worker: one EnvError at once, no restart."""
    env = build_env_manager(faulty_env_cfg("old_api", manager=dict(max_retry=3), fail_at=2), 2, seed=0)
    with pytest.raises(EnvError, match=r"^env [01]'s step returned a tuple of 4 .*not .* gymnasium's API\)$"):
        for _ in range(5):
            env.step(np.zeros(2, dtype=np.int64))
    assert env.restart_count == 0 and env.closed


def test_max_retry_zero_fails_at_once(no_orphans) -> None:
    env = build_env_manager(faulty_env_cfg("raise", manager=dict(max_retry=0), fail_at=1), 1, seed=0)
    with pytest.raises(EnvError, match=r"env 0 failed after 0 restart\(s\) in a row"):
        env.step(np.zeros(1, dtype=np.int64))


# ---- failures at a rate: the two guards of max_retry ----------------------------------------------------------
# Without token_dir every new env instance fails again at its fail_at-th step: a crash every fail_at steps per env.
def _step_until(env, n: int) -> int:
    """Step ``env`` (all actions 0) ``n`` times; returns how many steps had an interrupted row."""
    cuts = 0
    for _ in range(n):
        result = env.step(np.zeros(env.env_num, dtype=np.int64))
        cuts += result.interrupted is not None
        assert all(e.episode_length == EPISODE_LEN for e in result.episodes)  # only whole episodes are reported
    return cuts


@pytest.mark.parametrize("mode", ["raise", "kill"])
def test_env_crashing_every_k_steps_runs_far_past_max_retry(mode: str, no_orphans) -> None:
    """A crash every 20 steps, after a finished episode each time: 15 restarts per env with max_retry=1."""
    cfg = faulty_env_cfg(mode, fail_at=20, manager=dict(max_retry=1, max_retry_per_window=None))
    with build_env_manager(cfg, 2, seed=0) as env:
        env.reset()
        assert _step_until(env, 300) == 15
        assert env.restarts.tolist() == [15, 15]


@pytest.mark.parametrize("healthy_steps,survives", [(5, True), (10, False)])
def test_healthy_steps_clear_the_count_without_a_finished_episode(healthy_steps: int, survives: bool,
                                                                  no_orphans) -> None:
    """A crash every 7 steps, never a finished episode (12 steps): 6 good steps between crashes clear the count
    when healthy_steps=5, not when it is 10 (then the 2nd crash in a row stops it with max_retry=1)."""
    cfg = faulty_env_cfg("raise", fail_at=7, manager=dict(max_retry=1, healthy_steps=healthy_steps))
    env = build_env_manager(cfg, 1, seed=0)
    with env:
        env.reset()
        if survives:
            assert _step_until(env, 70) == 10 and env.restart_count == 10
        else:
            with pytest.raises(EnvError, match=r"env 0 failed after 1 restart\(s\) in a row: step raised .*"
                                               r"env.manager.max_retry \(now 1\)"):
                _step_until(env, 70)
            assert env.restart_count == 1 and env.closed


@pytest.mark.parametrize("window,survives", [(100, False), (60, True)])
def test_failures_per_window_bound_an_env_that_always_recovers(window: int, survives: bool, no_orphans) -> None:
    """Crashes at steps 20, 40, 60, 80, ... each after a finished episode (never 2 in a row): with
    max_retry_per_window=3 the 4th within 100 steps stops the run; within 60 steps there are never more than 3."""
    cfg = faulty_env_cfg("raise", fail_at=20, manager=dict(max_retry=1, retry_window=window, max_retry_per_window=3))
    env = build_env_manager(cfg, 1, seed=0)
    with env:
        env.reset()
        if survives:
            assert _step_until(env, 200) == 10
        else:
            with pytest.raises(EnvError, match=r"^env 0 failed after 3 restart\(s\) within 100 env steps: step "
                                               r"raised .* env.manager.max_retry_per_window \(now 3\)$"):
                _step_until(env, 200)
            assert env.restart_count == 3


def test_bad_budget_settings_are_config_errors() -> None:
    for key, value in (("max_retry", -1), ("healthy_steps", 0), ("retry_window", 0), ("max_retry_per_window", "x")):
        with pytest.raises(ConfigError, match=f"env.manager.{key} must be a number"):
            build_env_manager(faulty_env_cfg(None, manager={key: value}), 1, seed=0)


# ---- short training runs ---------------------------------------------------------------------------------------
def dqn_config(env_section: dict, exp_dir: Path) -> dict:
    return dict(
        exp_name=str(exp_dir),
        env=dict(env_section, collector_env_num=3, evaluator_env_num=2, n_evaluator_episode=2),
        policy=dict(type="dqn", nstep=NSTEP, discount_factor=GAMMA,
                    model=dict(encoder_hidden_size_list=[16], dueling=False),
                    learn=dict(batch_size=16, update_per_collect=1),
                    collect=dict(n_sample=24),
                    eval=dict(evaluator=dict(eval_freq=1000)),
                    other=dict(replay_buffer=dict(type="recording"))),
    )


def check_transitions(samples: dict) -> set[float]:
    """Every stored n-step transition is real: its bootstrap state follows its state in the same episode, the
    discount says how many real steps lie between, and only real terminations (t == episode_len) are terminal.
    Returns the ids of episodes that ended early (a cut episode, truncated at its last real step)."""
    episode, t = samples[OBS][:, 0], samples[OBS][:, 1]
    next_episode, next_t = samples[NEXT_OBS_N][:, 0], samples[NEXT_OBS_N][:, 1]
    np.testing.assert_array_equal(episode, next_episode)  # never across an episode boundary
    m = next_t - t
    assert ((m >= 1) & (m <= NSTEP)).all()  # in particular no placeholder row (next obs == obs)
    terminal = samples[DISCOUNT_N] == 0
    np.testing.assert_array_equal(terminal, next_t == EPISODE_LEN)  # terminated=True only at real ends
    np.testing.assert_allclose(samples[DISCOUNT_N][~terminal], GAMMA ** m[~terminal], rtol=1e-6)
    return set(episode[(m < NSTEP) & ~terminal].tolist())


# Collects are 8 steps of 3 envs: the 30th step is mid-rollout; the 33rd is a rollout's first row, so the cut falls
# on steps that DQN kept back from the previous collect for their n-step windows.
@pytest.mark.parametrize("mode,fail_at", [("raise", 30), ("raise", 33), ("kill", 33), ("hang", 30)])
def test_training_run_survives_fault(mode: str, fail_at: int, tmp_path: Path, no_orphans) -> None:
    RecordingBuffer.pushed.clear()
    cfg = dqn_config(faulty_env_cfg(mode, tmp_path, fail_at=fail_at), tmp_path / "exp")
    result = serial_pipeline(cfg, seed=0, max_env_step=240, progress=False)
    assert result["env_step"] >= 240 and result["train_iter"] > 0  # the run completed
    assert result["env_restarts"] == 1
    assert "env worker restarts: 1 (collector 1, evaluator 0)" in (tmp_path / "exp" / "log" / "train.log").read_text()
    cut_episodes = check_transitions(concat_batches(RecordingBuffer.pushed))
    assert len(cut_episodes) == 1  # the interrupted episode: its real steps kept, ending truncated at the cut


def test_training_run_with_an_env_crashing_every_k_steps_finishes(tmp_path: Path, no_orphans) -> None:
    """Every env instance raises at its 20th step (mid-episode), over and over: far more restarts than max_retry=1,
    the run finishes, and every cut episode is stored truncated at its last real step (none as if it had ended).
    The rate guard is on, at a rate above this env's (5 crashes per 100 steps): the defaults (10 per 10000) would
    rightly stop an env this bad."""
    RecordingBuffer.pushed.clear()
    manager = dict(max_retry=1, retry_window=100, max_retry_per_window=6)
    cfg = dqn_config(faulty_env_cfg("raise", fail_at=20, manager=manager), tmp_path / "exp")
    result = serial_pipeline(cfg, seed=0, max_env_step=480, progress=False)
    assert result["env_step"] >= 480 and result["train_iter"] > 0
    log_text = (tmp_path / "exp" / "log" / "train.log").read_text()
    collector_restarts = int(re.search(r"env worker restarts: \d+ \(collector (\d+),", log_text).group(1))
    assert collector_restarts >= 20 and result["env_restarts"] >= collector_restarts
    assert result["env_restart_rate"] == pytest.approx(1000 * result["env_restarts"] / result["env_step"], rel=1e-3)
    cut_episodes = check_transitions(concat_batches(RecordingBuffer.pushed))
    # one cut episode per collector restart; the last one's steps may still be held back for their n-step windows
    assert collector_restarts - 1 <= len(cut_episodes) <= collector_restarts


def test_training_without_faults_has_no_cut_episodes(tmp_path: Path, no_orphans) -> None:
    """The check above is not vacuous: a clean run stores only whole episodes' transitions."""
    RecordingBuffer.pushed.clear()
    result = serial_pipeline(dqn_config(faulty_env_cfg(None), tmp_path / "exp"), seed=0, max_env_step=240,
                             progress=False)
    assert result["env_restarts"] == 0
    assert check_transitions(concat_batches(RecordingBuffer.pushed)) == set()


def test_episode_collector_drops_the_cut_episode(tmp_path: Path, no_orphans) -> None:
    cfg = compile_config(dict(env=dict(faulty_env_cfg("raise", tmp_path, fail_at=18), collector_env_num=2,
                                       evaluator_env_num=1),
                              policy=dict(type="ppo", collect=dict(collector=dict(type="episode")))))
    torch.manual_seed(0)
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        policy = build(cfg, "policy", enable_field=["collect"])
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        samples, episodes = collector.collect(n_episode=6)
        assert collector_env.restart_count == 1
    assert len(episodes) == 6 and all(e.episode_length == EPISODE_LEN for e in episodes)
    ids, counts = np.unique(samples[OBS][:, 0], return_counts=True)
    assert len(ids) == 6 and (counts == EPISODE_LEN).all()  # whole episodes only


def test_cli_reports_env_failing_every_reset(tmp_path: Path, repo_root: Path) -> None:
    """Through the CLI: one line naming the env, the cause and the setting, exit code 2, no worker left."""
    from conftest import run_cli

    config = tmp_path / "faulty_reset_config.py"
    main_config = dqn_config(faulty_env_cfg("reset", manager=dict(max_retry=1)), tmp_path / "exp")
    main_config["policy"]["other"]["replay_buffer"]["type"] = "uniform"
    config.write_text(f"main_config = {main_config!r}\n")
    proc = run_cli("-m", "serial", "-c", str(config), "-s", "0", cwd=tmp_path,
                   extra_pythonpath=[str(repo_root / "tests")])  # where faulty_env.py lives
    assert proc.returncode == 2, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "env 0 failed after 1 restart(s) in a row: reset raised RuntimeError: faulty env: reset always fails" in last
    assert "env.manager.max_retry (now 1)" in last
    leftovers = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline_has(pid, str(config))]
    assert leftovers == []


def _cmdline_has(pid: str, text: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return text.encode() in f.read()
    except OSError:
        return False

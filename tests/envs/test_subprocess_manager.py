"""The subprocess env manager against the in-process one: same trajectories for the same seeds, same interface, and
no worker process left behind however the main process ends."""
from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import gymnasium as gym
import numpy as np
import pytest
import torch
from conftest import default_sigint, process_gone, wait_gone

from ding_lite.build import build, build_env_manager, build_env_managers
from ding_lite.config import compile_config
from ding_lite.envs import BaseEnvManager, SubprocessEnvManager
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

CARTPOLE = dict(type="gymnasium", env_id="CartPole-v1")
PENDULUM = dict(type="gymnasium", env_id="Pendulum-v1", max_episode_steps=40)


def run_both(env_cfg: dict, n_env: int, n_step: int, seed: int, make_actions) -> list[list]:
    """Step a base and a subprocess manager side by side; returns both traces of every StepResult field."""
    traces = []
    for manager in ("base", "subprocess"):
        rng = np.random.default_rng(123)
        with build_env_manager({**env_cfg, "manager": dict(type=manager)}, n_env, seed) as env:
            trace = [env.reset()]
            for _ in range(n_step):
                r = env.step(make_actions(rng, n_env))
                trace.append((r.obs, r.next_obs, r.reward, r.terminated, r.truncated,
                              [(e.env_id, e.episode_return, e.episode_length, e.terminated) for e in r.episodes]))
            env.seed(seed + 7)  # a second seeded reset, as the evaluator does before every evaluation
            trace.append(env.reset())
            trace.append(env.step(make_actions(rng, n_env)).next_obs)
        traces.append(trace)
    return traces


def assert_same(a, b) -> None:
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def test_same_trajectories_as_base_discrete() -> None:
    base, sub = run_both(CARTPOLE, 4, 300, seed=3, make_actions=lambda rng, n: rng.integers(0, 2, n))
    assert sum(len(step[5]) for step in base[1:-2]) > 20  # many episodes ended and were reset on the way
    assert_same(base, sub)


def test_same_trajectories_as_base_continuous() -> None:
    base, sub = run_both(PENDULUM, 3, 100, seed=5, make_actions=lambda rng, n: rng.uniform(-3, 3, (n, 1)))
    assert sum(len(step[5]) for step in base[1:-2]) == 6  # 40-step time limit: truncations
    assert_same(base, sub)


@pytest.fixture
def one_torch_thread():
    """One intra-op torch thread, as the pipelines use: idle torch threads spin and starve env worker processes."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def test_same_collected_samples_as_base(one_torch_thread) -> None:
    """The whole collect path (DQN collect mode with ε-greedy, SampleCollector, n-step samples) gives identical
    samples under both managers."""
    samples = []
    for manager in ("base", "subprocess"):
        cfg = compile_config(dict(env=dict(CARTPOLE, collector_env_num=3, evaluator_env_num=1,
                                           manager=dict(type=manager)),
                                  policy=dict(type="dqn", nstep=3)), seed=0)
        torch.manual_seed(0)
        collector_env, evaluator_env = build_env_managers(cfg, seed=0, evaluate=False)
        policy = build(cfg, "policy", enable_field=["collect"])
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        with collector_env:
            samples.append([collector.collect(n_sample=60)[0] for _ in range(4)])
    for a, b in zip(*samples, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def test_spawn_context_builds_registered_envs() -> None:
    """Under 'spawn' a worker starts with empty registries: the env section's import_names are imported there."""
    env_cfg = dict(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"])
    with build_env_manager({**env_cfg, "manager": dict(type="base")}, 2, 0) as env:
        expected = [env.reset(), env.step(np.array([0, 1])).next_obs]
    with build_env_manager({**env_cfg, "manager": dict(type="subprocess", context="spawn")}, 2, 0) as env:
        got = [env.reset(), env.step(np.array([0, 1])).next_obs]
        pids = env.worker_pids()
    assert_same(expected, got)
    assert wait_gone(pids) == []


def test_interface_and_close() -> None:
    with build_env_manager({**CARTPOLE, "manager": dict(type="subprocess")}, 2, 0) as env:
        assert isinstance(env, SubprocessEnvManager) and env.env_num == 2
        assert env.observation_space.shape == (4,) and env.action_space.n == 2
        obs = env.obs  # resets on first use
        assert obs.shape == (2, 4) and obs.dtype == np.float32
        result = env.step(np.array([1, 0]))
        assert result.interrupted is None and env.restart_count == 0
        kept = [a.copy() for a in result[:5]]
        env.step(np.array([1, 0]))  # the next step rewrites shared memory, not the arrays handed out before
        assert_same(kept, list(result[:5]))
        pids = env.worker_pids()
        assert len(pids) == 2 and all(not process_gone(p) for p in pids)
        with pytest.raises(ValueError, match="step\\(\\) got 3 actions for 2 envs"):
            env.step(np.array([0, 1, 0]))
    assert env.closed
    env.close()  # idempotent
    assert wait_gone(pids) == []


@pytest.mark.parametrize("timeout", [math.inf, 1e12])
def test_infinite_and_huge_timeouts_wait_without_overflow(timeout: float) -> None:
    """Before, step_timeout=inf or 1e12 (inf documented as 'never') was an OverflowError traceback at the first
    reset: poll() takes at most about 24.8 days (found by the config fuzzer)."""
    manager = dict(type="subprocess", step_timeout=timeout, reset_timeout=timeout)
    with build_env_manager({**CARTPOLE, "manager": manager}, 2, 0) as env:
        assert env.obs.shape == (2, 4)  # the first reset
        assert env.step(np.array([0, 1])).interrupted is None


@pytest.mark.parametrize("setting,value", [("step_timeout", 0), ("max_retry", -1), ("context", "teleport")])
def test_bad_settings_are_config_errors(setting: str, value) -> None:
    with pytest.raises(ConfigError, match=f"env.manager.{setting}"):
        SubprocessEnvManager([lambda: None] * 2, {setting: value})  # checked before any env is built


def test_base_manager_unchanged_interface() -> None:
    with build_env_manager({**CARTPOLE, "manager": dict(type="base")}, 2, 0) as env:
        assert isinstance(env, BaseEnvManager) and env.restart_count == 0
        assert env.step(np.array([0, 0])).interrupted is None


# ---- no orphans however the main process ends -------------------------------------------------------------------
ORPHAN_SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    import numpy as np
    from ding_lite.build import build_env_manager
    env = build_env_manager(dict(type="gymnasium", env_id="CartPole-v1", manager=dict(type="subprocess")), 3, 0)
    env.reset()
    env.step(np.zeros(3, dtype=np.int64))
    print(" ".join(map(str, env.worker_pids())), flush=True)
    how = sys.argv[1]
    if how == "exception":
        raise RuntimeError("main process fails")
    if how == "ctrl-c":
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(10)
    if how == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "close":
        env.close()
    # "exit": leave without closing
""")


@pytest.mark.parametrize("how", ["close", "exit", "exception", "ctrl-c", "sigkill"])
def test_no_orphan_workers(how: str, repo_root) -> None:
    """Workers end with the main process: after close, a plain exit, an exception, Ctrl-C, even SIGKILL of it."""
    proc = subprocess.run([sys.executable, "-c", ORPHAN_SCRIPT, how], capture_output=True, text=True, timeout=60,
                          cwd=str(repo_root), env={**os.environ, "PYTHONPATH": str(repo_root)},
                          preexec_fn=default_sigint)
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 3, proc.stderr
    expected_rc = {"close": 0, "exit": 0, "exception": 1, "ctrl-c": -signal.SIGINT, "sigkill": -signal.SIGKILL}
    if how == "ctrl-c":  # Python exits with 130-style status via the re-raised KeyboardInterrupt
        assert proc.returncode in (1, -signal.SIGINT, 130), proc.stderr
        assert "KeyboardInterrupt" in proc.stderr
    else:
        assert proc.returncode == expected_rc[how], proc.stderr
    # an orphaned worker notices its parent is gone within _PARENT_CHECK_S; the others are ended before exit
    assert wait_gone(pids, timeout=5.0) == []


def test_ctrl_c_on_a_training_run_leaves_no_worker(tmp_path, repo_root) -> None:
    """Ctrl-C in a terminal signals the whole process group, workers included: the run stops with the CLI's
    'interrupted' line and every worker is gone."""
    from conftest import cli_env

    config = repo_root / "dizoo" / "classic_control" / "cartpole" / "config" / "cartpole_ppo_config.py"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ding_lite", "-m", "serial", "-c", str(config), "--exp-name", str(tmp_path / "exp"),
         "--set", "env.manager.type=subprocess", "--set", "env.stop_value=100000", "--max-env-step", "10000000"],
        cwd=str(tmp_path), env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, preexec_fn=default_sigint)  # its own process group, as a terminal's foreground job
    try:
        seen = []
        for line in proc.stdout:  # training is under way once the first evaluation is printed
            seen.append(line)
            if line.startswith("[eval]"):
                break
        assert seen and seen[-1].startswith("[eval]"), "".join(seen)[-2000:]
        workers: list[int] = []
        deadline = time.monotonic() + 10
        while len(workers) < 8 + 5 and time.monotonic() < deadline:  # collector_env_num + evaluator_env_num
            workers = [int(p) for p in subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)],
                                                      capture_output=True, text=True).stdout.split()]
            time.sleep(0.05)
        assert len(workers) == 8 + 5, (workers, "".join(seen)[-2000:])
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "ding_lite: interrupted" in out, out[-2000:]
    assert wait_gone(workers) == []


class _UnpicklableInfoEnv(gym.Env):
    """Episodes of 3 steps whose last info holds a lambda (fine in-process, but it cannot cross the worker's pipe)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= 3, False, {"callback": lambda: None}


def test_an_info_that_cannot_leave_the_worker_stops_at_once_naming_the_env() -> None:
    """A deterministic fault of the env's outputs, as a broken API: no restart would mend it. Before: 'env 0 step
    raised AttributeError: Can't pickle ... (at .../subprocess_worker.py, in _serve)' and max_retry restarts."""
    from ding_lite.errors import EnvError

    env = SubprocessEnvManager([_UnpicklableInfoEnv] * 2, dict(max_retry=5))
    env.reset()
    with pytest.raises(EnvError, match=r"^env 0's step gave an info that cannot be sent to the main process "
                                       r"\(.*pickle.*\): .*picklable.*env.manager.type='base'") as caught:
        for _ in range(3):
            env.step(np.zeros(2, dtype=np.int64))
    assert "subprocess_worker.py" not in str(caught.value)
    assert env.restart_count == 0 and env.closed

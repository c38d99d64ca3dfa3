"""Subprocess env manager: one worker process per env, observations through shared memory, and workers that fail
(raise, die, hang) are restarted so that the run goes on.

Protocol, main -> worker (pickled through a pipe): ``(STEP, action)``, ``(RESET, seed)``, ``(CLOSE, None)``.
Worker -> main (raw bytes): ``b""`` = done and written to shared memory; a pickled ``(DONE, info)`` = the step ended
an episode (an empty message follows once the worker has reset its env); a pickled ``(ERROR, text)`` = the env
raised (the worker exits after it). A worker that dies closes its pipe (EOF); one that does not answer by the
deadline counts as hung and is killed.
"""
from __future__ import annotations

import gc
import logging
import math
import multiprocessing as mp
import os
import pickle
import sys
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.envs.env_manager import EnvManager, StepResult
from ding_lite.envs.env_outputs import close_env, copied_obs, obs_row, put_obs
from ding_lite.envs.fresh_process import fresh_process_env_fns
from ding_lite.envs.subprocess_worker import (
    BROKEN,
    ERROR,
    RESET,
    STEP,
    UNBUILT,
    SharedArrays,
    Worker,
    WorkerFailure,
    shareable,
    shutdown,
    worker_main,
)
from ding_lite.errors import ConfigError, EnvError
from ding_lite.registry import ENV_MANAGER_REGISTRY
from ding_lite.utils.failure_budget import FailureBudget

logger = logging.getLogger("ding_lite")


@ENV_MANAGER_REGISTRY.register("subprocess")
class SubprocessEnvManager(EnvManager):
    """Each env in its own worker process; observations come back through shared memory; same batched interface,
    auto reset and episode stats as ``base`` (and the same trajectories for the same seeds).

    A worker that raises, dies, or does not answer within ``step_timeout`` / ``reset_timeout`` is killed, a new one
    is started and its env reset (seeded from the manager's seed and the restart number, so runs stay reproducible).
    The episode it was in is cut: the step's row is flagged in ``StepResult.interrupted`` (a placeholder, truncated,
    never terminated) and the episode is not reported as ended. Restarts are counted (``restart_count``,
    ``restarts`` per env) and logged. Two guards per env (a :class:`~ding_lite.utils.failure_budget.FailureBudget`)
    decide when to stop instead: ``max_retry`` restarts in a row (a finished episode or ``healthy_steps`` good steps
    clear the count) and ``max_retry_per_window`` restarts within ``retry_window`` env steps; the next failure
    raises an :class:`EnvError` naming the env, the cause and the setting.

    Args:
        env_fns: one picklable callable per env, each returning a ``gymnasium.Env``.
        cfg: the ``env.manager`` config section.
    """

    config: dict[str, Any] = dict(
        type="subprocess",
        context=None,  # multiprocessing start method: 'fork', 'spawn' or 'forkserver' (None: 'fork' where available)
        step_timeout=60.0,  # seconds an env step may take before its worker counts as hung (None: no limit)
        reset_timeout=60.0,  # seconds a reset may take: reset(), the auto reset after an episode end, and a
        # replacement worker's start plus first reset (None: no limit)
        max_retry=5,  # worker restarts allowed per env in a row; the next failure in a row stops the run (EnvError)
        healthy_steps=100,  # good steps after which a restarted env is healthy again (a finished episode is, at once)
        retry_window=10_000,  # env steps of each env over which max_retry_per_window counts (None: no rate guard)
        max_retry_per_window=10,  # worker restarts allowed per env within any retry_window steps; the next stops
    )

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], cfg: Mapping[str, Any] | None = None) -> None:
        if len(env_fns) == 0:
            raise ValueError("an env manager needs at least one env (env_num was 0)")
        settings = {**self.config, **(cfg or {})}
        self.step_timeout = _timeout(settings, "step_timeout")
        self.reset_timeout = _timeout(settings, "reset_timeout")
        self.max_retry = _env_budget(settings).max_in_a_row  # (checks the settings before any process starts)
        method = _start_method(settings.get("context"))
        self._ctx: Any = mp.get_context(method)
        # a forkserver worker is the fork server's child, not ours: it watches that process (which exits with this
        # one) to tell whether it is orphaned; compared with our pid it left after each idle 0.5 s and was restarted
        self._parent_pid = None if method == "forkserver" else os.getpid()
        if method != "fork":  # a fresh process per worker: what it needs must be picklable and importable there
            env_fns = fresh_process_env_fns(env_fns, method)
        probe = env_fns[0]()  # the spaces, read in this process (as gymnasium's AsyncVectorEnv does)
        try:
            observation_space, action_space = probe.observation_space, probe.action_space
        finally:
            close_env(probe, "the probe env (read for its spaces)")
        if not shareable(observation_space):
            raise EnvError(f"env manager 'subprocess' shares observations as fixed-shape arrays; the env's observation "
                           f"space {observation_space} is not one (use env.manager.type='base')")
        super().__init__(len(env_fns), observation_space, action_space, cfg)
        self._env_fns = list(env_fns)
        self._shared = SharedArrays(observation_space, self.env_num, self._ctx)
        self._obs_view, self._next_obs_view, self._reward_view, self._term_view, self._trunc_view = \
            self._shared.views()
        self.restarts = np.zeros(self.env_num, dtype=np.int64)  # restarts per env
        self._budgets = [_env_budget(settings) for _ in range(self.env_num)]
        self._steps = 0  # step() calls so far: the clock of the retry window (each env steps once per call)
        self._last_seed: int | None = None  # seed of the last seeded reset (restarted envs derive theirs from it)
        self._workers: list[Worker | None] = [None] * self.env_num
        # Workers are ended at interpreter exit or when the manager is collected, even if close() is never called.
        self._finalizer = weakref.finalize(self, shutdown, self._workers)
        try:
            for i in range(self.env_num):
                self._start(i)
        except BaseException:
            self.close()
            raise

    # ---- public interface --------------------------------------------------------------------------------------
    @property
    def restart_count(self) -> int:
        """Worker restarts so far, all envs together."""
        return int(self.restarts.sum())

    def worker_pids(self) -> list[int]:
        """Process ids of the current workers (for monitoring and tests)."""
        return [w.process.pid for w in self._workers if w is not None]

    def reset(self) -> np.ndarray:
        """Reset every env (in parallel); returns the batched first observation (N, *obs_shape)."""
        self._check_open()
        seeds = self._take_seeds()
        if seeds[0] is not None:
            self._last_seed = seeds[0]
        self._reset_workers(list(range(self.env_num)), seeds)
        return self._start_episodes(copied_obs(self._obs_view))

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env (in parallel) with its action; finished envs are reset by their workers.

        A failed worker is restarted before this returns; its row is flagged in ``StepResult.interrupted``."""
        self._check_open()
        last_obs = self._obs if self._obs is not None else self.reset()
        env_actions = self._env_actions(actions)
        failed: dict[int, str] = {}
        for i, action in enumerate(env_actions):
            self._send(i, STEP, action, failed)
        ended = self._gather_steps(failed)
        finished = self._gather_resets(ended, failed)
        next_obs = copied_obs(self._next_obs_view)  # (a masked observation's dict of arrays: envs/spaces.py)
        reward = self._reward_view.copy()
        terminated = self._term_view.copy()
        truncated = self._trunc_view.copy()
        interrupted = None
        self._count_step(failed, finished)
        if failed:
            interrupted = np.zeros(self.env_num, dtype=bool)
            ended_ok = {i for i, _ in finished}
            for i, cause in failed.items():
                if i not in ended_ok:  # the step itself failed: a placeholder row, episode cut
                    interrupted[i] = True
                    put_obs(next_obs, i, obs_row(last_obs, i))
                    reward[i], terminated[i], truncated[i] = 0.0, False, True
                self._restart(i, cause)
            if not interrupted.any():
                interrupted = None
        return self._finish_step(next_obs, reward, terminated, truncated, finished, interrupted)

    def _count_step(self, failed: dict[int, str], finished: list[tuple[int, dict]]) -> None:
        """Advance the retry window's clock; every env whose step succeeded is one step healthier, and one whose
        episode ended (even if the reset after it failed) proved healthy."""
        self._steps += 1
        ended = {i for i, _ in finished}
        for i in range(self.env_num):
            if i not in failed or i in ended:
                self._budgets[i].record_success(clear=i in ended)

    # ---- step pieces -------------------------------------------------------------------------------------------
    def _gather_steps(self, failed: dict[int, str]) -> list[tuple[int, dict]]:
        """Wait for every stepped worker; returns ``(i, info)`` of envs whose episode ended (their reset follows)."""
        deadline = _deadline(self.step_timeout)
        ended: list[tuple[int, dict]] = []
        for i in range(self.env_num):
            if i in failed:
                continue
            try:
                msg = self._receive(i, deadline, "step")
            except WorkerFailure as exc:
                failed[i] = str(exc)
                continue
            if msg:
                ended.append((i, msg[1]))
        return ended

    def _gather_resets(self, ended: list[tuple[int, dict]], failed: dict[int, str]) -> list[tuple[int, dict]]:
        """Wait for the automatic resets after episode ends. The ended episodes are real either way; an env whose
        reset fails gets a new worker (``failed``) for its next episode."""
        deadline = _deadline(self.reset_timeout)
        for i, _ in ended:
            try:
                self._receive(i, deadline, "reset")
            except WorkerFailure as exc:
                failed[i] = str(exc)
        return ended

    # ---- worker life -------------------------------------------------------------------------------------------
    def _start(self, i: int) -> None:
        parent_conn, child_conn = self._ctx.Pipe()
        process = self._ctx.Process(target=worker_main, name=f"ding_lite-env-{i}", daemon=True,
                                    args=(i, self._env_fns[i], child_conn, self._shared, self._parent_pid))
        with _gc_frozen_for_fork(self._ctx.get_start_method() == "fork"):
            process.start()
        child_conn.close()  # only the worker holds its end: its death then shows as EOF on ours
        self._workers[i] = Worker(process, parent_conn)

    def _restart(self, i: int, cause: str) -> None:
        """Replace env ``i``'s worker and reset its env, retrying while its failure budget allows."""
        budget = self._budgets[i]
        while True:
            spent = budget.record_failure(self._steps)
            if spent is not None:
                self.close()
                raise EnvError(f"env {i} failed after {spent.what}: {cause}. Fix the env, or allow more restarts with "
                               f"{spent.key} (now {spent.limit})")
            self.restarts[i] += 1
            rate = "" if budget.max_per_window is None else \
                f", {budget.in_window(self._steps)} within {budget.window:g} steps of max_retry_per_window=" \
                f"{budget.max_per_window}"
            logger.warning("warning: env %d %s; restarting its worker (restart %d: %d in a row of max_retry=%d%s)", i,
                           cause, self.restarts[i], budget.in_a_row, self.max_retry, rate)
            worker = self._workers[i]
            if worker is not None:
                worker.stop()
            self._workers[i] = None
            self._start(i)
            self._variations.fresh([i])  # a fresh env: its variation schedule starts again
            seed = None
            if self._last_seed is not None:  # reproducible but different from the lost env's seed
                seed = int(np.random.SeedSequence([self._last_seed + i, int(self.restarts[i])]).generate_state(1)[0])
            try:
                self._send(i, RESET, seed)
                self._receive(i, _deadline(self.reset_timeout), "reset")
                return
            except WorkerFailure as exc:
                cause = str(exc)

    def _send(self, i: int, cmd: int, arg: Any, failed: dict[int, str] | None = None) -> None:
        worker = self._workers[i]
        assert worker is not None
        try:
            worker.conn.send((cmd, arg))
        except OSError as exc:  # broken pipe: the worker is gone
            if failed is None:
                raise WorkerFailure(worker.cause_of_death()) from exc
            failed[i] = worker.cause_of_death()

    def _receive(self, i: int, deadline: float | None, what: str) -> Any:
        """The worker's next reply (``b""`` or a decoded ``(DONE, info)``), or :class:`WorkerFailure`."""
        worker = self._workers[i]
        assert worker is not None
        try:
            if not _answered(worker.conn, deadline):
                limit = self.step_timeout if what == "step" else self.reset_timeout
                raise WorkerFailure(f"hung: no answer to {what} within {what}_timeout={limit:g} s")
            msg = worker.conn.recv_bytes()
        except (EOFError, OSError) as exc:
            raise WorkerFailure(worker.cause_of_death()) from exc
        if not msg:
            return msg
        reply = pickle.loads(msg)
        if reply[0] == UNBUILT:  # a new worker would not resolve the settings either
            self.close()
            raise EnvError(reply[1])
        if reply[0] == BROKEN:  # deterministic: a new worker would fail the same way, so no restart
            self.close()
            raise EnvError(f"{reply[1]} (the subprocess env manager restarts a crashed or hung env, not one whose "
                           f"outputs break gymnasium's API)")
        if reply[0] == ERROR:
            logger.debug("env %d worker traceback:\n%s", i, reply[2])
            raise WorkerFailure(reply[1])
        return reply

    def _reset_one(self, i: int) -> np.ndarray:
        return obs_row(self._obs_view, i)  # the worker (or its replacement) already reset the env and wrote this row

    def _reset_running(self, envs: list[int]) -> list[np.ndarray]:
        """Reset ``envs`` in their workers (in parallel); a worker that fails there is restarted, which resets its
        env too."""
        self._check_open()
        self._reset_workers(envs, [None] * len(envs))
        return [obs_row(self._obs_view, i) for i in envs]

    def _reset_workers(self, envs: list[int], seeds: list[int | None]) -> None:
        """Reset the workers of ``envs`` (with ``seeds``) in parallel, each writing its first observation into the
        shared rows; a worker that fails or times out is restarted, which resets its env too."""
        failed: dict[int, str] = {}
        for i, seed in zip(envs, seeds, strict=True):
            self._send(i, RESET, seed, failed)
        deadline = _deadline(self.reset_timeout)
        for i in envs:
            if i not in failed:
                try:
                    self._receive(i, deadline, "reset")
                except WorkerFailure as exc:
                    failed[i] = str(exc)
        for i, cause in failed.items():
            self._restart(i, cause)

    def _check_open(self) -> None:
        if self.closed:
            raise EnvError("this subprocess env manager is closed: build a new one")

    def _close(self) -> None:
        self._finalizer()
        # the shared arrays' locks are semaphores: freed now, not at interpreter exit, which the CLI's fast exit
        # (os._exit) skips (with context 'spawn' or 'forkserver' the resource tracker then warns of leaked ones)
        self._shared.release()


def _timeout(settings: Mapping[str, Any], key: str) -> float | None:
    value = settings.get(key)
    if value is None:
        return None
    if float(value) <= 0:
        raise ConfigError(f"env.manager.{key} must be a positive number of seconds or None, got {value!r}")
    return None if math.isinf(float(value)) else float(value)  # inf: never, as None


def _env_budget(settings: Mapping[str, Any]) -> FailureBudget:
    """The failure budget of one env from the ``env.manager`` settings (a bad value is a :class:`ConfigError`)."""
    for key in ("max_retry", "max_retry_per_window", "healthy_steps", "retry_window"):
        value = settings[key]
        low = 0 if key.startswith("max_") else 1
        if value is None and key in ("max_retry_per_window", "retry_window"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low:
            raise ConfigError(f"env.manager.{key} must be a number >= {low}"
                              f"{' or None' if key in ('max_retry_per_window', 'retry_window') else ''}, got {value!r}")
    per_window = settings["max_retry_per_window"]
    window = settings["retry_window"]
    return FailureBudget(int(settings["max_retry"]), None if per_window is None or window is None else int(per_window),
                         float(window or 0), int(settings["healthy_steps"]),
                         keys=("env.manager.max_retry", "env.manager.max_retry_per_window"), unit="env steps")


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


_POLL_SLICE = 3600.0  # the longest single wait: the system's poll() takes at most 2^31 - 1 ms (about 24.8 days)


def _answered(conn: Any, deadline: float | None) -> bool:
    """Whether ``conn`` has a reply before ``deadline`` (None: wait for ever), waiting in slices that poll() takes
    (a timeout of 1e12 s in one poll() is an OverflowError)."""
    if deadline is None:
        return bool(conn.poll(None))
    while not conn.poll(max(0.0, min(_POLL_SLICE, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            return False
    return True


@contextmanager
def _gc_frozen_for_fork(fork: bool) -> Iterator[None]:
    """Around the fork of a worker: the main process's objects in the GC's permanent generation (``gc.freeze``, as
    Python's gc docs advise before a fork), so that a 'fork' worker's collections, from its first one in
    multiprocessing's start-up on, never walk what it inherits (a worker died of SIGSEGV in a collection walking
    objects other libraries left in the main process) nor write to those pages (copy-on-write). The main process
    unfreezes them at once; a freeze someone else made is left as it is."""
    ours = fork and gc.get_freeze_count() == 0
    if ours:
        gc.freeze()
    try:
        yield
    finally:
        if ours:
            gc.unfreeze()


def _start_method(name: str | None) -> str:
    methods = mp.get_all_start_methods()
    if name is None:
        return "fork" if "fork" in methods and sys.platform != "darwin" else "spawn"
    if name not in methods:
        raise ConfigError(f"env.manager.context={name!r} is not a start method here; use one of {methods}")
    return name

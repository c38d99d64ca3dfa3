"""The worker-process side of the subprocess env manager: the command protocol, the shared observation memory,
the loop each worker runs, and the main process's handle on a worker (see ``subprocess_manager`` for the protocol).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory

from ding_lite.envs.env_outputs import (
    check_obs_shape,
    checked_reset,
    checked_step,
    close_env,
    one_flag,
    one_reward,
    put_obs,
    raised,
)
from ding_lite.errors import ConfigError, EnvError

STEP, RESET, CLOSE = 0, 1, 2  # commands
# replies besides the empty "ok"; BROKEN: the env broke gymnasium's API (a deterministic fault: a new worker would
# break it again, so the manager stops instead of restarting)
DONE, ERROR, BROKEN = "done", "error", "broken"
UNBUILT = "unbuilt"  # the env's settings do not resolve in the worker (a fresh process): deterministic too
_PARENT_CHECK_S = 0.5  # an idle worker checks this often whether the main process still exists
_CLOSE_WAIT_S = 2.0  # close(): how long workers get to exit on their own before they are killed
SHAREABLE = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)


def shareable(space: gym.Space) -> bool:
    """Whether observations of ``space`` fit fixed-shape shared arrays: one of :data:`SHAREABLE`, or a masked
    observation's ``Dict`` of them (one array per key)."""
    if isinstance(space, gym.spaces.Dict):
        return all(isinstance(part, SHAREABLE) for part in space.spaces.values())
    return isinstance(space, SHAREABLE)


class WorkerFailure(Exception):
    """A worker raised, died or hung; ``args[0]`` says which, in words."""


class SharedArrays:
    """The shared memory of all workers: obs to act on, obs after a step, reward, terminated, truncated."""

    def __init__(self, space: gym.Space, n: int, ctx: Any) -> None:
        self.n, self.space = n, space
        self.obs: Any = create_shared_memory(space, n, ctx)
        self.next_obs: Any = create_shared_memory(space, n, ctx)
        self.reward = ctx.RawArray(ctypes.c_float, n)
        self.terminated = ctx.RawArray(ctypes.c_bool, n)
        self.truncated = ctx.RawArray(ctypes.c_bool, n)

    def views(self) -> tuple[Any, Any, np.ndarray, np.ndarray, np.ndarray]:
        """Numpy views (no copies) of the five arrays, each (N, ...); the observations of a ``Dict`` space are a dict
        of such views."""
        return (read_from_shared_memory(self.space, self.obs, self.n),  # type: ignore[return-value]
                read_from_shared_memory(self.space, self.next_obs, self.n),
                np.frombuffer(self.reward, dtype=np.float32), np.frombuffer(self.terminated, dtype=bool),
                np.frombuffer(self.truncated, dtype=bool))

    def release(self) -> None:
        """Drop the observation arrays' wrappers, whose locks are semaphores (gymnasium makes them with ctx.Array):
        freed now (the views made before keep the memory itself)."""
        self.obs = self.next_obs = None


def worker_main(index: int, env_fn: Callable[[], gym.Env], conn: Any, shared: SharedArrays,
                 parent_pid: int | None) -> None:
    """Body of a worker process: build the env, then serve commands until CLOSE or until the main process is gone.
    Anything the env raises is sent back as ``(ERROR, text, traceback)`` and ends the worker.

    ``parent_pid``: the main process, the worker's parent ('fork', 'spawn'); None where another process starts the
    worker ('forkserver': the fork server, which exits with the main process), whose pid the worker then watches."""
    # Ctrl-C reaches the whole process group, and so does a SIGTERM sent to it (a batch scheduler's stop, kill -TERM
    # -<pgid>): the main process alone decides (a stop at a safe point) and closes the workers itself. A worker ended
    # by the signal would count as a failed env. Killed outright, the main process leaves idle workers orphaned,
    # which exit within _PARENT_CHECK_S.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    doing = ["building the env"]  # what the worker is at, for the error text
    env = None
    try:
        watched = os.getppid() if parent_pid is None else parent_pid
        try:
            env = env_fn()
        except ConfigError as exc:  # a setting the worker cannot resolve: a new worker would fail alike
            text = (f"env {index} cannot be built in its worker process: {exc} (no restart would mend that; a "
                    f"'spawn' or 'forkserver' worker knows only the env types and ids that env.import_names register)")
            conn.send_bytes(pickle.dumps((UNBUILT, text, traceback.format_exc()), pickle.HIGHEST_PROTOCOL))
            return
        if "torch" in sys.modules:
            # the env runs torch: on the threads the main process runs it on (DING_LITE_TORCH_THREADS, default 1).
            # A 'fork' worker inherits them; a 'spawn' / 'forkserver' one started with one per core, so N workers
            # on C cores asked for N x C spinning threads. An env without torch is not made to import it.
            from ding_lite.utils.torch_setup import configure_torch

            configure_torch()
        _serve(index, env, conn, shared.views(), watched, doing)
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the main process closed our pipe: nobody is listening
    except EnvError as exc:  # the env's outputs broke the API (the checks below): no restart would mend that
        with contextlib.suppress(OSError, pickle.PicklingError):
            conn.send_bytes(pickle.dumps((BROKEN, str(exc), traceback.format_exc()), pickle.HIGHEST_PROTOCOL))
    except BaseException as exc:  # noqa: BLE001 (whatever the env raises is reported, then the worker ends)
        reply = (ERROR, raised(doing[0], exc), traceback.format_exc())
        with contextlib.suppress(OSError, pickle.PicklingError):
            conn.send_bytes(pickle.dumps(reply, pickle.HIGHEST_PROTOCOL))
    finally:
        if env is not None:  # a failing close is a warning: it must not hide a real failure
            close_env(env, f"env {index}")


def _serve(index: int, env: gym.Env, conn: Any, views: tuple[np.ndarray, ...], parent_pid: int,
           doing: list[str]) -> None:
    """The command loop of a worker: results go to row ``index`` of the shared arrays, a short reply to the pipe."""
    obs, next_obs, reward, terminated, truncated = views
    # the observation space's shape (a row of the shared arrays; a masked observation's dict: the wrapper that
    # encodes it checks its mask, and a row write its observation)
    shape = obs.shape[1:] if isinstance(obs, np.ndarray) else None
    while True:
        if not conn.poll(_PARENT_CHECK_S):
            if os.getppid() != parent_pid:  # orphaned (the main process was killed): leave
                return
            continue
        cmd, arg = conn.recv()
        if cmd == STEP:
            doing[0] = "step"
            o, r, te, tr, info = _checked_outputs(env.step(arg), index, shape)
            put_obs(next_obs, index, o, "step")
            reward[index], terminated[index], truncated[index] = r, te, tr
            if te or tr:
                conn.send_bytes(_done_message(info, index))
                doing[0] = "reset"
                put_obs(obs, index, _first_obs(env.reset(), index, shape))
            conn.send_bytes(b"")
        elif cmd == RESET:
            doing[0] = "reset"
            if arg is not None:
                env.action_space.seed(arg)
            put_obs(obs, index, _first_obs(env.reset(seed=arg), index, shape))
            conn.send_bytes(b"")
        else:
            return


def _checked_outputs(result: Any, index: int, shape: tuple[int, ...] | None) -> tuple[Any, Any, bool, bool, Any]:
    """A step's ``(obs, reward, terminated, truncated, info)`` once each fits gymnasium's API; an :class:`EnvError`
    naming env ``index`` where one does not (raised here, not by the env, so the worker reports it as BROKEN)."""
    o, r, te, tr, info = checked_step(result, index)
    check_obs_shape(o, shape, index, "step")
    try:
        return o, one_reward(r), one_flag(te, "terminated"), one_flag(tr, "truncated"), info
    except ValueError as exc:
        raise EnvError(f"env {index}: {exc}") from None


def _done_message(info: Any, index: int) -> bytes:
    """The pickled ``(DONE, info)`` of an episode's last step; an info that cannot be pickled is an
    :class:`EnvError` (reported as BROKEN: every episode's end would fail the same way, so no restart would mend
    it)."""
    try:
        return pickle.dumps((DONE, info), pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 (pickling raises PicklingError, AttributeError, TypeError, ...)
        raise EnvError(f"env {index}'s step gave an info that cannot be sent to the main process "
                       f"({type(exc).__name__}: {exc}): an episode's last info goes through a pipe, so its values must "
                       f"be picklable (or use env.manager.type='base')") from None


def _first_obs(result: Any, index: int, shape: tuple[int, ...] | None) -> Any:
    obs = checked_reset(result, index)
    check_obs_shape(obs, shape, index, "reset")
    return obs


class Worker:
    """Main-process handle of one worker: its process and our end of its pipe."""

    def __init__(self, process: Any, conn: Any) -> None:
        self.process, self.conn = process, conn

    def stop(self, timeout: float = 0.0) -> None:
        """Kill the process (after ``timeout`` s to exit on its own), reap it, close the pipe."""
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()

    def cause_of_death(self) -> str:
        """``died (...)`` with the exit code or signal, once the process has ended."""
        self.process.join(1.0)
        code = self.process.exitcode
        if code is None:
            return "closed its pipe"
        if code < 0:
            try:
                return f"died (killed by {signal.Signals(-code).name})"
            except ValueError:
                return f"died (killed by signal {-code})"
        return f"died (exit code {code})"


def shutdown(workers: list[Worker | None]) -> None:
    """Ask every worker to close, give them ``_CLOSE_WAIT_S`` together, then kill what is left and reap all."""
    for w in workers:
        if w is not None:
            with contextlib.suppress(OSError):
                w.conn.send((CLOSE, None))
    deadline = time.monotonic() + _CLOSE_WAIT_S
    for w in workers:
        if w is not None:
            w.stop(max(0.0, deadline - time.monotonic()))
    workers[:] = [None] * len(workers)

"""Env managers: N gymnasium envs stepped as one batch. ``EnvManager`` holds what every manager shares (seeding,
episode statistics, the auto-reset bookkeeping, closing); ``base`` steps the envs in this process."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.data.batch import non_finite_rows
from ding_lite.envs.actions import action_to_env
from ding_lite.envs.env_outputs import (
    GYMNASIUM_API,
    NON_FINITE_ADVICE,
    check_obs_shape,
    checked_reset,
    checked_step,
    close_env,
    copied_obs,
    flag_column,
    observation_array,
    put_obs,
    raised,
    reward_column,
    stacked_obs,
)
from ding_lite.envs.manager_types import EnvManagerLike, EpisodeEnd, StepResult, episode_quota
from ding_lite.envs.variations import VariationSchedule
from ding_lite.errors import ConfigError, DingLiteError, EnvError
from ding_lite.registry import ENV_MANAGER_REGISTRY

# the types every manager and its readers share live in envs/manager_types.py; named here too, where they were first
__all__ = ["BaseEnvManager", "EnvManager", "EnvManagerLike", "EpisodeEnd", "StepResult", "episode_quota"]


class EnvManager:
    """What every env manager shares: seeding, the current batched observation, per-env episode return and length,
    auto-reset bookkeeping after a step, and closing (idempotent, also as a context manager).

    A subclass builds its envs, calls ``super().__init__`` with the spaces, and implements :meth:`reset`,
    :meth:`step` (ending in :meth:`_finish_step`), :meth:`_reset_one`, :meth:`_reset_running` and :meth:`_close`.
    """

    config: dict[str, Any] = dict(type=None)

    def __init__(self, env_num: int, observation_space: gym.Space, action_space: gym.Space,
                 cfg: Mapping[str, Any] | None = None) -> None:
        self.cfg = cfg or {}
        self.env_num = env_num
        self.observation_space = observation_space
        self.action_space = action_space
        self._seed: int | None = None  # seed of the next reset() (consumed by it)
        self._obs: np.ndarray | None = None
        self._pending: Any = None  # actions sent (send) and not yet stepped (recv)
        self._ep_return = np.zeros(env_num, dtype=np.float64)
        self._ep_length = np.zeros(env_num, dtype=np.int64)
        self._variations = VariationSchedule(env_num)  # with env.variations: tags the episodes truncate() cuts
        self.closed = False

    @property
    def restart_count(self) -> int:
        """Env restarts after worker failures so far (always 0 for managers that cannot restart)."""
        return 0

    def seed(self, seed: int) -> None:
        """Seed env ``i`` with ``seed + i`` at the next :meth:`reset`."""
        self._seed = seed

    def _take_seeds(self) -> list[int | None]:
        """Seeds of the reset being done now (env i: seed + i, or None), consuming the pending seed: later resets
        continue each env's own RNG stream."""
        seed, self._seed = self._seed, None
        self._variations.reset_all(seeded=seed is not None)
        return [None if seed is None else seed + i for i in range(self.env_num)]

    @property
    def obs(self) -> np.ndarray:
        """The current batched observation (reset first if needed)."""
        if self._obs is None:
            return self.reset()
        return self._obs

    def reset(self) -> np.ndarray:
        """Reset every env; returns the batched first observation (N, *obs_shape)."""
        raise NotImplementedError(f"{type(self).__name__} must implement reset")

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env with its action; finished envs are reset. Returns a :class:`StepResult`."""
        raise NotImplementedError(f"{type(self).__name__} must implement step")

    @property
    def groups(self) -> list[slice]:
        """Rows of envs that step apart from the others (:meth:`send` / :meth:`recv`): with more than one, the sample
        collector computes one group's actions while the others step (envpool's ``pipeline_groups``)."""
        return [slice(0, self.env_num)]

    def send(self, group: int, actions: np.ndarray) -> None:
        """Start a step of the envs of ``groups[group]``. Here, with one group, the step runs at :meth:`recv`;
        managers that step groups apart override both."""
        self._pending = actions

    def recv(self, group: int) -> StepResult:
        """Finish the step :meth:`send` started: a :class:`StepResult` of that group's rows (env indices in
        ``episodes`` are global)."""
        actions, self._pending = self._pending, None
        return self.step(actions)

    def truncate(self, envs: Sequence[int]) -> tuple[Any, list[EpisodeEnd]]:
        """End the running episodes of ``envs`` now, as a time limit would (truncated, not terminated), and start
        their next ones: the step cap of evaluations and demo collection
        (:func:`~ding_lite.worker.episodes.run_episodes`), which an env's own time limit cannot be (it would cut
        training episodes too). Returns the batched observation to act on next (the rows of ``envs`` the first
        observations of their new episodes) and one :class:`EpisodeEnd` per env: return and length so far,
        ``terminated`` False, and, as the env gave no final info, an info holding only the episode's variation where
        ``env.variations`` is set (:meth:`follow_variations`), else empty."""
        obs = copied_obs(self.obs)  # (a masked observation's dict of arrays: envs/spaces.py)
        envs = [int(i) for i in envs]
        ends = [EpisodeEnd(i, float(self._ep_return[i]), int(self._ep_length[i]), False, self._variations.tags(i))
                for i in envs]
        self._variations.next_episode(envs)  # (before the resets: a worker restarted there starts a fresh schedule)
        for i, first in zip(envs, self._reset_running(envs), strict=True):
            put_obs(obs, i, first)
            self._ep_return[i] = 0.0
            self._ep_length[i] = 0
        self._obs = obs
        return obs, ends

    def follow_variations(self, ids: list[int]) -> None:
        """The variation ids its envs play (``env.variations``, set by the builder): a cut episode is tagged too."""
        self._variations.follow(ids)

    def _env_actions(self, actions: np.ndarray) -> list[Any]:
        """A policy's batched actions as each env's ``step`` takes them, one per env (checked here, before any env
        steps: a policy's bad actions are not an env's failure)."""
        env_actions = action_to_env(actions, self.action_space)
        if len(env_actions) != self.env_num:  # else the envs without an action would look hung
            raise ValueError(f"step() got {len(env_actions)} actions for {self.env_num} envs")
        return env_actions

    def _reset_one(self, i: int) -> np.ndarray:
        """First observation of env ``i``'s next episode (after its episode ended or was interrupted)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _reset_one")

    def _reset_running(self, envs: list[int]) -> list[np.ndarray]:
        """Reset ``envs``, whose episodes are still running (:meth:`truncate`); their first observations."""
        raise NotImplementedError(f"{type(self).__name__} must implement _reset_running")

    def _close(self) -> None:
        """Release the envs (called once by :meth:`close`)."""
        raise NotImplementedError(f"{type(self).__name__} must implement _close")

    def _start_episodes(self, obs: np.ndarray) -> np.ndarray:
        """Bookkeeping of a full reset: ``obs`` becomes the current observation, all episode stats restart."""
        self._check_first_obs(obs)
        self._obs = obs
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        return obs

    def _finish_step(self, next_obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                     truncated: np.ndarray, finished: list[tuple[int, dict]],
                     interrupted: np.ndarray | None = None) -> StepResult:
        """Update episode stats, report finished episodes, and put each finished or interrupted env's reset
        observation into the next ``obs``. ``finished`` lists ``(env index, final info)`` of ended episodes."""
        result = self._finish_rows(slice(0, self.env_num), next_obs, reward, terminated, truncated, finished,
                                   interrupted)
        self._obs = result.obs
        return result

    def _finish_rows(self, rows: slice, next_obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                     truncated: np.ndarray, finished: list[tuple[int, dict]],
                     interrupted: np.ndarray | None = None) -> StepResult:
        """:meth:`_finish_step` for the envs ``rows`` only (the arrays hold those rows; env indices in ``finished``
        are global); leaves the current observation to the caller."""
        self._ep_return[rows] += reward
        self._ep_length[rows] += 1
        obs = next_obs
        episodes: list[EpisodeEnd] = []
        if finished or interrupted is not None:
            obs = copied_obs(next_obs)  # (a masked observation's dict of arrays: envs/spaces.py)
            for i, info in finished:
                if not isinstance(info, dict):
                    self.close()
                    raise EnvError(f"env {i}'s step gave info={info!r}, not a dict: {GYMNASIUM_API}")
                episode_return = float(self._ep_return[i])
                if not math.isfinite(episode_return):  # per episode, not per step: the collector checks its columns
                    self.close()
                    raise EnvError(f"env {i}'s episode of {int(self._ep_length[i])} steps has a return of "
                                   f"{episode_return:g}: a reward held NaN or inf; {NON_FINITE_ADVICE}")
                episodes.append(EpisodeEnd(i, episode_return, int(self._ep_length[i]),
                                           bool(terminated[i - rows.start]), info))
            restarted = [i for i, _ in finished]
            self._variations.next_episode(restarted)
            if interrupted is not None:  # the cut episode is dropped from the stats, not reported as ended
                fresh = (np.flatnonzero(interrupted) + rows.start).tolist()
                self._variations.fresh(fresh)  # a restarted worker's env starts its schedule again
                restarted += fresh
            for i in restarted:
                put_obs(obs, i - rows.start, self._reset_one(i))
                self._ep_return[i] = 0.0
                self._ep_length[i] = 0
        return StepResult(obs, next_obs, reward, terminated, truncated, episodes, interrupted)

    def _check_first_obs(self, obs: np.ndarray) -> None:
        """An :class:`EnvError` naming the first env whose first observation of a full reset holds NaN or inf (those
        of later episodes, as every step's values, are checked by the collector, once per collect)."""
        array = observation_array(obs)
        bad = non_finite_rows(array)
        if bad is None:
            return
        i = int(np.flatnonzero(bad)[0])
        self.close()
        raise EnvError(f"env {i}'s first observation holds {'NaN' if np.isnan(array[i]).any() else 'inf'} at its "
                       f"reset: {NON_FINITE_ADVICE}")

    def close(self) -> None:
        """Close every env (idempotent)."""
        if self.closed:
            return
        self.closed = True
        self._close()

    def __enter__(self) -> EnvManager:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


@ENV_MANAGER_REGISTRY.register("base")
class BaseEnvManager(EnvManager):
    """Steps N envs in this process and batches their results.

    Finished envs are reset automatically; the final observation is kept in ``StepResult.next_obs``. Running episode
    returns and lengths are tracked per env.

    Args:
        env_fns: one callable per env, each returning a ``gymnasium.Env``.
        cfg: the ``env.manager`` config section (unused keys are ignored by this manager).
    """

    config: dict[str, Any] = dict(
        type="base",
    )

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], cfg: Mapping[str, Any] | None = None) -> None:
        if len(env_fns) == 0:
            raise ConfigError("an env manager needs at least one env (env_num was 0): set env.collector_env_num and "
                              "env.evaluator_env_num to 1 or more")
        self._envs = [fn() for fn in env_fns]
        super().__init__(len(self._envs), self._envs[0].observation_space, self._envs[0].action_space, cfg)
        self._env_steps = [env.step for env in self._envs]
        self._obs_shape = self.observation_space.shape  # what every observation must have (None: not a Box)

    def reset(self) -> np.ndarray:
        """Reset every env; returns the batched first observation (N, *obs_shape)."""
        first = []
        for i, (env, seed) in enumerate(zip(self._envs, self._take_seeds(), strict=True)):
            if seed is not None:
                env.action_space.seed(seed)
            try:
                result = env.reset(seed=seed)
            except Exception as exc:
                raise _env_failed(i, "reset", exc) from exc
            first.append(checked_reset(result, i))
        return self._start_episodes(stacked_obs(first, self.observation_space, "reset"))

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env with its action; finished envs are reset. Returns a :class:`StepResult`."""
        if self._obs is None:
            self.reset()
        results: list[Any] = []
        env_actions = self._env_actions(actions)
        try:
            for env_step, a in zip(self._env_steps, env_actions, strict=True):
                results.append(env_step(a))
        except Exception as exc:
            raise _env_failed(len(results), "step", exc) from exc
        # one C-level conversion per column (np.array of a tuple is cheaper than np.stack, and than N row writes)
        try:
            obs_list, reward_list, term_list, trunc_list, _ = zip(*results, strict=True)
        except (TypeError, ValueError):  # not every step gave 5 values (None is not even a sequence)
            for i, result in enumerate(results):
                checked_step(result, i)
            raise
        next_obs = stacked_obs(obs_list, self.observation_space, "step")
        reward = reward_column(reward_list)
        terminated = flag_column(term_list, "terminated")
        truncated = flag_column(trunc_list, "truncated")
        finished: list[tuple[int, dict]] = []
        if any(term_list) or any(trunc_list):
            finished = [(i, r[4]) for i, r in enumerate(results) if r[2] or r[3]]
        return self._finish_step(next_obs, reward, terminated, truncated, finished)

    def _reset_one(self, i: int) -> np.ndarray:
        try:
            result = self._envs[i].reset()
        except Exception as exc:
            raise _env_failed(i, "reset", exc) from exc
        obs = checked_reset(result, i)
        if getattr(obs, "shape", None) != self._obs_shape:  # the common case costs an attribute read
            check_obs_shape(obs, self._obs_shape, i, "reset")
        return obs

    def _reset_running(self, envs: list[int]) -> list[np.ndarray]:
        return [self._reset_one(i) for i in envs]  # a reset in this process needs no ended episode

    def _close(self) -> None:
        for i, env in enumerate(self._envs):
            close_env(env, f"env {i}")


def _env_failed(i: int, what: str, exc: Exception) -> Exception:
    """What env ``i``'s ``what`` ('step' or 'reset') raising ``exc`` becomes in an in-process manager: ding_lite's own
    errors as they are, anything else an :class:`EnvError` naming the env, the exception and where it was raised
    (``raise ... from exc`` keeps the traceback for a debugger)."""
    if isinstance(exc, DingLiteError):
        return exc
    return EnvError(f"env {i}'s {raised(what, exc)}; the base env manager stops there (env.manager.type="
                    f"'subprocess' restarts a failing env, see docs/env_managers.md)")

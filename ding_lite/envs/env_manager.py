"""In-process env manager: N gymnasium envs stepped in a loop, results returned as batched arrays."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np

from ding_lite.errors import ConfigError
from ding_lite.registry import ENV_MANAGER


class EpisodeEnd(NamedTuple):
    """An episode that finished during a step (one per finished episode, not per step)."""

    env_id: int
    episode_return: float
    episode_length: int
    terminated: bool
    info: dict  # the env's info dict of the final step


class StepResult(NamedTuple):
    """Batched result of one step of all envs.

    ``obs`` is what to act on next: for an env whose episode just ended it is already the reset observation, and the
    episode's final observation is in ``next_obs`` (needed to bootstrap a truncated episode).
    """

    obs: np.ndarray  # (N, *obs_shape) next observation to act on (reset obs where an episode ended)
    next_obs: np.ndarray  # (N, *obs_shape) observation after the step (final obs where an episode ended)
    reward: np.ndarray  # (N,) float32
    terminated: np.ndarray  # (N,) bool
    truncated: np.ndarray  # (N,) bool
    episodes: list[EpisodeEnd]  # episodes that ended in this step


def action_to_env(actions: np.ndarray, space: gym.Space) -> list[Any]:
    """Convert a batch of policy actions to what each env's ``step`` takes (python ints, clipped boxes)."""
    if isinstance(space, gym.spaces.Discrete):
        return np.asarray(actions).reshape(-1).tolist()
    if isinstance(space, gym.spaces.Box):
        # ALGORITHMS.md (PPO): the env gets the clipped action, the policy keeps the unclipped sample for log-probs.
        clipped = np.clip(np.asarray(actions, dtype=space.dtype), space.low, space.high)
        return list(clipped.reshape((len(clipped),) + space.shape))
    return list(actions)


@ENV_MANAGER.register("base")
class BaseEnvManager:
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
        self.cfg = cfg or {}
        self._envs = [fn() for fn in env_fns]
        self.env_num = len(self._envs)
        self.observation_space = self._envs[0].observation_space
        self.action_space = self._envs[0].action_space
        self._seed: int | None = None
        self._obs: np.ndarray | None = None
        self._ep_return = np.zeros(self.env_num, dtype=np.float64)
        self._ep_length = np.zeros(self.env_num, dtype=np.int64)
        self.closed = False

    def seed(self, seed: int) -> None:
        """Seed env ``i`` with ``seed + i`` at the next :meth:`reset`."""
        self._seed = seed

    @property
    def obs(self) -> np.ndarray:
        """The current batched observation (reset first if needed)."""
        if self._obs is None:
            return self.reset()
        return self._obs

    def reset(self) -> np.ndarray:
        """Reset every env; returns the batched first observation (N, *obs_shape)."""
        first = []
        for i, env in enumerate(self._envs):
            seed = None if self._seed is None else self._seed + i
            if seed is not None:
                env.action_space.seed(seed)
            obs, _ = env.reset(seed=seed)
            first.append(obs)
        self._seed = None  # later resets continue each env's own RNG stream
        self._obs = np.stack(first)
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        return self._obs

    def step(self, actions: np.ndarray) -> StepResult:
        """Step every env with its action; finished envs are reset. Returns a :class:`StepResult`."""
        if self._obs is None:
            self.reset()
        n = self.env_num
        next_obs = np.empty_like(self._obs)
        reward = np.empty(n, dtype=np.float32)
        terminated = np.empty(n, dtype=bool)
        truncated = np.empty(n, dtype=bool)
        finished: list[tuple[int, dict]] = []
        for i, (env, action) in enumerate(zip(self._envs, action_to_env(actions, self.action_space), strict=False)):
            o, r, te, tr, info = env.step(action)
            next_obs[i] = o
            reward[i] = r
            terminated[i] = te
            truncated[i] = tr
            if te or tr:
                finished.append((i, info))
        return self._finish_step(next_obs, reward, terminated, truncated, finished)

    def _finish_step(self, next_obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray,
                     truncated: np.ndarray, finished: list[tuple[int, dict]]) -> StepResult:
        self._ep_return += reward
        self._ep_length += 1
        obs = next_obs
        episodes: list[EpisodeEnd] = []
        if finished:
            obs = next_obs.copy()
            for i, info in finished:
                episodes.append(EpisodeEnd(i, float(self._ep_return[i]), int(self._ep_length[i]),
                                           bool(terminated[i]), info))
                obs[i] = self._reset_one(i)
                self._ep_return[i] = 0.0
                self._ep_length[i] = 0
        self._obs = obs
        return StepResult(obs, next_obs, reward, terminated, truncated, episodes)

    def _reset_one(self, i: int) -> np.ndarray:
        obs, _ = self._envs[i].reset()
        return obs

    def close(self) -> None:
        """Close every env (idempotent)."""
        if self.closed:
            return
        self.closed = True
        for env in self._envs:
            env.close()

    def __enter__(self) -> BaseEnvManager:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

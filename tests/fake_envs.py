"""Tiny deterministic gymnasium envs for worker and env-manager tests (helpers, not tests)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np


class CountingEnv(gym.Env):
    """Episode ``k`` (from 0, counted since the last seeded reset) lasts ``base_length + k`` steps.

    obs = ``[tag + k, t]`` (t: steps taken in the episode); reward = ``1 + action``; the episode ends by termination,
    or by truncation with ``truncate=True``. A seeded reset starts the episode count again, so evaluations with the
    same seeds see the same episodes. ``actions`` records every action the env received.
    """

    def __init__(self, base_length: int, tag: float = 0.0, truncate: bool = False) -> None:
        self.base_length = base_length
        self.tag = tag
        self.truncate = truncate
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.episode = -1
        self.t = 0
        self.actions: list[Any] = []

    def _obs(self) -> np.ndarray:
        return np.array([self.tag + self.episode, self.t], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.episode = 0 if seed is not None else self.episode + 1
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.actions.append(action)
        self.t += 1
        end = self.t >= self.base_length + self.episode
        return self._obs(), 1.0 + float(action), end and not self.truncate, end and self.truncate, {"t": self.t}


def counting_env_fns(base_lengths: Sequence[int], truncate: bool = False) -> list:
    """Env constructors for a manager: env i has ``base_lengths[i]`` and tag ``100 * i``."""
    return [lambda n=n, i=i: CountingEnv(n, tag=100.0 * i, truncate=truncate) for i, n in enumerate(base_lengths)]


class RecordActions(gym.Wrapper):
    """Keeps every action the wrapped env received (to check what an env manager passes on)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.actions: list[Any] = []

    def step(self, action: Any):
        self.actions.append(np.array(action, copy=True))
        return self.env.step(action)


class CoinLengthEnv(gym.Env):
    """Each episode lasts ``short`` or ``long`` steps, a fair coin of the env's RNG at each reset, with reward 1 per
    step: a return equals the episode's length, so long episodes are the good ones. Under a step cap ``c`` (short
    <= c < long) an episode's capped return is ``short`` or ``c`` with probability 1/2 each, mean ``(short + c) / 2``:
    an evaluation whose stopping rule depends on outcomes (an env that plays fewer episodes after a long one) is
    biased away from it."""

    def __init__(self, short: int = 2, long: int = 200) -> None:
        self.short, self.long = short, long
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.length = self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.length, self.t = (self.long if self.np_random.random() < 0.5 else self.short), 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.array([self.t], dtype=np.float32), 1.0, self.t >= self.length, False, {}

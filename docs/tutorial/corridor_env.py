"""A custom env type for docs/tutorial_custom_env.md: walk right along a corridor to the goal cell."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.errors import ConfigError
from ding_lite.registry import ENV_REGISTRY


@ENV_REGISTRY.register("corridor")
class CorridorEnv(gym.Env):
    """Cells 0 .. length-1; the agent starts in a random cell of the left half and moves left (action 0) or right
    (action 1). Reaching the last cell gives +1 and terminates; every other step costs ``step_penalty``; the episode
    is truncated after ``max_episode_steps``. The observation is the one-hot cell."""

    # Keys this env type adds to the env section (merged with the keys every env section has).
    config: dict[str, Any] = dict(
        length=8,  # number of cells (at least 2)
        step_penalty=0.01,  # reward of a step that does not reach the goal is -step_penalty
        max_episode_steps=50,  # time limit: the episode is truncated (not terminated) there
    )

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        # cfg is the compiled env section: every key of `config` is present.
        self.length = int(cfg["length"])
        self.step_penalty = float(cfg["step_penalty"])
        self.max_episode_steps = int(cfg["max_episode_steps"])
        self.observation_space = gym.spaces.Box(0.0, 1.0, shape=(self.length,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._cell = 0
        self._t = 0

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Called before any env is built or anything is written: reject values that cannot work."""
        if int(cfg["length"]) < 2:
            raise ConfigError(f"env.length must be at least 2, got {cfg['length']!r}")

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)  # seeds self.np_random when a seed is given
        self._cell = int(self.np_random.integers(0, self.length // 2))
        self._t = 0
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._cell = min(max(self._cell + (1 if int(action) == 1 else -1), 0), self.length - 1)
        self._t += 1
        terminated = self._cell == self.length - 1
        reward = 1.0 if terminated else -self.step_penalty
        truncated = not terminated and self._t >= self.max_episode_steps
        return self._obs(), reward, terminated, truncated, {}

    def _obs(self) -> np.ndarray:
        obs = np.zeros(self.length, dtype=np.float32)
        obs[self._cell] = 1.0
        return obs

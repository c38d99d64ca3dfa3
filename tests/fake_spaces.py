"""A tiny gymnasium env that observes a space of the test's choice (``kind``), registered as env type
``space_env`` for CLI tests (``env.import_names=['fake_spaces']``): a 4-cell corridor whose goal (reward 1) is the
last cell; action 1 moves right, 0 left. Its observation is the position, as the space ``kind`` holds it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.registry import ENV_REGISTRY

SPACES = {
    "discrete": gym.spaces.Discrete(4),
    "multi_binary": gym.spaces.MultiBinary(4),
    "multi_discrete": gym.spaces.MultiDiscrete([4, 2]),
    "tuple": gym.spaces.Tuple((gym.spaces.Discrete(4), gym.spaces.Box(0.0, 1.0, (1,), np.float32))),
    "text": gym.spaces.Text(8),
}


class Corridor(gym.Env):
    def __init__(self, kind: str = "discrete", length: int = 8) -> None:
        self.kind, self.length = kind, length
        self.observation_space = SPACES[kind]
        self.action_space = gym.spaces.Discrete(2)
        self.pos, self.t = 0, 0

    def _obs(self) -> Any:
        if self.kind == "discrete":
            return self.pos
        if self.kind == "multi_binary":
            return (np.arange(4) == self.pos).astype(np.int8)
        if self.kind == "multi_discrete":
            return np.array([self.pos, self.pos % 2])
        if self.kind == "tuple":
            return self.pos, np.array([self.t / self.length], dtype=np.float32)
        return "abc"

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        self.pos = int(np.clip(self.pos + (1 if int(action) == 1 else -1), 0, 3))
        goal = self.pos == 3
        return self._obs(), float(goal), goal, self.t >= self.length and not goal, {}


@ENV_REGISTRY.register("space_env")
class SpaceEnv:
    """``env=dict(type='space_env', kind='discrete')``."""

    config: dict[str, Any] = dict(kind="discrete")

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        return Corridor(str(cfg.get("kind", "discrete")))

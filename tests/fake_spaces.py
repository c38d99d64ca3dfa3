"""A tiny gymnasium env that observes a space of the test's choice (``kind``), registered as env type
``space_env`` for CLI tests (``env.import_names=['fake_spaces']``): a 4-cell corridor whose goal (reward 1) is the
last cell; action 1 moves right, 0 left (with ``action='box'``: a float64 ``Box(-1, 1, (1,))`` action, right when
positive; ``action='box2x2'``: a ``Box(-1, 1, (2, 2))`` action, right when its first entry is positive, and the env
asserts that each action it gets has that shape; ``action='discrete_start'``: ``Discrete(2, start=5)``, 6 moves
right, and the env asserts that each action is in its space). Its observation is the position, as the space
``kind`` holds it."""
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
    # PettingZoo's masked observation, in a single-agent env (envs/spaces.py); with a mask of 3 actions for the 2 of
    # the action space
    "masked": gym.spaces.Dict(observation=gym.spaces.Discrete(4), action_mask=gym.spaces.MultiBinary(2)),
    "masked_3": gym.spaces.Dict(observation=gym.spaces.Discrete(4), action_mask=gym.spaces.MultiBinary(3)),
    # Box observations in dtypes other than float32 / uint8 (hand-written envs often observe float64)
    "box_float64": gym.spaces.Box(0.0, 3.0, (1,), np.float64),
    "box_int64": gym.spaces.Box(0, 3, (1,), np.int64),
    "box_bool": gym.spaces.Box(0, 1, (4,), np.bool_),
    "box_scalar": gym.spaces.Box(0.0, 3.0, (), np.float32),  # one number, shape ()
}


class Corridor(gym.Env):
    def __init__(self, kind: str = "discrete", length: int = 8, action: str = "discrete") -> None:
        self.kind, self.length = kind, length
        self.observation_space = SPACES[kind]
        self.action_space: gym.Space = {
            "discrete": gym.spaces.Discrete(2),
            "box": gym.spaces.Box(-1.0, 1.0, (1,), np.float64),
            "box2x2": gym.spaces.Box(-1.0, 1.0, (2, 2), np.float32),
            "discrete_start": gym.spaces.Discrete(2, start=5),  # 5: left, 6: right
            "multi_discrete": gym.spaces.MultiDiscrete([2, 2]),
        }[action]
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
        if self.kind.startswith("box_"):
            space = self.observation_space
            value = np.arange(4) == self.pos if self.kind == "box_bool" else np.full(space.shape or (), self.pos)
            return value.astype(space.dtype)
        if self.kind.startswith("masked"):
            n = self.observation_space["action_mask"].n
            return {"observation": self.pos, "action_mask": np.ones(n, dtype=np.int8)}
        return "abc"

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.pos, self.t = 0, 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        if isinstance(self.action_space, gym.spaces.Box):
            assert np.shape(action) == self.action_space.shape, (np.shape(action), self.action_space.shape)
            right = float(np.asarray(action).reshape(-1)[0]) > 0
        else:
            assert self.action_space.contains(action), (action, self.action_space)
            right = int(action) == 1 + int(self.action_space.start)
        self.pos = int(np.clip(self.pos + (1 if right else -1), 0, 3))
        goal = self.pos == 3
        return self._obs(), float(goal), goal, self.t >= self.length and not goal, {}


@ENV_REGISTRY.register("space_env")
class SpaceEnv:
    """``env=dict(type='space_env', kind='discrete')``."""

    config: dict[str, Any] = dict(kind="discrete", action="discrete")

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        return Corridor(str(cfg.get("kind", "discrete")), action=str(cfg.get("action", "discrete")))

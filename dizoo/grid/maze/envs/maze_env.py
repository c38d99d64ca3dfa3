"""Procedurally generated grid mazes, one layout per level id: a cheap env family for GSL (docs/gsl.md).

Level ``k`` is drawn from ``numpy.random.default_rng(k)`` (``size``×``size`` cells, each a wall with probability
``wall_prob``, the start and goal two far-apart cells of one connected region), so a level id always gives the same
layout. The observation is the whole level, flattened: wall map, agent one-hot and goal one-hot (3·size² floats), so
one policy can in principle solve every level; solving many levels asks it to read paths out of the wall map, while a
specialist on a few levels only has to remember them.

Reward: +1 on reaching the goal (terminated, ``info['success']`` True) plus potential-based shaping
``shaping · (d_before − d_after)``, d the shortest-path distance to the goal (Ng et al. 1999: the optimal policy is
unchanged). Episodes are truncated after ``max_episode_steps``.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.errors import ConfigError
from ding_lite.registry import ENV

MOVES = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)])  # up, down, left, right


def bfs_distances(walls: np.ndarray, goal: tuple[int, int]) -> np.ndarray:
    """Shortest-path distance of every cell to ``goal`` (4-neighbour moves; -1 where unreachable or a wall)."""
    size = walls.shape[0]
    dist = np.full(walls.shape, -1, dtype=np.int64)
    dist[goal] = 0
    queue = deque([goal])
    while queue:
        r, c = queue.popleft()
        for dr, dc in MOVES:
            nr, nc = r + dr, c + dc
            if 0 <= nr < size and 0 <= nc < size and not walls[nr, nc] and dist[nr, nc] < 0:
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist


@lru_cache(maxsize=4096)
def make_level(level: int, size: int, wall_prob: float, min_distance: int) -> tuple[np.ndarray, tuple, np.ndarray]:
    """Walls (size, size) bool, start cell and distance map of level ``level`` (deterministic in its arguments)."""
    rng = np.random.default_rng(level)
    while True:
        walls = rng.random((size, size)) < wall_prob
        free = np.argwhere(~walls)
        if len(free) < 2:
            continue
        goal = tuple(int(x) for x in free[rng.integers(len(free))])
        dist = bfs_distances(walls, goal)  # type: ignore[arg-type]
        if dist.max() >= min_distance:
            far = np.argwhere(dist == dist.max())
            start = tuple(int(x) for x in far[rng.integers(len(far))])
            return walls, start, dist


@ENV.register("maze")
class MazeEnv(gym.Env):
    """A family of ``num_levels`` mazes; the level (variation) of an episode comes from ``reset(options=...)``.

    Config: ``env=dict(type='maze', import_names=['dizoo.grid.maze.envs.maze_env'], variations=50)``.
    """

    config: dict[str, Any] = dict(
        num_levels=200,  # levels the family offers (variation ids 0..num_levels-1)
        size=7,  # the grid is size x size cells
        wall_prob=0.3,  # chance that a cell is a wall
        min_distance=8,  # shortest start-goal path of a level, at least
        shaping=0.1,  # potential-based shaping weight on the shortest-path distance (0: sparse reward)
        max_episode_steps=40,  # truncation
    )

    @classmethod
    def num_variations(cls, cfg: Mapping[str, Any]) -> int:
        """Number of levels (variation ids are 0..num_levels-1)."""
        return int(cfg.get("num_levels", cls.config["num_levels"]))

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        cfg = {**self.config, **(cfg or {})}
        self.size = int(cfg["size"])
        if self.size < 2:
            raise ConfigError(f"env.size must be at least 2, got {self.size}")
        self.wall_prob, self.min_distance = float(cfg["wall_prob"]), int(cfg["min_distance"])
        self.shaping, self.max_steps = float(cfg["shaping"]), int(cfg["max_episode_steps"])
        self.num_levels = int(cfg["num_levels"])
        n = self.size * self.size
        self.observation_space = gym.spaces.Box(0.0, 1.0, (3 * n,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self.level = 0
        self._load(0)

    def _load(self, level: int) -> None:
        if not 0 <= level < self.num_levels:
            raise ValueError(f"maze level {level} out of range 0..{self.num_levels - 1}")
        self.level = level
        self.walls, self.start, self.dist = make_level(level, self.size, self.wall_prob, self.min_distance)
        self._base = np.zeros(self.observation_space.shape, dtype=np.float32)
        n = self.size * self.size
        self._base[:n] = self.walls.reshape(-1)
        goal = np.argwhere(self.dist == 0)[0]
        self._base[2 * n + goal[0] * self.size + goal[1]] = 1.0

    def _obs(self) -> np.ndarray:
        obs = self._base.copy()
        obs[self.size * self.size + self.pos[0] * self.size + self.pos[1]] = 1.0
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        level = (options or {}).get("variation", self.level)
        if level != self.level:
            self._load(int(level))
        self.pos = self.start
        self.t = 0
        return self._obs(), {"level": self.level}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        r, c = self.pos[0] + MOVES[int(action)][0], self.pos[1] + MOVES[int(action)][1]
        before = self.dist[self.pos]
        if 0 <= r < self.size and 0 <= c < self.size and not self.walls[r, c]:
            self.pos = (int(r), int(c))
        self.t += 1
        success = bool(self.dist[self.pos] == 0)
        reward = self.shaping * float(before - self.dist[self.pos]) + (1.0 if success else 0.0)
        truncated = not success and self.t >= self.max_steps
        return self._obs(), reward, success, truncated, {"success": success, "level": self.level}

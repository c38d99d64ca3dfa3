"""Procedurally generated grid mazes, one layout per level id: a cheap env family for GSL (docs/gsl.md).

Level ``k`` is drawn from ``numpy.random.default_rng(k)`` (``size``×``size`` cells, each a wall with probability
``wall_prob``, the start and goal two far-apart cells of one connected region), so a level id always gives the same
layout. The observation is the whole level, flattened: wall map, agent one-hot and goal one-hot (3·size² floats), so
one policy can in principle solve every level; solving many levels asks it to read paths out of the wall map, while a
specialist on a few levels only has to remember them.

Family ``'trap'`` (``family='trap'``): every ``hard_every``-th level (ids ``hard_every-1, 2·hard_every-1, ...``) is a
trap, the start at most ``hard_max_manhattan`` cells from the goal as the crow flies but walled off from it, its
shortest path ``hard_min_distance`` to ``hard_max_distance`` steps (a detour); on the other levels the shortest path
is a straight staircase (its length equals the Manhattan distance, at least ``min_distance``), so walking towards the
goal always works there. With Manhattan shaping a generalist learns "walk towards the goal" from the many easy levels
and runs into the wall on the traps; solving a trap means exploring a detour, which a specialist on a few traps can
afford and a generalist spreading its samples over all levels rarely does.

Reward: +1 on reaching the goal (terminated, ``info['success']`` True) plus potential-based shaping
``shaping · (d_before − d_after)``, d the shortest-path distance to the goal, or the Manhattan distance with
``shaping_distance='manhattan'`` (Ng et al. 1999: either way the optimal policy is unchanged; the Manhattan one agrees
with the shortest path on staircases and lures the agent into the wall on traps).
Episodes are truncated after ``max_episode_steps``.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.errors import ConfigError
from ding_lite.registry import ENV_REGISTRY

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


def draw_layout(rng: np.random.Generator, size: int, wall_prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Random walls (each cell with ``wall_prob``) and a goal on a free cell, redrawn until two cells are free; returns
    the walls and the distance map to the goal (0 at the goal)."""
    while True:
        walls = rng.random((size, size)) < wall_prob
        free = np.argwhere(~walls)
        if len(free) >= 2:
            goal = tuple(int(x) for x in free[rng.integers(len(free))])
            return walls, bfs_distances(walls, goal)  # type: ignore[arg-type]


@lru_cache(maxsize=4096)
def make_level(level: int, size: int, wall_prob: float, min_distance: int) -> tuple[np.ndarray, tuple, np.ndarray]:
    """Walls (size, size) bool, start cell and distance map of level ``level`` (deterministic in its arguments)."""
    rng = np.random.default_rng(level)
    while True:
        walls, dist = draw_layout(rng, size, wall_prob)
        if dist.max() >= min_distance:
            far = np.argwhere(dist == dist.max())
            start = tuple(int(x) for x in far[rng.integers(len(far))])
            return walls, start, dist


def is_trap_level(level: int, hard_every: int) -> bool:
    """Whether ``level`` is a trap of the ``'trap'`` family (every ``hard_every``-th id; never when it is 0)."""
    return hard_every > 0 and level % hard_every == hard_every - 1


@lru_cache(maxsize=4096)
def make_trap_level(level: int, size: int, wall_prob: float, min_distance: int, hard_every: int,
                    hard_max_manhattan: int, hard_min_distance: int,
                    hard_max_distance: int) -> tuple[np.ndarray, tuple, np.ndarray]:
    """Level ``level`` of the ``'trap'`` family (module docstring): walls, start and distance map, deterministic in
    the arguments. A trap's start is within ``hard_max_manhattan`` of the goal with a shortest path of
    ``hard_min_distance`` to ``hard_max_distance`` steps; another level's start has a shortest path equal to its
    Manhattan distance, at least ``min_distance``. Layouts are drawn until one has such a start."""
    rng = np.random.default_rng(level)
    trap = is_trap_level(level, hard_every)
    rows, cols = np.indices((size, size))
    for _ in range(100000):
        walls, dist = draw_layout(rng, size, wall_prob)
        goal = tuple(int(x) for x in np.argwhere(dist == 0)[0])
        manhattan = np.abs(rows - goal[0]) + np.abs(cols - goal[1])
        if trap:
            ok = (dist >= hard_min_distance) & (dist <= hard_max_distance) & (manhattan <= hard_max_manhattan)
        else:
            ok = (dist >= min_distance) & (dist == manhattan)
        starts = np.argwhere(ok)
        if len(starts):
            return walls, tuple(int(x) for x in starts[rng.integers(len(starts))]), dist
    raise ConfigError(f"maze level {level}: no {'trap' if trap else 'staircase'} layout found in 100000 draws; lower "
                      f"env.hard_min_distance / env.min_distance or raise env.size")


@ENV_REGISTRY.register("maze")
class MazeEnv(gym.Env):
    """A family of ``num_levels`` mazes; the level (variation) of an episode comes from ``reset(options=...)``.

    Config: ``env=dict(type='maze', import_names=['dizoo.grid.maze.envs.maze_env'], variations=50)``.
    """

    config: dict[str, Any] = dict(
        num_levels=200,  # levels the family offers (variation ids 0..num_levels-1)
        size=7,  # the grid is size x size cells
        wall_prob=0.3,  # chance that a cell is a wall
        min_distance=8,  # shortest start-goal path of a level, at least
        shaping=0.1,  # potential-based shaping weight on the distance to the goal (0: sparse reward)
        shaping_distance="path",  # the shaping's distance: 'path' (shortest path) or 'manhattan' (as the crow flies)
        max_episode_steps=40,  # truncation
        family="far",  # 'far': start and goal far apart; 'trap': staircases and every hard_every-th level a trap
        hard_every=5,  # 'trap' family: levels hard_every-1, 2*hard_every-1, ... are traps
        hard_max_manhattan=2,  # 'trap' family: a trap's start is at most this many cells from the goal (Manhattan)
        hard_min_distance=8,  # 'trap' family: ... and at least this many steps away along the shortest path
        hard_max_distance=10,  # 'trap' family: ... and at most this many
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
        self.shaping_distance = str(cfg["shaping_distance"])
        if self.shaping_distance not in ("path", "manhattan"):
            raise ConfigError(f"env.shaping_distance must be 'path' or 'manhattan', got {self.shaping_distance!r}")
        self.family = str(cfg["family"])
        if self.family not in ("far", "trap"):
            raise ConfigError(f"env.family must be 'far' or 'trap', got {self.family!r}")
        self.trap_args = (int(cfg["hard_every"]), int(cfg["hard_max_manhattan"]), int(cfg["hard_min_distance"]),
                          int(cfg["hard_max_distance"]))
        n = self.size * self.size
        self.observation_space = gym.spaces.Box(0.0, 1.0, (3 * n,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(4)
        self.level = 0
        self._load(0)

    def _load(self, level: int) -> None:
        if not 0 <= level < self.num_levels:
            raise ValueError(f"maze level {level} out of range 0..{self.num_levels - 1}")
        self.level = level
        if self.family == "trap":
            self.walls, self.start, self.dist = make_trap_level(level, self.size, self.wall_prob, self.min_distance,
                                                                *self.trap_args)
        else:
            self.walls, self.start, self.dist = make_level(level, self.size, self.wall_prob, self.min_distance)
        self._base = np.zeros(self.observation_space.shape, dtype=np.float32)
        n = self.size * self.size
        self._base[:n] = self.walls.reshape(-1)
        goal = np.argwhere(self.dist == 0)[0]
        rows, cols = np.indices(self.walls.shape)
        manhattan = np.abs(rows - goal[0]) + np.abs(cols - goal[1])
        self.potential = self.dist if self.shaping_distance == "path" else manhattan
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
        before = self.potential[self.pos]
        if 0 <= r < self.size and 0 <= c < self.size and not self.walls[r, c]:
            self.pos = (int(r), int(c))
        self.t += 1
        success = bool(self.dist[self.pos] == 0)
        reward = self.shaping * float(before - self.potential[self.pos]) + (1.0 if success else 0.0)
        truncated = not success and self.t >= self.max_steps
        return self._obs(), reward, success, truncated, {"success": success, "level": self.level}

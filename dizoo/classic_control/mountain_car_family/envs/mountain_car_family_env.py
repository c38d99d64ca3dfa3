"""MountainCar with physical parameters drawn per level id: a control-task env family for GSL (docs/gsl.md).

The dynamics are gymnasium's MountainCar-v0 (Moore 1990): ``v ← clip(v + (a − 1)·force − cos(3x)·gravity, ±0.07)``,
``x ← clip(x + v, −1.2, 0.6)``, the velocity zeroed at the left wall, the goal at ``x ≥ 0.5``; actions 0 push left,
1 no push, 2 push right. Level ``k`` draws its gravity, its engine force (as a ratio to gravity), the engine's
polarity and its start position from ``numpy.random.default_rng(k)``, so a level id always gives the same car and
hill. On a level of polarity −1 the engine is wired backwards: action 0 pushes right and action 2 left. The
observation is ``[x, v / 0.07, polarity · force / gravity, gravity / 0.0025]``, so one policy can tell the levels
apart and in principle solve every one (a constant action solves none of a family with both polarities).

Two kinds of level. A *direct* level's engine is stronger than the hill (``force / gravity`` in
``[direct_min_ratio, direct_max_ratio]``, above 1) and it starts in the valley: pushing right all the way reaches
the goal. Every ``hard_every``-th level (ids ``hard_every-1, 2·hard_every-1, ...``) is a *swing* level: its engine is
weaker than the hill (ratio in ``[swing_min_ratio, swing_max_ratio]``, below 1) and it starts up the right slope, so
pushing right stalls below the top; the car must first roll back left and then swing up (pushing along its velocity
does it). Levels are redrawn until pushing right does (direct) or does not (swing) reach the goal, and pushing along
the velocity does, within ``max_episode_steps``.

Reward: +1 on reaching the goal (terminated, ``info['success']`` True) plus potential-based shaping
``shaping · (x_after − x_before)`` on the position (Ng et al. 1999: the optimal policy is unchanged). On a direct
level the shaping points the way; on a swing level it lures the car into pushing right, as the Manhattan shaping of
the maze family's traps lures into the wall. Episodes are truncated after ``max_episode_steps``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.errors import ConfigError
from ding_lite.registry import ENV_REGISTRY

MAX_SPEED, MIN_X, MAX_X, GOAL_X = 0.07, -1.2, 0.6, 0.5  # gymnasium's MountainCar-v0
BASE_GRAVITY = 0.0025  # gymnasium's gravity; a level's is this times a factor in [1 - gravity_spread, 1 + ...]
LEFT, NOOP, RIGHT = 0, 1, 2


def physics_step(x: float, v: float, thrust: int, force: float, gravity: float) -> tuple[float, float]:
    """One step of MountainCar's dynamics (module docstring) with ``thrust`` 0 (left), 1 (none) or 2 (right);
    returns the new position and velocity."""
    v = min(max(v + (thrust - 1) * force - math.cos(3.0 * x) * gravity, -MAX_SPEED), MAX_SPEED)
    x = min(max(x + v, MIN_X), MAX_X)
    if x <= MIN_X and v < 0.0:
        v = 0.0
    return x, v


def steps_to_goal(x: float, force: float, gravity: float, policy: Callable[[float, float], int],
                  max_steps: int) -> int | None:
    """Steps that ``policy(x, v) -> thrust`` takes from ``x`` at rest to the goal (None: not within
    ``max_steps``)."""
    v = 0.0
    for t in range(max_steps):
        x, v = physics_step(x, v, policy(x, v), force, gravity)
        if x >= GOAL_X:
            return t + 1
    return None


def push_right(x: float, v: float) -> int:
    """The direct levels' solution: full throttle to the right."""
    return RIGHT


def push_along_velocity(x: float, v: float) -> int:
    """A solution of every level: push the way the car moves (right from rest), pumping energy into the swing."""
    return RIGHT if v >= 0.0 else LEFT


def is_swing_level(level: int, hard_every: int) -> bool:
    """Whether ``level`` is a swing level (every ``hard_every``-th id; none when ``hard_every`` is 0)."""
    return hard_every > 0 and level % hard_every == hard_every - 1


@lru_cache(maxsize=4096)
def make_level(level: int, settings: tuple[tuple[str, Any], ...]) -> tuple[float, float, float, int]:
    """``(gravity, force, start x, polarity)`` of level ``level`` (module docstring), deterministic in its
    arguments; ``settings`` are the env's config items (hashable)."""
    cfg = dict(settings)
    rng = np.random.default_rng(level)
    swing = is_swing_level(level, int(cfg["hard_every"]))
    kind = "swing" if swing else "direct"
    steps = int(cfg["max_episode_steps"])
    for _ in range(10000):
        gravity = BASE_GRAVITY * (1.0 + float(cfg["gravity_spread"]) * rng.uniform(-1.0, 1.0))
        ratio = rng.uniform(float(cfg[f"{kind}_min_ratio"]), float(cfg[f"{kind}_max_ratio"]))
        x0 = rng.uniform(*cfg[f"{kind}_start"])
        force = ratio * gravity
        direct = steps_to_goal(x0, force, gravity, push_right, steps) is not None
        polarity = -1 if bool(cfg["reversed_engines"]) and rng.random() < 0.5 else 1
        if direct != swing and steps_to_goal(x0, force, gravity, push_along_velocity, steps) is not None:
            return float(gravity), float(force), float(x0), polarity
    raise ConfigError(f"mountain_car_family level {level}: no {kind} level found in 10000 draws; widen "
                      f"env.{kind}_min_ratio..{kind}_max_ratio or env.{kind}_start, or raise env.max_episode_steps")


@ENV_REGISTRY.register("mountain_car_family")
class MountainCarFamilyEnv(gym.Env):
    """A family of ``num_levels`` MountainCars; the level (variation) of an episode comes from
    ``reset(options={'variation': id})``.

    Config: ``env=dict(type='mountain_car_family',
    import_names=['dizoo.classic_control.mountain_car_family.envs.mountain_car_family_env'], variations=50)``.
    """

    config: dict[str, Any] = dict(
        num_levels=200,  # levels the family offers (variation ids 0..num_levels-1)
        hard_every=5,  # levels hard_every-1, 2*hard_every-1, ... are swing levels (0: none)
        gravity_spread=0.2,  # a level's gravity is 0.0025 times a factor drawn in [1 - spread, 1 + spread]
        direct_min_ratio=1.1,  # direct levels: engine force / gravity drawn in [direct_min_ratio, direct_max_ratio]
        direct_max_ratio=1.6,  # (above 1: the engine beats the hill)
        direct_start=[-0.6, -0.4],  # direct levels: start position drawn in this range (the valley)
        swing_min_ratio=0.8,  # swing levels: engine force / gravity drawn in [swing_min_ratio, swing_max_ratio]
        swing_max_ratio=0.9,  # (below 1: pushing right stalls below the top)
        swing_start=[-0.3, -0.2],  # swing levels: start position drawn in this range (up the right slope)
        reversed_engines=True,  # half the levels (drawn per level) have their engine wired backwards
        shaping=1.0,  # potential-based shaping weight on the position (0: only the +1 at the goal)
        max_episode_steps=200,  # truncation
    )

    @classmethod
    def num_variations(cls, cfg: Mapping[str, Any]) -> int:
        """Number of levels (variation ids are 0..num_levels-1)."""
        return int(cfg.get("num_levels", cls.config["num_levels"]))

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Ranges that cannot make a level are config errors naming the key."""
        cfg = {**cls.config, **cfg}
        for kind in ("direct", "swing"):
            lo, hi = float(cfg[f"{kind}_min_ratio"]), float(cfg[f"{kind}_max_ratio"])
            if not 0.0 < lo <= hi < math.inf:  # an inf max was an OverflowError drawing the level's ratio
                raise ConfigError(f"env.{kind}_min_ratio={lo} and env.{kind}_max_ratio={hi} must satisfy "
                                  f"0 < min ≤ max < inf")
            start = cfg[f"{kind}_start"]
            if len(start) != 2 or not MIN_X <= float(start[0]) <= float(start[1]) < GOAL_X:
                raise ConfigError(f"env.{kind}_start={list(start)} must be [low, high] with {MIN_X} ≤ low ≤ high < "
                                  f"{GOAL_X}")
        if not 0.0 <= float(cfg["gravity_spread"]) < 1.0:
            raise ConfigError(f"env.gravity_spread must be in [0, 1), got {cfg['gravity_spread']!r}")
        for key in ("num_levels", "max_episode_steps"):
            if int(cfg[key]) < 1:
                raise ConfigError(f"env.{key} must be at least 1, got {cfg[key]!r}")

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        cfg = {**self.config, **(cfg or {})}
        self.check_config(cfg)
        self.num_levels, self.max_steps = int(cfg["num_levels"]), int(cfg["max_episode_steps"])
        self.shaping = float(cfg["shaping"])
        self._settings = tuple((k, tuple(cfg[k]) if isinstance(cfg[k], list) else cfg[k]) for k in sorted(self.config)
                               if k not in ("num_levels", "shaping"))
        low = np.array([MIN_X, -1.0, -np.inf, 0.0], dtype=np.float32)
        high = np.array([MAX_X, 1.0, np.inf, np.inf], dtype=np.float32)
        self.observation_space = gym.spaces.Box(low, high, dtype=np.float32)
        self.action_space = gym.spaces.Discrete(3)
        self.level = 0
        self._load(0)

    def _load(self, level: int) -> None:
        if not 0 <= level < self.num_levels:
            raise ValueError(f"mountain_car_family level {level} out of range 0..{self.num_levels - 1}")
        self.level = level
        self.gravity, self.force, self.start, self.polarity = make_level(level, self._settings)

    def thrust(self, action: int) -> int:
        """The push (0 left, 1 none, 2 right) that ``action`` gives on this level's engine."""
        return action if self.polarity > 0 else 2 - action

    def _obs(self) -> np.ndarray:
        return np.array([self.x, self.v / MAX_SPEED, self.polarity * self.force / self.gravity,
                         self.gravity / BASE_GRAVITY], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        level = (options or {}).get("variation", self.level)
        if level != self.level:
            self._load(int(level))
        self.x, self.v, self.t = self.start, 0.0, 0
        return self._obs(), {"level": self.level}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        before = self.x
        self.x, self.v = physics_step(self.x, self.v, self.thrust(int(action)), self.force, self.gravity)
        self.t += 1
        success = self.x >= GOAL_X
        reward = self.shaping * (self.x - before) + (1.0 if success else 0.0)
        truncated = not success and self.t >= self.max_steps
        return self._obs(), reward, success, truncated, {"success": success, "level": self.level}

"""Scripted snakes for the arena, acting on its egocentric features.

``snake_heuristic`` avoids walls and its own body and heads for the nearest food, but ignores the other snakes (so
it can be beaten by a learner that watches them). ``snake_careful`` avoids every body, its own and the others', and
the cells next to another snake's head (where a head-on collision may come), and prefers the move into the largest
open space (the flood-fill area it can still reach); food only breaks near ties. It is the baseline worth beating.
"""
from __future__ import annotations

import numpy as np

from ding_lite.registry import OPPONENT_REGISTRY
from dizoo.board_games.snake.envs.snake_arena import DANGER_OTHER, DANGER_SELF, FOOD_SIDE, REACH

HEAD_RISK = 0.3  # the cost of a cell next to another head, in grid fractions of open space (a third of the grid)
FOOD_PULL = 0.05  # food's pull, in the same unit: it decides between moves into about equally open space


@OPPONENT_REGISTRY.register("snake_heuristic")
class SnakeHeuristic:
    """Among the moves (straight, left, right) that hit no wall and not itself, the first that leads towards the
    food, else a random one of them (or straight if none is safe)."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        safe = obs[:, DANGER_SELF] < 0.5  # (M, 3)
        toward = (obs[:, FOOD_SIDE] > 0.5) & safe
        keys = self._rng.random(safe.shape) + safe + 2.0 * toward  # toward food > safe > unsafe, ties at random
        return keys.argmax(axis=1)


@OPPONENT_REGISTRY.register("snake_careful")
class SnakeCareful:
    """Per move: certain death (a wall or any body: no open space there) ranks last; then open space reachable
    from the cell, minus :data:`HEAD_RISK` next to another head, plus :data:`FOOD_PULL` towards the food; ties at
    random."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        reach = obs[:, REACH]  # (M, 3) reachable free cells / grid cells; 0 where a wall or a body is
        deadly = (obs[:, DANGER_SELF] > 0.5) | (reach <= 0.0)
        head_risk = (obs[:, DANGER_OTHER] > 0.5) & ~deadly
        keys = reach - HEAD_RISK * head_risk + FOOD_PULL * (obs[:, FOOD_SIDE] > 0.5) - 10.0 * deadly
        return (keys + 1e-4 * self._rng.random(keys.shape)).argmax(axis=1)

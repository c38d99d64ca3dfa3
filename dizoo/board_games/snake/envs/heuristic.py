"""A scripted snake for the arena: it avoids walls and its own body and heads for the nearest food, but ignores the
other snakes (so it can be beaten by a learner that watches them)."""
from __future__ import annotations

import numpy as np

from ding_lite.registry import OPPONENT
from dizoo.board_games.snake.envs.snake_arena import DANGER_SELF, FOOD_SIDE


@OPPONENT.register("snake_heuristic")
class SnakeHeuristic:
    """Acts on the arena's egocentric features: among the moves (straight, left, right) that hit no wall and not
    itself, the first that leads towards the food, else a random one of them (or straight if none is safe)."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        safe = obs[:, DANGER_SELF] < 0.5  # (M, 3)
        toward = (obs[:, FOOD_SIDE] > 0.5) & safe
        keys = self._rng.random(safe.shape) + safe + 2.0 * toward  # toward food > safe > unsafe, ties at random
        return keys.argmax(axis=1)

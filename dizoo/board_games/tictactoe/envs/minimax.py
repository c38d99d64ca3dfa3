"""A perfect tic-tac-toe player for PettingZoo's ``tictactoe_v3`` observations: it plays a move of the best game
value (win > draw > loss under best play by both sides, found by a full negamax search, memoized over the 5,478
positions), uniformly at random among all moves of that value, so that it never loses and still varies its play.

Observation: (3, 3, 2) with plane 0 the mover's marks and plane 1 the opponent's; action ``a`` marks cell
``(a // 3, a % 3)`` (checked against the game in the tests)."""
from __future__ import annotations

from functools import cache

import numpy as np

from ding_lite.registry import OPPONENT

_LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
_LINE_MASKS = tuple(sum(1 << c for c in line) for line in _LINES)
_FULL = (1 << 9) - 1


def _has_line(marks: int) -> bool:
    return any(marks & m == m for m in _LINE_MASKS)


@cache
def game_value(mover: int, other: int) -> int:
    """The game value for the player to move (1 win, 0 draw, -1 loss under best play), marks as 9-bit masks."""
    if _has_line(other):
        return -1
    if mover | other == _FULL:
        return 0
    return max(-game_value(other, mover | (1 << c)) for c in range(9) if not (mover | other) >> c & 1)


def move_values(mover: int, other: int) -> dict[int, int]:
    """The game value of each legal move for the player to move."""
    return {c: -game_value(other, mover | (1 << c)) for c in range(9) if not (mover | other) >> c & 1}


def board_bits(obs: np.ndarray) -> tuple[int, int]:
    """(mover, other) 9-bit masks of a (3, 3, 2) observation (cell (r, c) is bit 3r + c)."""
    flat = np.asarray(obs).reshape(9, 2) > 0.5
    weights = 1 << np.arange(9)
    return int(weights[flat[:, 0]].sum()), int(weights[flat[:, 1]].sum())


@OPPONENT.register("tictactoe_minimax")
class TicTacToeMinimax:
    """Plays uniformly among the moves of best game value (a perfect player: it never loses)."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        return np.array([self._one(o) for o in obs], dtype=np.int64)

    def _one(self, obs: np.ndarray) -> int:
        values = move_values(*board_bits(obs))
        best = max(values.values())
        return int(self._rng.choice([c for c, v in values.items() if v == best]))

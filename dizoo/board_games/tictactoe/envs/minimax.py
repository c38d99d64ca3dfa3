"""A perfect tic-tac-toe player for PettingZoo's ``tictactoe_v3`` observations: it plays a move of the best game
value (win > draw > loss under best play by both sides, found by a full negamax search, memoized over the 5,478
positions), uniformly at random among all moves of that value, so that it never loses and still varies its play.

Observation: (3, 3, 2) with plane 0 the mover's marks and plane 1 the opponent's; action ``a`` marks cell
``(a // 3, a % 3)`` (checked against the game in the tests)."""
from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from ding_lite.registry import OPPONENT_REGISTRY

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


@OPPONENT_REGISTRY.register("tictactoe_minimax")
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


def board_obs(mover: int, other: int) -> np.ndarray:
    """The (3, 3, 2) float32 observation of the player to move (the inverse of :func:`board_bits`)."""
    cells = np.arange(9)
    planes = np.stack([(mover >> cells) & 1, (other >> cells) & 1], axis=1)
    return planes.reshape(3, 3, 2).astype(np.float32)


def legal_mask(mover: int, other: int) -> np.ndarray:
    """(9,) bool: the empty cells."""
    return ((mover | other) >> np.arange(9)) & 1 == 0


def _over(mover: int, other: int) -> bool:
    return _has_line(mover) or _has_line(other) or mover | other == _FULL


def blunders(act: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> dict[str, dict[str, Any]]:
    """Every position a deterministic player meets against *any* opponent, and where it gives away game value.

    ``act(obs (M, 3, 3, 2), action_mask (M, 9)) -> (M,)`` is the player (e.g. a policy's greedy eval mode). Per
    seat (``'first'``, ``'second'``): the player follows ``act`` while the opponent plays every legal move, and its
    move in each position reached is compared with :func:`move_values`. ``positions``: the distinct positions it
    reaches; ``blunders``: those where its move is worth less than the best (a win played to a draw counts);
    ``losing``: those where its move turns a draw or a win into a loss; ``examples``: a few blunders as (own cells,
    opponent's cells, move played, best moves). Tic-tac-toe is a draw, so a player with no losing move from either
    seat never loses a game, whoever the opponent; with no blunder either it also wins every game the opponent
    gives away (perfect play)."""
    report: dict[str, dict[str, Any]] = {}
    for seat, start in (("first", [(0, 0)]), ("second", [(0, 1 << c) for c in range(9)])):
        seen: set[tuple[int, int]] = set()
        bad: list[tuple[list[int], list[int], int, list[int]]] = []
        losing = 0
        frontier = list(dict.fromkeys(start))
        while frontier:  # positions with the player to move, one ply of its own and one of the opponent's apart
            obs = np.stack([board_obs(m, o) for m, o in frontier])
            masks = np.stack([legal_mask(m, o) for m, o in frontier])
            moves = np.asarray(act(obs, masks)).reshape(-1)
            after: list[tuple[int, int]] = []
            for (mine, theirs), move in zip(frontier, moves.tolist(), strict=True):
                seen.add((mine, theirs))
                values = move_values(mine, theirs)
                best = max(values.values())
                played = values.get(int(move), -2)  # an illegal move: below every value
                losing += played < 0 <= best
                if played < best:
                    bad.append((_cells(mine), _cells(theirs), int(move), [c for c, v in values.items() if v == best]))
                if int(move) not in values:
                    continue  # an illegal move: counted above, the game would not go on
                mine |= 1 << int(move)
                if _over(theirs, mine):
                    continue
                for reply in range(9):  # every reply of the opponent
                    if not (mine | theirs) >> reply & 1:
                        nxt = (mine, theirs | 1 << reply)
                        if not _over(*nxt) and nxt not in seen:
                            after.append(nxt)
            frontier = list(dict.fromkeys(after))
        report[seat] = {"positions": len(seen), "blunders": len(bad), "losing": losing, "examples": bad[:5]}
    return report


def _cells(marks: int) -> list[int]:
    return [c for c in range(9) if marks >> c & 1]

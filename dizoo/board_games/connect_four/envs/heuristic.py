"""Scripted connect-four players for PettingZoo's ``connect_four_v3`` observations: ``connect_four_heuristic`` wins
now if it can, else blocks the opponent's winning move, else plays a random legal column, centre columns preferred;
``connect_four_one_ply`` also never hands the opponent a win when it has a move that does not;
``connect_four_win_or_random`` (a training opponent) wins now if it can, else plays a uniformly random legal column:
the random player's positions, with every missed block and every handed-over win punished."""
from __future__ import annotations

import abc

import numpy as np

from ding_lite.registry import OPPONENT_REGISTRY

_ROWS, _COLS = 6, 7
_CENTRE_PREFERENCE = np.array([1, 2, 3, 4, 3, 2, 1], dtype=np.float64)


def _wins(board: np.ndarray) -> bool:
    """Whether a (6, 7) 0/1 board holds four in a row."""
    b = board.astype(bool)
    return bool((b[:, :-3] & b[:, 1:-2] & b[:, 2:-1] & b[:, 3:]).any()
                or (b[:-3] & b[1:-2] & b[2:-1] & b[3:]).any()
                or (b[:-3, :-3] & b[1:-2, 1:-2] & b[2:-1, 2:-1] & b[3:, 3:]).any()
                or (b[3:, :-3] & b[2:-1, 1:-2] & b[1:-2, 2:-1] & b[:-3, 3:]).any())


def _drop(board: np.ndarray, occupied: np.ndarray, col: int) -> np.ndarray:
    """``board`` with a piece dropped into ``col`` (the lowest empty row)."""
    row = int(np.flatnonzero(~occupied[:, col])[-1])
    out = board.copy()
    out[row, col] = 1
    return out


class _ScriptedPlayer(abc.ABC):
    """A scripted player's batched ``act``: one :meth:`_one` per observation, with a seeded generator for its
    random choices. Plane 0 of an observation is the mover's pieces, plane 1 the opponent's (PettingZoo's
    convention)."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        return np.array([self._one(o, m) for o, m in zip(obs, action_mask, strict=True)], dtype=np.int64)

    @abc.abstractmethod
    def _one(self, obs: np.ndarray, mask: np.ndarray) -> int:
        """The column to play for one observation (H, W, 2) and its legal-move mask (W,)."""


@OPPONENT_REGISTRY.register("connect_four_heuristic")
class ConnectFourHeuristic(_ScriptedPlayer):
    """Wins when it can, else blocks the opponent's immediate win, else a random legal column weighted towards the
    centre."""

    def _one(self, obs: np.ndarray, mask: np.ndarray) -> int:
        mine, theirs = obs[..., 0] > 0.5, obs[..., 1] > 0.5
        occupied = mine | theirs
        legal = np.flatnonzero(mask)
        for board in (mine, theirs):  # first a winning move of ours, then one of theirs to block
            for col in legal:
                if _wins(_drop(board, occupied, int(col))):
                    return int(col)
        weights = _CENTRE_PREFERENCE[legal] * self._rng.random(len(legal))
        return int(legal[int(np.argmax(weights))])


def _winning_columns(board: np.ndarray, occupied: np.ndarray, legal: np.ndarray) -> list[int]:
    """The legal columns where a piece of ``board`` would complete four in a row."""
    return [int(c) for c in legal if _wins(_drop(board, occupied, int(c)))]


@OPPONENT_REGISTRY.register("connect_four_one_ply")
class ConnectFourOnePly(_ScriptedPlayer):
    """A one-ply player: it wins when it can, else blocks the opponent's immediate win, else plays uniformly among
    the moves that do not hand the opponent a win (a piece that lets the opponent complete four on top of it, or
    that leaves an opponent's threat open); when every move hands one over, among all legal moves."""

    def _one(self, obs: np.ndarray, mask: np.ndarray) -> int:
        mine, theirs = obs[..., 0] > 0.5, obs[..., 1] > 0.5
        occupied = mine | theirs
        legal = np.flatnonzero(mask)
        for board in (mine, theirs):  # win now, else block the opponent's win
            wins = _winning_columns(board, occupied, legal)
            if wins:
                return int(self._rng.choice(wins))
        safe = []
        for col in legal:
            after = _drop(mine, occupied, int(col))
            now_occupied = after | theirs
            replies = np.flatnonzero(~now_occupied[0])  # the columns the opponent may play next
            if not _winning_columns(theirs, now_occupied, replies):
                safe.append(int(col))
        return int(self._rng.choice(safe if safe else legal))


@OPPONENT_REGISTRY.register("connect_four_win_or_random")
class ConnectFourWinOrRandom(_ScriptedPlayer):
    """Wins now when it can, else a uniformly random legal column (no block, no look at the opponent's threats).
    A training opponent: it reaches the random player's positions (no centre preference) and, like the one-ply
    player, takes every win the learner leaves it, so a missed block or a handed-over win costs the game at once."""

    def _one(self, obs: np.ndarray, mask: np.ndarray) -> int:
        mine, theirs = obs[..., 0] > 0.5, obs[..., 1] > 0.5
        legal = np.flatnonzero(mask)
        wins = _winning_columns(mine, mine | theirs, legal)
        return int(self._rng.choice(wins if wins else legal))

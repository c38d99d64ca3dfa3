"""PettingZoo's ``connect_four_v3`` with a third observation plane: the cells where a piece would land now (the
lowest empty cell of each column that is not full). Planes 0 and 1 stay PettingZoo's (the mover's pieces, the
opponent's), so every scripted player and the mirror augmentation read the board unchanged.

Why: whether a column completes four depends on where its piece lands, which the two planes only give through the
column's whole height; with the landing cells as a plane, one 4x4 convolution sees an immediate win (three pieces
and a landing cell in a line) or a threat to block, instead of the network having to work out gravity first.

    env.import_path = "dizoo.board_games.connect_four.envs.planes:raw_env"
"""
from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.classic import connect_four_v3
from pettingzoo.utils.wrappers import BaseWrapper

_ROWS, _COLS = 6, 7


def landing_plane(board: np.ndarray) -> np.ndarray:
    """``(6, 7)`` int8 plane, 1 on the lowest empty cell of every column that has one (row 0 is the top)."""
    occupied = board[..., :2].any(axis=-1)
    plane = np.zeros((_ROWS, _COLS), dtype=board.dtype)
    empty = ~occupied
    cols = np.flatnonzero(empty[0])  # columns not full
    # the lowest empty row of each open column: pieces fill a column from the bottom, so it is its count of empty
    # cells minus one
    rows = empty[:, cols].sum(axis=0) - 1
    plane[rows, cols] = 1
    return plane


class LandingPlanes(BaseWrapper):
    """An AEC connect-four env whose observations carry the landing plane as a third plane ``(6, 7, 3)``."""

    def observation_space(self, agent: str) -> spaces.Space:
        space = self.env.observation_space(agent)
        board = space["observation"]
        return spaces.Dict({"observation": spaces.Box(0, 1, (_ROWS, _COLS, 3), board.dtype),
                            "action_mask": space["action_mask"]})

    def observe(self, agent: str) -> Any:
        obs = self.env.observe(agent)
        if obs is None:
            return obs
        board = obs["observation"]
        planes = np.concatenate([board, landing_plane(board)[..., None]], axis=-1)
        return {"observation": planes, "action_mask": obs["action_mask"]}

    def last(self, observe: bool = True) -> tuple:
        agent = self.agent_selection
        _, reward, termination, truncation, info = self.env.last(observe=False)
        return (self.observe(agent) if observe else None), reward, termination, truncation, info


def raw_env(**kwargs: Any) -> LandingPlanes:
    """The unwrapped game (as ``connect_four_v3:raw_env``) with the landing plane."""
    return LandingPlanes(connect_four_v3.raw_env(**kwargs))

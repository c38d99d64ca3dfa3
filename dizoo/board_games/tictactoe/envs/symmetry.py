"""Tic-tac-toe is symmetric under the 8 rotations and reflections of the board (the dihedral group D4): a position
transformed, with each move's cell transformed alike, is as good a game as the position itself. :func:`d4` gives
the 7 other images of DQN samples, for ``policy.collect.augment``: 8 transitions per move for the replay buffer."""
from __future__ import annotations

import numpy as np

from ding_lite.data.keys import ACTION, ACTION_MASK, NEXT_ACTION_MASK, NEXT_OBS_N, OBS

_BOARDS = (OBS, NEXT_OBS_N)  # (B, 3, 3, 2): rows, columns, planes (PettingZoo's tictactoe_v3 layout)
_MASKS = (ACTION_MASK, NEXT_ACTION_MASK)  # (B, 9): cell 3r + c
_CELLS = np.arange(9).reshape(3, 3)


def _images(grid: np.ndarray) -> list[np.ndarray]:
    """The 8 D4 images of (..., 3, 3, ...) arrays whose axes 1 and 2 are the board (the identity first)."""
    out = []
    for k in range(4):
        rotated = np.rot90(grid, k, axes=(1, 2))
        out += [rotated, rotated[:, :, ::-1]]
    return out


# where each cell goes under each transform: _MOVED[k][cell] is the cell's image under transform k
_MOVED = [np.empty(9, dtype=np.int64) for _ in range(8)]
for _k, _image in enumerate(_images(_CELLS[None])):
    _MOVED[_k][_image[0].reshape(-1)] = np.arange(9)


def d4(samples: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The 7 non-identity D4 images of a batch of tic-tac-toe samples, concatenated: boards and masks transformed,
    each action moved to its cell's image; every other column (returns, discounts) repeated as it is."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in samples}
    boards = {k: _images(samples[k]) for k in _BOARDS if k in samples}
    masks = {k: _images(samples[k].reshape(-1, 3, 3)) for k in _MASKS if k in samples}
    for t in range(1, 8):
        for key, value in samples.items():
            if key in boards:
                parts[key].append(np.ascontiguousarray(boards[key][t]))
            elif key in masks:
                parts[key].append(np.ascontiguousarray(masks[key][t]).reshape(-1, 9))
            elif key == ACTION:
                parts[key].append(_MOVED[t][value])
            else:
                parts[key].append(value)
    return {k: np.concatenate(v) for k, v in parts.items()}

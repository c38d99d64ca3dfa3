"""Connect four is symmetric under a left-right mirror: a position's mirror image, with every column c played as
6 - c, is as good a game as the position itself. :func:`mirror` gives the mirrored copy of DQN samples, for
``policy.collect.augment``: twice the transitions per game for the replay buffer."""
from __future__ import annotations

import numpy as np

from ding_lite.data.keys import ACTION, ACTION_MASK, NEXT_ACTION_MASK, NEXT_OBS_N, OBS

_BOARDS = (OBS, NEXT_OBS_N)  # (B, 6, 7, 2): rows, columns, planes (PettingZoo's connect_four_v3 layout)
_MASKS = (ACTION_MASK, NEXT_ACTION_MASK)  # (B, 7): one entry per column
_COLUMNS = 7


def mirror(samples: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The left-right mirror image of a batch of connect-four samples: boards and masks flipped along the columns,
    column actions c -> 6 - c; every other column (returns, discounts) as it is."""
    out = dict(samples)
    for key in _BOARDS:
        if key in samples:
            out[key] = np.ascontiguousarray(samples[key][:, :, ::-1])
    for key in _MASKS:
        if key in samples:
            out[key] = np.ascontiguousarray(samples[key][:, ::-1])
    out[ACTION] = _COLUMNS - 1 - samples[ACTION]
    return out

"""dizoo connect four: the left-right mirror of samples (the DQN config's ``policy.collect.augment``)."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.data.keys import ACTION, DISCOUNT_N, NEXT_ACTION_MASK, NEXT_OBS_N, OBS, RETURN_N
from dizoo.board_games.connect_four.envs.symmetry import mirror

pytestmark = pytest.mark.unittest


def test_mirror_flips_boards_masks_and_columns() -> None:
    obs = np.zeros((2, 6, 7, 2), dtype=np.float32)
    obs[0, 5, 0, 0] = 1.0  # sample 0: own piece bottom left
    obs[1, 5, 2, 1] = 1.0  # sample 1: opponent's piece bottom, column 2
    nxt = obs.copy()
    nxt[0, 4, 0, 1] = 1.0
    mask = np.array([[False, True, True, True, True, True, True], [True] * 7])
    samples = {OBS: obs, NEXT_OBS_N: nxt, ACTION: np.array([0, 5]), NEXT_ACTION_MASK: mask,
               RETURN_N: np.array([1.0, -1.0], dtype=np.float32), DISCOUNT_N: np.array([0.0, 0.9], np.float32)}
    out = mirror(samples)
    assert out[OBS][0, 5, 6, 0] == 1.0 and out[OBS][0].sum() == 1.0  # column 0 -> 6
    assert out[OBS][1, 5, 4, 1] == 1.0 and out[OBS][1].sum() == 1.0  # column 2 -> 4
    assert out[NEXT_OBS_N][0, 4, 6, 1] == 1.0
    np.testing.assert_array_equal(out[ACTION], [6, 1])
    np.testing.assert_array_equal(out[NEXT_ACTION_MASK][0], [True, True, True, True, True, True, False])
    np.testing.assert_array_equal(out[RETURN_N], samples[RETURN_N])
    np.testing.assert_array_equal(out[DISCOUNT_N], samples[DISCOUNT_N])
    np.testing.assert_array_equal(mirror(out)[OBS], obs)  # a mirror twice is the identity
    assert samples[ACTION].tolist() == [0, 5]  # the input is left as it was

"""ding_lite/data/batch.py episode_ends: what return targets see as terminated / truncated."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.data.batch import episode_ends
from ding_lite.rl_utils.gae import gae

pytestmark = pytest.mark.unittest


def test_ignore_done_bootstraps_through_a_termination_without_crossing_episodes() -> None:
    # one env, 3 steps: the episode terminates at t=1, a new one starts at t=2
    terminated = np.array([[False], [True], [False]])
    truncated = np.zeros((3, 1), dtype=bool)
    term, trunc = episode_ends(terminated, truncated, None, ignore_done=True)
    np.testing.assert_array_equal(term, [[False], [False], [False]])
    np.testing.assert_array_equal(trunc, [[False], [True], [False]])
    reward = np.ones((3, 1), np.float32)
    value = np.zeros((3, 1), np.float32)
    next_value = np.array([[0.0], [10.0], [0.0]], np.float32)  # V(final obs) of the terminated episode is 10
    adv, _ = gae(reward, value, next_value, term, trunc, gamma=0.5, lam=1.0)
    # t=2: 1 (rollout cut, next value 0); t=1: 1 + 0.5*10 = 6, nothing from t=2; t=0: 1 + 0.5*6 = 4
    np.testing.assert_allclose(adv[:, 0], [4.0, 6.0, 1.0])
    # without ignore_done the termination does not bootstrap: t=1 is 1
    term, trunc = episode_ends(terminated, truncated, None, ignore_done=False)
    adv, _ = gae(reward, value, next_value, term, trunc, gamma=0.5, lam=1.0)
    np.testing.assert_allclose(adv[:, 0], [1.5, 1.0, 1.0])


def test_interrupted_episode_is_cut_at_its_last_real_step() -> None:
    terminated = np.zeros((3, 1), dtype=bool)
    truncated = np.array([[False], [True], [False]])  # row 1 is the placeholder (marked truncated by the manager)
    interrupted = np.array([[False], [True], [False]])
    term, trunc = episode_ends(terminated, truncated, interrupted, ignore_done=False)
    np.testing.assert_array_equal(trunc[:, 0], [True, True, False])
    assert not term.any()

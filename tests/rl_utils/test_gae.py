"""Hand-computed checks of ding_lite.rl_utils.gae."""

import numpy as np
import pytest

from ding_lite.rl_utils import gae

pytestmark = pytest.mark.unittest


def _col(values, dtype=np.float32):
    """A (T, 1) time-major array from a list."""
    return np.asarray(values, dtype=dtype)[:, None]


def test_gae_truncation_termination_and_rollout_cut():
    # One env, T = 5, γ = 0.5, λ = 0.5 (γλ = 0.25).
    #   t=0: mid-episode.
    #   t=1: truncated; next_value = 4 is V(final obs of that episode), must be bootstrapped.
    #   t=2: one-step episode, terminated; next_value = 8 must be ignored.
    #   t=3: mid-episode.
    #   t=4: last step of the rollout, not done; next_value = 4 = V(next obs) bootstraps.
    reward = _col([1, 1, 2, 1, 1])
    value = _col([0, 2, 1, 2, 2])
    next_value = _col([2, 4, 8, 2, 4])
    terminated = _col([0, 0, 1, 0, 0], bool)
    truncated = _col([0, 1, 0, 0, 0], bool)
    # δ0 = 1 + 0.5*2 - 0 = 2
    # δ1 = 1 + 0.5*4 - 2 = 1          (truncation bootstraps from the final obs value)
    # δ2 = 2 + 0     - 1 = 1          (termination: no bootstrap)
    # δ3 = 1 + 0.5*2 - 2 = 0
    # δ4 = 1 + 0.5*4 - 2 = 1          (rollout cut bootstraps)
    # A4 = 1
    # A3 = 0 + 0.25*1 = 0.25
    # A2 = 1                          (done: A3 of the next episode does not leak in)
    # A1 = 1                          (done: no leak from A2)
    # A0 = 2 + 0.25*1 = 2.25
    adv, ret = gae(reward, value, next_value, terminated, truncated, gamma=0.5, lam=0.5)
    assert adv.shape == (5, 1) and ret.shape == (5, 1)
    assert adv.dtype == np.float32 and ret.dtype == np.float32
    np.testing.assert_allclose(adv[:, 0], [2.25, 1.0, 1.0, 0.25, 1.0], rtol=1e-6)
    # R = A + V
    np.testing.assert_allclose(ret[:, 0], [2.25, 3.0, 2.0, 2.25, 3.0], rtol=1e-6)


def test_gae_two_envs_are_independent():
    # T = 2, N = 2, γ = 0.5, λ = 0.5.
    # env 0: r = [1, 1], V = [1, 1], V' = [2, 2], no done.
    #   δ = [1 + 1 - 1, 1 + 1 - 1] = [1, 1]; A1 = 1, A0 = 1 + 0.25*1 = 1.25; R = [2.25, 2]
    # env 1: r = [0, 3], V = [1, 2], V' = [4, 6], terminated at t=0.
    #   δ0 = 0 - 1 = -1, δ1 = 3 + 3 - 2 = 4; A1 = 4, A0 = -1 (no leak); R = [0, 6]
    reward = np.array([[1, 0], [1, 3]], dtype=np.float32)
    value = np.array([[1, 1], [1, 2]], dtype=np.float32)
    next_value = np.array([[2, 4], [2, 6]], dtype=np.float32)
    terminated = np.array([[False, True], [False, False]])
    truncated = np.zeros((2, 2), dtype=bool)
    adv, ret = gae(reward, value, next_value, terminated, truncated, gamma=0.5, lam=0.5)
    np.testing.assert_allclose(adv, [[1.25, -1.0], [1.0, 4.0]], rtol=1e-6)
    np.testing.assert_allclose(ret, [[2.25, 0.0], [2.0, 6.0]], rtol=1e-6)


def test_gae_lambda_zero_is_one_step_td():
    # λ = 0: A_t = δ_t. γ = 0.9: δ0 = 1 + 0.9*10 - 5 = 5, δ1 = 0 + 0.9*10 - 10 = -1
    reward = _col([1, 0])
    value = _col([5, 10])
    next_value = _col([10, 10])
    no = _col([0, 0], bool)
    adv, ret = gae(reward, value, next_value, no, no, gamma=0.9, lam=0.0)
    np.testing.assert_allclose(adv[:, 0], [5.0, -1.0], rtol=1e-6)
    np.testing.assert_allclose(ret[:, 0], [10.0, 9.0], rtol=1e-6)


def test_gae_rejects_mismatched_shapes():
    ones = np.ones((3, 2), dtype=np.float32)
    no = np.zeros((3, 2), dtype=bool)
    with pytest.raises(ValueError, match="next_value"):
        gae(ones, ones, np.ones((3, 1), dtype=np.float32), no, no, gamma=0.9, lam=0.9)

"""The rollout contract's episode cuts before invalid rows and what return targets see (hand-computed cases)."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.data.keys import ACTION, DONE, OBS, TERMINATED, TRUNCATED, VALID
from ding_lite.data.rollout import cut_before_invalid, episode_ends, settle, valid_transitions
from ding_lite.rl_utils.gae import gae

pytestmark = pytest.mark.unittest

F, T = False, True


def test_cut_before_invalid_hand_case() -> None:
    # (T=4, N=3). env 0: invalid at t=2 -> t=1 becomes the truncated end, t=2 (placeholder) truncated too.
    # env 1: invalid at t=0 -> nothing earlier in this rollout to cut; the placeholder itself is truncated.
    # env 2: episode terminated at t=1, the next episode invalid at its first step t=2 -> t=1 stays as it was
    #        (terminated, not truncated).
    truncated = np.array([[F, F, F], [F, F, F], [F, F, F], [F, F, T]])
    terminated = np.array([[F, F, F], [F, F, T], [F, F, F], [F, F, F]])
    invalid = np.array([[F, T, F], [F, F, F], [T, F, T], [F, F, F]])
    term, trunc = cut_before_invalid(terminated, truncated, ~invalid)
    np.testing.assert_array_equal(trunc, [[F, T, F], [T, F, F], [T, F, T], [F, F, T]])
    np.testing.assert_array_equal(term, terminated)
    assert not truncated[1, 0]  # the input is not modified


def test_an_invalid_row_is_never_terminated() -> None:
    terminated = np.array([[T], [F]])
    term, trunc = cut_before_invalid(terminated, np.zeros((2, 1), bool), np.array([[F], [T]]))
    np.testing.assert_array_equal(term, [[F], [F]])
    np.testing.assert_array_equal(trunc, [[T], [F]])


def test_cut_before_invalid_without_invalid_rows_is_identity() -> None:
    truncated = np.array([[F, T], [F, F]])
    terminated = np.zeros((2, 2), dtype=bool)
    assert cut_before_invalid(terminated, truncated, None)[1] is truncated
    assert cut_before_invalid(terminated, truncated, np.ones((2, 2), dtype=bool))[1] is truncated


def test_settle_adds_valid_and_done_and_is_idempotent() -> None:
    rollout = {TERMINATED: np.array([[F], [T], [F]]), TRUNCATED: np.array([[F], [F], [F]])}
    settle(rollout)
    np.testing.assert_array_equal(rollout[VALID], [[T], [T], [T]])
    np.testing.assert_array_equal(rollout[DONE], [[F], [T], [F]])
    rollout = {TERMINATED: np.zeros((3, 1), bool), TRUNCATED: np.array([[F], [T], [F]]),
               VALID: np.array([[T], [F], [T]])}
    settle(rollout)
    once = {k: v.copy() for k, v in rollout.items()}
    np.testing.assert_array_equal(rollout[DONE][:, 0], [T, T, F])
    settle(rollout)
    for k, v in once.items():
        np.testing.assert_array_equal(rollout[k], v)


def test_valid_transitions_keep_the_valid_rows_time_major() -> None:
    obs = np.arange(6, dtype=np.float32).reshape(3, 2)  # obs[t, n] = 2t + n
    rollout = {OBS: obs, ACTION: obs.astype(np.int64), VALID: np.array([[T, T], [T, F], [T, T]])}
    out = valid_transitions(rollout, (OBS, ACTION))
    np.testing.assert_array_equal(out[OBS], [0, 1, 2, 4, 5])
    np.testing.assert_array_equal(out[ACTION], [0, 1, 2, 4, 5])
    assert valid_transitions({OBS: obs}, (OBS,))[OBS].shape == (6,)


def test_ignore_done_bootstraps_through_a_termination_without_crossing_episodes() -> None:
    # one env, 3 steps: the episode terminates at t=1, a new one starts at t=2
    terminated = np.array([[False], [True], [False]])
    truncated = np.zeros((3, 1), dtype=bool)
    term, trunc = episode_ends(terminated, truncated, ignore_done=True)
    np.testing.assert_array_equal(term, [[False], [False], [False]])
    np.testing.assert_array_equal(trunc, [[False], [True], [False]])
    reward = np.ones((3, 1), np.float32)
    value = np.zeros((3, 1), np.float32)
    next_value = np.array([[0.0], [10.0], [0.0]], np.float32)  # V(final obs) of the terminated episode is 10
    adv, _ = gae(reward, value, next_value, term, trunc, gamma=0.5, lam=1.0)
    # t=2: 1 (rollout cut, next value 0); t=1: 1 + 0.5*10 = 6, nothing from t=2; t=0: 1 + 0.5*6 = 4
    np.testing.assert_allclose(adv[:, 0], [4.0, 6.0, 1.0])
    # without ignore_done the termination does not bootstrap: t=1 is 1
    term, trunc = episode_ends(terminated, truncated, ignore_done=False)
    adv, _ = gae(reward, value, next_value, term, trunc, gamma=0.5, lam=1.0)
    np.testing.assert_allclose(adv[:, 0], [1.5, 1.0, 1.0])

"""Hand-written checks of ding_lite.data.sequence.SequenceCutter."""

import numpy as np
import pytest

from ding_lite.data.keys import ACTION, MASK, NEXT_OBS, OBS, OBS_PLUS_1, REWARD, TERMINATED, TRUNCATED, VALID
from ding_lite.data.sequence import SequenceCutter

pytestmark = pytest.mark.unittest

KEYS = (ACTION, REWARD, TERMINATED)


def _rollout(obs, next_obs, action, reward, terminated=None, truncated=None):
    """(T, N) columns; 1-dim observations."""
    obs = np.array(obs, dtype=np.float32)
    shape = obs.shape
    return {
        OBS: obs[..., None],
        NEXT_OBS: np.array(next_obs, dtype=np.float32)[..., None],
        ACTION: np.array(action, dtype=np.int64),
        REWARD: np.array(reward, dtype=np.float32),
        TERMINATED: np.zeros(shape, bool) if terminated is None else np.array(terminated, bool),
        TRUNCATED: np.zeros(shape, bool) if truncated is None else np.array(truncated, bool),
    }


def test_sequences_close_at_episode_ends_and_length_and_carry_over_rollouts():
    cut = SequenceCutter(3, KEYS)
    # Rollout 1, 2 steps of 2 envs. Env 0 terminates at t=1 (final obs 1.5); env 1 runs on.
    out = cut(_rollout(obs=[[0, 10], [1, 11]], next_obs=[[1, 11], [1.5, 12]], action=[[0, 1], [1, 0]],
                       reward=[[1, 2], [3, 4]], terminated=[[0, 0], [1, 0]]))
    # one sequence: env 0's episode, 2 real steps, padded to 3
    np.testing.assert_array_equal(out[OBS_PLUS_1][..., 0], [[0, 1, 1.5, 0]])  # final obs kept to bootstrap from
    np.testing.assert_array_equal(out[ACTION], [[0, 1, 0]])
    np.testing.assert_array_equal(out[REWARD], [[1, 3, 0]])
    np.testing.assert_array_equal(out[TERMINATED], [[False, True, False]])
    np.testing.assert_array_equal(out[MASK], [[True, True, False]])

    # Rollout 2, 3 steps. Env 0 starts a new episode (obs 20); env 1's open 2 steps get their 3rd at t=0.
    out = cut(_rollout(obs=[[20, 12], [21, 13], [22, 14]], next_obs=[[21, 13], [22, 14], [23, 15]],
                       action=[[1, 1], [0, 0], [1, 1]], reward=[[5, 6], [7, 8], [9, 10]]))
    # closed in order: env 1 (full at t=0, its first two steps from rollout 1), env 0 (full at t=2)
    np.testing.assert_array_equal(out[OBS_PLUS_1][..., 0], [[10, 11, 12, 13], [20, 21, 22, 23]])
    np.testing.assert_array_equal(out[ACTION], [[1, 0, 1], [1, 0, 1]])
    np.testing.assert_array_equal(out[REWARD], [[2, 4, 6], [5, 7, 9]])
    assert out[MASK].all() and not out[TERMINATED].any()
    assert out[OBS_PLUS_1].shape == (2, 4, 1) and out[ACTION].shape == (2, 3)

    # Env 1's open steps (13, 14) are dropped by a reset; then it is truncated after one step: a 1-step sequence.
    cut.reset([1])
    out = cut(_rollout(obs=[[23, 15]], next_obs=[[24, 15.5]], action=[[0, 1]], reward=[[1, 1]],
                       truncated=[[0, 1]]))
    np.testing.assert_array_equal(out[OBS_PLUS_1][..., 0], [[15, 15.5, 0, 0]])
    np.testing.assert_array_equal(out[MASK], [[True, False, False]])
    # env 0 still holds 1 open step: nothing else closed


def test_no_closed_sequence_gives_empty_arrays_and_env_count_is_checked():
    cut = SequenceCutter(4, KEYS)
    out = cut(_rollout(obs=[[0, 10]], next_obs=[[1, 11]], action=[[0, 1]], reward=[[1, 2]]))
    assert out[OBS_PLUS_1].shape == (0, 5, 1) and out[ACTION].shape == (0, 4) and out[MASK].shape == (0, 4)
    with pytest.raises(ValueError, match="rollout has 1 envs but open sequences of 2 envs"):
        cut(_rollout(obs=[[0]], next_obs=[[1]], action=[[0]], reward=[[1]]))
    cut.reset()
    assert len(cut(_rollout(obs=[[0]], next_obs=[[1]], action=[[0]], reward=[[1]], terminated=[[1]]))[MASK]) == 1
    with pytest.raises(ValueError, match="unroll_len=0"):
        SequenceCutter(0, KEYS)


def test_interrupted_rows_are_skipped_and_close_the_open_sequence_as_truncated():
    cut = SequenceCutter(3, KEYS)
    # Env 0 runs 2 steps in rollout 1 (open sequence of 2); env 1 runs 2 steps too.
    assert len(cut(_rollout(obs=[[0, 10], [1, 11]], next_obs=[[1, 11], [2, 12]], action=[[0, 0], [1, 1]],
                            reward=[[1, 1], [2, 2]]))[MASK]) == 0
    # Rollout 2: env 0's worker failed at t=0: that row is a placeholder (valid False, marked truncated).
    rollout = _rollout(obs=[[2, 12], [50, 13]], next_obs=[[2, 13], [51, 14]], action=[[1, 0], [0, 1]],
                       reward=[[0, 3], [4, 5]], truncated=[[1, 0], [0, 0]])
    rollout[VALID] = np.array([[False, True], [True, True]])
    out = cut(rollout)
    # closed: env 0's open 2 steps, ended at its last real step (bootstrap from its next obs 2, no placeholder);
    # then env 1 (full at t=0). Env 0's new episode (obs 50) stays open.
    np.testing.assert_array_equal(out[OBS_PLUS_1][..., 0], [[0, 1, 2, 0], [10, 11, 12, 13]])
    np.testing.assert_array_equal(out[REWARD], [[1, 2, 0], [1, 2, 3]])
    np.testing.assert_array_equal(out[MASK], [[True, True, False], [True, True, True]])
    assert not out[TERMINATED].any()

"""Helpers folded into one place each: the episode quota of evaluator and demo collection, action clipping of the
env managers and demo collection, and the first line of an exception in one-line errors."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.envs.actions import clip_action
from ding_lite.envs.env_manager import episode_quota
from ding_lite.errors import first_line

pytestmark = pytest.mark.unittest


def test_episode_quota_spreads_the_remainder_over_the_first_envs() -> None:
    np.testing.assert_array_equal(episode_quota(7, 3), [3, 2, 2])
    np.testing.assert_array_equal(episode_quota(2, 4), [1, 1, 0, 0])
    assert episode_quota(9, 3).sum() == 9


def test_clip_action_clips_boxes_only() -> None:
    box = gym.spaces.Box(-1.0, 2.0, shape=(2,), dtype=np.float32)
    out = clip_action(np.array([[-3.0, 5.0], [0.5, 1.0]]), box)
    np.testing.assert_array_equal(out, [[-1.0, 2.0], [0.5, 1.0]])
    assert out.dtype == np.float32
    actions = np.array([0, 3])
    assert clip_action(actions, gym.spaces.Discrete(2)) is actions


def test_first_line_of_an_exception() -> None:
    assert first_line(ValueError("  bad shape\nmore detail")) == "bad shape"
    assert first_line(KeyError()) == "KeyError"

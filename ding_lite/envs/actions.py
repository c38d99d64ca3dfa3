"""A policy's batched actions as the envs take them: a Box's in its dtype, shape and bounds (an integer Box's rounded),
a Discrete's shifted by its ``start``."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


def env_actions(actions: np.ndarray, space: gym.Space) -> np.ndarray:
    """A batch of a policy's actions as the envs take them: for a Box, in its dtype and shape, ``(B,
    *space.shape)`` (a policy's actions are flat, ``(B, prod(space.shape))``), clipped to its bounds (rounded to the
    nearest integer first for an integer Box: a cast alone truncates toward 0, so its bounds were never reached);
    others unchanged."""
    if isinstance(space, gym.spaces.Box):
        if np.issubdtype(space.dtype, np.integer) and np.asarray(actions).dtype.kind == "f":
            actions = np.rint(actions)
        actions = np.asarray(actions, dtype=space.dtype)
        return np.clip(actions.reshape((len(actions),) + space.shape), space.low, space.high)
    return actions


def clip_action(actions: np.ndarray, space: gym.Space) -> np.ndarray:
    """:func:`env_actions` in the batch's own shape (a Box's actions clipped to its bounds, in its dtype)."""
    clipped = env_actions(actions, space)
    return clipped.reshape(np.shape(actions)) if clipped is not actions else clipped


def action_to_env(actions: np.ndarray, space: gym.Space) -> list[Any]:
    """Convert a batch of policy actions to what each env's ``step`` takes (python ints, shifted by a Discrete's
    ``start``: a policy's indices count from 0; clipped boxes)."""
    if isinstance(space, gym.spaces.Discrete):
        indices = np.asarray(actions).reshape(-1)
        return (indices + int(space.start) if space.start else indices).tolist()
    if isinstance(space, gym.spaces.Box):
        # PPO: the env gets the clipped action, the policy keeps the unclipped sample for log-probs.
        return list(env_actions(actions, space))
    return list(actions)

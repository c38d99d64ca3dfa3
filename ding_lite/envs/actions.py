"""A policy's batched actions as the envs take them: a Box's in its dtype, shape and bounds (an integer Box's rounded),
a Discrete's shifted by its ``start``."""
from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.errors import ConfigError


def env_actions(actions: np.ndarray, space: gym.Space) -> np.ndarray:
    """A batch of a policy's actions as the envs take them: for a Box, in its dtype and shape, ``(B,
    *space.shape)`` (a policy's actions are flat, ``(B, prod(space.shape))``), clipped to its bounds (rounded to the
    nearest integer first for an integer Box: a cast alone truncates toward 0, so its bounds were never reached);
    others unchanged."""
    if isinstance(space, gym.spaces.Box):
        if np.issubdtype(space.dtype, np.integer) and np.asarray(actions).dtype.kind == "f":
            actions = np.rint(actions)
        actions = np.asarray(actions, dtype=space.dtype)
        size = math.prod(space.shape)  # not np.prod: a numpy reduction on a tuple, about 6 us at every env step
        if actions.ndim == 0 or actions.size != len(actions) * size:
            raise ConfigError(f"the policy's forward returned actions of shape {list(actions.shape)} for a Box "
                              f"action space of shape {list(space.shape)}, which takes (N, {size}) or "
                              f"(N, *{list(space.shape)}) for N envs")
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
        indices = discrete_indices(actions, space)
        return (indices + int(space.start) if space.start else indices).tolist()
    if isinstance(space, gym.spaces.Box):
        # PPO: the env gets the clipped action, the policy keeps the unclipped sample for log-probs.
        return list(env_actions(actions, space))
    return list(actions)


def discrete_indices(actions: Any, space: gym.spaces.Discrete) -> np.ndarray:
    """A policy's actions for a ``Discrete(n)`` space, checked: one integer index in ``[0, n)`` per env, ``(N,)``.
    Anything else (a plugin's ``(N, 1)`` column, float indices, an index out of range) is a :class:`ConfigError`
    naming what the forward returned: flattened, an ``(N, 1)`` column would reach the env but be stored as a column
    the learners cannot index by, and a bad index would look like the env's own failure."""
    indices = np.asarray(actions)
    if indices.ndim != 1 or indices.dtype.kind not in "iu":
        raise ConfigError(f"the policy's forward returned actions of shape {list(indices.shape)} ({indices.dtype}) "
                          f"for a Discrete({space.n}) action space, which takes one integer index per env, (N,)")
    if _out_of_range(indices, int(space.n)):
        bad = indices[(indices < 0) | (indices >= space.n)]
        raise ConfigError(f"the policy's forward returned action {int(bad[0])} for a Discrete({space.n}) action "
                          f"space, whose indices are 0..{int(space.n) - 1} (a policy counts from 0 whatever the "
                          f"space's start)")
    return indices


_UNSIGNED = {np.dtype(f"i{size}"): np.dtype(f"u{size}") for size in (1, 2, 4, 8)}  # native signed -> unsigned


def _out_of_range(indices: np.ndarray, n: int) -> bool:
    """Is any of the integer ``indices`` outside ``[0, n)``? Checked at every env step: for native signed ints in
    one comparison and a count, since viewed as unsigned a negative index is at least 2**(bits - 1), so above any
    ``n`` up to that (a min and a max, two ufunc reductions, cost 2.5% of a CartPole collect step of 8 envs);
    others (unsigned, byte-swapped, an ``n`` beyond the dtype's range) by their min and max."""
    unsigned = _UNSIGNED.get(indices.dtype)
    if unsigned is not None and n <= 1 << (8 * indices.itemsize - 1):
        return bool(np.count_nonzero(indices.view(unsigned) >= n))
    return bool(len(indices)) and bool(indices.min() < 0 or indices.max() >= n)

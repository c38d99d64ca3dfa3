"""Generalized advantage estimation (Schulman et al. 2016, "High-Dimensional Continuous Control Using GAE"); the
equations and the terminated/truncated rule are written out in docs/maths.md."""

from __future__ import annotations

import numpy as np


def _check_same_shape(**arrays: np.ndarray) -> tuple[int, int]:
    """Check that every array is 2-D (T, N) and that all shapes agree; return (T, N)."""
    shapes = {name: np.shape(a) for name, a in arrays.items()}
    first_name, first_shape = next(iter(shapes.items()))
    if len(first_shape) != 2:
        raise ValueError(f"{first_name} must be time-major with shape (T, N), got shape {first_shape}")
    for name, shape in shapes.items():
        if shape != first_shape:
            raise ValueError(f"{name} has shape {shape} but {first_name} has shape {first_shape}; all must be (T, N)")
    return first_shape  # type: ignore[return-value]


def gae(
    reward: np.ndarray,
    value: np.ndarray,
    next_value: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    gamma: float,
    lam: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Compute GAE(γ, λ) advantages and value targets for a time-major rollout.

    Args:
        reward: (T, N) float, r_t for N envs.
        value: (T, N) float, V(s_t) of the observation the action was taken in.
        next_value: (T, N) float, V of the observation after step t. At a step that ended the episode (terminated or
            truncated) this is the value of the episode's *final* observation, not of the reset observation; at the
            last step of the rollout it is the value of the next observation (the rollout cut bootstraps).
        terminated: (T, N) bool, the episode ended in a terminal state at step t (no bootstrap).
        truncated: (T, N) bool, the episode was cut at step t (time limit): bootstrap from ``next_value``.
        gamma: discount γ.
        lam: GAE λ.

    Returns:
        ``(advantage, return_target)``, both float32 (T, N); ``return_target = advantage + value``.

    Example:
        >>> adv, ret = gae(r, v, nv, term, trunc, gamma=0.99, lam=0.95)  # doctest: +SKIP
    """
    num_steps, _ = _check_same_shape(
        reward=reward, value=value, next_value=next_value, terminated=terminated, truncated=truncated
    )
    reward = np.asarray(reward, dtype=np.float32)
    value = np.asarray(value, dtype=np.float32)
    next_value = np.asarray(next_value, dtype=np.float32)
    not_terminated = 1.0 - np.asarray(terminated, dtype=np.float32)
    # An episode end of either kind stops the advantage from flowing back from the next episode.
    not_done = 1.0 - np.logical_or(terminated, truncated).astype(np.float32)

    # δ_t = r_t + γ(1 − term_t) V(s_{t+1}) − V(s_t)   (GAE paper, eq. 10); truncation keeps the bootstrap.
    delta = reward + np.float32(gamma) * not_terminated * next_value - value
    advantage = np.zeros_like(delta)
    running = np.zeros_like(delta[0])  # A_T = 0 past the rollout end; the cut is handled by next_value in δ
    decay = np.float32(gamma * lam)
    for t in reversed(range(num_steps)):
        # A_t = δ_t + γλ(1 − done_t) A_{t+1}   (GAE paper, eq. 16, reset at episode ends)
        running = delta[t] + decay * not_done[t] * running
        advantage[t] = running
    return_target = advantage + value
    return advantage.astype(np.float32), return_target.astype(np.float32)

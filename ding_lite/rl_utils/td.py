"""Temporal-difference maths for value-based methods: n-step returns, double-Q targets, TD losses (equations in
docs/maths.md)."""

from __future__ import annotations

import numpy as np
import torch

from ding_lite.rl_utils.gae import _check_same_shape


def nstep_return(
    reward: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    gamma: float,
    nstep: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Discounted n-step reward sums over a time-major rollout, stopping at episode ends and at the rollout end.

    For each (t, n) the sum is Σ_{k<m} γ^k r_{t+k}, where m ≤ ``nstep`` steps are summed: the sum includes the reward
    of the step that ends the episode (terminated or truncated) and stops after it, and it stops at the last step of
    the rollout (t + m − 1 ≤ T − 1).

    Args:
        reward: (T, N) float rewards.
        terminated: (T, N) bool, terminal step (no bootstrap).
        truncated: (T, N) bool, time-limit cut (bootstrap from the final observation).
        gamma: discount γ.
        nstep: n ≥ 1, the most steps summed.

    Returns:
        ``(return_n, discount_n, last_index)``:
        ``return_n`` float32 (T, N), the sum above;
        ``discount_n`` float32 (T, N) = γ^m · (1 − terminated[t+m−1]), the factor in front of the bootstrap value;
        ``last_index`` int64 (T, N) = t + m − 1, the time index whose *next* observation is the bootstrap state
        (gather ``next_obs[last_index, n]``). Truncation thus bootstraps with γ^m, termination has discount 0.

    Example:
        >>> ret, disc, last = nstep_return(r, term, trunc, gamma=0.99, nstep=3)  # doctest: +SKIP
        >>> target = ret + disc * q_next_at(last)  # doctest: +SKIP
    """
    if isinstance(nstep, bool) or not isinstance(nstep, (int, np.integer)) or nstep < 1:
        raise ValueError(f"nstep must be an integer >= 1, got {nstep=}")
    num_steps, num_envs = _check_same_shape(reward=reward, terminated=terminated, truncated=truncated)
    reward = np.asarray(reward, dtype=np.float32)
    terminated = np.asarray(terminated, dtype=bool)
    done = np.logical_or(terminated, truncated)

    time = np.arange(num_steps)[:, None]  # (T, 1)
    return_n = np.zeros((num_steps, num_envs), dtype=np.float32)
    num_summed = np.zeros((num_steps, num_envs), dtype=np.int64)  # m
    alive = np.ones((num_steps, num_envs), dtype=bool)  # the sum starting at t has not hit an episode end yet
    # loop over the horizon only (no window reaches past the rollout's T steps); vectorised over every (t, n)
    for k in range(min(nstep, num_steps)):
        index = np.minimum(time + k, num_steps - 1)  # (T, 1), clamped so gathers stay in range
        take = alive & (time + k <= num_steps - 1)
        step_reward = np.take_along_axis(reward, np.broadcast_to(index, reward.shape), axis=0)
        step_done = np.take_along_axis(done, np.broadcast_to(index, done.shape), axis=0)
        return_n += np.where(take, np.float32(gamma**k) * step_reward, np.float32(0.0))
        num_summed += take
        alive = take & ~step_done  # the episode-ending step's reward was included; stop after it

    last_index = time + num_summed - 1  # (T, N), always >= t since m >= 1
    terminated_last = np.take_along_axis(terminated, last_index, axis=0)
    # y = Σ γ^k r + γ^m (1 − term) Q(s_{t+m}) (Sutton & Barto §7.1; Mnih et al. 2015 use m = 1)
    discount_n = np.power(np.float32(gamma), num_summed).astype(np.float32) * (~terminated_last).astype(np.float32)
    return return_n, discount_n.astype(np.float32), last_index.astype(np.int64)


def double_q_target(
    return_n: torch.Tensor,
    discount_n: torch.Tensor,
    q_next_online: torch.Tensor,
    q_next_target: torch.Tensor,
) -> torch.Tensor:
    """Double-DQN bootstrap target: the online net picks the next action, the target net evaluates it.

    Args:
        return_n: (B,) n-step reward sums.
        discount_n: (B,) γ^m (1 − terminated), 0 where the episode terminated.
        q_next_online: (B, A) online-network Q values at the bootstrap state.
        q_next_target: (B, A) target-network Q values at the bootstrap state.

    Returns:
        (B,) target ``return_n + discount_n · q_next_target[b, argmax_a q_next_online[b, a]]``, detached.
    """
    if q_next_online.shape != q_next_target.shape or q_next_online.dim() != 2:
        raise ValueError(
            f"q_next_online and q_next_target must both be (B, A), got {tuple(q_next_online.shape)} and "
            f"{tuple(q_next_target.shape)}"
        )
    with torch.no_grad():
        # van Hasselt et al. 2016, eq. 4: decouple selection (online θ) from evaluation (target θ⁻).
        next_action = q_next_online.argmax(dim=-1, keepdim=True)  # (B, 1)
        q_next = q_next_target.gather(-1, next_action).squeeze(-1)  # (B,)
        return (return_n + discount_n * q_next).detach()


TD_LOSS_TYPES = ("huber", "mse")  # the criteria td_error_loss knows


def td_error_loss(
    q_taken: torch.Tensor,
    target: torch.Tensor,
    weight: torch.Tensor | None = None,
    loss_type: str = "huber",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Importance-weighted TD loss and the absolute TD error (for replay priorities).

    Args:
        q_taken: (B,) Q(s, a) of the taken actions (carries the gradient).
        target: (B,) TD targets (treated as constants).
        weight: (B,) importance-sampling weights (Schaul et al. 2016); ``None`` means ones.
        loss_type: ``"huber"`` (smooth L1 with δ = 1, Mnih et al. 2015) or ``"mse"`` (squared error, DI-engine's
            ``q_nstep_td_error`` criterion).

    Returns:
        ``(loss, td_error_abs)``: scalar ``mean(weight · l)``, and (B,) ``|target − q_taken|`` detached.
    """
    target = target.detach()
    if loss_type == "huber":
        per_sample = torch.nn.functional.smooth_l1_loss(q_taken, target, reduction="none", beta=1.0)
    elif loss_type == "mse":
        per_sample = (target - q_taken) ** 2
    else:
        raise ValueError(f"loss_type must be one of {', '.join(map(repr, TD_LOSS_TYPES))}, got {loss_type=}")
    if weight is not None:
        if weight.shape != per_sample.shape:
            raise ValueError(
                f"weight must have the shape of q_taken {tuple(per_sample.shape)}, got {tuple(weight.shape)}"
            )
        per_sample = per_sample * weight.detach()
    td_error_abs = (target - q_taken).abs().detach()
    return per_sample.mean(), td_error_abs

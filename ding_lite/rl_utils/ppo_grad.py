"""PPO's losses (:mod:`ding_lite.rl_utils.ppo`) and its two action distributions' log-probabilities
(:mod:`ding_lite.rl_utils.distributions`) with their gradients written out, in NumPy: what a hand-written backward
pass of a PPO minibatch needs (``ding_lite.policy.ppo_numpy``). Each function returns the value and its gradient;
ties and clip edges take the gradient that autograd gives the torch versions (``tests/rl_utils/test_ppo_grad.py``
checks them against autograd and by hand).

Float32 arrays in, float32 out. Notation as in the PPO paper (Schulman et al. 2017): r = exp(log pi - log mu),
objective min(r A, clip(r, 1 - eps, 1 + eps) A).
"""
from __future__ import annotations

import math

import numpy as np

from ding_lite.rl_utils.masks import MASKED_LOGIT
from ding_lite.rl_utils.ppo import check_dual_clip

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
# The ufuncs themselves: ``x.sum()`` and ``np.clip`` go through Python wrappers that cost several times the
# arithmetic on arrays of 64 numbers (5-7 µs against about 1 µs).
_sum = np.add.reduce


def _clip(x: np.ndarray, low: float, high: float) -> np.ndarray:
    return np.minimum(np.maximum(x, low), high)


def ppo_policy_loss_grad(logp: np.ndarray, logp_old: np.ndarray, adv: np.ndarray, clip_ratio: float,
                         dual_clip: float | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """``-mean(objective)`` of :func:`~ding_lite.rl_utils.ppo.ppo_policy_loss` and its gradient.

    Args:
        logp: (B,) log pi(a|s) of the current policy.
        logp_old: (B,) log mu(a|s) of the policy that collected.
        adv: (B,) advantages (normalised already if wanted).
        clip_ratio: eps.
        dual_clip: c > 1: for A < 0 the objective is at least c A (None: off).

    Returns:
        ``(loss, dloss/dlogp (B,), log_ratio (B,))``. The objective's gradient in log pi is r A where the unclipped
        term is the minimum (ties included: at a tie the clipped term equals it and passes the gradient too, as the
        clamp's does inside its range) and 0 where the clip binds or the dual clip's bound c A is above.
    """
    log_ratio = logp - logp_old
    ratio = np.exp(log_ratio)
    unclipped = ratio * adv
    clipped = _clip(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio) * adv
    objective = np.minimum(unclipped, clipped)
    grad = np.where(unclipped <= clipped, unclipped, 0.0).astype(np.float32, copy=False)
    check_dual_clip(dual_clip)
    if dual_clip is not None:
        bound = dual_clip * adv
        floor = (adv < 0) & (bound > objective)  # torch.max's tie splits the gradient: see below
        tie = (adv < 0) & (bound == objective)
        objective = np.where(floor, bound, objective)
        grad = np.where(floor, 0.0, np.where(tie, 0.5 * grad, grad)).astype(np.float32, copy=False)
    scale = np.float32(-1.0 / len(logp))
    return float(_sum(objective)) * float(scale), grad * scale, log_ratio


def ppo_value_loss_grad(value: np.ndarray, value_old: np.ndarray, target: np.ndarray,
                        clip_ratio: float | None) -> tuple[float, np.ndarray]:
    """``0.5 mean(max((v - R)^2, (v_old + clip(v - v_old, -eps, eps) - R)^2))`` of
    :func:`~ding_lite.rl_utils.ppo.ppo_value_loss` (``0.5 mean((v - R)^2)`` without the clip) and its gradient
    ``(loss, dloss/dv (B,))``. Where the clipped error is the larger one, the gradient passes only while
    |v - v_old| <= eps; at a tie of the two errors each gets half (torch.max's rule)."""
    scale = np.float32(1.0 / len(value))
    error = value - target
    if clip_ratio is None:
        return float(0.5 * np.dot(error, error) * scale), error * scale
    delta = value - value_old
    clipped_error = value_old + _clip(delta, -clip_ratio, clip_ratio) - target
    sq, clipped_sq = error * error, clipped_error * clipped_error
    inside = np.abs(delta) <= clip_ratio
    grad_clipped = np.where(inside, clipped_error, 0.0)
    grad = np.where(sq > clipped_sq, error, np.where(sq < clipped_sq, grad_clipped, 0.5 * (error + grad_clipped)))
    return float(0.5 * _sum(np.maximum(sq, clipped_sq)) * scale), grad.astype(np.float32, copy=False) * scale


def gaussian_log_prob(mu: np.ndarray, log_std: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log N(a; mu, sigma) (B,), z (B, A))`` of a diagonal Gaussian with state-independent ``log_std`` (A,),
    ``z = (a - mu) / sigma``, which :func:`gaussian_log_prob_grad` takes back."""
    z = (action - mu) * np.exp(-log_std)
    return gaussian_log_prob_of_noise(z, log_std), z


def gaussian_log_prob_of_noise(z: np.ndarray, log_std: np.ndarray) -> np.ndarray:
    """log N(mu + sigma z; mu, sigma) (B,) of the standard-normal noise ``z`` (B, A) that drew an action:
    ``-|z|^2 / 2 - sum log sigma - A log(2 pi) / 2``."""
    return -0.5 * _sum(z * z, -1) - np.float32(_sum(log_std) + _HALF_LOG_2PI * z.shape[-1])


def gaussian_log_prob_grad(z: np.ndarray, log_std: np.ndarray, grad_logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient of ``sum_b grad_logp_b log N(a_b; mu_b, sigma)`` in ``mu`` (B, A) and in ``log_std`` (A,):
    d log p / d mu = z / sigma, d log p / d log sigma = z^2 - 1."""
    weighted = grad_logp[:, None] * z
    return weighted * np.exp(-log_std), _sum(weighted * z, 0) - _sum(grad_logp)


def log_softmax(logits: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """log pi (B, A) of a categorical over ``logits`` (B, A), illegal actions (``mask`` False) at
    :data:`~ding_lite.rl_utils.masks.MASKED_LOGIT` as in the torch path (probability 0)."""
    if mask is not None:
        logits = np.where(mask, logits, np.float32(MASKED_LOGIT))
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def categorical_log_prob(logits: np.ndarray, action: np.ndarray,
                         mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(log pi(a) (B,), log pi (B, A), entropy (B,))`` of a categorical over ``logits`` (B, A) (:func:`log_softmax`,
    masked likewise)."""
    log_pi = log_softmax(logits, mask)
    entropy = -(np.exp(log_pi) * log_pi).sum(-1)
    return np.take_along_axis(log_pi, action.astype(np.int64)[:, None], axis=-1)[:, 0], log_pi, entropy


def categorical_log_prob_grad(log_pi: np.ndarray, entropy: np.ndarray, action: np.ndarray, grad_logp: np.ndarray,
                              grad_entropy: float, mask: np.ndarray | None = None) -> np.ndarray:
    """The gradient in the logits (B, A) of ``sum_b grad_logp_b log pi(a_b) + grad_entropy sum_b H_b``:
    d log pi(a) / d z = onehot(a) - pi, dH / d z_j = -pi_j (log pi_j + H); 0 at illegal actions (the mask's
    ``where`` passes no gradient there)."""
    pi = np.exp(log_pi)
    grad = -grad_logp[:, None] * pi
    grad[np.arange(len(action)), action.astype(np.int64)] += grad_logp
    if grad_entropy:
        grad -= np.float32(grad_entropy) * pi * (log_pi + entropy[:, None])
    if mask is not None:
        grad *= mask
    return grad

"""Maths of the Q actor-critics for continuous actions: SAC (Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and
Applications", twin Q and a learned temperature) and TD3 (Fujimoto et al. 2018, "Addressing Function Approximation
Error in Actor-Critic Methods").

Actions live in the env's units: a squashed action is ``tanh(u) * scale + bias`` with ``scale = (high - low) / 2`` and
``bias = (high + low) / 2`` per dimension, so it covers the env's bounds exactly (a rescaling, never a clip).
:func:`squashed_gaussian`'s log-probability is the env-unit action's; SAC's policy adds ``sum(log scale)`` back to
take that of the action in [-1, 1], SB3's and DI-engine's units (policy/sac.py).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def log_one_minus_tanh_sq(u: torch.Tensor) -> torch.Tensor:
    """log(1 - tanh(u)^2), computed as 2 (log 2 - u - softplus(-2u)): the same value without the cancellation of
    ``1 - tanh(u)^2`` (which is exactly 0 in float32 from |u| ≈ 9 on, and -inf in the log)."""
    return 2.0 * (LOG_2 - u - F.softplus(-2.0 * u))


def squashed_sample(mu: torch.Tensor, log_std: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor,
                    noise: torch.Tensor | None = None) -> torch.Tensor:
    """The action of :func:`squashed_gaussian` alone, ``tanh(mu + exp(log_std) * noise) * scale + bias`` (B, A):
    the same draws and arithmetic, so the same action, without the log-probability that collection does not use."""
    if noise is None:
        noise = torch.randn_like(mu)
    return torch.tanh(mu + log_std.exp() * noise) * scale + bias


def squashed_gaussian(mu: torch.Tensor, log_std: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor,
                      noise: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A reparameterised sample of the tanh-squashed diagonal Gaussian policy of SAC and its log-probability.

    u = mu + exp(log_std) * noise (noise ~ N(0, I) unless given); a = tanh(u) * scale + bias;
    log pi(a|s) = sum_i [log N(u_i; mu_i, std_i) - log(scale_i (1 - tanh(u_i)^2))] (Haarnoja et al. 2018, appendix C,
    with the Jacobian of the rescaling to the env's bounds).

    Args:
        mu, log_std: (B, A) the Gaussian's mean and log standard deviation.
        scale, bias: (A,) the rescaling to the env's bounds.
        noise: (B, A) standard normal draws (None: drawn here).

    Returns:
        ``(action (B, A), log_prob (B,))``; both carry the gradient with respect to ``mu`` and ``log_std``.
    """
    if noise is None:
        noise = torch.randn_like(mu)
    u = mu + log_std.exp() * noise
    # log N(u; mu, std) = -noise^2 / 2 - log std - log(2 pi) / 2, with (u - mu) / std = noise exactly
    log_prob = (-0.5 * noise.square() - log_std - HALF_LOG_2PI - log_one_minus_tanh_sq(u)).sum(-1) \
        - scale.log().sum()
    return torch.tanh(u) * scale + bias, log_prob


def clipped_double_q_target(reward: torch.Tensor, terminated: torch.Tensor, gamma: float, q_next: torch.Tensor,
                            entropy_bonus: torch.Tensor | None = None) -> torch.Tensor:
    """The clipped double-Q target y = r + gamma (1 - terminated) [min_j Q'_j(s', a') + entropy_bonus].

    ``q_next`` is (K, B), the K target critics' values of the next action (the min is over K; K = 1 is the plain
    target); ``entropy_bonus`` is SAC's ``-alpha log pi(a'|s')`` (None for TD3). A truncated episode bootstraps
    (only ``terminated`` zeroes the future). No gradient flows into the target."""
    future = q_next.min(dim=0).values
    if entropy_bonus is not None:
        future = future + entropy_bonus
    return (reward + gamma * (1.0 - terminated.float()) * future).detach()


def sac_actor_loss(log_prob: torch.Tensor, q_min: torch.Tensor, alpha: torch.Tensor | float) -> torch.Tensor:
    """E[alpha log pi(a|s) - min_j Q_j(s, a)] over a batch, a reparameterised (its gradient reaches the actor
    through both terms); ``alpha`` is a constant here."""
    return (alpha * log_prob - q_min).mean()


def sac_actor_loss_gradients(noise: torch.Tensor, log_std: torch.Tensor, squashed: torch.Tensor, dq_da: torch.Tensor,
                             scale: torch.Tensor, alpha: torch.Tensor | float) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients of :func:`sac_actor_loss` with respect to the Gaussian's ``mu`` and ``log_std`` (each (B, A)),
    for the sample of :func:`squashed_gaussian` with these ``noise`` draws, written out.

    With u = mu + std * noise, t = tanh(u) (``squashed``), a = t * scale + bias and
    L = 1/B sum_b [alpha log pi(a_b|s_b) - min_j Q_j(s_b, a_b)]:
    d log pi / du_i = 2 t_i (the Jacobian term -log(1 - t_i^2); the Gaussian term -noise^2/2 - log std does not move
    with u for fixed noise), d log pi / d log std_i = -1 besides, da_i/du_i = scale_i (1 - t_i^2), so

        dL/dmu = (alpha 2 t - dQ/da * scale (1 - t^2)) / B,    dL/dlog_std = dL/dmu * std * noise - alpha / B

    ``dq_da`` (B, A) is the gradient of min_j Q_j at a (a sample's own critic's)."""
    batch = noise.shape[0]
    grad_mu = (2.0 * alpha) * squashed - dq_da * scale * (1.0 - squashed.square())
    grad_mu = grad_mu / batch
    grad_log_std = grad_mu * log_std.exp() * noise - alpha / batch
    return grad_mu, grad_log_std


def sac_temperature_loss(log_alpha: torch.Tensor, log_prob: torch.Tensor, target_entropy: float) -> torch.Tensor:
    """-E[log alpha (log pi(a|s) + target_entropy)], the log-probabilities held constant: its gradient raises alpha
    while the policy's entropy -E[log pi] is below ``target_entropy`` and lowers it above (Haarnoja et al. 2018,
    eq. 18, in log alpha as SB3 and DI-engine optimise it)."""
    return -(log_alpha * (log_prob.detach() + target_entropy)).mean()


def smoothed_target_action(action_next: torch.Tensor, sigma: float, noise_clip: float, scale: torch.Tensor,
                           low: torch.Tensor, high: torch.Tensor, noise: torch.Tensor | None = None) -> torch.Tensor:
    """TD3's target policy smoothing: a' = clip(pi'(s') + clip(sigma eps, -c, c) * scale, low, high), eps ~ N(0, I)
    (``noise`` = eps if given).

    ``sigma`` and ``noise_clip`` are in units of the action's half-range ``scale`` (Fujimoto et al.'s code multiplies
    both by ``max_action``); with bounds [-1, 1] this is clip(pi'(s') + clip(N(0, sigma), -c, c), -1, 1)."""
    if noise is None:
        noise = torch.randn_like(action_next)
    smoothing = (sigma * noise).clamp(-noise_clip, noise_clip) * scale
    return torch.maximum(torch.minimum(action_next + smoothing, high), low)

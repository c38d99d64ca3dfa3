"""ACER maths (Wang et al. 2017, "Sample Efficient Actor-Critic with Experience Replay", arXiv 1611.01224).

Everything is time-major: ``T`` steps of ``B`` sequences, ``A`` discrete actions. The trust region works in the
coordinates of the distribution statistics φ, per sample: the policy gradient ĝ, the KL gradient k and the projected
z are (T, B, A) vectors. Two choices of φ are offered:

- the probability vector π, the paper's (§3.3): ``acer_policy_gradient_prob``, ``entropy_gradient_prob``,
  ``categorical_kl_gradient_prob``; z is then carried to the logits by ``prob_to_logit_gradient``;
- the logits ℓ (π = softmax(ℓ)): ``acer_policy_gradient``, ``entropy_gradient``, ``categorical_kl_gradient``. Here ĝ and
  k sum to zero and kᵀĝ is exactly the first-order change of KL(π_avg ‖ π) along ĝ, while in probability coordinates
  both carry components along the all-ones direction that the softmax discards, so the constraint binds far more
  often there (about 10% of samples on CartPole against 0.1% at δ = 1).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

_TINY = 1e-8  # floor of probabilities under a log


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``x`` over the entries where ``mask`` is 1 (0 when no entry is valid).

    Uses ``torch.where`` rather than a product so that a non-finite value on a masked entry cannot leak into the
    value (gradients through such an entry need the entry itself replaced, as :func:`acer_value_loss` does).
    """
    mask = mask.to(x.dtype)
    return torch.where(mask > 0, x, torch.zeros_like(x)).sum() / mask.sum().clamp_min(1.0)


@torch.no_grad()
def importance_ratio(logit: torch.Tensor, behaviour_logit: torch.Tensor) -> torch.Tensor:
    """ρ(a) = π(a|s) / μ(a|s) for every action, from logits, as exp(log π − log μ).

    A ratio of softmaxes underflows to 0/0 = NaN once a logit gap passes about 104 in float32 (logits [0, −120]
    against behaviour [0, −110] gave ρ = [1, NaN]); the difference of log-softmaxes stays finite (here [1, e⁻¹⁰]).
    """
    return torch.exp(torch.log_softmax(logit, dim=-1) - torch.log_softmax(behaviour_logit.to(logit.dtype), dim=-1))


@torch.no_grad()
def retrace_q_target(
    q_taken: torch.Tensor,
    value: torch.Tensor,
    rho_taken: torch.Tensor,
    reward: torch.Tensor,
    terminated: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
) -> torch.Tensor:
    """Retrace targets Q^ret with the trace truncated at 1 (Munos et al. 2016; ACER eq. 5 / Algorithm 2).

    Backwards over the sequence::

        Q^ret_t = r_t + γ(1 − term_t)·[c_{t+1}·(Q^ret_{t+1} − Q(s_{t+1}, a_{t+1})) + V(s_{t+1})]
        c_{t+1} = min(1, ρ_{t+1}(a_{t+1}))·mask_{t+1}   (and c_T = 0: the sequence ends with Q^ret = V(s_T))

    A step whose successor is padding (``mask`` 0) or past the sequence thus bootstraps from V of its next state,
    which is how a truncated episode or a sequence cut in mid-episode ends. A terminated step gets Q^ret_t = r_t.

    Args:
        q_taken: (T, B) Q(s_t, a_t).
        value: (T + 1, B) V(s_t) = Σ_a π(a|s_t) Q(s_t, a); row T is V of the state after the last step.
        rho_taken: (T, B) ρ_t(a_t) = π(a_t|s_t) / μ(a_t|s_t).
        reward: (T, B).
        terminated: (T, B) 1 where the step ended its episode with a terminal state (no bootstrap).
        mask: (T, B) 1 on real steps, 0 on padding.
        gamma: discount γ.

    Returns:
        (T, B) Q^ret, without gradient.
    """
    steps = q_taken.shape[0]
    if value.shape[0] != steps + 1:
        raise ValueError(f"value must have T + 1 = {steps + 1} rows (V of the state after the last step too), "
                         f"got shape {tuple(value.shape)}")
    # Q^ret_t = a_t + b_t·Q^ret_{t+1} with a_t = r_t + γ(1 − term_t)(V_{t+1} − c_{t+1}Q_{t+1}) and
    # b_t = γ(1 − term_t)c_{t+1}: all but the recursion itself is computed at once
    trace = torch.zeros_like(value)  # c_0 .. c_T; c_T = 0 ends the trace at V(s_T)
    trace[1:steps] = rho_taken[1:].clamp(max=1.0) * mask[1:].to(value.dtype)
    discount = gamma * (1.0 - terminated.to(value.dtype))
    q_next = torch.cat([q_taken[1:], torch.zeros_like(q_taken[:1])])  # Q(s_{t+1}, a_{t+1}); unused at t = T − 1
    offset = reward + discount * (value[1:] - trace[1:] * q_next)
    slope = discount * trace[1:]
    q_ret = [offset[steps - 1]]
    for t in range(steps - 2, -1, -1):
        q_ret.append(torch.addcmul(offset[t], slope[t], q_ret[-1]))
    return torch.stack(q_ret[::-1])


def acer_value_loss(q_taken: torch.Tensor, q_retrace: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Critic loss ½(Q^ret_t − Q(s_t, a_t))², Q^ret a constant, averaged over real steps.

    Args:
        q_taken: (T, B) Q(s_t, a_t), carries the gradient.
        q_retrace: (T, B) Retrace targets.
        mask: (T, B) 1 on real steps.
    """
    # targets of padding steps replaced by the prediction itself: a zero error whatever the padding holds
    target = torch.where(mask > 0, q_retrace.detach(), q_taken.detach())
    return masked_mean(0.5 * (target - q_taken) ** 2, mask)


class ACERPolicyGradient(NamedTuple):
    """Per-sample gradients with respect to the logits (each (T, B, A)), and per-sample surrogates whose gradients
    they are (each (T, B), for logging)."""

    truncated: torch.Tensor  # min(c, ρ_t(a_t))·(Q^ret_t − V_t)·∇ log π(a_t|s_t)
    bias_correction: torch.Tensor  # Σ_a [1 − c/ρ_t(a)]₊·π(a|s_t)·(Q(s_t, a) − V_t)·∇ log π(a|s_t)
    truncated_surrogate: torch.Tensor  # min(c, ρ)·(Q^ret − V)·log π(a_t)
    bias_correction_surrogate: torch.Tensor  # Σ_a [1 − c/ρ(a)]₊·π(a)·(Q(a) − V)·log π(a)


@torch.no_grad()
def acer_policy_gradient(
    prob: torch.Tensor,
    q_value: torch.Tensor,
    value: torch.Tensor,
    q_retrace: torch.Tensor,
    rho: torch.Tensor,
    action: torch.Tensor,
    c_clip_ratio: float,
) -> ACERPolicyGradient:
    """ACER's truncated importance-sampling policy gradient with bias correction (Wang et al. 2017, eq. 9), per
    sample, with respect to the logits ℓ of π = softmax(ℓ); every factor except ∇ log π is a constant.

    With ∇_ℓ log π(a) = e_a − π::

        truncated       = min(c, ρ(a_t))·(Q^ret − V)·(e_{a_t} − π)
        bias_correction = u − π·Σ_a u(a),   u(a) = [1 − c/ρ(a)]₊·π(a)·(Q(a) − V)

    The bias correction vanishes when every ρ(a) ≤ c.

    Args:
        prob: (T, B, A) π(·|s_t).
        q_value: (T, B, A) Q(s_t, ·).
        value: (T, B) V(s_t).
        q_retrace: (T, B) Q^ret_t.
        rho: (T, B, A) ρ_t(a) = π(a|s_t) / μ(a|s_t) for every action.
        action: (T, B) integer actions a_t.
        c_clip_ratio: c, the truncation of the importance weight.
    """
    action = action.long().unsqueeze(-1)
    rho_bar = rho.gather(-1, action).squeeze(-1).clamp(max=c_clip_ratio)  # min(c, ρ_t(a_t))
    coef = (rho_bar * (q_retrace - value)).unsqueeze(-1)
    truncated = coef * (torch.zeros_like(prob).scatter_(-1, action, 1.0) - prob)
    # [1 − c/ρ]₊ = [(ρ − c)/ρ]₊: the weight of the actions whose importance weight the first term cut (eq. 9)
    correction = (1.0 - c_clip_ratio / rho).clamp(min=0.0)
    advantage = q_value - value.unsqueeze(-1)
    u = correction * prob * advantage
    bias_correction = u - prob * u.sum(-1, keepdim=True)
    log_prob = prob.clamp_min(_TINY).log()
    return ACERPolicyGradient(
        truncated=truncated,
        bias_correction=bias_correction,
        truncated_surrogate=coef.squeeze(-1) * log_prob.gather(-1, action).squeeze(-1),
        bias_correction_surrogate=(u * log_prob).sum(-1),
    )


@torch.no_grad()
def acer_policy_gradient_prob(
    prob: torch.Tensor,
    q_value: torch.Tensor,
    value: torch.Tensor,
    q_retrace: torch.Tensor,
    rho: torch.Tensor,
    action: torch.Tensor,
    c_clip_ratio: float,
) -> torch.Tensor:
    """ĝ of :func:`acer_policy_gradient` (eq. 9) with respect to the probability vector π instead of the logits, the
    statistics φ of the paper's trust region (Wang et al. 2017, §3.3), per sample; with ∇_π log π(a) = e_a / π(a)::

        ĝ = min(c, ρ(a_t))·(Q^ret − V)·e_{a_t} / π(a_t) + [1 − c/ρ]₊ ⊙ (Q − V)

    (the bias correction's π(a) cancels its 1/π(a)). Same arguments as :func:`acer_policy_gradient`; returns (T, B, A).
    """
    action = action.long().unsqueeze(-1)
    rho_bar = rho.gather(-1, action).squeeze(-1).clamp(max=c_clip_ratio)
    coef = rho_bar * (q_retrace - value) / prob.gather(-1, action).squeeze(-1).clamp_min(_TINY)
    truncated = torch.zeros_like(prob).scatter_(-1, action, coef.unsqueeze(-1))
    correction = (1.0 - c_clip_ratio / rho).clamp(min=0.0)
    return truncated + correction * (q_value - value.unsqueeze(-1))


@torch.no_grad()
def entropy_gradient_prob(prob: torch.Tensor) -> torch.Tensor:
    """∇_π H = −(log π + 1) of the entropy with respect to the probability vector, per sample."""
    return -(prob.clamp_min(_TINY).log() + 1.0)


@torch.no_grad()
def categorical_kl_gradient_prob(avg_prob: torch.Tensor, prob: torch.Tensor) -> torch.Tensor:
    """k = ∇_π KL(π_avg ‖ π) = −π_avg / π with respect to the probability vector (Wang et al. 2017, §3.3)."""
    return -avg_prob / prob.clamp_min(_TINY)


@torch.no_grad()
def prob_to_logit_gradient(z: torch.Tensor, prob: torch.Tensor) -> torch.Tensor:
    """A gradient z with respect to π = softmax(ℓ) carried to the logits: Jᵀz = π ⊙ z − π·(πᵀz), J the softmax's
    Jacobian (its component along the all-ones direction is dropped, as the softmax drops it)."""
    return prob * z - prob * (prob * z).sum(-1, keepdim=True)


@torch.no_grad()
def entropy_gradient(prob: torch.Tensor) -> torch.Tensor:
    """∇_ℓ H = −π ⊙ (log π + H) of the entropy H = −Σ_a π(a) log π(a) with respect to the logits, per sample."""
    log_prob = prob.clamp_min(_TINY).log()
    entropy = -(prob * log_prob).sum(-1, keepdim=True)
    return -prob * (log_prob + entropy)


@torch.no_grad()
def categorical_kl_gradient(avg_prob: torch.Tensor, prob: torch.Tensor) -> torch.Tensor:
    """k = ∇_ℓ KL(π_avg ‖ softmax(ℓ)) = π − π_avg, the gradient of the KL from the average policy to the current one
    with respect to the current logits (ACER §3.3: the trust region keeps π near the average policy network)."""
    return prob - avg_prob


@torch.no_grad()
def trust_region_projection(g: torch.Tensor, k: torch.Tensor, delta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The efficient trust-region step of ACER (Wang et al. 2017, eq. 12/13), per sample over the last dim::

        z = ĝ − max(0, (kᵀĝ − δ) / ‖k‖²)·k

    the closest vector to ĝ with kᵀz ≤ δ (so z = ĝ when kᵀĝ ≤ δ, and kᵀz = δ otherwise).

    Args:
        g: (..., A) the gradient ĝ.
        k: (..., A) the gradient of the KL to the average policy.
        delta: δ > 0, the constraint's bound.

    Returns:
        ``(z, active)``: z shaped like ``g``, and a bool tensor (...) marking the samples that were projected.
    """
    if delta <= 0:
        raise ValueError(f"trust_region_value δ must be > 0, got {delta=}")
    excess = (k * g).sum(-1) - delta
    # k ≠ 0 wherever kᵀĝ > δ > 0, so the division is only taken where it is defined
    scale = torch.where(excess > 0, excess / (k * k).sum(-1), torch.zeros_like(excess))
    return g - scale.unsqueeze(-1) * k, excess > 0


@torch.no_grad()
def ema_update_(average: nn.Module, online: nn.Module, target_theta: float) -> None:
    """Move ``average`` towards ``online`` in place: θ_avg ← (1 − τ)·θ_avg + τ·θ with τ = ``target_theta``
    (ACER's α = 1 − τ, 0.99 in the paper). Buffers are copied."""
    if not 0.0 <= target_theta <= 1.0:
        raise ValueError(f"target_theta must be in [0, 1], got {target_theta=}")
    for avg, cur in zip(average.parameters(), online.parameters(), strict=True):
        avg.mul_(1.0 - target_theta).add_(cur, alpha=target_theta)
    for avg_buf, cur_buf in zip(average.buffers(), online.buffers(), strict=True):
        avg_buf.copy_(cur_buf)

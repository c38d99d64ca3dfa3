"""Ensemble PPO (EPPO) maths (Yang et al., IJCAI 2022, "Towards Applicable Reinforcement Learning: Improving the
Generalization and Sample Efficiency with Policy Ensemble", arXiv 2205.09284).

K member policies p_1..p_K form the ensemble p̄ = (1/K) Σ_k p_k, a mixture of *probabilities* (averaging logits
would give a product of experts instead, whose log-probs do not match what was sampled). Shapes: member tensors lead
with the member dimension K, e.g. ``member_logp`` (K, B), ``member_logits`` (K, B, A), ``mu`` (K, B, D).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch.distributions import Independent, Normal

from ding_lite.rl_utils.ppo import ppo_policy_loss


def _log_weight(k: int, log_weight: torch.Tensor | None, like: torch.Tensor) -> torch.Tensor:
    """(K, 1, ..., 1) log member weights, broadcastable against ``like`` (K, ...); uniform if ``log_weight`` is None."""
    if log_weight is None:
        log_weight = torch.full((k,), -math.log(k), dtype=like.dtype, device=like.device)
    return log_weight.reshape((k,) + (1,) * (like.dim() - 1))


def mixture_log_prob(member_logp: torch.Tensor, log_weight: torch.Tensor | None = None) -> torch.Tensor:
    """log of the mixture's probability (or density) of one action per row.

    log p̄(a) = logsumexp_k(log w_k + log p_k(a)); with uniform weights w_k = 1/K this is
    logsumexp_k log p_k(a) − log K, for categorical members and for the equal-weight Gaussian mixture alike.

    Args:
        member_logp: (K, B) log p_k(a_b) of each member on each row's action.
        log_weight: optional (K,) log mixture weights (they must sum to 1 in probability space); None: uniform.

    Returns:
        (B,) log p̄(a_b).

    Example: members giving a probability 0.2 and 0.6 -> log(0.4).
    """
    k = member_logp.shape[0]
    return torch.logsumexp(member_logp + _log_weight(k, log_weight, member_logp), dim=0)


def mixture_log_probs(member_logits: torch.Tensor, log_weight: torch.Tensor | None = None) -> torch.Tensor:
    """(B, A) log p̄(·|s) of a categorical mixture, computed stably from the members' logits (K, B, A)."""
    k = member_logits.shape[0]
    log_p = torch.log_softmax(member_logits, dim=-1)
    return torch.logsumexp(log_p + _log_weight(k, log_weight, log_p), dim=0)


def mixture_probs(member_logits: torch.Tensor, log_weight: torch.Tensor | None = None) -> torch.Tensor:
    """(B, A) p̄(·|s) = Σ_k w_k softmax(logits_k): the weighted mean of the members' *probabilities*, not of their
    logits (uniform weights 1/K unless ``log_weight`` is given)."""
    k = member_logits.shape[0]
    probs = torch.softmax(member_logits, dim=-1)
    return (probs * _log_weight(k, log_weight, probs).exp()).sum(dim=0)


def categorical_mixture_entropy(member_logits: torch.Tensor) -> torch.Tensor:
    """(B,) exact entropy H[p̄] = −Σ_a p̄(a) log p̄(a) of the uniform mixture of K categorical members."""
    log_pbar = mixture_log_probs(member_logits)
    return -(log_pbar.exp() * log_pbar).sum(dim=-1)


def gaussian_mixture_entropy(mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """(B,) entropy of the equal-weight mixture of K diagonal Gaussians (K, B, D).

    A Gaussian mixture has no closed-form entropy. With K = 1 the exact Gaussian entropy is returned; otherwise a
    one-sample-per-member Monte Carlo estimate H ≈ −(1/K) Σ_k log p̄(a_k), a_k = μ_k + σ_k·ε (reparameterised, so the
    estimate is unbiased and differentiable in every μ and σ: sampling the uniform mixture is sampling a member
    uniformly, and the K draws cover each member once).
    """
    k = mu.shape[0]
    if k == 1:
        return Independent(Normal(mu[0], sigma[0]), 1).entropy()
    sample = mu + sigma * torch.randn_like(mu)  # (K, B, D): one draw from each member
    # density of every draw under every member: (K member, K draw, B)
    logp = Independent(Normal(mu[:, None], sigma[:, None]), 1).log_prob(sample[None])
    return -mixture_log_prob(logp).mean(dim=0)


def probability_diversity(member_probs: torch.Tensor) -> torch.Tensor:
    """EPPO's diversity term D = mean over states of 2/(K(K−1)) Σ_{i<j} p_i(·|s)ᵀ p_j(·|s) (to be minimised).

    Args:
        member_probs: (K, B, A) each member's action probabilities.

    Returns:
        Scalar; 0 for a single member (no pairs). Σ_{i<j} p_iᵀp_j = (‖Σ_k p_k‖² − Σ_k ‖p_k‖²) / 2.
    """
    k = member_probs.shape[0]
    if k < 2:
        return member_probs.new_zeros(())
    total = member_probs.sum(dim=0)
    pair_sum = 0.5 * ((total * total).sum(-1) - (member_probs * member_probs).sum(-1).sum(0))  # (B,)
    return (2.0 / (k * (k - 1)) * pair_sum).mean()


def gaussian_mean_diversity(mu: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """Diversity of K diagonal Gaussian members (K, B, D), on their means (to be minimised).

    The continuous analogue of p_iᵀp_j is the overlap ∫p_i p_j da, which for Gaussians is proportional to
    κ_ij = exp(−½ Σ_d (μ_i − μ_j)² / (σ_i² + σ_j²)). D = mean over states of 2/(K(K−1)) Σ_{i<j} κ_ij, in [0, 1]: 1
    when members agree, → 0 when their means are far apart relative to their spreads. σ is detached so the term
    moves only the means (raising σ would also lower the overlap; spreading is the entropy bonus's job).
    """
    k = mu.shape[0]
    if k < 2:
        return mu.new_zeros(())
    var = sigma.detach() ** 2
    scaled = (mu[:, None] - mu[None]) ** 2 / (var[:, None] + var[None])  # (K, K, B, D)
    kernel = torch.exp(-0.5 * scaled.sum(-1))  # (K, K, B)
    i, j = torch.triu_indices(k, k, offset=1, device=mu.device)
    return kernel[i, j].mean()


def eppo_policy_loss(member_logp_new: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor,
                     clip_ratio: float, center_coef: float, sub_coef: float, dual_clip: float | None = None,
                     member_logp_old: torch.Tensor | None = None, clip_rho: float = 1.0,
                     ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """c_center·L_ens + c_sub·L_sub, PPO clip losses of the ensemble and of its members.

    Data sampled from the mixture itself (``member_logp_old`` None; ``logp_old`` = log p̄_old):
    L_ens uses r = p̄_θ(a|s)/p̄_old(a|s) and L_sub = mean_k of the clip loss with r_k = p_k,θ(a|s)/p̄_old(a|s) (the
    denominator is the *ensemble's* old probability, EPPO eq. for the sub-policies).

    Data sampled from another behaviour q (value-weighted collection; ``logp_old`` = log q(a|s), ``member_logp_old``
    the members' log-probs recomputed on the executed action before the update): this is off-policy for the
    ensemble and its members, so each ratio is taken against its own old probability, r_k = p_k,θ/p_k,old and
    r = p̄_θ/p̄_old, and each clip objective is weighted by the truncated importance weight
    ρ_k = min(ρ̄, p_k,old/q), ρ = min(ρ̄, p̄_old/q) (truncation as in V-trace, Espeholt et al. 2018).

    Args:
        member_logp_new: (K, B) log p_k,θ(a|s), carrying the gradient.
        logp_old: (B,) log-probability of the action under the policy that collected it.
        adv: (B,) advantages (already normalised if wanted), shared by ensemble and members.
        clip_ratio / dual_clip: as in :func:`ppo_policy_loss`.
        center_coef / sub_coef: c_center, c_sub.
        member_logp_old: (K, B) old member log-probs for off-policy data, or None (on-policy mixture data).
        clip_rho: ρ̄, truncation of the importance weights (off-policy data only).

    Returns:
        ``(loss, info)`` with detached ``ens_policy_loss``, ``sub_policy_loss`` and the ensemble ratio's
        ``approx_kl`` and ``clipfrac``.
    """
    k = member_logp_new.shape[0]
    ens_logp_new = mixture_log_prob(member_logp_new)
    wide_adv = adv.expand(k, -1)  # one clip loss over (K, B): its mean is the mean of the members' losses
    if member_logp_old is None:
        ens_loss, info = ppo_policy_loss(ens_logp_new, logp_old, adv, clip_ratio, dual_clip)
        sub_loss, _ = ppo_policy_loss(member_logp_new, logp_old.expand(k, -1), wide_adv, clip_ratio, dual_clip)
    else:
        member_logp_old = member_logp_old.detach()
        ens_logp_old = mixture_log_prob(member_logp_old)
        rho = torch.exp(ens_logp_old - logp_old).clamp(max=clip_rho)
        rho_k = torch.exp(member_logp_old - logp_old).clamp(max=clip_rho)
        ens_loss, info = ppo_policy_loss(ens_logp_new, ens_logp_old, adv, clip_ratio, dual_clip, weight=rho)
        sub_loss, _ = ppo_policy_loss(member_logp_new, member_logp_old, wide_adv, clip_ratio, dual_clip,
                                      weight=rho_k)
    loss = center_coef * ens_loss + sub_coef * sub_loss
    return loss, {"ens_policy_loss": ens_loss.detach(), "sub_policy_loss": sub_loss.detach(), **info}


class EPPOCoef(NamedTuple):
    """Weights of the terms of the EPPO loss (defaults: docs/ensemble_ppo.md)."""

    center: float = 1.0  # c_center, ensemble clip loss
    sub: float = 0.5  # c_sub, members' clip loss
    value: float = 0.5  # c_vf, critic loss
    entropy: float = 0.01  # c_ent, bonus on H[p̄]
    diverse: float = 0.01  # c_div, diversity penalty


def eppo_loss(member_logp_new: torch.Tensor, logp_old: torch.Tensor, adv: torch.Tensor, value_loss: torch.Tensor,
              entropy: torch.Tensor, diversity: torch.Tensor, coef: EPPOCoef, clip_ratio: float,
              dual_clip: float | None = None, member_logp_old: torch.Tensor | None = None, clip_rho: float = 1.0,
              ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The full EPPO loss L = c_center·L_ens + c_sub·L_sub + c_vf·L_V − c_ent·H[p̄] + c_div·D.

    ``value_loss``, ``entropy`` (mean H[p̄]) and ``diversity`` (D) are scalars computed by the caller (e.g.
    :func:`ppo_value_loss`, :func:`categorical_mixture_entropy`, :func:`probability_diversity`); the policy terms
    are :func:`eppo_policy_loss` (see it for the arguments). With K = 1, c_center = 1, c_sub = 0 and c_div = 0 this is
    exactly PPO's loss.

    Returns:
        ``(loss, info)``: info holds detached ``total_loss``, ``policy_loss`` (c_center·L_ens + c_sub·L_sub),
        ``value_loss``, ``entropy``, ``diversity`` and the entries of :func:`eppo_policy_loss`'s info.
    """
    policy_loss, info = eppo_policy_loss(member_logp_new, logp_old, adv, clip_ratio, coef.center, coef.sub,
                                         dual_clip, member_logp_old, clip_rho)
    loss = policy_loss + coef.value * value_loss - coef.entropy * entropy + coef.diverse * diversity
    return loss, {"total_loss": loss.detach(), "policy_loss": policy_loss.detach(), "value_loss": value_loss.detach(),
                  "entropy": entropy.detach(), "diversity": diversity.detach(), **info}

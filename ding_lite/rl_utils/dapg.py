"""The demonstration term of DAPG (Rajeswaran et al. 2018, "Learning Complex Dexterous Manipulation with Deep
Reinforcement Learning and Demonstrations", eq. 6) as adapted to PPO in generalist-specialist learning (Jia et al.,
"Improving Policy Optimization with Generalist-Specialist Learning", ICML 2022): L_demo = −w·mean(π(a_demo|s_demo)),
w = c·max(max_adv, 0)."""

from __future__ import annotations

import torch

from ding_lite.rl_utils.ppo import normalize_advantage


def max_advantage(adv: torch.Tensor, standardize: bool = False) -> torch.Tensor:
    """Largest advantage of a batch, detached: the scale of the demo weight. ``standardize``: of the advantages
    normalised to zero mean and unit (unbiased) standard deviation over the batch, (max(A) − mean(A)) / std(A).

    DAPG scales the demo term by the best on-policy advantage so that demo actions count as "as good as the best
    action seen", whatever the reward scale. GSL's code takes the maximum of the advantages its PPO loss is fed,
    after garage's centring and scaling: standardised advantages are that maximum on the scale of a PPO loss that
    normalises its advantages (``adv_norm``). Example: [1, 2, 3, 6] give 6 raw, and 3 / sqrt(14/3) = 1.389
    standardised (mean 3, unbiased variance 14/3).
    """
    adv = adv.detach()
    return normalize_advantage(adv).max() if standardize else adv.max()


def dapg_decay_coeff(lambda0: float, lambda1: float, k: int) -> float:
    """Original DAPG coefficient λ0·λ1^k at update iteration ``k`` (k = 0 for the first update): the demo term fades
    as training goes on (Rajeswaran et al. 2018, eq. 6; they use λ0 = 0.1, λ1 = 0.95)."""
    if k < 0:
        raise ValueError(f"the update iteration must be ≥ 0, got {k=}")
    return float(lambda0) * float(lambda1) ** int(k)


def dapg_demo_weight(max_adv: torch.Tensor | float, coeff: float) -> torch.Tensor:
    """w = coeff·max(max_adv, 0), detached.

    The guard matters: with a non-positive best advantage, −w·π would become +|w|·π and push the policy *away* from
    the demonstrations, so the weight is zero instead.
    """
    max_adv = torch.as_tensor(max_adv).detach()
    return float(coeff) * torch.clamp(max_adv, min=0.0)


def dapg_demo_loss(logp_demo: torch.Tensor, weight: torch.Tensor | float,
                   log_likelihood: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Demo loss on a minibatch of demonstration pairs.

    Args:
        logp_demo: (B,) log π_θ(a_demo|s_demo) under the current policy (carries the gradient).
        weight: w ≥ 0 from :func:`dapg_demo_weight` (treated as a constant).
        log_likelihood: use log π instead of π. For discrete actions π ∈ [0, 1] keeps the gradient bounded
            (GSL's choice); for continuous actions densities exceed 1 and vary by orders of magnitude, so the
            log-likelihood (the original DAPG form, a behaviour-cloning gradient) is the stable choice.

    Returns:
        ``(loss, likelihood)``: ``−w·mean(π)`` (or ``−w·mean(log π)``) and the detached ``mean(π)`` (or mean log π),
        a measure of how well the policy matches the demonstrations.
    """
    term = logp_demo if log_likelihood else torch.exp(logp_demo)
    likelihood = term.mean()
    weight = torch.as_tensor(weight, dtype=likelihood.dtype, device=likelihood.device).detach()
    return -weight * likelihood, likelihood.detach()

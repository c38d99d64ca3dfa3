"""PPO losses (Schulman et al. 2017, "Proximal Policy Optimization Algorithms"); equations in docs/maths.md."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def check_dual_clip(dual_clip: float | None) -> None:
    """The dual clip's constant c must be above 1 (None: off); a ValueError names the value otherwise."""
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1 (or None to disable), got {dual_clip=}")


def ppo_policy_loss(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    adv: torch.Tensor,
    clip_ratio: float,
    dual_clip: float | None = None,
    weight: torch.Tensor | None = None,
    with_info: bool = True,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate policy loss, with optional dual clip.

    Args:
        logp_new: (B,) log π_θ(a|s) under the current policy (carries the gradient).
        logp_old: (B,) log μ(a|s) under the policy that collected the data.
        adv: (B,) advantages (already normalised if wanted).
        clip_ratio: ε, the ratio is clipped to [1 − ε, 1 + ε].
        dual_clip: c > 1 enables dual clip: for A < 0 the per-sample objective is bounded below by c·A.
        weight: optional (B,) per-sample weights of the objective (constants, e.g. truncated importance weights
            when the data came from another policy than the one the ratio is taken against).
        with_info: False: ``info`` is empty (a caller that computes it later from the log-ratios, with
            :func:`ratio_stats`, for many minibatches at once).

    Returns:
        ``(loss, info)``: scalar ``−mean(objective)``; ``info`` holds detached scalars ``approx_kl``
        (mean(logp_old − logp_new)) and ``clipfrac`` (fraction of samples with |ratio − 1| > ε).
    """
    check_dual_clip(dual_clip)
    logp_old = logp_old.detach()
    adv = adv.detach()
    ratio = torch.exp(logp_new - logp_old)
    surr1 = ratio * adv
    surr2 = torch.clamp(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio) * adv
    # L^CLIP (PPO paper, eq. 7): the pessimistic bound of the clipped and unclipped objectives
    objective = torch.min(surr1, surr2)
    if dual_clip is not None:
        # Ye et al. 2020 (Mastering Complex Control in MOBA Games), eq. 5: for A < 0 a huge ratio would make
        # min(...) unbounded below; cap it at c·A.
        objective = torch.where(adv < 0, torch.max(objective, dual_clip * adv), objective)
    if weight is not None:
        objective = objective * weight.detach()
    loss = -objective.mean()
    if not with_info:
        return loss, {}
    with torch.no_grad():
        info = {
            "approx_kl": (logp_old - logp_new).mean().detach(),
            "clipfrac": ((ratio - 1.0).abs() > clip_ratio).float().mean().detach(),
        }
    return loss, info


def ratio_stats(log_ratios: Sequence[torch.Tensor], clip_ratio: float) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`ppo_policy_loss`'s ``approx_kl`` and ``clipfrac`` of many minibatches in one pass.

    Args:
        log_ratios: per minibatch, the (B_i,) detached ``logp_new − logp_old`` (the sizes may differ).
        clip_ratio: ε.

    Returns:
        ``(approx_kl, clipfrac)``, each (M,) over the M minibatches: ``mean(−log r)`` and the fraction of samples
        with ``|r − 1| > ε``.
    """
    with torch.no_grad():
        sizes = [len(x) for x in log_ratios]
        flat = torch.cat(list(log_ratios))
        terms = torch.stack([-flat, ((flat.exp() - 1.0).abs() > clip_ratio).float()])  # (2, sum B_i)
        if len(set(sizes)) == 1:
            means = terms.view(2, len(sizes), sizes[0]).mean(dim=2)
        else:
            segment = torch.repeat_interleave(torch.arange(len(sizes), device=flat.device),
                                              torch.tensor(sizes, device=flat.device))
            sums = torch.zeros(2, len(sizes), dtype=terms.dtype, device=flat.device).index_add_(1, segment, terms)
            means = sums / torch.tensor(sizes, dtype=terms.dtype, device=flat.device)
        return means[0], means[1]


def ppo_value_loss(
    value_new: torch.Tensor,
    value_old: torch.Tensor,
    return_target: torch.Tensor,
    clip_ratio: float | None,
) -> torch.Tensor:
    """Value loss, optionally clipped around the old value prediction.

    Args:
        value_new: (B,) V_θ(s) of the current critic (carries the gradient).
        value_old: (B,) V(s) recorded at collection time.
        return_target: (B,) value targets (e.g. GAE returns).
        clip_ratio: ε for value clipping, or ``None`` for the plain loss.

    Returns:
        Scalar ``0.5·mean((v − R)²)``, or with clipping
        ``0.5·mean(max((v − R)², (v_old + clip(v − v_old, −ε, ε) − R)²))``.
    """
    return_target = return_target.detach()
    unclipped = (value_new - return_target) ** 2
    if clip_ratio is None:
        return 0.5 * unclipped.mean()
    value_old = value_old.detach()
    # Value clipping as in OpenAI baselines' PPO2 (see Engstrom et al. 2020, "Implementation Matters", §3)
    value_clipped = value_old + torch.clamp(value_new - value_old, -clip_ratio, clip_ratio)
    clipped = (value_clipped - return_target) ** 2
    return 0.5 * torch.max(unclipped, clipped).mean()


def normalize_advantage(adv: torch.Tensor, eps: float = 1e-8, dim: int | None = None) -> torch.Tensor:
    """Normalise advantages to zero mean and unit standard deviation over the (mini)batch.

    Uses torch's default *unbiased* standard deviation (divides by B − 1). A batch of one element has no defined
    unbiased std, so it is only centred (the result is 0), never NaN.

    Args:
        adv: (B,) or any shape; statistics are taken over all elements, or along ``dim``.
        eps: added to the std to avoid dividing by zero on a constant batch.
        dim: None: one batch of all elements; an int: each slice along the other dims is its own batch.

    Returns:
        Tensor of the same shape, ``(adv − mean) / (std + eps)``.
    """
    if dim is None:
        centred = adv - adv.mean()
        return centred if adv.numel() <= 1 else centred / (adv.std() + eps)
    centred = adv - adv.mean(dim=dim, keepdim=True)
    return centred if adv.shape[dim] <= 1 else centred / (adv.std(dim=dim, keepdim=True) + eps)


def normalize_advantage_per_minibatch(adv: torch.Tensor, batch_size: int, eps: float = 1e-8) -> torch.Tensor:
    """:func:`normalize_advantage` of each consecutive slice of ``batch_size`` elements of ``adv`` (the minibatches
    of an epoch, the last one possibly shorter), for all slices in one pass (a few ops per epoch, not per
    minibatch).

    Args:
        adv: (N,) the epoch's advantages in minibatch order.
        batch_size: minibatch size.
        eps: as in :func:`normalize_advantage`.

    Returns:
        (N,) each slice normalised by its own mean and unbiased standard deviation.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size=}")
    n_full = adv.shape[0] // batch_size * batch_size
    if n_full == 0:
        return normalize_advantage(adv, eps)
    head = normalize_advantage(adv[:n_full].view(-1, batch_size), eps, dim=1).reshape(-1)
    if n_full == adv.shape[0]:
        return head
    return torch.cat([head, normalize_advantage(adv[n_full:], eps)])

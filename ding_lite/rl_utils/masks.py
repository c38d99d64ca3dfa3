"""Action masks (``obs['action_mask']``, bool (N, A), True = legal), as PettingZoo's games give them.

Masked logits get a large negative number, not -inf: softmax still gives the illegal actions probability 0 (exp of
-1e8 underflows), while an entropy term p log p stays 0 * finite = 0 instead of 0 * -inf = NaN."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from ding_lite.data.keys import ACTION_MASK, OBSERVATION

MASKED_LOGIT = -1e8  # what an illegal action's logit (or Q-value) becomes


def apply_action_mask(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``logits`` with every illegal action's entry replaced by :data:`MASKED_LOGIT` (unchanged if ``mask`` is
    None). Works for logits and Q-values alike: the argmax and the max then range over legal actions only.

    Example::

        apply_action_mask(torch.tensor([[1., 5., 2.]]), torch.tensor([[True, False, True]]))  # [[1, -1e8, 2]]
    """
    if mask is None:
        return logits
    return torch.where(mask.bool(), logits, torch.full_like(logits, MASKED_LOGIT))


def masked_argmax(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Greedy action among the legal ones (row-wise)."""
    return apply_action_mask(values, mask).argmax(dim=-1)


def masked_max(values: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Row max over legal actions; a row with no legal action (a terminal next state) gives 0, which a terminal
    target ignores anyway and which keeps -1e8 out of any arithmetic."""
    if mask is None:
        return values.max(dim=-1).values
    best = apply_action_mask(values, mask).max(dim=-1).values
    return torch.where(mask.bool().any(dim=-1), best, torch.zeros_like(best))


def random_legal_actions(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """One uniformly random legal action per row of ``mask`` (N, A); a row with no legal action gives 0.

    Used by ε-greedy exploration, which explores among legal actions only."""
    mask = np.asarray(mask, dtype=bool)
    # A uniform key per entry, -1 for illegal ones: the argmax is a uniform draw among the legal entries.
    keys = np.where(mask, rng.random(mask.shape), -1.0)
    return keys.argmax(axis=-1)


def split_action_mask(obs: Any) -> tuple[Any, np.ndarray | None]:
    """``(observation, action_mask)`` of a batch that may carry a mask: a dict ``{'observation', 'action_mask'}``
    (PettingZoo's form) gives both, a plain array gives ``(obs, None)``."""
    if isinstance(obs, Mapping):
        return obs[OBSERVATION], np.asarray(obs[ACTION_MASK], dtype=bool)
    return obs, None

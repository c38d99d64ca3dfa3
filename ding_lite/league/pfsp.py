"""Opponent sampling: ``latest``, ``uniform`` and prioritized fictitious self-play (PFSP, Vinyals et al. 2019,
AlphaStar, "Grandmaster level in StarCraft II", Methods), with a share of games against the latest snapshot."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ding_lite.errors import ConfigError

STRATEGIES = ("latest", "uniform", "pfsp")
WEIGHTINGS = ("squared", "variance", "linear")


def pfsp_weights(win_rates: Sequence[float] | np.ndarray, weighting: str = "squared", p: float = 2.0) -> np.ndarray:
    """Unnormalised PFSP weights f(w) of opponents against which the learner wins at rates ``w``.

    ``squared`` (DI-engine's name for AlphaStar's "hard"): f = (1 - w)^p, p = 2 by default, so opponents the learner
    still loses to are played most; ``linear``: f = 1 - w; ``variance``: f = w (1 - w), so opponents of about equal
    strength are played most.
    """
    w = np.clip(np.asarray(win_rates, dtype=np.float64), 0.0, 1.0)
    if weighting == "squared":
        return (1.0 - w) ** p
    if weighting == "linear":
        return 1.0 - w
    if weighting == "variance":
        return w * (1.0 - w)
    raise ConfigError(f"unknown league.pfsp_weighting '{weighting}': use one of {', '.join(WEIGHTINGS)}")


def sampling_probs(strategy: str, win_rates: Sequence[float], p_latest: float = 0.0, weighting: str = "squared",
                   p: float = 2.0) -> np.ndarray:
    """Probability of each snapshot (ordered oldest first, so the last is the latest) being the next opponent.

    ``latest``: always the last; ``uniform``: equal; ``pfsp``: :func:`pfsp_weights` normalised (uniform where every
    weight is 0, e.g. the learner beats everyone). With ``p_latest`` the result is mixed with ``latest``:
    ``(1 - p_latest) * probs + p_latest * onehot(last)``.

    Example::

        sampling_probs('pfsp', [0.5, 1.0, 0.0])  # [0.2, 0.0, 0.8]
    """
    n = len(win_rates)
    if n == 0:
        raise ValueError("no snapshot to sample from")
    if not 0.0 <= p_latest <= 1.0:
        raise ConfigError(f"league.p_latest must be in [0, 1], got {p_latest}")
    latest = np.zeros(n)
    latest[-1] = 1.0
    if strategy == "latest":
        return latest
    if strategy == "uniform":
        probs = np.full(n, 1.0 / n)
    elif strategy == "pfsp":
        weights = pfsp_weights(win_rates, weighting, p)
        total = weights.sum()
        probs = weights / total if total > 0 else np.full(n, 1.0 / n)
    else:
        raise ConfigError(f"unknown league.strategy '{strategy}': use one of {', '.join(STRATEGIES)}")
    return (1.0 - p_latest) * probs + p_latest * latest

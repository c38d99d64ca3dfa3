"""Running statistics of a stream of values (value normalisation of PPO-style critics)."""
from __future__ import annotations

from typing import TypeVar

import numpy as np
import torch

Values = TypeVar("Values", torch.Tensor, np.ndarray)  # a tensor or an array of values, returned as the same type


class RunningMeanStd:
    """Running mean and variance of a stream of scalars (Chan et al. 1979 parallel update), for value normalisation.

    Checkpointed through ``state_dict`` / ``load_state_dict``.
    """

    def __init__(self, eps: float = 1e-4) -> None:
        self.mean, self.var, self.count = 0.0, 1.0, eps

    def update(self, x: np.ndarray) -> None:
        """Fold a batch of values into the statistics."""
        batch_mean, batch_var, n = float(np.mean(x)), float(np.var(x)), len(x)
        delta, total = batch_mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def normalize(self, x: Values) -> Values:
        return (x - self.mean) / (self.var**0.5 + 1e-8)

    def denormalize(self, x: Values) -> Values:
        return x * (self.var**0.5 + 1e-8) + self.mean

    def state_dict(self) -> dict[str, float]:
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, state: dict[str, float]) -> None:
        self.mean, self.var, self.count = float(state["mean"]), float(state["var"]), float(state["count"])

"""Live throughput of a run: env steps per second and train samples per second, each over the time since a mark.

Train samples are the rows of the batches handed to the learner (RLlib's "env steps trained"): an off-policy batch
counts once per gradient step, an on-policy rollout once per learn call (not once per epoch).
"""
from __future__ import annotations

import time
from typing import NamedTuple


class Rates(NamedTuple):
    """Rates over one window (NaN where the window is empty)."""

    env_steps_per_second: float
    train_samples_per_second: float
    seconds: float  # the window's length


class RateMeter:
    """Counters ``(env_step, samples)`` at a mark, and their rates since it.

    Example::

        meter = RateMeter(0, 0, now=0.0)
        meter.rates(1000, 4000, now=2.0)  # Rates(500.0, 2000.0, 2.0)
    """

    def __init__(self, env_step: int, samples: int, now: float | None = None) -> None:
        self.mark(env_step, samples, now)

    def mark(self, env_step: int, samples: int, now: float | None = None) -> None:
        """Start a new window at these counts."""
        self._t = time.perf_counter() if now is None else now
        self._env_step = env_step
        self._samples = samples

    def seconds(self, now: float | None = None) -> float:
        """Seconds since the mark."""
        return (time.perf_counter() if now is None else now) - self._t

    def rates(self, env_step: int, samples: int, now: float | None = None) -> Rates:
        """Env steps/s and train samples/s since the mark."""
        elapsed = self.seconds(now)
        if elapsed <= 0:
            return Rates(float("nan"), float("nan"), 0.0)
        return Rates((env_step - self._env_step) / elapsed, (samples - self._samples) / elapsed, elapsed)


def rate_text(value: float) -> str:
    """A rate as a short text: ``1,234`` or ``12.3`` (``-`` for NaN)."""
    if value != value:  # NaN
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"

"""Exploration schedules."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ding_lite.errors import ConfigError


def epsilon_schedule(cfg: Mapping[str, Any]) -> Callable[[int], float]:
    """ε as a function of env steps: ``type='exp'`` (end + (start-end)·e^(-step/decay)) or ``'linear'``
    (start → end over ``decay`` steps, then flat).

    Example::

        eps = epsilon_schedule(dict(type='linear', start=1.0, end=0.1, decay=100))
        eps(50)  # 0.55
    """
    kind, start, end, decay = cfg["type"], float(cfg["start"]), float(cfg["end"]), float(cfg["decay"])
    if decay <= 0:
        raise ConfigError(f"eps.decay must be positive, got {decay}")
    if kind == "exp":
        return lambda step: end + (start - end) * math.exp(-step / decay)
    if kind == "linear":
        return lambda step: start + (end - start) * min(step / decay, 1.0)
    raise ConfigError(f"unknown eps.type '{kind}': use 'exp' or 'linear'")

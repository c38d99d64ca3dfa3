"""Learn logs: a policy's learn forward returns one log dict per gradient step (DI-engine's convention)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch


def step_logs(out: list[dict] | Mapping[str, Any]) -> list[dict]:
    """A learn forward's result as its list of per-gradient-step log dicts (a single dict is one step)."""
    return [dict(out)] if isinstance(out, Mapping) else list(out)


def mean_log(logs: list[dict]) -> dict[str, Any]:
    """One log of several steps: each scalar's mean over the steps that have it; other fields (e.g. the priorities
    of the last step's batch) from the last step that has them."""
    out: dict[str, Any] = {}
    scalars: dict[str, list[Any]] = {}
    for log in logs:
        for k, v in log.items():
            if getattr(v, "ndim", 0) == 0 and not isinstance(v, (str, bytes)):
                scalars.setdefault(k, []).append(v)
            else:
                out[k] = v
    for k, values in scalars.items():
        out[k] = torch.stack([torch.as_tensor(v, dtype=torch.float32) for v in values]).mean() \
            if len(values) > 1 else values[0]
    return out

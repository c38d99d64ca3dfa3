"""Env type ``busy_cartpole`` for benchmarks: CartPole whose every step burns a fixed amount of CPU time, a stand-in
for an expensive simulator (where spreading collection over processes pays off).

Config: ``env=dict(type='busy_cartpole', import_names=['busy_env'], burn_ms=2.0)`` with ``benchmarks/`` on the path.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from ding_lite.registry import ENV_REGISTRY


@ENV_REGISTRY.register("busy_cartpole")
class BusyCartPole(gym.Wrapper):
    """Gymnasium ``CartPole-v1`` whose ``step`` first burns ``burn_ms`` of this thread's CPU time."""

    config: dict[str, Any] = dict(
        burn_ms=2.0,  # CPU time each step burns before the real step (thread CPU time, not wall time)
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        super().__init__(gym.make("CartPole-v1", disable_env_checker=True))
        self.burn_s = float((cfg or {}).get("burn_ms", 2.0)) / 1000

    def step(self, action: Any) -> Any:
        # Thread CPU time, so that the burn costs the same CPU however busy the machine is.
        end = time.thread_time() + self.burn_s
        while time.thread_time() < end:
            pass
        return self.env.step(action)

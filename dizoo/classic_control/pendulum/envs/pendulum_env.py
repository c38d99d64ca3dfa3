"""Pendulum as a registered env type ``pendulum``, built on gymnasium's Pendulum-v1."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from ding_lite.registry import ENV_REGISTRY


@ENV_REGISTRY.register("pendulum")
class PendulumEnv(gym.Wrapper):
    """Gymnasium ``Pendulum-v1`` (200-step episodes, always truncated, never terminated).

    Config: ``env=dict(type='pendulum', import_names=['dizoo.classic_control.pendulum.envs.pendulum_env'])``.
    """

    config: dict[str, Any] = dict(
        kwargs={},  # extra keyword arguments for gymnasium.make (e.g. render_mode='rgb_array')
        max_episode_steps=200,  # time limit (truncation)
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        cfg = cfg or {}
        steps = int(cfg.get("max_episode_steps") or 200)
        super().__init__(gym.make("Pendulum-v1", max_episode_steps=steps, disable_env_checker=True,
                                  **dict(cfg.get("kwargs") or {})))

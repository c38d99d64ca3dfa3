"""Pendulum as a registered env type ``pendulum``, built on gymnasium's Pendulum-v1."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from ding_lite.registry import ENV_REGISTRY


@ENV_REGISTRY.register("pendulum")
class PendulumEnv(gym.Wrapper):
    """Gymnasium ``Pendulum-v1`` (200-step episodes, always truncated, never terminated).

    Config: ``env=dict(type='pendulum', import_names=['dizoo.classic_control.pendulum.envs.pendulum_env'])``.
    With ``act_scale=True`` (DI-engine's key) the env takes torques in [-1, 1] and scales them to Pendulum's [-2, 2]:
    its action space is then ``Box(-1, 1)``, so a policy that rescales to the env's bounds (SAC, TD3) acts in the
    same units as DI-engine's.
    """

    gym_id = "Pendulum-v1"  # the one gymnasium env it builds: its env section takes no env_id (config/moved_env.py)
    config: dict[str, Any] = dict(
        kwargs={},  # extra keyword arguments for gymnasium.make (e.g. render_mode='rgb_array')
        max_episode_steps=200,  # time limit (truncation)
        act_scale=False,  # take actions in [-1, 1], scaled to the torque range [-2, 2] (DI-engine's key)
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        cfg = cfg or {}
        steps = int(cfg.get("max_episode_steps") or 200)
        env = gym.make("Pendulum-v1", max_episode_steps=steps, disable_env_checker=True,
                       **dict(cfg.get("kwargs") or {}))
        if cfg.get("act_scale"):
            env = gym.wrappers.RescaleAction(env, np.float32(-1.0), np.float32(1.0))
        super().__init__(env)

    @property
    def spec(self) -> EnvSpec | None:  # type: ignore[override]
        """The Pendulum-v1 spec this env was made with: gymnasium's spec of a wrapper adds the wrapper, which
        ``spec.make()`` cannot rebuild (it is built from the env section, not from an env), so gymnasium's env
        checker and ``gymnasium.make(env.spec)`` failed; this class adds nothing that spec does not rebuild."""
        return self.env.spec

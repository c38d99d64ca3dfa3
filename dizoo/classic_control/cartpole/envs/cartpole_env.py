"""CartPole as a registered env type ``cartpole`` (DI-engine's module path), built on gymnasium's CartPole-v1."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from ding_lite.registry import ENV_REGISTRY


@ENV_REGISTRY.register("cartpole")
class CartPoleEnv(gym.Wrapper):
    """Gymnasium ``CartPole-v1`` (500-step time limit, reported as truncation).

    Config: ``env=dict(type='cartpole', import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'])``.
    """

    gym_id = "CartPole-v1"  # the one gymnasium env it builds: its env section takes no env_id (config/moved_env.py)
    config: dict[str, Any] = dict(
        kwargs={},  # extra keyword arguments for gymnasium.make (e.g. render_mode='rgb_array')
        max_episode_steps=500,  # time limit; the episode is truncated (bootstrapped), not terminated, there
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        cfg = cfg or {}
        steps = int(cfg.get("max_episode_steps") or 500)
        super().__init__(gym.make("CartPole-v1", max_episode_steps=steps, disable_env_checker=True,
                                  **dict(cfg.get("kwargs") or {})))

    @property
    def spec(self) -> EnvSpec | None:  # type: ignore[override]
        """The CartPole-v1 spec this env was made with: gymnasium's spec of a wrapper adds the wrapper, which
        ``spec.make()`` cannot rebuild (it is built from the env section, not from an env), so gymnasium's env
        checker and ``gymnasium.make(env.spec)`` failed; this class adds nothing that spec does not rebuild."""
        return self.env.spec

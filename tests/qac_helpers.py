"""Shared helpers of the SAC / TD3 tests: a small policy for Pendulum's shapes and a fake batch of transitions."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, NEXT_OBS, OBS, REWARD, TERMINATED
from ding_lite.registry import ENV_REGISTRY

PENDULUM = dict(type="gymnasium", env_id="Pendulum-v1")


def continuous_policy(policy_type: str, *overrides: str):
    """A small SAC / TD3 policy for Pendulum's shapes (3 observations, 1 action in [-2, 2])."""
    torch.manual_seed(0)
    cfg = compile_config(dict(env=dict(PENDULUM), policy=dict(type=policy_type)),
                         overrides=["policy.model.obs_shape=3", "policy.model.action_shape=1",
                                    "policy.model.action_low=[-2.0]", "policy.model.action_high=[2.0]",
                                    "policy.model.hidden_size_list=[16, 16]", *overrides])
    return build(cfg, "policy")


def batch(n: int = 8, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {OBS: rng.normal(size=(n, 3)).astype(np.float32), ACTION: rng.uniform(-2, 2, (n, 1)).astype(np.float32),
            REWARD: rng.normal(size=n).astype(np.float32), NEXT_OBS: rng.normal(size=(n, 3)).astype(np.float32),
            TERMINATED: rng.random(n) < 0.25}


@ENV_REGISTRY.register("test_unbounded_box")
class UnboundedBoxEnv(gym.Env):
    """A continuous-control env whose actions have no finite bounds (``Box(-inf, inf)``), for the SAC / TD3 error
    tests: ``env=dict(type='test_unbounded_box', import_names=['qac_helpers'])``."""

    config: dict = {}

    def __init__(self, cfg=None) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
        self.action_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, np.float32), {}

    def step(self, action):
        return np.zeros(3, np.float32), 0.0, False, False, {}

"""``model.image_scale`` left None is filled from the env: uint8 frames are scaled by 1/255 inside the model, a float
image (already in its own units, e.g. [0, 1]) by 1, so that every image is scaled once (before, a float32 image got
1/255 as well: its conv inputs, and the first layer's learning, 255 times smaller)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.build import build, fill_model_shapes
from ding_lite.config import compile_config
from ding_lite.model.encoders import ConvEncoder

pytestmark = pytest.mark.unittest

DISCRETE = gym.spaces.Discrete(3)


def _policy(policy_type: str, obs_space: gym.Space, **model):
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type=policy_type, model=model)))
    fill_model_shapes(cfg, obs_space, DISCRETE)
    return cfg, build(cfg, "policy")


def _scales(policy) -> set[float]:
    return {m.scale for m in policy._model.modules() if isinstance(m, ConvEncoder)}


@pytest.mark.parametrize("policy_type", ["dqn", "ppo", "ensemble_ppo"])
def test_a_float_image_is_not_scaled_again_and_uint8_frames_are_scaled_once(policy_type):
    float_image = gym.spaces.Box(0.0, 1.0, (3, 8, 8), np.float32)
    cfg, policy = _policy(policy_type, float_image)
    assert cfg.policy.model.image_scale == 1.0 and _scales(policy) == {1.0}
    frames = gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)
    cfg, policy = _policy(policy_type, frames)
    assert cfg.policy.model.image_scale == pytest.approx(1 / 255) and _scales(policy) == {1.0 / 255.0}


def test_a_masked_float_image_and_a_set_scale():
    masked = gym.spaces.Dict(observation=gym.spaces.Box(0.0, 1.0, (2, 6, 6), np.float32),
                             action_mask=gym.spaces.MultiBinary(3))
    assert _policy("dqn", masked)[0].policy.model.image_scale == 1.0
    int_frames = gym.spaces.Box(0, 255, (3, 8, 8), np.float32)  # an int64 0..255 image, as encoded (float32)
    assert _policy("ppo", int_frames)[0].policy.model.image_scale == 1.0 / 255.0
    cfg, policy = _policy("ppo", gym.spaces.Box(0, 255, (3, 8, 8), np.uint8), image_scale=0.1)  # the user's value kept
    assert cfg.policy.model.image_scale == 0.1 and _scales(policy) == {0.1}

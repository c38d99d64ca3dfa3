"""SAC and TD3 read an observation of any shape flattened, as SB3's MLP policies do and as gymnasium's
FlattenObservation would hand it over: a (2, 3, 4) observation and the same numbers as a 24-vector give the same
actions, the same losses and the same weights after an update (before: a config error for anything but vectors)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, NEXT_OBS, OBS, REWARD, TERMINATED

pytestmark = pytest.mark.unittest

SHAPE = (2, 3, 4)


def _policy(policy_type: str, obs_shape):
    torch.manual_seed(0)  # both policies start from the same weights: their layers have the same shapes
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="Pendulum-v1"), policy=dict(type=policy_type)),
                         overrides=[f"policy.model.obs_shape={obs_shape!r}", "policy.model.action_shape=1",
                                    "policy.model.action_low=[-2.0]", "policy.model.action_high=[2.0]",
                                    "policy.model.hidden_size_list=[16, 16]", "policy.learning_starts=0"])
    return build(cfg, "policy")


@pytest.mark.parametrize("policy_type", ["sac", "td3"])
def test_an_observation_of_any_shape_is_read_as_gymnasiums_flattened_one(policy_type: str) -> None:
    space = gym.spaces.Box(-1.0, 1.0, SHAPE, np.float32)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(8, *SHAPE)).astype(np.float32)
    next_obs = rng.normal(size=(8, *SHAPE)).astype(np.float32)
    flat = np.stack([gym.spaces.flatten(space, o) for o in obs])  # the reference: gymnasium's own flattening
    next_flat = np.stack([gym.spaces.flatten(space, o) for o in next_obs])
    shaped, vector = _policy(policy_type, list(SHAPE)), _policy(policy_type, 24)
    np.testing.assert_array_equal(shaped.eval_mode.forward(obs)[ACTION], vector.eval_mode.forward(flat)[ACTION])
    common = {ACTION: rng.uniform(-2, 2, (8, 1)).astype(np.float32), REWARD: rng.normal(size=8).astype(np.float32),
              TERMINATED: rng.random(8) < 0.25}
    for _ in range(3):  # TD3's actor steps every 2nd update: three updates cover both stages
        torch.manual_seed(1)
        log_shaped = shaped.learn_mode.forward({OBS: obs, NEXT_OBS: next_obs, **common})
        torch.manual_seed(1)
        log_vector = vector.learn_mode.forward({OBS: flat, NEXT_OBS: next_flat, **common})
        for key, value in log_vector.items():
            if np.ndim(value) == 0:
                assert float(log_shaped[key]) == pytest.approx(float(value), rel=1e-6), key
    for a, b in zip(shaped._model.parameters(), vector._model.parameters(), strict=True):
        torch.testing.assert_close(a, b)
    torch.manual_seed(2)
    explore_shaped = shaped.collect_mode.forward(obs, env_step=10)[ACTION]
    torch.manual_seed(2)
    np.testing.assert_allclose(explore_shaped, vector.collect_mode.forward(flat, env_step=10)[ACTION], rtol=1e-6)


@pytest.mark.parametrize("policy_type", ["sac", "td3"])
def test_uint8_frames_are_read_as_their_float_values(policy_type: str) -> None:
    """Replayed frames keep the env's uint8 (a quarter of the memory); the networks get them as float32 (before the
    fix: 'mat1 and mat2 must have the same dtype' at the first update)."""
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (8, *SHAPE), dtype=np.uint8)
    common = {ACTION: rng.uniform(-2, 2, (8, 1)).astype(np.float32), REWARD: rng.normal(size=8).astype(np.float32),
              TERMINATED: rng.random(8) < 0.25}
    as_bytes, as_floats = _policy(policy_type, list(SHAPE)), _policy(policy_type, list(SHAPE))
    torch.manual_seed(1)
    log_bytes = as_bytes.learn_mode.forward({OBS: frames, NEXT_OBS: frames[::-1].copy(), **common})
    torch.manual_seed(1)
    log_floats = as_floats.learn_mode.forward({OBS: frames.astype(np.float32),
                                               NEXT_OBS: frames[::-1].astype(np.float32), **common})
    assert float(log_bytes["critic_loss"]) == pytest.approx(float(log_floats["critic_loss"]), rel=1e-6)

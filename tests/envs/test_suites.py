"""The plain gymnasium route (Atari, MuJoCo, MiniGrid env types) gives the spaces envpool gives for the same id."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.build import build_env_manager
from ding_lite.envs.gym_env import build_env

pytestmark = pytest.mark.unittest


def test_atari_frames_are_stacked_uint8_like_envpool() -> None:
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    env = build_env(dict(type="atari", env_id="Pong-v5", max_episode_steps=3))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8 and env.action_space.n == 6
    steps = 0
    truncated = False
    while not truncated:
        obs, _, terminated, truncated, _ = env.step(0)
        steps += 1
        assert not terminated
    assert steps == 3 and obs.shape == (4, 84, 84)
    env.close()
    envpool = pytest.importorskip("envpool")
    pool = envpool.make_gymnasium("Pong-v5", num_envs=1)
    assert pool.observation_space.shape == env.observation_space.shape
    assert pool.observation_space.dtype == env.observation_space.dtype and pool.action_space.n == 6


def test_mujoco_observations_are_float32_on_both_routes() -> None:
    pytest.importorskip("mujoco")
    env = build_env(dict(type="mujoco", env_id="Hopper-v4"))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (11,) and obs.dtype == np.float32 and env.observation_space.dtype == np.float32
    env.close()
    pytest.importorskip("envpool")
    with build_env_manager(dict(type="envpool", env_id="Hopper-v4", manager=dict(type="envpool")), 2, 0) as m:
        assert m.reset().dtype == np.float32 and m.observation_space.dtype == np.float32
        assert m.step(np.zeros((2, 3))).next_obs.dtype == np.float32


def test_minigrid_gives_the_agent_view() -> None:
    pytest.importorskip("minigrid")
    env = build_env(dict(type="minigrid", env_id="MiniGrid-DoorKey-5x5-v0"))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (7, 7, 3) and obs.dtype == np.uint8 and env.action_space.n == 7
    env.close()

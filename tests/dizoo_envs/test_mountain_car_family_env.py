"""The MountainCar family: gymnasium's dynamics, deterministic levels of two kinds, the success flag and the shaped
return, config errors."""
from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.errors import ConfigError
from dizoo.classic_control.mountain_car_family.envs.mountain_car_family_env import (
    MountainCarFamilyEnv,
    is_swing_level,
    physics_step,
    push_along_velocity,
    push_right,
)

pytestmark = pytest.mark.unittest


def test_the_dynamics_are_gymnasium_s_mountain_car() -> None:
    """Against gymnasium's own MountainCar-v0 (force 0.001, gravity 0.0025): swinging without ever reaching the
    goal (so that the left wall is hit too), with random actions mixed in."""
    ref = gym.make("MountainCar-v0").unwrapped
    ref.reset(seed=0)
    rng = np.random.default_rng(0)
    x, v = (float(s) for s in ref.state)
    hit_wall = False
    for _ in range(400):
        swing = 0 if v < 0 or x > 0.2 else 2
        action = int(rng.integers(3)) if rng.random() < 0.2 else swing
        (rx, rv), *_ = ref.step(action)
        x, v = physics_step(x, v, action, 0.001, 0.0025)
        hit_wall |= x <= -1.2
        assert (x, v) == pytest.approx((float(rx), float(rv)), abs=1e-6)
    assert hit_wall


def test_one_step_by_hand() -> None:
    # v = 0 + (2 - 1)·0.001 - cos(-1.5)·0.0025 = 0.001 - 0.0707372·0.0025 = 0.000823157; x = -0.5 + v
    x, v = physics_step(-0.5, 0.0, 2, 0.001, 0.0025)
    assert (x, v) == pytest.approx((-0.499176843, 0.000823157), abs=1e-9)


def _episode(env: MountainCarFamilyEnv, level: int, policy) -> tuple[float, dict, int]:
    """One episode of ``policy(x, v) -> thrust``, through the level's engine wiring (read off the observation)."""
    obs, _ = env.reset(options={"variation": level})
    total, done, truncated, info, t = 0.0, False, False, {}, 0
    while not (done or truncated):
        thrust = policy(float(obs[0]), float(obs[1]))
        obs, reward, done, truncated, info = env.step(thrust if obs[2] > 0 else 2 - thrust)
        total, t = total + reward, t + 1
    return total, info, t


def test_direct_levels_are_solved_by_pushing_right_swing_levels_only_by_swinging() -> None:
    env = MountainCarFamilyEnv({"num_levels": 20})
    for level in range(20):
        start = env.reset(options={"variation": level})[0][0]
        right, info_right, _ = _episode(env, level, push_right)
        pump, info_pump, steps = _episode(env, level, push_along_velocity)
        assert info_pump["success"] and steps < 200
        assert pump == pytest.approx(1.0 + 0.5 - start, abs=0.08)  # +1 and the shaping of x0 -> goal (x ≥ 0.5)
        assert info_right["success"] == (not is_swing_level(level, 5)), level
    assert [lv for lv in range(20) if is_swing_level(lv, 5)] == [4, 9, 14, 19]


def test_half_the_engines_are_wired_backwards() -> None:
    env = MountainCarFamilyEnv({"num_levels": 50})
    polarity = [env.reset(options={"variation": lv})[0][2] > 0 for lv in range(50)]
    assert 15 <= sum(polarity) <= 35
    reversed_level = polarity.index(False)
    env.reset(options={"variation": reversed_level})
    x0 = env.x
    env.step(0)  # action 0 pushes right on a reversed engine
    assert env.v > 0.0 or env.x > x0
    plain = MountainCarFamilyEnv({"num_levels": 50, "reversed_engines": False})
    assert all(plain.reset(options={"variation": lv})[0][2] > 0 for lv in range(50))


def test_a_level_id_always_gives_the_same_car_and_the_obs_names_it() -> None:
    a, b = MountainCarFamilyEnv({"num_levels": 10}), MountainCarFamilyEnv({"num_levels": 10})
    obs_a, _ = a.reset(options={"variation": 7})
    obs_b, _ = b.reset(seed=123, options={"variation": 7})
    assert obs_a.shape == (4,) and np.array_equal(obs_a, obs_b)
    assert obs_a[1] == 0.0 and abs(obs_a[2]) == pytest.approx(a.force / a.gravity) and abs(obs_a[2]) > 1.0  # direct
    obs_swing, _ = a.reset(options={"variation": 9})
    assert abs(obs_swing[2]) < 1.0 and obs_swing[0] > -0.35  # weak engine, starts up the right slope
    assert a.observation_space.contains(obs_a) and MountainCarFamilyEnv.num_variations({"num_levels": 10}) == 10


@pytest.mark.parametrize("cfg, message", [
    ({"swing_min_ratio": 0.9, "swing_max_ratio": 0.8}, r"env.swing_min_ratio=0.9 and env.swing_max_ratio=0.8"),
    ({"direct_start": [-0.4, 0.55]}, r"env.direct_start=\[-0.4, 0.55\] must be"),
    ({"gravity_spread": 1.5}, r"env.gravity_spread must be in \[0, 1\)"),
    # before, an OverflowError from the level's draw, named only by the env type (found by the config fuzzer)
    ({"direct_max_ratio": math.inf}, r"env.direct_min_ratio=1.1 and env.direct_max_ratio=inf must satisfy 0 < min ≤ "
                                     r"max < inf"),
    ({"max_episode_steps": 20}, r"level 0: no direct level found in 10000 draws; widen env.direct_min_ratio"),
])
def test_bad_settings_are_config_errors(cfg, message) -> None:
    with pytest.raises(ConfigError, match=message):
        MountainCarFamilyEnv({"num_levels": 10, **cfg}).reset(options={"variation": 4})

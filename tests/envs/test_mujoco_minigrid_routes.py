"""MuJoCo and MiniGrid on every route, against the standard evaluation protocol: time limits are truncations, falls
terminations, the two MuJoCo routes the same task, MiniGrid's view and reward as published."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from ding_lite.build import build_env_manager

pytestmark = pytest.mark.unittest


def test_envpool_env_type_under_the_base_manager_goes_on_after_a_box_episode_ends() -> None:
    # Before: fetching the next episode stepped envpool with one integer action, which a Box refused (a ConfigError
    # on the first episode end of every MuJoCo run with type='envpool' under the base or subprocess manager).
    pytest.importorskip("envpool")
    cfg = dict(type="envpool", env_id="HalfCheetah-v4", max_episode_steps=3, manager=dict(type="base"))
    with build_env_manager(cfg, 1, 0) as m:
        m.reset()
        ends = [m.step(np.zeros((1, 6))) for _ in range(7)]
    assert [bool(r.truncated[0]) for r in ends] == [False, False, True] * 2 + [False]
    assert [e.episode_length for r in ends for e in r.episodes] == [3, 3]


def _step_onto_the_goal(env, steps_before: int) -> tuple[float, bool, bool]:
    """Idle ``steps_before`` steps, then put the agent in front of DoorKey's goal (bottom-right corner) facing it and
    step forward: the reward of a success after ``steps_before + 1`` steps."""
    for _ in range(steps_before):
        env.step(6)  # 'done': does nothing in DoorKey
    grid = env.unwrapped
    grid.agent_pos, grid.agent_dir = (grid.width - 2, grid.height - 3), 1  # facing down, onto the goal
    _, reward, terminated, truncated, _ = env.step(2)
    return float(reward), bool(terminated), bool(truncated)


@pytest.mark.parametrize("max_episode_steps", [None, 100, 500])
def test_minigrid_time_limit_is_its_max_steps_and_sets_the_success_reward(max_episode_steps) -> None:
    # Before: env.max_episode_steps was a gymnasium TimeLimit over MiniGrid's own max_steps (250 on DoorKey-5x5):
    # 500 still truncated at 250, and 100 truncated at 100 but paid 1 - 0.9 * steps / 250 on success.
    pytest.importorskip("minigrid")
    from ding_lite.envs.gym_env import build_env

    limit = 250 if max_episode_steps is None else max_episode_steps
    cfg = dict(type="minigrid", env_id="MiniGrid-DoorKey-5x5-v0", max_episode_steps=max_episode_steps)
    env = build_env(cfg)
    env.reset(seed=0)
    reward, terminated, truncated = _step_onto_the_goal(env, 9)
    assert terminated and not truncated and reward == pytest.approx(1 - 0.9 * 10 / limit)
    env.reset(seed=0)
    ends = [env.step(6)[2:4] for _ in range(limit)]
    assert ends[-1] == (False, True) and not any(te or tr for te, tr in ends[:-1])
    env.close()


def test_minigrid_time_limit_set_twice_is_a_config_error() -> None:
    pytest.importorskip("minigrid")
    from ding_lite.envs.gym_env import build_env
    from ding_lite.errors import ConfigError

    with pytest.raises(ConfigError, match="env.max_episode_steps and env.kwargs.max_steps"):
        build_env(dict(type="minigrid", env_id="MiniGrid-DoorKey-5x5-v0", max_episode_steps=50,
                       kwargs=dict(max_steps=60)))


def test_envpool_mujoco_steps_as_gymnasium_does_through_falls_and_time_limits() -> None:
    # Each row of the envpool manager against gymnasium's env put in the row's state and given the same action:
    # the same next observation (the final one where an episode ends), reward and termination (a fall, not
    # bootstrapped), and a time limit that truncates. Before: a fall in the step that reached the limit came as
    # truncated (envpool's terminated = done & ~truncated), so it was bootstrapped; gymnasium says terminated.
    pytest.importorskip("envpool")
    pytest.importorskip("mujoco")
    import gymnasium as gym

    env_id, limit = "Hopper-v4", 30
    cfg = dict(type="envpool", env_id=env_id, max_episode_steps=limit, manager=dict(type="envpool"))
    with warnings.catch_warnings():  # v4 is out of date: the benchmarks' version on purpose
        warnings.simplefilter("ignore", DeprecationWarning)
        reference = gym.make(env_id, disable_env_checker=True).unwrapped
    reference.reset(seed=0)
    nq = reference.model.nq
    rng = np.random.default_rng(0)
    seen = {"terminated": 0, "truncated": 0}
    with build_env_manager(cfg, 1, 0) as m:
        obs, t = m.reset(), 0
        for _ in range(200):
            action = rng.uniform(-1.5, 1.5, (1, reference.action_space.shape[0]))  # clipped to [-1, 1] for both
            o = obs[0].astype(np.float64)  # the x position is not observed and no part of the dynamics: 0
            reference.set_state(np.concatenate([[0.0], o[:nq - 1]]), o[nq - 1:])
            want_obs, want_reward, want_terminated, _, _ = reference.step(np.clip(action[0], -1, 1))
            result = m.step(action)
            t += 1
            np.testing.assert_allclose(result.next_obs[0], want_obs, atol=1e-4)  # float32 observations
            assert result.reward[0] == pytest.approx(want_reward, abs=1e-4)
            assert bool(result.terminated[0]) == want_terminated
            assert bool(result.truncated[0]) == (t == limit and not want_terminated)
            if result.terminated[0] or result.truncated[0]:
                seen["terminated" if result.terminated[0] else "truncated"] += 1
                t = 0
            obs = result.obs
    assert seen["terminated"] and seen["truncated"], seen


def test_envpool_mujoco_episodes_are_the_same_under_every_manager() -> None:
    # The single env (base, subprocess) and the pool (envpool manager) end and restart episodes alike: time limits
    # (ding_lite's cut, then envpool's reset) and falls (envpool's reset step).
    pytest.importorskip("envpool")
    episodes = {}
    for manager in ("base", "subprocess", "envpool"):
        cfg = dict(type="envpool", env_id="Hopper-v4", max_episode_steps=40, manager=dict(type=manager))
        with build_env_manager(cfg, 2, 0) as m:
            m.reset()
            rng = np.random.default_rng(0)
            ends = [(e.env_id, e.episode_length, e.terminated, round(e.episode_return, 4))
                    for _ in range(150) for e in m.step(rng.uniform(-1, 1, (2, 3))).episodes]
        episodes[manager] = ends
    assert episodes["base"] == episodes["subprocess"] == episodes["envpool"]
    assert {(length, terminated) for _, length, terminated, _ in episodes["base"]} >= {(40, False)}
    assert any(terminated for _, _, terminated, _ in episodes["base"])


def test_halfcheetah_env_prints_no_mujoco_asset_deprecation(capfd) -> None:
    # Before: MuJoCo >= 3.3 printed "WARNING: compiler attribute 'settotalmass' is deprecated ..." and a blank line on
    # stderr for every HalfCheetah env built (7 times in a tiny SAC run; also before a config refusal's one line).
    pytest.importorskip("mujoco")
    from ding_lite.envs.suites import MujocoEnv

    env = MujocoEnv(dict(type="mujoco", env_id="HalfCheetah-v4"))
    env.close()
    assert "settotalmass" not in capfd.readouterr().err

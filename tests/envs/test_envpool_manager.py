"""The envpool env manager: same StepResult as the other managers, final observations for bootstrapping although
envpool resets an ended env on its next step, seeding, and bad input."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.build import build_env_manager
from ding_lite.envs.gym_env import build_env
from ding_lite.errors import ConfigError

pytest.importorskip("envpool")
pytestmark = pytest.mark.unittest

HORIZON = 5  # CartPole cut by the time limit long before it falls with these actions


def _cfg(**kw):
    return dict(type="envpool", env_id="CartPole-v1", max_episode_steps=HORIZON, manager=dict(type="envpool")) | kw


def _successor(obs: np.ndarray, action: int) -> np.ndarray:
    """gymnasium's CartPole dynamics from state ``obs`` (the same equations envpool implements)."""
    env = gym.make("CartPole-v1").unwrapped
    env.reset(seed=0)
    env.state = obs.astype(np.float64)
    return env.step(int(action))[0]


def test_every_next_obs_is_the_successor_and_truncation_keeps_the_final_obs() -> None:
    manager = build_env_manager(_cfg(), 3, seed=0)
    with manager:
        obs = manager.reset()
        ends = []
        for t in range(2 * HORIZON + 2):
            actions = np.array([t % 2, 1 - t % 2, 0])
            result = manager.step(actions)
            for i in range(3):  # the row is a real transition, also where the time limit cut the episode
                np.testing.assert_allclose(result.next_obs[i], _successor(obs[i], actions[i]), rtol=1e-4, atol=1e-5)
            done = result.truncated
            assert not result.terminated.any()
            assert done.all() == ((t + 1) % HORIZON == 0) and (done.any() == done.all())
            if done.any():  # obs is a fresh episode's first observation, next_obs the final one
                assert np.abs(result.obs).max() < 0.05 and not np.allclose(result.obs, result.next_obs)
                ends += result.episodes
            else:
                np.testing.assert_array_equal(result.obs, result.next_obs)
            np.testing.assert_array_equal(result.reward, 1.0)  # envpool's reset step (reward 0) never shows
            obs = result.obs
    assert [(e.episode_length, e.episode_return, e.terminated) for e in ends] == [(HORIZON, HORIZON, False)] * 6


def test_terminated_episodes_end_with_their_own_length() -> None:
    manager = build_env_manager(_cfg(max_episode_steps=500), 2, seed=3)
    with manager:
        manager.reset()
        ends = []
        for _ in range(60):  # always pushing right: the pole falls within a few dozen steps
            ends += manager.step(np.ones(2, dtype=np.int64)).episodes
    assert ends and all(e.terminated and 5 < e.episode_length < 60 for e in ends)
    assert all(e.episode_return == e.episode_length for e in ends)


def test_seeding_is_reproducible_and_per_env() -> None:
    def first_obs(seed: int) -> np.ndarray:
        with build_env_manager(_cfg(), 2, seed=seed) as manager:
            return manager.reset().copy()

    a, b, c = first_obs(7), first_obs(7), first_obs(8)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c) and not np.allclose(a[0], a[1])


def test_continuous_actions_are_clipped_and_single_env_type_works() -> None:
    cfg = dict(type="envpool", env_id="Pendulum-v1", max_episode_steps=3)
    env = build_env(cfg)
    assert isinstance(env, gym.Env) and env.observation_space.shape == (3,)
    env.reset(seed=1)
    _, reward, _, truncated, _ = env.step(np.array([100.0]))  # clipped to the max torque 2
    assert reward <= 0.0 and not truncated
    env.close()
    with build_env_manager(cfg | {"manager": dict(type="envpool")}, 2, seed=0) as manager:
        result = manager.step(np.array([[5.0], [-5.0]]))
        assert result.next_obs.shape == (2, 3) and result.reward.dtype == np.float32


def test_unknown_env_id_has_a_did_you_mean() -> None:
    with pytest.raises(ConfigError, match=r"env.env_id='Pong-v4'.*did you mean 'Pong-v5'"):
        build_env_manager(dict(type="envpool", env_id="Pong-v4", manager=dict(type="envpool")), 2)


def test_envpool_manager_needs_an_envpool_env() -> None:
    with pytest.raises(ConfigError, match="needs env.type='envpool'"):
        build_env_manager(dict(type="gymnasium", env_id="CartPole-v1", manager=dict(type="envpool")), 2)


def test_pipeline_groups_step_like_one_pool() -> None:
    """Two pools stepped apart hold the same envs (env i seeded with seed + i) and answer with the same rows as one
    pool: through ``step`` and through ``send`` / ``recv`` per group, episode ends and reset observations included."""
    one = build_env_manager(_cfg(manager=dict(type="envpool", pipeline_groups=1)), 3, seed=4)
    split = build_env_manager(_cfg(), 3, seed=4)  # the default: 2 groups
    with one, split:
        assert split.groups == [slice(0, 2), slice(2, 3)] and one.groups == [slice(0, 3)]
        np.testing.assert_array_equal(one.reset(), split.reset())
        ends_one, ends_split = [], []
        for t in range(2 * HORIZON + 1):
            actions = np.array([t % 2, 1, 0])
            expected = one.step(actions)
            ends_one += expected.episodes
            if t % 2:  # the whole batch at once
                results = [split.step(actions)]
            else:  # group by group, the second sent before the first is received
                split.send(0, actions[:2])
                split.send(1, actions[2:])
                results = [split.recv(0), split.recv(1)]
            for field in ("obs", "next_obs", "reward", "terminated", "truncated"):
                np.testing.assert_array_equal(np.concatenate([getattr(r, field) for r in results]),
                                              getattr(expected, field), err_msg=field)
            ends_split += [e for r in results for e in r.episodes]
            np.testing.assert_array_equal(split.obs, one.obs)
    assert [(e.env_id, e.episode_length) for e in ends_split] == [(e.env_id, e.episode_length) for e in ends_one]
    assert len(ends_one) == 6


@pytest.mark.parametrize("groups", [0, -1, 1.5, True, "2"])
def test_bad_pipeline_groups_is_a_config_error(groups) -> None:
    with pytest.raises(ConfigError, match="env.manager.pipeline_groups must be an integer of at least 1"):
        build_env_manager(_cfg(manager=dict(type="envpool", pipeline_groups=groups)), 2)


def test_truncate_resets_running_episodes_in_their_pools() -> None:
    """The eval step cap (run_episodes) cuts an episode through ``truncate``: envpool resets the envs named by
    ``env_id`` in their own pool, and a group stepped alone afterwards keeps the other group's fresh rows."""
    from ding_lite.worker.episodes import run_episodes

    manager = build_env_manager(_cfg(max_episode_steps=500, manager=dict(type="envpool", pipeline_groups=2)), 4,
                                seed=3)
    try:
        before = manager.reset()
        for _ in range(3):
            before = manager.step(np.zeros(4, dtype=np.int64)).obs
        obs, ends = manager.truncate([1, 2])  # env 1 in the first pool, env 2 in the second
        assert [(e.env_id, e.episode_length, e.episode_return, e.terminated) for e in ends] == \
            [(1, 3, 3.0, False), (2, 3, 3.0, False)]
        assert (np.abs(obs[[1, 2]]) <= 0.05).all() and not np.isclose(obs[[1, 2]], before[[1, 2]]).all()
        np.testing.assert_array_equal(obs[[0, 3]], before[[0, 3]])
        manager.send(0, np.zeros(2, dtype=np.int64))
        first = manager.recv(0)
        np.testing.assert_allclose(first.next_obs[1], _successor(obs[1], 0), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(manager.obs[2], obs[2])  # the second pool's row: still its reset obs
        run = run_episodes(manager, lambda o: np.zeros(len(o), dtype=np.int64), 8, max_episode_steps=3)
        assert run.lengths.tolist() == [3] * 8 and run.cut.all() and sorted(e.env_id for e in run.ends) == \
            [0, 0, 1, 1, 2, 2, 3, 3]
    finally:
        manager.close()

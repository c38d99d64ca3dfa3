"""The in-process env manager (ding_lite/envs/env_manager.py) and the gymnasium env type (gym_env.py)."""
from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from fake_envs import CountingEnv, RecordActions, counting_env_fns

from ding_lite.build import build_env_manager
from ding_lite.envs import BaseEnvManager, build_env
from ding_lite.envs.actions import action_to_env
from ding_lite.errors import ConfigError, EnvError

pytestmark = pytest.mark.unittest


def test_auto_reset_keeps_final_obs_and_reports_episodes() -> None:
    # env 0 episodes last 2, 3, ... steps; env 1 episodes last 3, 4, ... steps (terminations)
    with BaseEnvManager(counting_env_fns([2, 3])) as manager:
        manager.seed(0)
        obs = manager.reset()
        np.testing.assert_array_equal(obs, [[0, 0], [100, 0]])
        r1 = manager.step(np.array([0, 1]))
        np.testing.assert_array_equal(r1.next_obs, [[0, 1], [100, 1]])
        np.testing.assert_array_equal(r1.obs, r1.next_obs)
        np.testing.assert_array_equal(r1.reward, [1, 2])
        assert r1.reward.dtype == np.float32 and r1.episodes == []

        r2 = manager.step(np.array([1, 1]))  # env 0 ends its first episode (2 steps, return 1 + 2)
        np.testing.assert_array_equal(r2.next_obs, [[0, 2], [100, 2]])  # the final observation ...
        np.testing.assert_array_equal(r2.obs, [[1, 0], [100, 2]])  # ... while obs already holds the reset one
        np.testing.assert_array_equal(r2.terminated, [True, False])
        np.testing.assert_array_equal(r2.truncated, [False, False])
        (ep,) = r2.episodes
        assert (ep.env_id, ep.episode_return, ep.episode_length, ep.terminated) == (0, 3.0, 2, True)
        assert ep.info == {"t": 2}
        np.testing.assert_array_equal(manager.obs, r2.obs)

        r3 = manager.step(np.array([0, 0]))  # env 1 ends (3 steps, return 2 + 2 + 1); env 0 runs on
        (ep,) = r3.episodes
        assert (ep.env_id, ep.episode_return, ep.episode_length) == (1, 5.0, 3)
        np.testing.assert_array_equal(r3.next_obs, [[1, 1], [100, 3]])
        np.testing.assert_array_equal(r3.obs, [[1, 1], [101, 0]])

        for _ in range(2):  # env 0's second episode lasts 3 steps: return counted from its own start only
            r = manager.step(np.array([0, 0]))
        (ep,) = r.episodes
        assert (ep.env_id, ep.episode_return, ep.episode_length) == (0, 3.0, 3)


def test_truncation_flags_and_final_obs() -> None:
    with BaseEnvManager(counting_env_fns([1, 2], truncate=True)) as manager:
        manager.seed(5)
        manager.reset()
        r = manager.step(np.array([0, 0]))
        np.testing.assert_array_equal(r.truncated, [True, False])
        np.testing.assert_array_equal(r.terminated, [False, False])
        assert r.episodes[0].terminated is False and r.episodes[0].env_id == 0
        np.testing.assert_array_equal(r.next_obs[0], [0, 1])
        np.testing.assert_array_equal(r.obs[0], [1, 0])


def test_gymnasium_time_limit_is_a_truncation_with_the_real_final_obs() -> None:
    env_cfg = dict(type="gymnasium", env_id="CartPole-v1", max_episode_steps=3, kwargs={})
    twin = gym.make("CartPole-v1", max_episode_steps=3)
    twin_obs, _ = twin.reset(seed=11)
    twin.action_space.seed(11)
    with build_env_manager(env_cfg, 1, seed=11) as manager:
        np.testing.assert_array_equal(manager.reset()[0], twin_obs)
        for step in range(3):
            r = manager.step(np.array([step % 2]))
            twin_obs, reward, terminated, truncated, _ = twin.step(step % 2)
            np.testing.assert_array_equal(r.next_obs[0], twin_obs)
        assert r.truncated[0] and not r.terminated[0] and truncated and not terminated
        (ep,) = r.episodes
        assert (ep.episode_return, ep.episode_length, ep.terminated) == (3.0, 3, False)
        reset_obs, _ = twin.reset()  # the manager reset the env from its own RNG stream, as the twin does
        np.testing.assert_array_equal(r.obs[0], reset_obs)
        assert not np.array_equal(r.obs[0], r.next_obs[0])


def test_seed_gives_env_i_seed_plus_i() -> None:
    env_cfg = dict(type="gymnasium", env_id="CartPole-v1", kwargs={}, max_episode_steps=None)
    with build_env_manager(env_cfg, 3, seed=42) as manager:
        first = manager.reset()
        manager.seed(42)
        np.testing.assert_array_equal(manager.reset(), first)
    expected = [gym.make("CartPole-v1").reset(seed=42 + i)[0] for i in range(3)]
    np.testing.assert_array_equal(first, np.stack(expected))


def test_box_actions_are_clipped_for_the_env_only() -> None:
    space = gym.spaces.Box(-2.0, 2.0, shape=(1,), dtype=np.float32)
    actions = np.array([[-5.0], [0.5], [3.0]])
    sent = action_to_env(actions, space)
    np.testing.assert_array_equal(np.stack(sent), [[-2.0], [0.5], [2.0]])
    np.testing.assert_array_equal(actions, [[-5.0], [0.5], [3.0]])  # the caller's array is untouched
    recorders = [RecordActions(gym.make("Pendulum-v1")) for _ in range(3)]
    with BaseEnvManager([lambda r=r: r for r in recorders]) as manager:
        manager.seed(0)
        manager.reset()
        manager.step(actions)
    np.testing.assert_array_equal([r.actions[0] for r in recorders], [[-2.0], [0.5], [2.0]])


def test_discrete_actions_become_python_ints() -> None:
    sent = action_to_env(np.array([1, 0]), gym.spaces.Discrete(2))
    assert sent == [1, 0] and all(type(a) is int for a in sent)


def test_close_is_idempotent_and_empty_manager_is_an_error() -> None:
    manager = BaseEnvManager([lambda: CountingEnv(2)])
    manager.close()
    manager.close()
    assert manager.closed
    with pytest.raises(ConfigError, match="at least one env"):
        BaseEnvManager([])


def test_gymnasium_env_id_typo_suggests_the_id() -> None:
    with pytest.raises(ConfigError, match=r"unknown gymnasium env id env.env_id='CartPol-v1' \(did you mean "
                                          r"'CartPole-v1'\?\)"):
        build_env(dict(type="gymnasium", env_id="CartPol-v1"))
    with pytest.raises(ConfigError, match="env.env_id is required"):
        build_env(dict(type="gymnasium", env_id=None))


def test_an_id_a_package_registers_is_built_by_gymnasiums_package_prefix_or_named_with_the_way_to_import_it(
        tmp_path, monkeypatch) -> None:
    """Before, 'package:EnvId' (gymnasium.make's own form) was refused as an unknown id, and an id of an unimported
    package (MiniGrid's, say) was refused without a word on how to register it."""
    from ding_lite.errors import PluginImportError

    (tmp_path / "my_registering_pkg.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('MyRegistered-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    env = build_env(dict(type="gymnasium", env_id="my_registering_pkg:MyRegistered-v0"))
    assert env.observation_space.shape == (4,)
    env.close()
    with pytest.raises(ConfigError, match=r"env.env_id='my_registering_pkg:MyRegistered-v9': importing "
                                          r"'my_registering_pkg' registered no gymnasium env 'MyRegistered-v9' "
                                          r"\(did you mean 'MyRegistered-v0'\?\)"):
        build_env(dict(type="gymnasium", env_id="my_registering_pkg:MyRegistered-v9"))
    with pytest.raises(PluginImportError, match=r"env.env_id='no_such_pkg_xyz:Any-v0': cannot import module "
                                                r"'no_such_pkg_xyz'"):
        build_env(dict(type="gymnasium", env_id="no_such_pkg_xyz:Any-v0"))
    with pytest.raises(ConfigError, match=r"unknown gymnasium env id env.env_id='Xyzzy-Plugh-v0' \(an id that "
                                          r"a package registers needs the package imported first: "
                                          r"env_id='<package>:Xyzzy-Plugh-v0', or env.import_names"):
        build_env(dict(type="gymnasium", env_id="Xyzzy-Plugh-v0"))


def test_gymnasium_env_builds_with_kwargs_and_time_limit() -> None:
    env = build_env(dict(type="gymnasium", env_id="Pendulum-v1", kwargs=dict(g=9.0), max_episode_steps=7))
    assert env.spec.max_episode_steps == 7 and env.unwrapped.g == 9.0


@pytest.mark.parametrize("mode, message", [
    ("raise", r"env 1's step raised RuntimeError: faulty env: step blew up \(at .*faulty_env\.py:\d+, in step\); "
              r"the base env manager stops there \(env\.manager\.type='subprocess' restarts a failing env"),
    ("reset", r"env 1's reset raised RuntimeError: faulty env: reset always fails \(at .*faulty_env\.py:\d+, in "
              r"reset\)"),
])
def test_an_env_that_raises_is_an_env_error_naming_it_and_where(mode: str, message: str) -> None:
    """An env's own exception in step or reset went up as a bare traceback from inside the manager (exit code 1 at
    the CLI); it is an EnvError (one line, exit code 2) naming the env, the exception and the line that raised it,
    as the subprocess manager's message does once its restarts are spent. ding_lite's own errors pass as they are."""
    from faulty_env import FaultyEnv

    fns = [FaultyEnv, lambda: FaultyEnv(dict(mode=mode, fail_at=2))]
    with BaseEnvManager(fns) as manager:
        with pytest.raises(EnvError, match=message) as caught:
            manager.reset()
            for _ in range(3):
                manager.step(np.zeros(2, dtype=np.int64))
        assert isinstance(caught.value.__cause__, RuntimeError)  # the env's traceback, for a debugger


class _CloseRaises(CountingEnv):
    closed_count = 0

    def close(self) -> None:
        _CloseRaises.closed_count += 1
        raise RuntimeError("lost the display")


def test_an_env_whose_close_raises_is_a_warning_and_every_env_is_closed(warnings_log: pytest.LogCaptureFixture) -> None:
    """The first env whose close raised stopped BaseEnvManager.close() there, the envs after it left open, and the
    exception ended the run (exit code 1, with the results written); a probe env's close did the same before anything
    was written. Closing is clean-up: each failing close is one warning naming the env and the line."""
    _CloseRaises.closed_count = 0
    manager = BaseEnvManager([lambda: _CloseRaises(2) for _ in range(3)])
    manager.reset()
    manager.close()
    assert manager.closed and _CloseRaises.closed_count == 3
    warnings = [r.getMessage() for r in warnings_log.records]
    assert len(warnings) == 3 and re.match(r"warning: env 2's close raised RuntimeError: lost the display \(at .*"
                                           r"test_env_manager\.py:\d+, in close\); ignored", warnings[2]), warnings

"""The optional hooks of env types and managers as Protocols (ding_lite/envs/hooks.py), the env-manager interface
that the self-play arena shares with every manager, and the one answer to "is this a self-play run?"."""
from __future__ import annotations

import numpy as np
import pytest
from fake_envs import counting_env_fns

from ding_lite.build import build_env_manager
from ding_lite.envs import BaseEnvManager
from ding_lite.envs.env_manager import EnvManagerLike
from ding_lite.envs.envpool_env import EnvpoolEnvManager
from ding_lite.envs.gym_env import GymnasiumEnv
from ding_lite.envs.hooks import BuildsOwnEnvs, ChecksConfig, HasVariations, SeatedGames
from ding_lite.envs.multi_agent import PettingZooEnv
from ding_lite.errors import ConfigError
from ding_lite.league.arena import SelfPlayEnvManager
from ding_lite.league.opponents import PlayerSet
from ding_lite.league.seats import game_layout, is_selfplay_config
from ding_lite.registry import ENV_REGISTRY

pytestmark = pytest.mark.unittest

@ENV_REGISTRY.register("seated_test_game")
class SeatedTestGame(PettingZooEnv):
    """Any env type with ``seat_layout`` plays games, not only 'pettingzoo'."""


TAG = dict(type="pettingzoo", import_path="fake_games:tag_game", kwargs=dict(n_seats=2, episode_len=3),
           import_names=[])


def test_env_types_and_managers_declare_their_hooks_by_protocol() -> None:
    assert isinstance(GymnasiumEnv, ChecksConfig) and isinstance(PettingZooEnv, ChecksConfig)
    assert isinstance(PettingZooEnv, SeatedGames) and not isinstance(GymnasiumEnv, SeatedGames)
    assert not isinstance(GymnasiumEnv, HasVariations)
    assert isinstance(EnvpoolEnvManager, BuildsOwnEnvs) and not isinstance(BaseEnvManager, BuildsOwnEnvs)


def test_the_arena_is_an_env_manager_that_the_collector_steps_in_two_halves() -> None:
    layout = game_layout(TAG)
    assert (layout.n_seats, layout.n_actions) == (2, 2)
    players = PlayerSet(lambda mode: None, lambda name: ({}, ""))
    players.players["stub"] = type("Stub", (), {"act": lambda self, o, m: np.zeros(len(o), dtype=np.int64)})()
    with BaseEnvManager(counting_env_fns([2])) as plain, \
            SelfPlayEnvManager(build_env_manager(TAG, 2, 0), layout, ["learner", "stub"], players) as arena:
        assert isinstance(plain, EnvManagerLike) and isinstance(arena, EnvManagerLike)
        assert arena.groups == [slice(0, 2)] and arena.restart_count == 0
        arena.reset()
        arena.send(0, np.zeros(2, dtype=np.int64))
        result = arena.recv(0)
        assert result.obs.shape == (2, 3) and (result.obs[:, 1] == 1).all()  # both games made their first step


def test_one_function_says_whether_a_run_is_self_play() -> None:
    assert is_selfplay_config({"env": TAG})
    assert not is_selfplay_config({"env": dict(type="gymnasium", env_id="CartPole-v1")})
    assert is_selfplay_config({"env": {**TAG, "type": "seated_test_game"}})
    with pytest.raises(ConfigError, match="env type 'gymnasium' is not a multi-agent game"):
        game_layout(dict(type="gymnasium", env_id="CartPole-v1"))

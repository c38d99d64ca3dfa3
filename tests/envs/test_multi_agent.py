"""The packed multi-agent adapters: PettingZoo's AEC protocol (an agent that leaves is stepped out with ``None``),
action masks that come in the infos, and the seatings a game allows."""
from __future__ import annotations

import re

import numpy as np
import pytest

from ding_lite.build import load_config
from ding_lite.envs.gym_env import build_env
from ding_lite.envs.multi_agent import PettingZooEnv
from ding_lite.errors import ConfigError
from ding_lite.league.seats import check_learner_seat
from ding_lite.runtime.selfplay import selfplay_parts
from ding_lite.worker.learner import BaseLearner

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")


def _turn_game(**kwargs):
    return dict(type="pettingzoo", import_path="fake_games:turn_game", kwargs=kwargs, end_when_out=[],
                import_names=[])


def test_an_aec_agent_that_leaves_is_stepped_out_and_the_others_play_on():
    env = build_env(_turn_game(n_seats=3, episode_len=7, leave_at={1: 2}))
    lay = env.layout
    assert lay.turn_based
    seats = lay.unpack(env.reset(seed=0)[0])
    movers = []
    for _ in range(20):
        mover = int(np.flatnonzero(seats.acting)[0])  # always one live agent to move, never the one that left
        movers.append(mover)
        action = np.full(3, -1)
        action[mover] = 0
        packed, _, terminated, truncated, info = env.step(action)
        seats = lay.unpack(packed)
        if len(movers) == 2:  # p1 left after the second turn: its final observation, no longer alive
            assert seats.obs[1].tolist() == [1.0, 2.0, 0.0] and seats.alive.tolist() == [True, False, True]
        if terminated or truncated:
            break
    assert movers == [0, 1, 2, 0, 2, 0, 2] and terminated and not truncated
    assert info["scores"] == [3.0, 2.0, 9.0]  # 3 moves of p0 (1 each), 1 of p1 (2), 3 of p2 (3 each)
    env.close()


def test_the_layout_sees_action_masks_that_come_in_the_infos():
    assert not PettingZooEnv.seat_layout(_turn_game(n_seats=2)).has_mask
    assert PettingZooEnv.seat_layout(_turn_game(n_seats=2, info_mask=True)).has_mask


@pytest.mark.parametrize("policy", ["dqn", "ppo"])
def test_learner_and_snapshots_keep_to_the_masks_of_the_infos(tmp_path, policy):
    # the game raises on an illegal move: a learner or a snapshot that ignores the infos' masks fails it at once
    cfg = load_config(dict(
        env=dict(**_turn_game(n_seats=2, episode_len=7, info_mask=True), collector_env_num=3, evaluator_env_num=1,
                 n_evaluator_episode=2, manager=dict(type="base")),
        policy=dict(type=policy, model=dict(encoder_hidden_size_list=[8]), collect=dict(n_sample=4)),
        league=dict(seats=["learner", "pool"], swap_seats=True, snapshot_freq=10**9)))
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(cfg.policy.learn.learner, parts.policy, tmp_path, None, policy), None)
        rollout, episodes = parts.collector.inner.rollout(30)
    t, n = np.indices(rollout["action"].shape)
    assert rollout["action_mask"][t, n, rollout["action"]].all() and (rollout["action"] == 1).any()
    assert len(episodes) >= 10


def test_the_seats_leave_the_learner_one_seat_of_a_turn_based_game_and_an_opponent():
    turn = PettingZooEnv.seat_layout(_turn_game(n_seats=3))
    simultaneous = PettingZooEnv.seat_layout(dict(type="pettingzoo", import_path="fake_games:tag_game",
                                                  kwargs=dict(n_seats=3), end_when_out=[], import_names=[]))
    check_learner_seat(["learner", "learner", "pool"], simultaneous)
    check_learner_seat(["pool", "learner", "random"], turn)
    with pytest.raises(ConfigError, match="gives the learner 2 seats of a turn-based game"):
        check_learner_seat(["learner", "learner", "pool"], turn)
    for layout in (turn, simultaneous):
        with pytest.raises(ConfigError, match="has no opponent seat"):
            check_learner_seat(["learner"] * 3, layout)
        with pytest.raises(ConfigError, match="has no 'learner' seat"):
            check_learner_seat(["pool"] * 3, layout)


@pytest.mark.parametrize("end_when_out", [[None], [True], [1.5], ["x"], [-1], [2]])
def test_end_when_out_takes_only_the_games_seat_indices(end_when_out: list) -> None:
    """Before, [None] and ['x'] were TypeError / ValueError tracebacks of int(), and True and 1.5 were taken as
    seat 1 (found by the config fuzzer)."""
    message = f"env.end_when_out={end_when_out!r} must list seat indices of the game, whole numbers in 0..1 ("
    with pytest.raises(ConfigError, match=re.escape(message)):
        build_env(dict(_turn_game(n_seats=2), end_when_out=end_when_out))


def test_end_when_out_takes_integral_floats_as_seats() -> None:
    env = build_env(dict(_turn_game(n_seats=2), end_when_out=[1.0]))
    assert env.end_when_out == [1] and type(env.end_when_out[0]) is int
    env.close()


@pytest.mark.parametrize("max_cycles", [float("inf"), 0, 1.5, "x", True])
def test_pettingzoos_max_cycles_is_a_positive_int(max_cycles) -> None:
    """At max_cycles=inf rock-paper-scissors never ends, and its first evaluation hung (found by the config fuzzer)."""
    from ding_lite.errors import ConfigError

    cfg = dict(type="pettingzoo", import_path="pettingzoo.classic.rps_v2:parallel_env",
               kwargs=dict(max_cycles=max_cycles), end_when_out=[], import_names=[])
    with pytest.raises(ConfigError, match=r"env.kwargs.max_cycles must be a positive int \(the moves after which "
                                          r"PettingZoo cuts the game; leave it out for the game's default\), got "):
        PettingZooEnv.check_config(cfg)


@pytest.mark.parametrize("max_cycles", [None])
def test_game_arguments_that_fail_only_at_the_first_move_are_refused_by_the_config_check(max_cycles) -> None:
    """PettingZoo's rps_v2 takes max_cycles=None and fails at its first move: before, that was after the run's
    folder was written (found by the config fuzzer); the config check now plays one move of legal actions."""
    from ding_lite.errors import EnvError

    cfg = dict(type="pettingzoo", import_path="pettingzoo.classic.rps_v2:parallel_env",
               kwargs=dict(max_cycles=max_cycles), end_when_out=[], import_names=[])
    with pytest.raises(EnvError, match=r"env.import_path 'pettingzoo.classic.rps_v2:parallel_env' with env.kwargs="
                                       r".*: the game's first move failed: TypeError"):
        PettingZooEnv.check_config(cfg)
    PettingZooEnv.check_config(dict(cfg, kwargs=dict(max_cycles=3)))  # a good game passes
    PettingZooEnv.check_config(_turn_game(n_seats=3))  # and a turn-based one (with masks) too

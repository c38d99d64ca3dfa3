"""The self-play wrapper's transitions over the opponents' turns, on hand-built turn-based games (mutation audit):
the rewards of every sub-step summed into the learner's step; the end flags of a learner seat still in a game that
a time limit ends, and of one that left before its game ended."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.build import build_env_manager, load_config
from ding_lite.envs.gym_env import build_env
from ding_lite.league.arena import SelfPlayEnvManager
from ding_lite.league.opponents import PlayerSet

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")


def _turn_arena(seats, n_env=1, opening_plies=0, **game):
    return _arena("turn_game", seats, [], n_env, opening_plies, **game)


def _arena(game_name, seats, end_when_out, n_env=1, opening_plies=0, **game):
    cfg = load_config(dict(
        env=dict(type="pettingzoo", import_path=f"fake_games:{game_name}", kwargs=dict(n_seats=len(seats), **game),
                 end_when_out=end_when_out, import_names=[], collector_env_num=n_env, manager=dict(type="base")),
        policy=dict(type="dqn"), league=dict(seats=["learner", "random"])))
    env = build_env(cfg.env)
    layout = env.layout
    env.close()
    players = PlayerSet(lambda mode: None, lambda name: ({}, ""))
    players.players["stub"] = type("Stub", (), {"act": lambda self, o, m: np.zeros(len(o), dtype=np.int64)})()
    return SelfPlayEnvManager(build_env_manager(cfg.env, n_env, 0), layout, seats, players,
                              opening_plies=opening_plies)


def test_a_step_sums_the_rewards_of_the_opponents_turns():
    # every move pays every seat the mover's number (seat 0: 1, seat 1: 2, seat 2: 3): one learner step spans its
    # own move and both opponents' moves, so it earns 1 + 2 + 3, also at the game's end (turn 9, seat 2's move)
    with _turn_arena(["learner", "stub", "stub"], episode_len=9, shared_reward=True) as arena:
        arena.reset()
        steps = [arena.step(np.zeros(1, dtype=np.int64)) for _ in range(3)]
    assert [float(r.reward[0]) for r in steps] == [6.0, 6.0, 6.0]
    assert [bool(r.terminated[0]) for r in steps] == [False, False, True]
    assert steps[2].episodes[0].episode_return == 18.0 and steps[2].episodes[0].episode_length == 3


def test_a_game_that_a_time_limit_ends_is_truncated_for_a_learner_still_in_it():
    # seat 1 ends the game when it leaves (end_when_out); the time limit takes out seat 1 only, at step 2: the
    # learner (seat 0) is still in the game, which was cut, not ended by its rules
    with _arena("tag_game", ["learner", "stub"], [1], episode_len=5, truncate_at=2, cut_seats=[1]) as arena:
        arena.reset()
        steps = [arena.step(np.zeros(1, dtype=np.int64)) for _ in range(2)]
    assert [(bool(r.terminated[0]), bool(r.truncated[0])) for r in steps] == [(False, False), (False, True)]
    assert steps[1].episodes[0].terminated is False


def test_a_learner_that_left_ends_its_episode_as_it_left():
    # the learner is out at step 2 (terminated), the game goes on to the time limit at step 4 (truncated): its
    # episode ended terminated, as it left, not as the game ended without it
    with _arena("tag_game", ["learner", "stub", "stub"], [], episode_len=9, truncate_at=4, leave_at={0: 2}) as arena:
        arena.reset()
        steps = [arena.step(np.zeros(1, dtype=np.int64)) for _ in range(4)]
    assert [bool(r.terminated[0]) for r in steps] == [False, True, False, False]
    assert [len(r.episodes) for r in steps] == [0, 0, 0, 1] and steps[3].episodes[0].terminated is True
    # its return and length are those of its own two steps (the placeholder rows after it left add nothing)
    assert (steps[3].episodes[0].episode_return, steps[3].episodes[0].episode_length) == (2.0, 2)


def test_an_opening_of_up_to_one_ply_starts_some_games_after_it():
    # opening_plies=1: 0 or 1 random plies, each with probability 1/2 (uniform over 0..opening_plies, both ends
    # included); after the one ply (seat 0's) both stubs move, so the learner's first turn is turn 0 or turn 3
    with _turn_arena(["learner", "stub", "stub"], n_env=12, opening_plies=1, episode_len=9) as arena:
        first_turns = set(arena.reset()[:, 1].tolist())
    assert first_turns == {0.0, 3.0}

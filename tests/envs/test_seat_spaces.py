"""The seats' spaces of a PettingZoo game: what one policy can play in every seat, and the game's own action
numbers."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.envs.gym_env import build_env
from ding_lite.envs.multi_agent import PettingZooEnv
from ding_lite.envs.seat_spaces import check_action_spaces
from ding_lite.errors import ConfigError
from ding_lite.league.seats import check_seat_count

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")


def _game(name: str, **kwargs) -> dict:
    return dict(type="pettingzoo", import_path=f"fake_games:{name}", kwargs=kwargs, end_when_out=[], import_names=[])


@pytest.mark.parametrize("name", ["tag_game", "turn_game"])
def test_a_game_that_numbers_its_actions_from_start_gets_them_in_its_own_numbers(name):
    # the fake games raise on an action outside Discrete(2, start=5): index 0 must reach them as 5, index 1 as 6
    env = build_env(_game(name, n_seats=2, episode_len=4, action_start=5))
    assert env.layout.n_actions == 2
    env.reset(seed=0)
    for step in range(4):
        _, _, terminated, truncated, _ = env.step(np.array([step % 2, 1 - step % 2]))
    assert terminated and not truncated
    env.close()


def test_seats_observing_different_kinds_of_spaces_of_one_shape_are_refused():
    # Discrete(3) one-hot is 3 wide as Box(3,) is: one network would read a one-hot in one seat, values in the other
    with pytest.raises(ConfigError, match=r"seat 'p1' observes Discrete\(3\) but seat 'p0' observes Box"):
        build_env(_game("tag_game", n_seats=2, discrete_obs=[1]))


def test_a_seat_observing_discrete_is_encoded_by_its_own_space():
    env = build_env(_game("tag_game", n_seats=2, discrete_obs=[0, 1]))
    seats = env.layout.unpack(env.reset(seed=0)[0])
    assert seats.obs.tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]  # t = 0, one-hot
    env.close()


@pytest.mark.parametrize("spaces, words", [
    ([gym.spaces.Box(0, 1, (5,)), gym.spaces.Box(0, 1, (5,))], "seat 'a' acts in Box.*continuous_actions=False"),
    ([gym.spaces.Discrete(5), gym.spaces.MultiDiscrete([2, 2])], "seat 'b' acts in MultiDiscrete.*one Discrete"),
    ([gym.spaces.Discrete(5), gym.spaces.Discrete(3)], r"seat 'b' acts in Discrete\(3\) but seat 'a' in Discrete\(5\)"),
    ([gym.spaces.Discrete(3), gym.spaces.Discrete(3, start=1)], r"seat 'b' acts in Discrete\(3, start=1\)"),
])
def test_action_spaces_one_policy_cannot_play_are_refused_naming_the_seat(spaces, words):
    with pytest.raises(ConfigError, match=words) as err:
        check_action_spaces("g", ["a", "b"], spaces)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("seats", [["learner"], ["learner", "pool"]])
def test_a_game_of_one_agent_is_refused_as_one_saying_to_train_it_as_a_single_agent_env(seats):
    layout = PettingZooEnv.seat_layout(_game("tag_game", n_seats=1))
    with pytest.raises(ConfigError, match=r"the game has one agent \(p0\).*single-agent gymnasium env"):
        check_seat_count(seats, layout)

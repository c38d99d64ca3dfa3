"""The snake arena's rewards follow its result: the winner gets +1 whether the game ends with the last snake alive or
at ``max_steps`` (the longest-lived, then the longest snake), by hand-built positions."""
from __future__ import annotations

import pytest

from dizoo.board_games.snake.envs.snake_arena import LENGTH_LEAD, N_FEATURES, STEPS_LEFT, SnakeArenaEnv


def _two_snakes(max_steps: int, tail: int) -> SnakeArenaEnv:
    """snake_0 (length 3 + ``tail``) heads right along row 1, snake_1 (length 3) left along row 5 of a 7x7 grid;
    the one food lies out of both ways."""
    env = SnakeArenaEnv(n_snakes=2, size=7, n_food=1, max_steps=max_steps)
    env.reset(seed=0)
    env.bodies = {"snake_0": [(1, 3), (1, 2), (1, 1), (0, 1), (0, 2)][:3 + tail], "snake_1": [(5, 3), (5, 4), (5, 5)]}
    env.heading = {"snake_0": 1, "snake_1": 3}
    env.food = [(3, 0)]
    return env


def test_the_longest_snake_at_max_steps_gets_the_win_reward():
    env = _two_snakes(max_steps=1, tail=2)
    _, rewards, terminations, truncations, infos = env.step({"snake_0": 0, "snake_1": 0})
    assert truncations == {"snake_0": True, "snake_1": True} and not any(terminations.values())
    assert infos["snake_0"]["score"] > infos["snake_1"]["score"]  # both lived 1 step; snake_0 is longer
    assert rewards == {"snake_0": 1.0, "snake_1": 0.0}


def test_equal_snakes_at_max_steps_draw_and_no_one_gets_the_win_reward():
    env = _two_snakes(max_steps=1, tail=0)
    _, rewards, _, truncations, infos = env.step({"snake_0": 0, "snake_1": 0})
    assert all(truncations.values()) and infos["snake_0"]["score"] == infos["snake_1"]["score"]
    assert rewards == {"snake_0": 0.0, "snake_1": 0.0}


def test_before_max_steps_only_the_last_snake_alive_wins():
    env = _two_snakes(max_steps=5, tail=2)
    _, rewards, _, truncations, _ = env.step({"snake_0": 0, "snake_1": 0})
    assert rewards == {"snake_0": 0.0, "snake_1": 0.0} and not any(truncations.values())
    env.step({"snake_0": 1, "snake_1": 0})  # snake_0 turns left (north) to row 0, snake_1 keeps west
    _, rewards, terminations, _, _ = env.step({"snake_0": 0, "snake_1": 0})  # snake_0 leaves the grid
    assert terminations == {"snake_0": True, "snake_1": True}
    assert rewards == pytest.approx({"snake_0": -1.0, "snake_1": 1.0})


def test_length_lead_and_steps_left_features():
    env = _two_snakes(max_steps=4, tail=2)
    lead, left = env.features("snake_0")[[LENGTH_LEAD, STEPS_LEFT]]
    assert (lead, left) == pytest.approx((2 / 20, 1.0))  # 5 cells against 3, no step played yet
    obs, *_ = env.step({"snake_0": 0, "snake_1": 0})
    assert obs["snake_1"][[LENGTH_LEAD, STEPS_LEFT]] == pytest.approx([-2 / 20, 3 / 4])
    assert env.features("snake_0").shape == (N_FEATURES,) == env.observation_space("snake_0").shape

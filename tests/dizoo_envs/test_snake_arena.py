"""The snake arena's rewards follow its result: the winner gets +1 whether the game ends with the last snake alive or
at ``max_steps`` (the longest-lived, then the longest snake), by hand-built positions."""
from __future__ import annotations

import math
import re

import pytest

from dizoo.board_games.snake.envs.snake_arena import LENGTH_LEAD, N_FEATURES, STEPS_LEFT, SnakeArenaEnv

pytestmark = pytest.mark.unittest


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


def test_local_view_is_the_grid_around_the_head_turned_to_its_heading():
    """snake_0 heads right (east) along row 1 of the 7x7 grid, head at (1, 3): with ``local_view=1`` its 3x3 window's
    top row lies one cell east (column 4), its left column one cell north (row 0, off the grid's top edge: deadly)."""
    env = SnakeArenaEnv(n_snakes=2, size=7, n_food=1, max_steps=10, local_view=1)
    env.reset(seed=0)
    env.bodies = {"snake_0": [(1, 3), (1, 2), (1, 1)], "snake_1": [(2, 4), (3, 4), (4, 4)]}
    env.heading = {"snake_0": 1, "snake_1": 0}
    env.food = [(2, 2)]
    deadly, heads, food = env.view("snake_0")
    # rows: ahead (column 4), level (column 3), behind (column 2); columns: left (row 0), centre (row 1), right (row 2)
    assert deadly.tolist() == [[0, 0, 1],  # (0, 4) free, (1, 4) free, (2, 4) snake_1's head: a body cell that stays
                               [0, 1, 0],  # (0, 3), the head itself, (2, 3)
                               [0, 1, 0]]  # (0, 2), the neck (1, 2), (2, 2) food
    assert heads.tolist() == [[0, 0, 1], [0, 0, 0], [0, 0, 0]]
    assert food.tolist() == [[0, 0, 0], [0, 0, 0], [0, 0, 1]]
    obs = env.features("snake_0")
    assert obs.shape == (N_FEATURES + 27,) == env.observation_space("snake_0").shape
    assert obs[N_FEATURES:].tolist() == env.view("snake_0").ravel().tolist()
    env.bodies["snake_0"] = [(0, 3), (1, 3), (2, 3)]  # at the top edge heading north: the window's top row is off grid
    env.heading["snake_0"] = 0
    assert env.view("snake_0")[0][0].tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match=re.escape("local_view must be an int of at least 0 (the window's half side)")):
        SnakeArenaEnv(local_view=-1)


@pytest.mark.parametrize("kwargs,message", [
    (dict(n_snakes=2.0), "n_snakes must be 2, 3 or 4, got 2.0"),
    (dict(size=math.inf), "size must be an int of at least 7 (the grid's side), got inf"),
    (dict(n_food=True), "n_food must be an int of at least 0 (pieces of food), got True"),
    (dict(n_food=math.inf), "n_food must be an int of at least 0 (pieces of food), got inf"),
    (dict(max_steps=math.inf), "max_steps must be an int of at least 1 (a game's length), got inf"),
    (dict(max_steps=0), "max_steps must be an int of at least 1 (a game's length), got 0"),
    (dict(food_reward=None), "food_reward must be a finite number, got None"),
    (dict(food_reward=math.inf), "food_reward must be a finite number, got inf"),
    (dict(food_reward="x"), "food_reward must be a finite number, got 'x'"),
])
def test_the_arena_refuses_arguments_it_cannot_use(kwargs: dict, message: str) -> None:
    """Found by the config fuzzer (env.kwargs.*): before, food_reward=None or 'x' was a TypeError at the first food
    eaten and an infinite one an inf reward, both after the run's folder was written; max_steps=inf made the
    steps-left feature NaN; n_food=inf or True and max_steps=-inf were taken."""
    with pytest.raises(ValueError, match=re.escape(f"snake arena: {message}")):
        SnakeArenaEnv(**kwargs)


def test_pettingzoo_s_aec_conversion_finds_the_render_mode(recwarn):
    """parallel_to_aec warned 'does not have a `render_mode` defined' (the arena had no such attribute)."""
    from pettingzoo.utils.conversions import parallel_to_aec

    aec = parallel_to_aec(SnakeArenaEnv(n_snakes=2, size=7, n_food=1))
    aec.reset(seed=0)
    assert aec.render_mode is None
    assert not [w for w in recwarn if "render_mode" in str(w.message)]

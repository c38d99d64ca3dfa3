"""The snake arena as a single-agent env against scripted snakes: a gymnasium env whose episode ends with the agent's
snake, and whose last ``info`` books the game as the self-play arena does, by hand-built positions."""
from __future__ import annotations

import gymnasium as gym
import pytest
from conftest import REPO_ROOT
from gymnasium.utils.env_checker import check_env

from ding_lite.config.reader import read_config
from dizoo.board_games.snake.envs.versus_scripted import ARENA_KWARGS, SnakeVersusScripted

pytestmark = pytest.mark.unittest


def _placed(env: SnakeVersusScripted, bodies: dict, heading: dict, food: list) -> None:
    env.reset(seed=0)
    game = env.game
    game.bodies, game.heading, game.food = bodies, heading, food
    env._obs = {a: game.features(a) for a in game.agents}


def test_it_is_a_gymnasium_env_under_its_id() -> None:
    check_env(SnakeVersusScripted(), skip_render_check=True)
    env = gym.make("SnakeVsCareful-v0", opponent="snake_heuristic", max_steps=5)
    assert isinstance(env.unwrapped, SnakeVersusScripted) and env.unwrapped.game.max_steps == 5


def test_its_default_arena_is_the_self_play_configs() -> None:
    for algo in ("dqn", "ppo"):
        main_config, _ = read_config(REPO_ROOT / f"dizoo/board_games/snake/config/snake_arena_{algo}_config.py")
        assert main_config["env"]["kwargs"] == ARENA_KWARGS


def test_the_agent_that_dies_first_ends_its_episode_and_loses_while_the_game_is_played_out() -> None:
    env = SnakeVersusScripted(n_snakes=2, size=7, n_food=1, max_steps=50)
    # the agent's head is at the right wall heading right; the careful snake has the rest of the grid
    _placed(env, {"snake_0": [(1, 6), (1, 5), (1, 4)], "snake_1": [(5, 3), (5, 4), (5, 5)]},
            {"snake_0": 1, "snake_1": 3}, [(3, 0)])
    _, reward, terminated, truncated, info = env.step(0)  # straight on: off the grid
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert info == {"win": 0.0, "draw": 0.0}
    assert env.game.agents == []  # the careful snake played on to the game's end


def test_the_agent_alone_at_the_end_wins_and_a_tie_at_the_time_limit_is_a_draw() -> None:
    env = SnakeVersusScripted(n_snakes=2, size=7, n_food=1, max_steps=50)
    # the careful snake's head is in a corner heading into the wall, its body behind it: every move kills it
    _placed(env, {"snake_0": [(3, 3), (3, 2), (3, 1)], "snake_1": [(0, 0), (0, 1), (1, 1), (1, 0), (2, 0)]},
            {"snake_0": 1, "snake_1": 3}, [(6, 6)])
    _, reward, terminated, _, info = env.step(0)
    assert (reward, terminated, info["win"]) == (1.0, True, 1.0)  # the last snake alive: +1 and a win

    env = SnakeVersusScripted(n_snakes=2, size=7, n_food=1, max_steps=1)
    _placed(env, {"snake_0": [(1, 3), (1, 2), (1, 1)], "snake_1": [(5, 3), (5, 4), (5, 5)]},
            {"snake_0": 1, "snake_1": 3}, [(3, 0)])
    _, reward, terminated, truncated, info = env.step(0)
    # equal lengths at the time limit: no winner, truncated as the arena says
    assert (reward, terminated, truncated, info) == (0.0, False, True, {"win": 0.0, "draw": 1.0})


def test_every_game_of_the_four_snake_arena_ends_booked() -> None:
    env = SnakeVersusScripted()  # snakes that died before the agent count too: their scores stay as they died
    for seed in range(5):
        env.reset(seed=seed)
        done, steps, info = False, 0, {}
        while not done:
            _, _, terminated, truncated, info = env.step(int(steps % 3 == 0))  # left every third step
            done, steps = terminated or truncated, steps + 1
        assert set(info) == {"win", "draw"} and info["win"] + info["draw"] in (0.0, 1.0)

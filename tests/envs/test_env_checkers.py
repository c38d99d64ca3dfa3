"""Every env that ding_lite and dizoo ship, as the env managers build it, against the libraries' own checkers:
gymnasium's ``check_env`` (spaces, reset seeding, determinism, ``spec.make()`` rebuilds, render modes, close twice)
and PettingZoo's API and seed tests for the snake arena; then by hand what the checkers leave out (a seeded reset
repeats a whole trajectory, every observation lies in the space with its dtype, bool flags, dict infos, action masks
that mark exactly the game's legal moves). An env whose extra is not installed is skipped."""
from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from ding_lite.envs.gym_env import build_env
from ding_lite.envs.variations import VariationEnv

pytestmark = pytest.mark.unittest

MAZE = "dizoo.grid.maze.envs.maze_env"
CAR = "dizoo.classic_control.mountain_car_family.envs.mountain_car_family_env"
SNAKE = "dizoo.board_games.snake.envs.snake_arena:snake_arena"
# the arena of the snake configs
SNAKE_KWARGS = dict(n_snakes=4, size=11, n_food=3, max_steps=100, food_reward=0.3)


def _section(**section: Any) -> Callable[[], gym.Env]:
    return lambda: build_env(section)


def _snake_versus() -> gym.Env:
    import dizoo.board_games.snake.envs.versus_scripted  # noqa: F401  (registers the id)

    return gym.make("SnakeVsCareful-v0")


# name: (extra the env needs or None, builder, skip gymnasium's render check: MuJoCo's 'human' needs a display)
ENVS: dict[str, tuple[str | None, Callable[[], gym.Env], bool]] = {
    "maze": (None, _section(type="maze", import_names=[MAZE]), False),
    "maze_trap": (None, _section(type="maze", import_names=[MAZE], family="trap", shaping_distance="manhattan"),
                  False),
    "maze_variations": (None, lambda: VariationEnv(build_env(dict(type="maze", import_names=[MAZE])), [0, 4, 9],
                                                   1, 2), False),
    "mountain_car_family": (None, _section(type="mountain_car_family", import_names=[CAR]), False),
    "cartpole": (None, _section(type="cartpole", import_names=["dizoo.classic_control.cartpole.envs.cartpole_env"]),
                 False),
    "pendulum_act_scale": (None, _section(type="pendulum", act_scale=True,
                                          import_names=["dizoo.classic_control.pendulum.envs.pendulum_env"]), False),
    "SnakeVsCareful-v0": (None, _snake_versus, False),
    "gymnasium_encoded": (None, _section(type="gymnasium", env_id="FrozenLake-v1"), False),
    "atari": ("ale_py", _section(type="atari", env_id="Pong-v5"), False),
    "envpool_atari": ("envpool", _section(type="envpool", env_id="Pong-v5"), False),
    "envpool_classic": ("envpool", _section(type="envpool", env_id="CartPole-v1"), False),
    "mujoco": ("mujoco", _section(type="mujoco", env_id="Hopper-v3", use_act_scale=True, delay_reward_step=5), True),
    "minigrid": ("minigrid", _section(type="minigrid", env_id="MiniGrid-DoorKey-5x5-v0"), False),
    "tictactoe": ("pettingzoo", _section(type="pettingzoo", import_path="pettingzoo.classic.tictactoe_v3:raw_env"),
                  False),
    "connect_four": ("pettingzoo", _section(type="pettingzoo",
                                            import_path="pettingzoo.classic.connect_four_v3:raw_env"), False),
    "rps": ("pettingzoo", _section(type="pettingzoo", import_path="pettingzoo.classic.rps_v2:parallel_env",
                                   kwargs=dict(max_cycles=15)), False),
    "snake_arena": ("pettingzoo", _section(type="pettingzoo", import_path=SNAKE, kwargs=SNAKE_KWARGS), False),
    "snake_arena_view": ("pettingzoo", _section(type="pettingzoo", import_path=SNAKE, kwargs=dict(local_view=2)),
                         False),
}


def _make(name: str, monkeypatch: pytest.MonkeyPatch) -> gym.Env:
    extra, make, _ = ENVS[name]
    if extra is not None and importlib.util.find_spec(extra) is None:
        pytest.skip(f"{extra} is not installed")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # pygame's 'human' render mode without a display
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return make()


@pytest.mark.parametrize("name", list(ENVS))
def test_gymnasiums_env_checker_passes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _make(name, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its advice (infinite Box bounds, no spec to remake) is no failure
        check_env(env, skip_render_check=ENVS[name][2])
    env.close()


def _actions(env: gym.Env, obs: Any, rng: np.random.Generator) -> Any:
    """A random action; for a packed game (``env.layout``) one legal action per seat, as its mask says."""
    layout = getattr(env, "layout", None)
    if layout is None:
        return env.action_space.sample()
    mask = layout.unpack(obs).action_mask
    return np.array([rng.choice(np.flatnonzero(m)) if m.any() else 0 for m in mask])


def _trajectory(env: gym.Env, seed: int, steps: int) -> list[Any]:
    """Observations and step results of ``steps`` steps after ``reset(seed=seed)`` (a reset after each episode's
    end), checked on the way: observations in the space with its dtype, bool flags, dict infos."""
    env.action_space.seed(seed)
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    seen: list[Any] = []
    space = env.observation_space
    for _ in range(steps):
        assert space.contains(obs), f"observation {obs!r} outside {space}"
        assert isinstance(info, dict)
        if isinstance(space, gym.spaces.Box):
            assert obs.dtype == space.dtype
        seen.append(np.array(obs, copy=True))
        obs, reward, terminated, truncated, info = env.step(_actions(env, obs, rng))
        assert isinstance(terminated, (bool, np.bool_)) and isinstance(truncated, (bool, np.bool_))
        assert isinstance(reward, (float, int, np.floating, np.integer))
        seen.append((float(reward), bool(terminated), bool(truncated)))
        if terminated or truncated:
            obs, info = env.reset()
    return seen


def _same(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
                                    for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("name", list(ENVS))
def test_a_seeded_reset_repeats_the_trajectory_inside_the_spaces(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _make(name, monkeypatch)
    first = _trajectory(env, 3, 60)
    assert _same(first, _trajectory(env, 3, 60))  # the same env again
    other = _make(name, monkeypatch)
    assert _same(first, _trajectory(other, 3, 60))  # a fresh env
    other.close()
    env.close()
    env.close()  # twice is fine


def test_the_snake_arena_passes_pettingzoos_tests() -> None:
    pytest.importorskip("pettingzoo")
    from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test
    from pettingzoo.utils.conversions import parallel_to_aec

    from dizoo.board_games.snake.envs.snake_arena import SnakeArenaEnv

    for kwargs in (SNAKE_KWARGS, dict(n_snakes=2, local_view=2, shuffle_starts=False)):
        parallel_api_test(SnakeArenaEnv(**kwargs), num_cycles=200)
        parallel_seed_test(lambda kwargs=kwargs: SnakeArenaEnv(**kwargs), num_cycles=200)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "observation is all zeros": a dead snake's last observation
            api_test(parallel_to_aec(SnakeArenaEnv(**kwargs)), num_cycles=200)


@pytest.mark.parametrize("name,legal", [
    ("tictactoe", lambda game: {i for i in range(9) if game.board.squares[i] == 0}),
    ("connect_four", lambda game: {c for c in range(7) if game.board[c] == 0}),  # the top row is row 0
])
def test_a_board_games_packed_mask_marks_exactly_the_legal_moves(name: str, legal: Callable[[Any], set],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    env: Any = _make(name, monkeypatch)
    rng = np.random.default_rng(0)
    for game in range(20):
        obs, _ = env.reset(seed=game)
        done = False
        while not done:
            batch, seat = env.layout.unpack(obs), env.layout.agents.index(env.game.agent_selection)
            assert list(np.flatnonzero(batch.acting)) == [seat]
            assert set(np.flatnonzero(batch.action_mask[seat])) == legal(env.game)
            obs, _, terminated, truncated, _ = env.step(_actions(env, obs, rng))
            done = terminated or truncated
    env.close()

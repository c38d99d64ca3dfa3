"""The maze family: deterministic levels, shortest paths, the success flag and the shaped return."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.errors import ConfigError
from dizoo.grid.maze.envs.maze_env import MOVES, MazeEnv, bfs_distances, is_trap_level, make_level, make_trap_level

pytestmark = pytest.mark.unittest


def test_bfs_distances_by_hand() -> None:
    walls = np.array([[0, 1, 0],
                      [0, 1, 0],
                      [0, 0, 0]], dtype=bool)
    dist = bfs_distances(walls, (0, 2))
    assert dist.tolist() == [[6, -1, 0], [5, -1, 1], [4, 3, 2]]


def test_a_level_id_always_gives_the_same_layout_and_levels_differ() -> None:
    a, b = make_level(3, 7, 0.3, 8), make_level.__wrapped__(3, 7, 0.3, 8)
    assert np.array_equal(a[0], b[0]) and a[1] == b[1]
    assert not np.array_equal(make_level(4, 7, 0.3, 8)[0], a[0])
    assert a[2][a[1]] >= 8  # the start is at least min_distance from the goal


def test_the_shortest_path_succeeds_with_return_one_plus_shaping_times_distance() -> None:
    env = MazeEnv({"num_levels": 10})
    obs, _ = env.reset(options={"variation": 7})
    assert obs.shape == (147,) and obs[49:98].sum() == 1 and obs[98:].sum() == 1
    d0, total, done, info = env.dist[env.pos], 0.0, False, {}
    while not done:  # greedy on the distance map is a shortest path
        r, c = env.pos
        action = min(range(4), key=lambda a: _dist_after(env, r + MOVES[a][0], c + MOVES[a][1]))
        _, reward, done, truncated, info = env.step(action)
        total += reward
        assert not truncated
    assert info["success"] and np.isclose(total, 1.0 + 0.1 * d0)


def test_an_episode_without_the_goal_is_truncated_and_not_a_success() -> None:
    env = MazeEnv({"num_levels": 10, "max_episode_steps": 3})
    env.reset(options={"variation": 1})
    outs = [env.step(0) for _ in range(3)]
    assert outs[-1][3] and not outs[-1][2] and not outs[-1][4]["success"]


TRAP = {"num_levels": 50, "family": "trap", "min_distance": 4, "hard_every": 5, "hard_max_manhattan": 2,
        "hard_min_distance": 8, "hard_max_distance": 10, "shaping_distance": "manhattan", "max_episode_steps": 40}


def _manhattan(a: tuple, b: tuple) -> int:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def test_trap_levels_are_every_fifth_id() -> None:
    assert [k for k in range(15) if is_trap_level(k, 5)] == [4, 9, 14]
    assert not any(is_trap_level(k, 0) for k in range(15))  # hard_every 0: no traps


def test_trap_family_layouts_are_deterministic_and_have_the_promised_starts() -> None:
    for level in range(20):
        walls, start, dist = make_trap_level(level, 7, 0.3, 4, 5, 2, 8, 10)
        again = make_trap_level.__wrapped__(level, 7, 0.3, 4, 5, 2, 8, 10)
        assert np.array_equal(walls, again[0]) and start == again[1]
        goal = tuple(int(x) for x in np.argwhere(dist == 0)[0])
        if level % 5 == 4:  # a trap: close as the crow flies, far along the maze
            assert _manhattan(start, goal) <= 2 and 8 <= dist[start] <= 10
        else:  # a staircase: the shortest path is as long as the Manhattan distance
            assert dist[start] == _manhattan(start, goal) >= 4


def test_manhattan_shaping_lures_into_the_wall_on_a_trap_and_the_detour_still_succeeds() -> None:
    env = MazeEnv(TRAP)
    env.reset(options={"variation": 4})
    goal = tuple(int(x) for x in np.argwhere(env.dist == 0)[0])
    m0, d0 = _manhattan(env.pos, goal), int(env.dist[env.pos])
    total, done, info, rewards = 0.0, False, {}, []
    while not done:  # the shortest path: it must step away from the goal at least once
        r, c = env.pos
        action = min(range(4), key=lambda a: _dist_after(env, r + MOVES[a][0], c + MOVES[a][1]))
        _, reward, done, truncated, info = env.step(action)
        total, rewards = total + reward, rewards + [reward]
        assert not truncated
    assert info["success"] and len(rewards) == d0 > m0
    assert min(rewards) < 0  # the detour costs shaping reward on the way
    assert np.isclose(total, 1.0 + 0.1 * m0)  # potential-based: the shaping telescopes to the start's distance


def test_on_a_staircase_every_shortest_path_step_earns_the_shaping() -> None:
    env = MazeEnv(TRAP)
    env.reset(options={"variation": 0})
    done = False
    while not done:
        r, c = env.pos
        action = min(range(4), key=lambda a: _dist_after(env, r + MOVES[a][0], c + MOVES[a][1]))
        _, reward, done, _, info = env.step(action)
        assert np.isclose(reward, 0.1 + (1.0 if done else 0.0))
    assert info["success"]


@pytest.mark.parametrize("key, value", [("family", "spiral"), ("shaping_distance", "euclid")])
def test_an_unknown_family_or_shaping_distance_is_a_config_error(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"env.{key}"):
        MazeEnv({**TRAP, key: value})


def _dist_after(env: MazeEnv, r: int, c: int) -> int:
    if 0 <= r < env.size and 0 <= c < env.size and not env.walls[r, c]:
        return int(env.dist[r, c])
    return 10 ** 6

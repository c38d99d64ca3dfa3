"""The maze family: deterministic levels, shortest paths, the success flag and the shaped return."""
from __future__ import annotations

import numpy as np
import pytest

from dizoo.grid.maze.envs.maze_env import MOVES, MazeEnv, bfs_distances, make_level

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


def _dist_after(env: MazeEnv, r: int, c: int) -> int:
    if 0 <= r < env.size and 0 <= c < env.size and not env.walls[r, c]:
        return int(env.dist[r, c])
    return 10 ** 6

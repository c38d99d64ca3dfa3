"""Env variations: the ids of ``env.variations``, the per-env schedule, the evaluator's per-variation table."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.build import build_env_manager
from ding_lite.envs.variations import VARIATION, VariationEnv, per_variation_table, variation_ids
from ding_lite.errors import ConfigError
from ding_lite.worker.episodes import run_episodes
from ding_lite.worker.evaluator import InteractionEvaluator

pytestmark = pytest.mark.unittest

MAZE = dict(type="maze", import_names=["dizoo.grid.maze.envs.maze_env"], num_levels=20, size=4, min_distance=3,
            wall_prob=0.3, shaping=0.1, max_episode_steps=6)


def _maze(**kw):
    import dizoo.grid.maze.envs.maze_env  # noqa: F401  registers 'maze'

    return {**MAZE, **kw}


def test_variation_ids_from_a_count_or_a_list() -> None:
    assert variation_ids(_maze()) is None
    assert variation_ids(_maze(variations=3)) == [0, 1, 2]
    assert variation_ids(_maze(variations=[4, 7])) == [4, 7]


@pytest.mark.parametrize("bad, words", [(20, "id 19 is out of range"), ([3, 25], "id 25 is out of range"),
                                        ([-1], "id -1 is out of range"), ([2, 2], "twice"), (0, "at least 1"),
                                        ("abc", "count or a list"), ([1.5], "int ids")])
def test_bad_variations_name_the_key(bad, words) -> None:
    cfg = _maze(variations=bad)
    if bad == 20:
        cfg["num_levels"] = 19
    with pytest.raises(ConfigError, match="env.variations") as err:
        variation_ids(cfg)
    assert words in str(err.value)


class _Echo(gym.Env):
    """Returns the variation it was reset with as its observation; episodes last one step."""

    observation_space = gym.spaces.Box(-1, 1000, (1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        self.v = options["variation"]
        return np.array([self.v], dtype=np.float32), {}

    def step(self, action):
        return np.array([self.v], dtype=np.float32), 1.0, True, False, {}


def test_env_i_of_n_plays_ids_i_plus_k_n_and_a_seeded_reset_restarts() -> None:
    env = VariationEnv(_Echo(), [10, 11, 12, 13, 14], slot=1, n_slots=2)
    seen = [env.reset(seed=0)[0][0]] + [env.reset()[0][0] for _ in range(4)]
    assert seen == [11, 13, 10, 12, 14]  # indices 1, 3, 5 % 5 = 0, 7 % 5 = 2, 9 % 5 = 4
    assert env.reset(seed=3)[0][0] == 11
    _, _, _, _, info = env.step(0)
    assert info["variation"] == 11


def test_per_variation_table_by_hand() -> None:
    table = per_variation_table([1, 0, 1, None], [1.0, 2.0, 3.0, 9.0], [True, None, False, True])
    assert table == {"0": {"return_mean": 2.0, "success_rate": None, "episodes": 1},
                     "1": {"return_mean": 2.0, "success_rate": 0.5, "episodes": 2}}


def test_evaluator_plays_every_variation_equally_and_reports_each() -> None:
    cfg = _maze(variations=[2, 5, 6, 9, 11])
    manager = build_env_manager(cfg, 3, seed=0)
    try:
        evaluator = InteractionEvaluator({}, manager, _RandomPolicy(), n_episode=10, seed=0)
        result = evaluator.eval()
    finally:
        manager.close()
    table = result.per_variation()
    assert sorted(table) == ["11", "2", "5", "6", "9"]
    assert all(row["episodes"] == 2 and row["success_rate"] is not None for row in table.values())
    assert np.isclose(np.mean(result.returns), np.mean([r["return_mean"] for r in table.values()]))


def test_envs_without_variations_report_no_table() -> None:
    manager = build_env_manager(_maze(), 2, seed=0)
    try:
        result = InteractionEvaluator({}, manager, _RandomPolicy(), n_episode=2, seed=0).eval()
    finally:
        manager.close()
    assert result.per_variation() == {}


class _RandomPolicy:
    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, env_ids=None) -> None:
        pass

    def forward(self, obs):
        return {"action": self.rng.integers(0, 4, len(obs))}

    def act(self, obs):
        return self.forward(obs)["action"]


def test_variations_reach_subprocess_workers() -> None:
    cfg = _maze(variations=[3, 8], manager=dict(type="subprocess"))
    manager = build_env_manager(cfg, 2, seed=0)
    try:
        result = InteractionEvaluator({}, manager, _RandomPolicy(), n_episode=4, seed=0).eval()
    finally:
        manager.close()
    assert {v: row["episodes"] for v, row in result.per_variation().items()} == {"3": 2, "8": 2}


def test_variations_with_a_manager_that_makes_its_own_envs_are_a_config_error() -> None:
    pytest.importorskip("envpool")
    cfg = dict(type="envpool", env_id="CartPole-v1", variations=2, manager=dict(type="envpool"))
    with pytest.raises(ConfigError, match="env.variations needs an env manager that builds its envs one by one"):
        build_env_manager(cfg, 2, seed=0)


@pytest.mark.parametrize("manager", ["base", "subprocess"])
def test_episodes_cut_at_the_step_cap_keep_their_variation(manager: str) -> None:
    """An episode cut at ``policy.eval.evaluator.max_episode_steps`` ends without the env's final info: it had no
    variation, so the per-variation table (result.json's eval_per_variation, GSL's choice of the worst variations)
    left it out: the long episodes, often the failures (all 10 here: the table was empty)."""
    cfg = _maze(variations=[2, 5, 6, 9, 11], manager=dict(type=manager), max_episode_steps=50)
    env = build_env_manager(cfg, 3, seed=0)
    try:
        cut = InteractionEvaluator(dict(max_episode_steps=2), env, _RandomPolicy(), n_episode=10, seed=0).eval()
        schedules = []
        for cap in (2, None):  # env i's k-th episode plays the same variation, cut or not
            env.seed(0)
            run = run_episodes(env, _RandomPolicy().act, 10, max_episode_steps=cap)
            schedules.append(sorted((e.env_id, k, e.info.get(VARIATION)) for k, e in enumerate(run.ends)))
    finally:
        env.close()
    assert cut.lengths.tolist() == [2] * 10  # every episode was cut
    counts = {v: row["episodes"] for v, row in cut.per_variation().items()}
    assert counts == dict.fromkeys(["2", "5", "6", "9", "11"], 2)
    assert [(i, v) for i, _, v in schedules[0]] == [(i, v) for i, _, v in schedules[1]]


class _GoalOrStall(gym.Env):
    """Variation 0 reaches its goal at the first step (success); variation 1 never ends (no success)."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(4)  # as _RandomPolicy acts

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.variation = int((options or {})[VARIATION])
        return np.zeros(1, np.float32), {}

    def step(self, action):
        goal = self.variation == 0
        return np.zeros(1, np.float32), float(goal), goal, False, {"success": goal}


def test_an_episode_cut_at_the_step_cap_counts_as_not_successful() -> None:
    """A cut episode has no final info of the env's, so no success flag: the success rate was that of the episodes
    that ended (a variation whose episodes all stalled had none, and GSL ranked it by return among success rates)."""
    from ding_lite.envs.env_manager import BaseEnvManager

    env = BaseEnvManager([lambda i=i: VariationEnv(_GoalOrStall(), [0, 1], slot=i, n_slots=2) for i in range(2)])
    env.follow_variations([0, 1])
    try:
        result = InteractionEvaluator(dict(max_episode_steps=3), env, _RandomPolicy(), n_episode=6, seed=0).eval()
    finally:
        env.close()
    table = result.per_variation()
    assert table["0"]["success_rate"] == 1.0 and table["1"]["success_rate"] == 0.0, table
    assert table["0"]["episodes"] + table["1"]["episodes"] == 6
    assert per_variation_table([0, 1], [1.0, 0.0], [None, None])["1"]["success_rate"] is None  # an env without flags

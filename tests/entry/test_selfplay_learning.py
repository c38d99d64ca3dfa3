"""Self-play learning (algotest): the snake-arena DQN learner against its own snapshot pool beats three random snakes
and three scripted snakes."""
from __future__ import annotations

import pytest
from conftest import REPO_ROOT

from ding_lite.entry.selfplay import selfplay_pipeline

pytestmark = pytest.mark.algotest
pytest.importorskip("pettingzoo")

SNAKE = str(REPO_ROOT / "dizoo" / "board_games" / "snake" / "config" / "snake_arena_dqn_config.py")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_snake_arena_learner_beats_random_and_heuristic_snakes(tmp_path, seed):
    result = selfplay_pipeline(SNAKE, seed=seed, max_env_step=10_000, exp_dir=tmp_path / "snake", progress=False,
                               overrides=("policy.eval.evaluator.eval_freq=100000", "env.n_evaluator_episode=64"))
    table = result["eval_table"]
    assert table["random"]["games"] == 64 and table["snake_heuristic"]["games"] == 64
    assert table["random"]["win"] >= 0.8, table
    assert table["snake_heuristic"]["win"] >= 0.5, table
    assert len(result["league"]["snapshots"]) >= 3  # the initial policy and the learner every 4000 env steps

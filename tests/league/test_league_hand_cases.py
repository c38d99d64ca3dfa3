"""The league against hand cases: evaluation win rates on every seat of a game whose seat 0 always wins, the payoff
of the training games against baselines, and the snapshot files a resume may fall back to."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ding_lite.build import load_config
from ding_lite.league.evaluator import seat_plans
from ding_lite.league.pool import OpponentPool
from ding_lite.runtime.selfplay import selfplay_parts
from ding_lite.worker.learner import BaseLearner

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")


def _cfg(seats, swap_seats=True, **league):
    return load_config(dict(
        env=dict(type="pettingzoo", import_path="fake_games:tag_game",
                 kwargs=dict(n_seats=len(seats), episode_len=2, winner=0),
                 collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=3),
        policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[8]), learn=dict(batch_size=4),
                    collect=dict(n_sample=4)),
        league=dict(seats=seats, swap_seats=swap_seats, strategy="latest", p_latest=0.0, snapshot_freq=10**9,
                    eval_opponents=["random"], eval_latest=0, **league),
    ))


@pytest.mark.parametrize("seats", [["learner", "pool"], ["pool", "learner"], ["pool", "learner", "pool"]])
def test_swapped_evaluation_plays_every_seat_whatever_seat_the_config_gives_the_learner(tmp_path, seats):
    # seat 0 always wins: the learner wins every game there and loses every game elsewhere. A config whose learner
    # was not in seat 0 got no plan at all: an evaluation of no games, its return nan
    with selfplay_parts(_cfg(seats), 0, tmp_path) as parts:
        parts.attach(BaseLearner(parts.cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn"), None)
        result = parts.evaluator.eval()
        table = parts.evaluator.table
    n = len(seats)
    assert set(table) == {f"random@seat{k}" for k in range(n)}
    assert table["random@seat0"] == dict(win=1.0, draw=0.0, loss=0.0, games=3.0, win_rate=1.0)
    for k in range(1, n):
        assert table[f"random@seat{k}"] == dict(win=0.0, draw=0.0, loss=1.0, games=3.0, win_rate=0.0)
    assert len(result.returns) == 3 * n and float(np.mean(result.returns)) == pytest.approx(1 / n)


def test_seat_plans_name_each_distinct_rotation_by_where_the_learner_sits():
    assert seat_plans(["pool", "learner"], "r", True) == {"r@seat1": ["r", "learner"], "r@seat0": ["learner", "r"]}
    two = seat_plans(["learner", "pool", "learner", "pool"], "r", True)  # two distinct rotations, not four
    assert two == {"r@seat0": ["learner", "r", "learner", "r"], "r@seat1": ["r", "learner", "r", "learner"]}
    assert seat_plans(["pool", "learner"], "r", False) == {"r": ["r", "learner"]}


@pytest.mark.parametrize("prior_games, decay, rate", [(0.0, 1.0, 1.0), (2.0, 1.0, 5 / 6), (2.0, 0.5, 2.875 / 3.875)])
def test_baseline_win_rates_take_the_league_prior(tmp_path, prior_games, decay, rate):
    # the learner in seat 0 wins all 4 games against the scripted seat: (4 + 0.5 * prior) / (4 + prior), with decay 0.5
    # (1.875 + 1) / (1.875 + 2). The baselines' table used 2 prior games and no decay whatever the league said
    cfg = _cfg(["learner", "random"], swap_seats=False, prior_games=prior_games, payoff_decay=decay)
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(parts.cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn"), None)
        parts.collector.inner.rollout(4)  # 2 games of 2 steps in each of 2 envs
        row = parts.game.stats()["league"]["baselines"]["random"]
    assert (row["wins"], row["games"]) == (4, 4)
    assert row["win_rate"] == pytest.approx(round(rate, 4))


def test_a_checkpoint_written_again_keeps_the_files_of_the_one_before(tmp_path):
    # the end of a run writes iteration_N again right after the periodic save of iteration_N; iteration_1, the
    # checkpoint a resume falls back to where iteration_2 does not load, still lists snapshot_10: its file stays.
    # Before, the second write took iteration_2 for its own predecessor and deleted it (--resume: "lists snapshot
    # file(s) that are missing")
    pool = OpponentPool(tmp_path, dict(capacity=2))
    pool.add({"w": torch.zeros(1)}, 0)
    pool.add({"w": torch.ones(1)}, 10)
    assert pool.checkpoint_state("iteration_1")["snapshots"] == ["snapshot_0", "snapshot_10"]
    pool.add({"w": torch.ones(1)}, 20)  # evicts snapshot_10
    pool.checkpoint_state("iteration_2")
    state = pool.checkpoint_state("iteration_2")
    assert state["snapshots"] == ["snapshot_0", "snapshot_20"]
    assert (tmp_path / "snapshot_10.pth.tar").is_file() and state["evicted"] == ["snapshot_10"]
    pool.checkpoint_state("iteration_3")  # now iteration_2 is the fallback, and it does not list snapshot_10
    assert not (tmp_path / "snapshot_10.pth.tar").exists()


def test_every_evaluation_of_the_same_weights_plays_the_same_games(tmp_path):
    # the envs were seeded anew at each evaluation, the scripted opponents not: the random player drew on, so the
    # same weights scored differently at every evaluation, and -m eval matched only the run's first evaluation
    pytest.importorskip("pettingzoo.classic")
    from ding_lite.build import build_env_manager
    from ding_lite.runtime.selfplay import checkpoint_evaluator
    from ding_lite.utils.seed import SeedPlan

    torch.manual_seed(0)
    cfg = load_config(dict(
        env=dict(type="pettingzoo", import_path="pettingzoo.classic.rps_v2:parallel_env", kwargs=dict(max_cycles=5),
                 collector_env_num=1, evaluator_env_num=2, n_evaluator_episode=6, manager=dict(type="base")),
        policy=dict(type="ppo", model=dict(encoder_hidden_size_list=[8])),
        league=dict(seats=["learner", "pool"], swap_seats=True, eval_opponents=["random"], eval_latest=0)))
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        parts.attach(BaseLearner(parts.cfg.policy.learn.learner, parts.policy, tmp_path, None, "ppo"), None)
        runs = [(parts.evaluator.eval().returns.tolist(), dict(parts.evaluator.table)) for _ in range(3)]
        alone = checkpoint_evaluator(parts.cfg, build_env_manager(parts.cfg.env, 2, SeedPlan(0).evaluator),
                                     parts.policy, SeedPlan(0), 6)
        try:
            runs.append((alone.eval().returns.tolist(), dict(alone.table)))
        finally:
            alone.close()
    assert all(run == runs[0] for run in runs[1:]), runs
    assert len(runs[0][0]) == 12 and set(runs[0][1]) == {"random@seat0", "random@seat1"}

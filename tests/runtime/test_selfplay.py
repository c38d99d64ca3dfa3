"""The self-play game of a run: what its league keeps across a resume."""
from __future__ import annotations

import pytest

from ding_lite.build import load_config
from ding_lite.runtime.selfplay import selfplay_parts
from ding_lite.worker.learner import BaseLearner

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")


def _cfg():
    return load_config(dict(
        env=dict(type="pettingzoo", import_path="fake_games:tag_game", kwargs=dict(n_seats=2, episode_len=3),
                 collector_env_num=1, evaluator_env_num=1, n_evaluator_episode=2, manager=dict(type="base")),
        policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[8]), collect=dict(n_sample=4)),
        league=dict(seats=["learner", "pool"], baselines=["random"], p_baseline=0.5, snapshot_freq=10**9)))


def _attached(parts, tmp_path):
    learner = BaseLearner(parts.cfg.policy.learn.learner, parts.policy, tmp_path, None, "dqn")
    parts.attach(learner, None)
    return learner


def test_a_resume_keeps_the_payoff_of_the_games_against_the_baselines(tmp_path):
    with selfplay_parts(_cfg(), 0, tmp_path) as parts:
        learner = _attached(parts, tmp_path)
        for score in (1.0, 1.0, 0.5, 0.0):
            parts.game.record_game({"random": score})
        parts.game.record_game({"snapshot_0": 1.0})
        ckpt = learner.save_checkpoint("iteration_7")
        before = parts.game.stats()["league"]
    assert before["baselines"]["random"]["games"] == 4
    with selfplay_parts(_cfg(), 0, tmp_path, resume_from=ckpt) as parts:
        _attached(parts, tmp_path)
        after = parts.game.stats()["league"]
    assert after["baselines"] == before["baselines"] and after["payoff"] == before["payoff"]

"""The self-play game of a run: what its league keeps across a resume."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ding_lite.build import load_config
from ding_lite.errors import ConfigError
from ding_lite.runtime.selfplay import resolve_selfplay_config, selfplay_parts
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


def test_a_resume_reads_its_checkpoint_once(tmp_path, monkeypatch):
    """``-m selfplay --resume`` reads the checkpoint it continues once, as the serial path does: the learner and the
    league both take its contents from start_run (the league read the file a second time)."""
    import torch

    from ding_lite.entry.selfplay import selfplay_pipeline
    from ding_lite.utils.checkpoint import latest_checkpoint

    cfg = dict(exp_name="tag", env=dict(type="pettingzoo", import_path="fake_games:tag_game",
                                        kwargs=dict(n_seats=2, episode_len=3), collector_env_num=1,
                                        evaluator_env_num=1, n_evaluator_episode=2, manager=dict(type="base")),
               policy=dict(type="dqn", model=dict(encoder_hidden_size_list=[8]), learn=dict(batch_size=4),
                           collect=dict(n_sample=4), eval=dict(evaluator=dict(eval_freq=5), final_episodes=0)),
               league=dict(seats=["learner", "pool"], snapshot_freq=8, eval_opponents=["random"]))
    exp = tmp_path / "tag"
    selfplay_pipeline(cfg, 0, max_train_iter=10, exp_dir=exp, progress=False)
    start = latest_checkpoint(exp / "ckpt")
    reads: list = []
    torch_load = torch.load

    def counted(path, *args, **kwargs):
        if not hasattr(path, "read"):  # a file, not the in-memory round trip of the policy's learn-state check
            reads.append(Path(path))
        return torch_load(path, *args, **kwargs)

    monkeypatch.setattr(torch, "load", counted)
    result = selfplay_pipeline(cfg, 0, max_train_iter=15, exp_dir=exp, resume=True, progress=False)
    assert result["train_iter"] == 15 and reads.count(start) == 1, reads


@pytest.mark.parametrize("key,value,message", [
    ("obs_shape", [], "policy.model.obs_shape=[] does not fit env 'pettingzoo', whose observations have shape"),
    ("action_shape", 7, "policy.model.action_shape=7 does not fit env 'pettingzoo', whose discrete action space has"),
])
def test_model_shapes_the_config_gives_must_fit_the_game(key: str, value, message: str) -> None:
    """Before, obs_shape=[] built a model of one input and the first forward was a torch traceback, after the run's
    folder was written (found by the config fuzzer)."""
    cfg = _cfg()
    cfg.policy.model[key] = value
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve_selfplay_config(cfg)


def _evaluator(cfg, n_episode: int = 4):
    from ding_lite.build import build, build_env_manager
    from ding_lite.runtime.selfplay import checkpoint_evaluator, resolve_selfplay_config
    from ding_lite.utils.seed import SeedPlan

    resolve_selfplay_config(cfg)
    env = build_env_manager(cfg.env, cfg.env.evaluator_env_num, SeedPlan(0).evaluator)
    policy = build(cfg, "policy", enable_field=("eval",))
    return checkpoint_evaluator(cfg, env, policy, SeedPlan(0), n_episode)


def test_a_checkpoint_is_evaluated_against_the_eval_opponents_without_a_run():
    """-m eval of a self-play config: before, it built the game as a single-agent env and was refused with 'env
    'pettingzoo' has the action space MultiDiscrete(...)'; the checkpoint now plays league.eval_opponents."""
    cfg = _cfg()
    cfg.league.eval_opponents = ["random"]
    evaluator = _evaluator(cfg)
    try:
        result = evaluator.eval()
    finally:
        evaluator.close()
    assert list(evaluator.table) == ["random"] and evaluator.table["random"]["games"] == 4
    assert len(result.returns) == 4 and 0.0 <= result.mean <= 1.0


def test_a_checkpoint_evaluation_without_eval_opponents_is_refused():
    from ding_lite.errors import ConfigError

    cfg = _cfg()
    cfg.league.eval_opponents = []
    with pytest.raises(ConfigError, match=r"league.eval_opponents is empty"):
        _evaluator(cfg)


def test_a_snapshot_is_added_once_snapshot_freq_env_steps_have_passed(tmp_path):
    # mutation audit: the snapshot schedule adds one at env step last_added + snapshot_freq, not one step later
    cfg = _cfg()
    cfg.league.snapshot_freq = 8
    with selfplay_parts(cfg, 0, tmp_path) as parts:
        _attached(parts, tmp_path)
        parts.game.after_collect(7)
        assert parts.game.pool.snapshots == ["snapshot_0"]
        parts.game.after_collect(8)
        assert parts.game.pool.snapshots == ["snapshot_0", "snapshot_8"]

"""The opponent pool: snapshot files, capacity and eviction, sampling, and restoring its state from the folder."""

import numpy as np
import pytest
import torch

from ding_lite.errors import CheckpointError, ConfigError
from ding_lite.league.pool import LEARNER, OpponentPool

pytestmark = pytest.mark.unittest


def _weights(value: float) -> dict:
    return {"w": torch.full((2,), value)}


def test_snapshots_are_files_and_eviction_keeps_the_initial_one(tmp_path):
    pool = OpponentPool(tmp_path, dict(capacity=3, strategy="latest"))
    for step in (0, 100, 200, 300):
        pool.add(_weights(step), step)
    assert pool.snapshots == ["snapshot_0", "snapshot_200", "snapshot_300"]  # snapshot_100 evicted
    pool.checkpoint_state("iteration_1")  # the first resumable checkpoint: no earlier one needs the evicted file
    assert not (tmp_path / "snapshot_100.pth.tar").exists()
    assert sorted(p.name for p in tmp_path.glob("*.pth.tar")) == ["snapshot_0.pth.tar", "snapshot_200.pth.tar",
                                                                 "snapshot_300.pth.tar"]
    assert torch.equal(pool.load_weights("snapshot_200")["w"], torch.full((2,), 200.0))
    assert pool.sample() == "snapshot_300"
    no_keep = OpponentPool(tmp_path / "b", dict(capacity=2, keep_initial=False))
    for step in (0, 1, 2):
        no_keep.add(_weights(step), step)
    assert no_keep.snapshots == ["snapshot_1", "snapshot_2"]


def test_pfsp_sampling_follows_the_payoff_table(tmp_path):
    pool = OpponentPool(tmp_path, dict(strategy="pfsp", p_latest=0.0, prior_games=0), seed=3)
    pool.add(_weights(0), 0)
    pool.add(_weights(1), 10)
    for _ in range(4):
        pool.record("snapshot_0", 1.0)  # always beaten: PFSP weight (1 - 1)^2 = 0
    pool.record("snapshot_10", 0.0)
    assert pool.probs() == pytest.approx([0.0, 1.0])
    assert {pool.sample() for _ in range(20)} == {"snapshot_10"}
    assert pool.elo.rating("snapshot_0") == 1000.0  # the initial snapshot anchors the scale
    assert pool.elo.rating(LEARNER) > 1000.0


def test_the_state_restores_the_pool(tmp_path):
    pool = OpponentPool(tmp_path, dict(capacity=4), seed=1)
    pool.add(_weights(0), 0)
    pool.add(_weights(1), 50)
    pool.record("snapshot_50", 0.5)
    pool.record("snapshot_0", 1.0)
    state = pool.checkpoint_state("iteration_10")
    torch.save(state, tmp_path / "state.pt")  # what a learner checkpoint holds must load weights-only
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    again = OpponentPool(tmp_path, dict(capacity=4), seed=99)
    again.load_state_dict(state)
    assert again.snapshots == pool.snapshots
    assert again.summary() == pool.summary()
    assert [again.sample() for _ in range(10)] == [pool.sample() for _ in range(10)]  # same sampling stream
    (tmp_path / "snapshot_50.pth.tar").unlink()
    with pytest.raises(CheckpointError, match="snapshot_50.pth.tar"):
        OpponentPool(tmp_path, {}).load_state_dict(state, "ckpt/iteration_10.pth.tar")


def test_evicted_files_live_while_a_resumable_checkpoint_lists_them(tmp_path):
    pool = OpponentPool(tmp_path, dict(capacity=2, keep_initial=False))
    pool.add(_weights(0), 0)
    pool.add(_weights(1), 1)
    first = pool.checkpoint_state("resume_5")  # lists snapshot_0 and snapshot_1
    pool.add(_weights(2), 2)  # evicts snapshot_0
    assert pool.snapshots == ["snapshot_1", "snapshot_2"] and (tmp_path / "snapshot_0.pth.tar").is_file()
    pool.checkpoint_state("ckpt_best")  # never resumed from: deletes nothing
    assert (tmp_path / "snapshot_0.pth.tar").is_file()
    pool.checkpoint_state("iteration_8")  # resume_5 may still be the newest one written: keep its files
    assert (tmp_path / "snapshot_0.pth.tar").is_file()
    pool.checkpoint_state("resume_9")  # now iteration_8 or resume_9 is the newest; neither lists snapshot_0
    assert not (tmp_path / "snapshot_0.pth.tar").exists()
    OpponentPool(tmp_path, dict(capacity=2)).load_state_dict(pool.state_dict())
    with pytest.raises(CheckpointError, match="snapshot_0"):
        OpponentPool(tmp_path, {}).load_state_dict(first)
    # files of snapshots the restored state does not know (written after its checkpoint) are strays
    (tmp_path / "snapshot_7.pth.tar").write_bytes(b"")
    restored = OpponentPool(tmp_path, dict(capacity=2))
    restored.load_state_dict(pool.state_dict())
    assert restored.remove_strays() == ["snapshot_7.pth.tar"]
    assert sorted(p.name for p in tmp_path.glob("snapshot_*")) == ["snapshot_1.pth.tar", "snapshot_2.pth.tar"]


def test_games_against_an_evicted_snapshot_are_not_counted(tmp_path):
    pool = OpponentPool(tmp_path, dict(capacity=1, keep_initial=False))
    pool.add(_weights(0), 0)
    pool.add(_weights(1), 1)
    pool.record("snapshot_0", 1.0)
    assert pool.payoff.counts == {}
    assert np.isclose(pool.elo.rating(LEARNER), 1000.0)


def test_a_share_of_pool_draws_goes_to_the_baselines(tmp_path):
    pool = OpponentPool(tmp_path, dict(strategy="uniform", p_latest=0.5, baselines=["random", "heuristic"],
                                       p_baseline=0.4), seed=0)
    pool.add(_weights(0), 0)
    pool.add(_weights(1), 10)
    names, probs = pool.candidates()
    assert names == ["snapshot_0", "snapshot_10", "random", "heuristic"]
    # snapshots: 0.6 * (0.5 * [0.5, 0.5] + 0.5 * [0, 1]) = [0.15, 0.45]; baselines: 0.4 / 2 each
    assert probs == pytest.approx([0.15, 0.45, 0.2, 0.2])
    draws = [pool.sample() for _ in range(4000)]
    assert draws.count("random") / 4000 == pytest.approx(0.2, abs=0.03)
    assert draws.count("snapshot_0") / 4000 == pytest.approx(0.15, abs=0.03)
    none = OpponentPool(tmp_path / "b", dict(strategy="latest", baselines=["random"], p_baseline=0.0))
    none.add(_weights(0), 0)
    assert none.candidates()[1] == pytest.approx([1.0, 0.0])


def test_bad_pool_settings(tmp_path):
    with pytest.raises(ConfigError, match="league.strategy"):
        OpponentPool(tmp_path, dict(strategy="best"))
    with pytest.raises(ConfigError, match="league.capacity"):
        OpponentPool(tmp_path, dict(capacity=0))
    # before, checked at the first pfsp draw, after the run's folder was written (found by the config fuzzer)
    with pytest.raises(ConfigError, match="unknown league.pfsp_weighting 'cubic': use one of squared, variance"):
        OpponentPool(tmp_path, dict(pfsp_weighting="cubic"))
    with pytest.raises(ConfigError, match="league.p_baseline"):
        OpponentPool(tmp_path, dict(baselines=["random"], p_baseline=1.5))
    with pytest.raises(ConfigError, match="league.baselines is empty"):
        OpponentPool(tmp_path, dict(p_baseline=0.3))
    with pytest.raises(ConfigError, match="league.payoff_decay"):
        OpponentPool(tmp_path, dict(payoff_decay=0.0))


def test_a_restored_pool_keeps_the_evicted_files_its_fallback_checkpoint_needs(tmp_path):
    # capacity 1: snapshot_0 is evicted by snapshot_100 after resume_1 listed it; resume_2 keeps its file (a resume
    # that cannot read resume_2 goes on from resume_1). The pool restored from resume_2 knows that file: its stray
    # sweep (files written after the checkpoint) leaves it
    pool = OpponentPool(tmp_path, dict(capacity=1, keep_initial=False))
    pool.add(_weights(0), 0)
    pool.checkpoint_state("resume_1")
    pool.add(_weights(1), 100)
    state = pool.checkpoint_state("resume_2")
    assert state["evicted"] == ["snapshot_0"]
    restored = OpponentPool(tmp_path, dict(capacity=1, keep_initial=False))
    restored.load_state_dict(state)
    assert restored.remove_strays() == [] and (tmp_path / "snapshot_0.pth.tar").is_file()


def test_the_summary_rates_the_learner_before_any_game_against_the_pool(tmp_path):
    """With every game against scripted baselines (league.p_baseline=1) the learner played no snapshot: result.json's
    Elo table had the snapshots and no learner row."""
    pool = OpponentPool(tmp_path, dict(capacity=3))
    pool.add(_weights(0.0), 0)
    assert pool.summary()["elo"][LEARNER] == pool.elo.rating(LEARNER)
    pool.record("snapshot_0", 1.0)
    assert pool.summary()["elo"][LEARNER] > pool.summary()["elo"]["snapshot_0"]

"""The learner (ding_lite/worker/learner.py): one train iteration per gradient step, as DI-engine counts them."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ding_lite.build import build
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, ADV, LOGP, OBS, RETURN, VALUE
from ding_lite.utils.checkpoint import load_checkpoint
from ding_lite.utils.log import ExperimentLogger
from ding_lite.worker.learner import BaseLearner, as_log_list, mean_log

pytestmark = pytest.mark.unittest


def _ppo(epoch_per_collect: int, batch_size: int, **hook):
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type="ppo", model=dict(obs_shape=4, action_shape=2, action_space="discrete"),
                                          learn=dict(epoch_per_collect=epoch_per_collect, batch_size=batch_size,
                                                     learner=dict(hook=hook)))))
    return cfg, build(cfg, "policy")


def _batch(n: int) -> dict:
    rng = np.random.default_rng(0)
    return {OBS: rng.normal(size=(n, 4)).astype(np.float32), ACTION: rng.integers(0, 2, n),
            LOGP: np.full(n, np.log(0.5), np.float32), VALUE: np.zeros(n, np.float32),
            ADV: rng.normal(size=n).astype(np.float32), RETURN: rng.normal(size=n).astype(np.float32)}


def test_ppo_collect_advances_one_iteration_per_gradient_step(tmp_path: Path) -> None:
    # DI-engine's CartPole PPO: epoch_per_collect=2, n_sample=256, batch_size=64 -> 2 * 4 = 8 iterations per collect
    cfg, policy = _ppo(2, 64, save_ckpt_after_iter=3, log_show_after_iter=0, save_ckpt_after_run=False)
    learner = BaseLearner(cfg.policy.learn.learner, policy, tmp_path)
    logs = learner.train(_batch(256), env_step=256)
    assert len(logs) == 8 and learner.train_iter == 8
    learner.train(_batch(256), env_step=512)
    assert learner.train_iter == 16
    # after_iter hooks run once per iteration; a checkpoint due within a collect's 8 steps (3, 6; 9, 12, 15) is
    # written at their end, with the weights it holds (tests/runtime/test_resume_updates.py)
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == \
        [f"iteration_{k}.pth.tar" for k in (16, 8)]


class _DictPolicy:
    """A custom policy whose learn forward returns one dict (one gradient step), as DI-engine's DQN does."""

    class learn_mode:  # noqa: N801 (stands for the mode tuple)
        forward = staticmethod(lambda batch: {"loss": torch.tensor(1.0)})
        state_dict = staticmethod(lambda: {})


def test_a_single_dict_counts_as_one_iteration() -> None:
    learner = BaseLearner({"hook": {}}, _DictPolicy())
    learner.train({}, env_step=8)
    learner.train({}, env_step=16)
    assert learner.train_iter == 2


def test_log_helpers() -> None:
    assert as_log_list({"a": 1}) == [{"a": 1}]
    with pytest.raises(ValueError, match="empty list"):
        as_log_list([])
    mean = mean_log([{"a": torch.tensor(1.0), "b": 2.0}, {"a": torch.tensor(3.0)}])
    assert mean["a"].item() == 2.0 and mean["b"].item() == 2.0


def test_learn_scalars_are_logged_at_each_evaluation_whatever_the_log_interval(tmp_path: Path) -> None:
    from ding_lite.entry.serial import serial_pipeline

    config = str(Path(__file__).resolve().parents[2] / "dizoo/classic_control/cartpole/config/cartpole_ppo_config.py")
    serial_pipeline(config, seed=0, max_env_step=768, exp_dir=tmp_path / "exp", progress=False,
                    overrides=("policy.learn.learner.hook.log_show_after_iter=1000000", "env.stop_value=None",
                               "policy.eval.evaluator.eval_freq=40", "env.n_evaluator_episode=1",
                               "env.evaluator_env_num=1", "policy.learn.epoch_per_collect=1"))
    lines = (tmp_path / "exp" / "log" / "train.log").read_text().splitlines()
    evals = [i for i, line in enumerate(lines) if line.startswith("[eval]")]
    learns = [i for i, line in enumerate(lines) if line.startswith("[learn]")]
    # 3 collects of 4 iterations, an evaluation every 40: evaluations at iteration 0 and at the end (12); the last
    # one logs the learn scalars of iteration 12 just before it
    assert len(evals) == 2 and len(learns) == 1 and learns[0] == evals[1] - 1, lines
    assert "policy_loss=" in lines[learns[0]]


def test_progress_bar_stays_within_its_total(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    logger = ExperimentLogger(None, progress_total=1000, progress=True)
    try:
        assert logger._bar is not None
        for step in (256, 512, 768, 1024):  # the last collect overshoots the budget
            logger.progress(step)
            assert logger._bar.n <= 1000
        assert logger._bar.n == 1000
    finally:
        logger.close()


def test_resume_checkpoints_by_wall_time_at_evaluations_rotated(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import ding_lite.worker.learner_hooks as hooks_module
    from ding_lite.utils.checkpoint import latest_checkpoint

    clock = [0.0]
    monkeypatch.setattr(hooks_module.time, "monotonic", lambda: clock[0])
    cfg, policy = _ppo(1, 64, save_ckpt_after_iter=0, log_show_after_iter=0, save_ckpt_after_run=False,
                       save_resume_ckpt=dict(every_seconds=100.0, at_eval_after_seconds=10.0, keep=2))
    learner = BaseLearner(cfg.policy.learn.learner, policy, tmp_path)
    ckpts = lambda: sorted(p.name for p in (tmp_path / "ckpt").glob("*"))  # noqa: E731
    learner.train(_batch(64), env_step=64)  # iteration 1
    learner.call_hooks("after_eval")
    assert not (tmp_path / "ckpt").exists()  # too early: bounded cost
    clock[0] = 11.0
    learner.call_hooks("after_eval")
    assert ckpts() == ["resume_1.pth.tar"]
    clock[0] = 50.0
    learner.train(_batch(64), env_step=128)  # not yet 100 s since the last: no write after an iteration
    assert ckpts() == ["resume_1.pth.tar"]
    clock[0] = 112.0
    learner.train(_batch(64), env_step=192)  # iteration 3, 101 s later
    clock[0] = 130.0
    learner.train(_batch(64), env_step=256)
    learner.call_hooks("after_eval")  # iteration 4, 18 s later
    assert ckpts() == ["resume_3.pth.tar", "resume_4.pth.tar"]  # the newest two kept
    assert latest_checkpoint(tmp_path / "ckpt").name == "resume_4.pth.tar"  # what --resume continues from


def test_resume_checkpoints_left_one_too_many_by_a_kill_are_pruned_at_the_first_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run killed after writing resume_3 but before deleting resume_1 leaves three; the run resumed from resume_3
    rewrites resume_3 first, and that write prunes the oldest (it used to return before pruning: a flake of the GSL
    kill-and-resume test under load)."""
    import ding_lite.worker.learner_hooks as hooks_module

    clock = [0.0]
    monkeypatch.setattr(hooks_module.time, "monotonic", lambda: clock[0])
    cfg, policy = _ppo(1, 64, save_ckpt_after_iter=0, log_show_after_iter=0, save_ckpt_after_run=False,
                       save_resume_ckpt=dict(every_seconds=100.0, at_eval_after_seconds=0.0, keep=2))
    learner = BaseLearner(cfg.policy.learn.learner, policy, tmp_path)
    for _ in range(3):
        learner.train(_batch(64), env_step=64)
    (tmp_path / "ckpt").mkdir()
    for n in (1, 2, 3):  # what the killed run left
        learner.save_checkpoint(f"resume_{n}")
    learner.call_hooks("after_eval")  # iteration 3 again: rewrites resume_3
    assert sorted(p.name for p in (tmp_path / "ckpt").glob("*")) == ["resume_2.pth.tar", "resume_3.pth.tar"]


class _LossPolicy:
    """A learn mode whose forward returns the given log dicts."""

    def __init__(self, logs: list[dict]) -> None:
        self.learn_mode = self
        self.logs = logs

    def forward(self, batch: dict) -> list[dict]:
        return self.logs


def test_a_loss_that_is_not_finite_stops_training_naming_the_loss_and_the_iteration() -> None:
    """Before, a diverged network trained on in silence: DQN's argmax over NaN Q-values still returns action 0, so the
    run went on to its budget with NaN weights (at a learning rate of 1e12 on CartPole, from its second update)."""
    from ding_lite.errors import DivergedError

    ok = {"loss": torch.tensor(0.5), "q_mean": torch.tensor(float("nan"))}  # only losses are checked
    learner = BaseLearner({"hook": {"save_ckpt_after_run": False}}, _LossPolicy([ok, ok]))
    learner.train({OBS: np.zeros((4, 1))}, env_step=64)
    bad = {"critic_loss": torch.tensor(1.0), "actor_loss": torch.tensor(float("-inf"))}
    learner.policy = _LossPolicy([ok, bad])
    with pytest.raises(DivergedError, match=r"training diverged at train iter 4 \(env step 96\): actor_loss is -inf; "
                                            r"lower the learning rate"):
        learner.train({OBS: np.zeros((4, 1))}, env_step=96)
    assert learner.train_iter == 3  # the diverged step's hooks did not run: no checkpoint of NaN weights


def test_a_gpus_losses_are_checked_in_groups_naming_the_exact_update(monkeypatch) -> None:
    """On a GPU each check would wait for its queue: losses there are checked every 100 updates, and before any
    checkpoint and at the run's end, still naming the update whose loss went bad."""
    from ding_lite.errors import DivergedError
    from ding_lite.worker import learner as learner_module

    monkeypatch.setattr(learner_module, "on_accelerator", lambda value: isinstance(value, torch.Tensor))
    logs = [{"loss": torch.tensor(1.0)}] * 40 + [{"loss": torch.tensor(float("nan"))}] + [{"loss": torch.tensor(1.0)}]
    learner = BaseLearner({"hook": {"save_ckpt_after_run": False}}, _LossPolicy(logs))
    learner.train({OBS: np.zeros((4, 1))}, env_step=64)  # 42 updates: not checked yet
    assert learner.train_iter == 42
    with pytest.raises(DivergedError, match=r"train iter 41 \(env step 64\): loss is nan"):
        learner.checkpoint_state()
    two_losses = {"critic_loss": torch.tensor(1.0), "actor_loss": torch.tensor(2.0)}
    learner.policy = _LossPolicy([two_losses] * 120)
    learner.train({OBS: np.zeros((4, 1))}, env_step=128)  # 120 finite updates: checked at the 100th, 20 kept
    assert learner.loss_check.updates_pending == 20 and len(learner.loss_check.pending) == 40
    learner.loss_check.pending[-1] = (1, 2, "critic_loss", torch.tensor(float("inf")))
    with pytest.raises(DivergedError, match=r"train iter 1 \(env step 2\): critic_loss is inf"):
        learner.call_hooks("after_run")


def test_a_run_that_ends_before_its_first_update_writes_a_final_checkpoint_at_its_env_step(tmp_path: Path) -> None:
    """Before, the final checkpoint needed an update: an off-policy run whose budget ran out before learning_starts
    (ACER, SAC, DQN on a few hundred env steps) left no iteration_N, and --resume of it was refused."""
    learner = BaseLearner({"hook": {"save_ckpt_after_run": True}}, _DictPolicy(), tmp_path)
    learner.end_run(env_step=256)
    state = load_checkpoint(tmp_path / "ckpt" / "iteration_0.pth.tar")
    assert (state["train_iter"], state["env_step"]) == (0, 256)


def test_a_run_that_did_nothing_writes_no_final_checkpoint(tmp_path: Path) -> None:
    learner = BaseLearner({"hook": {"save_ckpt_after_run": True}}, _DictPolicy(), tmp_path)
    learner.end_run(env_step=0)
    assert not (tmp_path / "ckpt").exists() or not list((tmp_path / "ckpt").iterdir())


def test_the_final_checkpoint_records_the_collects_after_the_last_update(tmp_path: Path) -> None:
    learner = BaseLearner({"hook": {"save_ckpt_after_run": True}}, _DictPolicy(), tmp_path)
    learner.train({}, env_step=64)
    learner.end_run(env_step=72)  # one more collect, no update due
    assert learner.env_step == 72
    assert load_checkpoint(tmp_path / "ckpt" / "iteration_1.pth.tar")["env_step"] == 72


def test_keep_iteration_ckpt_bounds_the_periodic_checkpoints_on_disk(tmp_path: Path) -> None:
    """Before, every ckpt/iteration_N.pth.tar was kept for ever and there was no setting to bound them: a 10M-step
    HalfCheetah SAC run (3.2 MB each, one per 10,000 updates) writes 1,000 of them (3.2 GB), Pong DQN 104 of 27 MB.
    With keep_iteration_ckpt=2 only the newest two stay; ckpt_best, resume_N and those of a larger N are kept."""
    from ding_lite.utils.checkpoint import latest_checkpoint

    learner = BaseLearner({"hook": {"save_ckpt_after_iter": 1, "keep_iteration_ckpt": 2}}, _DictPolicy(), tmp_path)
    (tmp_path / "ckpt").mkdir()
    learner.save_checkpoint("iteration_99")  # of a later span, left by a run resumed from an earlier checkpoint
    learner.save_checkpoint("resume_1")
    for k in range(1, 6):
        learner.train({}, env_step=8 * k)
    learner.save_checkpoint("ckpt_best")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == \
        ["ckpt_best.pth.tar", "iteration_4.pth.tar", "iteration_5.pth.tar", "iteration_99.pth.tar",
         "resume_1.pth.tar"]
    (tmp_path / "ckpt" / "iteration_99.pth.tar").unlink()
    assert latest_checkpoint(tmp_path / "ckpt").name == "iteration_5.pth.tar"  # what --resume continues from


def test_iteration_checkpoints_are_all_kept_by_default_as_in_di_engine(tmp_path: Path) -> None:
    learner = BaseLearner({"hook": {"save_ckpt_after_iter": 1, "keep_iteration_ckpt": 0}}, _DictPolicy(), tmp_path)
    for k in range(1, 4):
        learner.train({}, env_step=8 * k)
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [f"iteration_{k}.pth.tar" for k in (1, 2, 3)]


@pytest.mark.parametrize("keep", [-1, 1.5, True, "2"])
def test_a_bad_keep_iteration_ckpt_is_a_config_error_naming_the_key(keep) -> None:
    from ding_lite.errors import ConfigError

    with pytest.raises(ConfigError, match="policy.learn.learner.hook.keep_iteration_ckpt"):
        BaseLearner({"hook": {"keep_iteration_ckpt": keep}}, _DictPolicy())


def test_a_diverged_loss_names_the_updates_other_scalars_that_are_not_finite() -> None:
    """SAC at learning_rate_alpha=1e6 on Pendulum: critic_loss went inf at train iter 119, named alone, although the
    temperature (alpha, inf) was the cause: the update's other non-finite scalars are hints to it."""
    from ding_lite.errors import DivergedError

    bad = {"critic_loss": torch.tensor(float("inf")), "q_mean": torch.tensor(1.0), "alpha": torch.tensor(float("inf"))}
    learner = BaseLearner({"hook": {"save_ckpt_after_run": False}}, _LossPolicy([bad]))
    with pytest.raises(DivergedError, match=r"critic_loss is inf \(alpha is not finite either\); lower the"):
        learner.train({OBS: np.zeros((4, 1))}, env_step=64)


def test_a_loaded_checkpoint_restores_the_counters_and_the_best_return(tmp_path: Path) -> None:
    # mutation audit: train_iter, env_step and best_eval_return each come back from their own key
    class policy:  # noqa: N801
        class learn_mode(_DictPolicy.learn_mode):  # noqa: N801
            load_state_dict = staticmethod(lambda state: None)

    learner = BaseLearner({"hook": {}}, policy(), tmp_path)
    learner.train({}, env_step=64)
    learner.end_run(env_step=72)
    learner.record_best_return(12.5)
    path = learner.save_checkpoint("iteration_1")
    resumed = BaseLearner({"hook": {}}, policy(), tmp_path / "b")
    resumed.load_checkpoint(path)
    assert (resumed.train_iter, resumed.env_step, resumed.best_eval_return) == (1, 72, 12.5)

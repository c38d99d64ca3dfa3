"""The run around the train loop (ding_lite/runtime/run_start.py, train_loop.py): budgets checked first, the saved
config of a folder read as data only, every env worker restart of the run counted."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.entry.serial import serial_pipeline
from ding_lite.errors import ConfigError
from ding_lite.runtime.parts import RunParts

pytestmark = pytest.mark.unittest

DQN = str(DIZOO_CARTPOLE / "cartpole_dqn_config.py")


@pytest.mark.parametrize("budget,message", [
    (dict(max_env_step=-5), "max_env_step must be a positive int or None (unbounded), got -5"),
    (dict(max_train_iter=0), "max_train_iter must be a positive int or None (unbounded), got 0"),
    (dict(max_train_iter=2.5), "max_train_iter must be a positive int or None (unbounded), got 2.5"),
])
def test_a_budget_below_one_is_refused_before_anything_is_written(tmp_path: Path, budget, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        serial_pipeline(DQN, exp_dir=tmp_path / "exp", progress=False, **budget)
    assert list(tmp_path.iterdir()) == []


def test_resume_reads_the_saved_config_as_data_and_never_runs_it(tmp_path: Path) -> None:
    """A copied or downloaded experiment folder runs no code: --resume compares with its total_config.py as data."""
    exp = tmp_path / "exp"
    exp.mkdir()
    marker = tmp_path / "it_ran"
    (exp / "total_config.py").write_text(f"open({str(marker)!r}, 'w').close()\nmain_config = dict(seed=0)\n")
    with pytest.raises(ConfigError, match=r"--resume: .*total_config.py is not a config that ding_lite saved: its "
                                          r"main_config is not plain data"):
        serial_pipeline(DQN, seed=0, exp_dir=exp, resume=True, progress=False)
    assert not marker.exists()
    assert sorted(p.name for p in exp.iterdir()) == ["total_config.py"]  # the lock file went with the refusal


def test_restarts_during_the_final_evaluation_count_in_the_result(tmp_path: Path, monkeypatch) -> None:
    """result.json's env_restarts is read after the final evaluation (whose env workers may restart too)."""
    restarts = {"collector": 1, "evaluator": 0}
    final_eval = RunParts.final_eval

    def final_eval_with_two_restarts(self, *args):
        out = final_eval(self, *args)
        restarts["evaluator"] = 2  # two of the evaluator's workers restarted during the final evaluation
        return out

    monkeypatch.setattr(RunParts, "final_eval", final_eval_with_two_restarts)
    monkeypatch.setattr(RunParts, "env_restarts", lambda self: dict(restarts))
    result = serial_pipeline(DQN, seed=0, max_train_iter=5, exp_dir=tmp_path / "exp", progress=False,
                             overrides=("env.stop_value=100000", "policy.eval.final_episodes=1"))
    assert result["env_restarts"] == 3 and result["env_restart_rate"] == round(3000 / result["env_step"], 4)


def test_start_run_resolves_the_config_once_and_freezes_it(tmp_path: Path) -> None:
    """Everything the parts read is settled before any part is built: the model shapes from the env (CartPole: 4
    numbers, 2 actions), exp_name the claimed folder; a write afterwards names the key."""
    from ding_lite.config.frozen import FrozenConfigError, is_frozen
    from ding_lite.runtime.run_start import RunOptions, start_run

    with start_run(DQN, RunOptions(seed=3, exp_dir=tmp_path / "exp")) as run:
        cfg = run.cfg
        assert is_frozen(cfg) and is_frozen(cfg.policy.model)
        assert (cfg.policy.model.obs_shape, cfg.policy.model.action_shape) == (4, 2)
        assert cfg.exp_name == str(tmp_path / "exp") and cfg.seed == 3
        with pytest.raises(FrozenConfigError, match="env.n_evaluator_episode = 1"):
            cfg.env.n_evaluator_episode = 1
    with pytest.raises(ConfigError, match="obs_shape=3 does not fit env"):  # resolved before the folder is claimed
        start_run(DQN, RunOptions(exp_dir=tmp_path / "bad", overrides=("policy.model.obs_shape=3",)))
    assert not (tmp_path / "bad").exists()


def test_ctrl_c_in_the_final_evaluation_names_the_checkpoint_to_resume_from(tmp_path: Path, monkeypatch) -> None:
    """The training is over and its last checkpoint written when the final evaluation runs: Ctrl-C there says so,
    as a stop in the loop does (before: a bare 'ding_lite: interrupted', no word of the checkpoint or --resume)."""
    from ding_lite.errors import Interrupted

    def interrupted(self, *args):
        raise KeyboardInterrupt

    monkeypatch.setattr(RunParts, "final_eval", interrupted)
    exp = tmp_path / "exp"
    with pytest.raises(Interrupted, match=r"stopped by SIGINT in the final evaluation, after the training "
                                          r"\(env_step \d+, train_iter 5\); checkpoint .*iteration_5.pth.tar: "
                                          r"--resume runs the final evaluation again"):
        serial_pipeline(DQN, seed=0, max_train_iter=5, exp_dir=exp, progress=False)
    assert (exp / "ckpt" / "iteration_5.pth.tar").is_file() and not (exp / "result.json").exists()
    assert "[stop] stopped by SIGINT in the final evaluation" in (exp / "log" / "train.log").read_text()


def test_a_resumed_start_takes_the_checkpoints_best_return_and_counters(tmp_path: Path) -> None:
    """Mutation audit: the evaluator of a resumed run starts from the checkpoint's best eval return (so ckpt_best is
    replaced only by a better policy), and its seeds from the checkpoint's (train_iter, env_step)."""
    from ding_lite.runtime.run_start import RunOptions, start_run
    from ding_lite.utils.checkpoint import save_checkpoint
    from ding_lite.utils.seed import SeedPlan

    save_checkpoint(tmp_path / "exp" / "ckpt" / "iteration_40.pth.tar",
                    {"policy": {}, "train_iter": 40, "env_step": 400, "best_eval_return": 7.5})
    with start_run(DQN, RunOptions(seed=3, exp_dir=tmp_path / "exp", resume=True)) as run:
        assert run.best_return == 7.5 and run.ckpt_path == tmp_path / "exp" / "ckpt" / "iteration_40.pth.tar"
        assert run.seeds == SeedPlan(3, (40, 400))

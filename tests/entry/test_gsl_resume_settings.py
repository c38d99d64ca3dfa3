"""GSL across phases: a resumed run whose settings differ from those its finished phases ran with is refused in one line
(before, the finished phases were kept and the new values silently ignored), and phase II's start checkpoint keeps
the generalist's value-normalisation statistics (before, only the weights crossed to PPO-DAPG)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import run_cli

from ding_lite.build import build, fill_model_shapes_from_env
from ding_lite.config import read_config
from ding_lite.config.compile import compile_config
from ding_lite.errors import ConfigError
from ding_lite.gsl.phases import phase1_config, phase2_config, start_checkpoint
from ding_lite.gsl.plateau import DEMOS, PHASE1, PHASE2
from ding_lite.gsl.state import GslState, gsl_settings
from ding_lite.utils.checkpoint import load_checkpoint, save_checkpoint

pytestmark = pytest.mark.unittest

TINY = """
main_config = dict(
    exp_name="gsl_exp",
    env=dict(type="maze", import_names=["dizoo.grid.maze.envs.maze_env"], num_levels=20, variations=6, size=4,
             min_distance=3, max_episode_steps=12, collector_env_num=4, evaluator_env_num=3, n_evaluator_episode=6,
             stop_value=10),
    policy=dict(type="ppo", model=dict(encoder_hidden_size_list=[32]),
                learn=dict(epoch_per_collect=2, batch_size=128, learning_rate=3e-3, entropy_weight=0.01),
                collect=dict(n_sample=256, discount_factor=0.95), eval=dict(evaluator=dict(eval_freq=8))),
    gsl=dict(phase1_max_env_step=1500, n_low=4, n_specialists=2, specialist_max_env_step=1000,
             demo_episodes_per_variation=2, phase2_max_env_step=1000, use_ray=False),
)
"""


def _config(folder: Path) -> str:
    (folder / "gsl_tiny.py").write_text(TINY)
    return "gsl_tiny.py"


def _compiled(tmp_path: Path, **learn: object) -> object:
    main, create = read_config(tmp_path / _config(tmp_path))
    main["policy"]["learn"].update(learn)
    cfg = compile_config(main, create)
    fill_model_shapes_from_env(cfg)  # as -m gsl does before any phase
    return cfg


def _finished(cfg: object, ids: list[int]) -> GslState:
    state = GslState(ids, 0, settings=gsl_settings(cfg))
    for phase in (PHASE1, "specialist_0", "specialist_1", DEMOS, PHASE2):
        state.mark(phase)
    return state


def test_a_finished_run_resumed_with_a_larger_budget_is_refused_in_one_line(tmp_path: Path) -> None:
    cfg = _compiled(tmp_path)
    exp = tmp_path / "gsl_exp"
    exp.mkdir()
    (exp / "result.json").write_text(json.dumps(_finished(cfg, list(range(6))).to_json()))
    before = sorted(p.name for p in exp.iterdir())
    proc = run_cli("-m", "gsl", "-c", "gsl_tiny.py", "--no-progress", "--resume", "--set",
                   "gsl.phase2_max_env_step=2000", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "gsl.phase2_max_env_step=2000" in lines[0] and "1000" in lines[0], proc.stderr
    assert "phase2_generalist" in lines[0] and "another --exp-name" in lines[0]
    assert sorted(p.name for p in exp.iterdir()) == before  # nothing written


def test_changed_settings_are_checked_only_against_finished_phases(tmp_path: Path) -> None:
    cfg = _compiled(tmp_path)
    ids = list(range(6))
    state = GslState(ids, 0, settings=gsl_settings(cfg))
    state.mark(PHASE1)
    state.specialist_subsets = [[0, 2], [1, 3]]
    later = {**gsl_settings(cfg), "phase2_max_env_step": 5000, "specialist_max_env_step": 9, "use_ray": True}
    state.check_resume(tmp_path, ids, later)  # phase II and the specialists have not run yet: their budgets may change
    for key, value in (("phase1_max_env_step", 7), ("plateau_tol", 0.5), ("n_low", 3)):
        with pytest.raises(ConfigError, match=f"gsl.{key}={value}"):
            state.check_resume(tmp_path, ids, {**gsl_settings(cfg), key: value})
    with pytest.raises(ConfigError, match=r"env.variations=\[0, 1, 2, 3\]"):
        state.check_resume(tmp_path, [0, 1, 2, 3], gsl_settings(cfg))
    (tmp_path / "specialist_0").mkdir()
    (tmp_path / "specialist_0" / "result.json").write_text("{}")  # one specialist finished, the other was killed
    with pytest.raises(ConfigError, match="gsl.specialist_max_env_step=9"):
        state.check_resume(tmp_path, ids, later)
    GslState(ids, 0).check_resume(tmp_path, ids, later)  # a run written before settings were kept: nothing to check


def test_phase2_start_keeps_the_generalists_value_statistics(tmp_path: Path) -> None:
    cfg = _compiled(tmp_path, value_norm=True)
    p1 = phase1_config(cfg)
    policy = build(p1, "policy", enable_field=("learn",))
    state = policy.learn_mode.state_dict()
    state["value_stats"] = {"mean": 3.0, "var": 4.0, "count": 250.0}  # what phase I's learner gathered
    source = save_checkpoint(tmp_path / "p1.pth.tar", {"policy": state, "train_iter": 5, "env_step": 640,
                                                       "best_eval_return": 1.0, "policy_type": "ppo"})
    start = load_checkpoint(start_checkpoint(phase2_config(cfg, []), source, tmp_path / "p2.pth.tar"))
    assert start["policy_type"] == "ppo_dapg" and (start["train_iter"], start["env_step"]) == (0, 0)
    assert start["policy"]["value_stats"] == {"mean": 3.0, "var": 4.0, "count": 250.0}
    assert all(torch.equal(start["policy"]["model"][k], v) for k, v in state["model"].items())
    assert "dapg" in start["policy"]  # phase II's own demo schedule, from zero


@pytest.mark.parametrize("override, words", [
    # a policy without a demo term: before, 'unknown config key policy.learn.demo_path', a key the user never set
    ("gsl.phase2_policy_type='ppo'", "gsl.phase2_policy_type='ppo': "),
    ("gsl.phase2_learn.demo_frq=2", "gsl.phase2_learn={'demo_frq': 2}: "),
])
def test_a_bad_phase2_setting_is_named_in_its_one_line(tmp_path: Path, override: str, words: str) -> None:
    cfg = _config(tmp_path)
    proc = run_cli("-m", "gsl", "-c", cfg, "--set", override, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == [cfg]  # nothing written

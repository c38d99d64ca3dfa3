"""Readers of an experiment folder take a failed run's result.json (``failed`` true) for what it is: -m sweep runs
its seed again and never counts it as finished, -m gsl does not skip a failed phase."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ding_lite.errors import DivergedError
from ding_lite.gsl.phases import run_phase
from ding_lite.utils.run_result import failed_entries, finished_result, run_failed

pytestmark = pytest.mark.unittest

DIVERGED = DivergedError("training diverged at train iter 9 (env step 640): loss is inf; lower the learning rate")


def _failed_folder(folder: Path, checkpoint: bool = True) -> Path:
    """A run folder as a failed run leaves it: a checkpoint, and a result.json marked failed (its last
    evaluation's return a good one, which no reader may take for the run's)."""
    (folder / "ckpt").mkdir(parents=True)
    if checkpoint:
        (folder / "ckpt" / "iteration_8.pth.tar").write_bytes(b"ckpt")
    result = {**failed_entries(DIVERGED, 640, 9, SimpleNamespace(mean=500.0, std=0.0), 500.0), "stop_value": 195}
    (folder / "result.json").write_text(json.dumps(result))
    return folder


def test_a_failed_result_says_why_and_how_far_and_is_no_finished_run(tmp_path: Path) -> None:
    entries = failed_entries(DIVERGED, 640, 9, None, float("-inf"))
    assert entries == {"stop": False, "stop_reason": "failed: " + str(DIVERGED), "failed": True, "env_step": 640,
                       "train_iter": 9, "eval_return": None, "eval_return_std": None, "best_eval_return": None}
    assert run_failed(entries) and not run_failed({"stop": False, "stop_reason": None})  # an older result.json
    assert finished_result(_failed_folder(tmp_path / "failed")) is None
    (tmp_path / "done").mkdir()
    (tmp_path / "done" / "result.json").write_text(json.dumps({"failed": False, "eval_return": 1.0}))
    assert finished_result(tmp_path / "done") == {"failed": False, "eval_return": 1.0}
    assert finished_result(tmp_path / "none") is None


def test_a_sweep_runs_a_failed_seed_again_and_never_takes_its_numbers(tmp_path: Path) -> None:
    """Before, a seed whose run had failed counted as finished on --resume: its last eval return (500) went into
    the trial's objective, and the trial could be the sweep's best."""
    pytest.importorskip("ray.tune")
    from ding_lite.sweep.trials import _run_seeds

    _failed_folder(tmp_path / "run_seed0")
    calls = []

    def train(config: str, seed: int, *args: object, exp_dir: Path, resume: bool, **kwargs: object) -> dict:
        calls.append((seed, resume))
        return {"eval_return": 20.0, "env_step": 1000}

    spec = SimpleNamespace(overrides=[], seeds=[0], pruner="none", config="c.py", max_env_step=1000,
                           max_train_iter=None, strict=False)
    results = _run_seeds({}, spec, tmp_path, SimpleNamespace(save=lambda results, status: None), train)
    assert calls == [(0, True)]  # resumed from its checkpoint, as a seed cut mid-run
    assert [r["eval_return"] for r in results] == [20.0]


def test_gsl_runs_a_failed_phase_again(tmp_path: Path) -> None:
    """Before, a phase (or specialist) whose run had failed counted as done on -m gsl --resume."""
    ran = []
    folder = _failed_folder(tmp_path / "phase1_generalist")
    assert run_phase(folder, lambda resume: ran.append(resume) or {"env_step": 1}) == {"env_step": 1}
    assert ran == [True]

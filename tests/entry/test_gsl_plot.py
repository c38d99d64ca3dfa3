"""``-m plot`` on a GSL folder (ding_lite/plot/gsl.py): the generalist's phases on one env-step axis, phase II
after every env step of phase I, the specialists and the demos; a run still in phase I; the summary row."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ding_lite.entry.plot import plot_pipeline
from ding_lite.gsl.plateau import PHASE1
from ding_lite.plot.runs import collect_groups, group_summary
from ding_lite.utils.events import RunScalars, ScalarSeries
from ding_lite.utils.log import ExperimentLogger

pytestmark = pytest.mark.unittest


def _phase(folder: Path, evals: dict[int, float], iters: dict[int, float], result: dict | None) -> None:
    """A sub-experiment as the serial pipeline leaves it: eval scalars per env step, learn scalars per iteration."""
    logger = ExperimentLogger(folder, progress=False)
    for step, value in evals.items():
        logger.scalar("eval/return_mean", value, step)
        logger.scalar("eval/variation_3/return_mean", value / 2, step)
    for it, value in iters.items():
        logger.scalar("learn/policy_loss", value, it)
    logger.close()
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result))


def _gsl_folder(root: Path, finished: bool = True) -> Path:
    """Phase I 0-1000 env steps (40 iterations), specialists of 300 and 200 steps, demos of 50, phase II 0-400."""
    exp = root / "gsl_seed0"
    _phase(exp / "phase1_generalist", {0: 0.1, 500: 0.4, 1000: 0.5}, {20: 1.0, 40: 0.9},
           {"env_step": 1000, "train_iter": 40, "stop": True, "eval_return": 0.5})
    if not finished:
        return exp
    _phase(exp / "specialist_0", {0: 0.0, 300: 0.9}, {}, {"env_step": 300})
    _phase(exp / "specialist_1", {0: 0.0, 200: 0.7}, {}, {"env_step": 200})
    (exp / "demos").mkdir()
    (exp / "demos" / "summary.json").write_text(json.dumps({"env_step": 50}))
    _phase(exp / "phase2_generalist", {0: 0.5, 200: 0.7, 400: 0.8}, {16: 0.5},
           {"env_step": 400, "train_iter": 16, "stop": False, "eval_return": 0.8, "stop_value": 1.0})
    (exp / "result.json").write_text(json.dumps({"summary": {}, "wall_seconds": 12.5,
                                                 "env_steps": {"total": 1950, "phase2": 400}}))
    return exp


def test_the_generalist_s_phases_are_one_run_on_one_env_step_axis(tmp_path: Path) -> None:
    exp = _gsl_folder(tmp_path)
    (group,) = collect_groups([str(exp)], [])
    (run,) = group.runs
    evals = run.scalars.series["eval/return_mean"]
    # phase II starts after 1000 (phase I) + 300 + 200 (specialists) + 50 (demos) = 1550 env steps
    assert evals.steps == [0, 500, 1000, 1550, 1750, 1950] and evals.values == pytest.approx([.1, .4, .5, .5, .7, .8])
    assert run.scalars.series["eval/variation_3/return_mean"].steps[3:] == [1550, 1750, 1950]
    assert run.scalars.series["learn/policy_loss"].steps == [20, 40, 56]  # iterations: after phase I's 40
    summary = group_summary(group)
    assert summary["finished"] == 1 and summary["final_return"] == [0.8] and summary["wall_seconds"] == [12.5]
    assert run.result["env_step"] == 1950  # GSL's total: what it is compared at


def test_a_folder_of_gsl_and_ppo_runs_and_the_figure(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    _gsl_folder(tmp_path)
    _phase(tmp_path / "ppo_seed0", {0: 0.1, 1000: 0.5, 1950: 0.6}, {}, {"env_step": 1950, "stop": False,
                                                                        "eval_return": 0.6})
    table = plot_pipeline([tmp_path], tmp_path / "fig.png")
    assert (tmp_path / "fig.png").is_file()
    assert {line.split("|")[1].strip() for line in table.splitlines()[2:]} == {"gsl", "ppo"}


def test_a_gsl_run_still_in_phase_one_is_drawn_and_counted_as_running(tmp_path: Path) -> None:
    exp = _gsl_folder(tmp_path, finished=False)  # no top result.json yet
    (group,) = collect_groups([str(tmp_path)], [])
    (run,) = group.runs
    assert run.path == exp and run.result == {} and group_summary(group)["finished"] == 0
    assert run.scalars.series["eval/return_mean"].steps == [0, 500, 1000]


def test_join_scalars_shifts_the_second_series_by_its_kind_of_step() -> None:
    from ding_lite.plot.gsl import join_scalars  # here: the other tests go through -m plot's own entry

    first = RunScalars({"eval/return_mean": ScalarSeries([0, 10], [1.0, 2.0], [5.0, 6.0]),
                        "eval/return_mean_iter": ScalarSeries([0, 2], [1.0, 2.0], [5.0, 6.0])}, 5.0)
    second = RunScalars({"eval/return_mean": ScalarSeries([0, 4], [3.0, 4.0], [9.0, 10.0]),
                         "learn/entropy": ScalarSeries([1], [0.5], [9.5])}, 9.0)
    joined = join_scalars(first, second, env_offset=100, iter_offset=2)
    assert joined.series["eval/return_mean"].steps == [0, 10, 100, 104]
    assert joined.series["eval/return_mean"].wall_times == [5.0, 6.0, 9.0, 10.0]
    assert joined.series["eval/return_mean_iter"].steps == [0, 2]
    assert joined.series["learn/entropy"].steps == [3] and joined.start_time == 5.0


@pytest.mark.parametrize("where", ["phase1_generalist", "specialist_1", "phase2_generalist"])
def test_a_gsl_run_that_failed_in_a_phase_is_counted_as_failed(tmp_path: Path, where: str) -> None:
    """A GSL run whose phase failed read as one still going (phase I, a specialist) or its phase II as unfinished."""
    exp = _gsl_folder(tmp_path)
    (exp / "result.json").write_text(json.dumps({"env_steps": {}}))  # no summary: GSL did not finish
    if where != "phase2_generalist":
        for sub in ("phase2_generalist", "demos", *(["specialist_0", "specialist_1"] if where == PHASE1 else [])):
            shutil.rmtree(exp / sub)
    failed = {"failed": True, "stop": False, "stop_reason": "failed: env 0 failed", "env_step": 100}
    (exp / where / "result.json").write_text(json.dumps(failed))
    (group,) = collect_groups([str(exp)], [])
    summary = group_summary(group)
    assert summary["finished"] == 0 and [r.path for r in summary["failed"]] == [exp]

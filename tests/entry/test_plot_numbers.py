"""``ding_lite -m plot``'s numbers on hand-made experiment folders (tensorboardX event files and result.json written
here, with known values; no training): each summary cell and each curve point against a numpy computation, the
grouping of seed folders, the aggregate's point estimates against rliable's own estimators, and bad numbers."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ding_lite.entry.plot import plot_pipeline
from ding_lite.errors import PlotInputError
from ding_lite.plot.aggregate import collect_scores, interval_estimates, parse_norms
from ding_lite.plot.figure import group_curve
from ding_lite.plot.runs import collect_groups, summary_table

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.unittest

TAG = "eval/return_mean"
STEPS = "env steps to stop value, median [min, max]"
LAST = "last eval return, mean ± sd"
FRESH = "final eval (fresh seeds), mean ± sd"
WALL = "wall time (s), median [min, max]"


def write_run(folder: Path, steps: list[int], values: list[float], result: dict | None = None,
              env: dict | None = None) -> Path:
    """An experiment folder: ``values`` logged at ``steps`` under ``eval/return_mean`` by tensorboardX's own writer,
    the ``result.json`` given (none: a run that has not finished) and a ``total_config.py`` with ``env``."""
    from tensorboardX import SummaryWriter

    (folder / "log").mkdir(parents=True)
    writer = SummaryWriter(str(folder / "log"))
    for step, value in zip(steps, values, strict=True):
        writer.add_scalar(TAG, value, step)
    writer.close()
    if result is not None:
        (folder / "result.json").write_text(json.dumps(result))
    if env is not None:
        (folder / "total_config.py").write_text(f"main_config = {{'env': {env!r}}}\ncreate_config = {{}}\n")
    return folder


def _result(env_step: int, eval_return: float, stop: bool, wall: float = 1.0, **extra) -> dict:
    return {"stop": stop, "stop_reason": "stop value reached" if stop else None, "env_step": env_step,
            "eval_return": eval_return, "wall_seconds": wall, "stop_value": 195, **extra}


def _rows(table: str) -> dict[str, dict[str, str]]:
    lines = [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()]
    return {cells[0]: dict(zip(lines[0], cells, strict=True)) for cells in lines[2:]}


def test_summary_cells_against_numpy(tmp_path: Path) -> None:
    """Two seeds reach 195 (at their first evaluation at or above it), a third runs out of budget at 5,000: the
    median is over the two, and the third is shown as not reached (it would otherwise read as a faster group)."""
    finals = [208.0, 375.0, 60.0]
    write_run(tmp_path / "x_seed0", [0, 1000, 2000], [20.0, 150.0, finals[0]], _result(2000, finals[0], True, 3.5,
                                                                                          final_eval_return=217.9))
    write_run(tmp_path / "x_seed1", [0, 1000], [20.0, finals[1]], _result(1000, finals[1], True, 0.9,
                                                                           final_eval_return=269.3))
    write_run(tmp_path / "x_seed2", [0, 2500, 5000], [20.0, 50.0, finals[2]], _result(5000, finals[2], False, 0.6,
                                                                                         final_eval_return=61.0))
    row = _rows(plot_pipeline([tmp_path], tmp_path / "fig.png"))["x"]
    assert row["seeds"] == "3" and row["reached"] == "2/3" and row["stop value"] == "195"
    assert row[STEPS] == f"{np.median([2000, 1000]):,.0f} [1,000, 2,000]; 1 not reached (> 5,000)"
    assert row[LAST] == f"{np.mean(finals):.1f} ± {np.std(finals, ddof=1):.1f}"  # 214.3 ± 157.6
    fresh = [217.9, 269.3, 61.0]
    assert row[FRESH] == f"{np.mean(fresh):.1f} ± {np.std(fresh, ddof=1):.1f}"
    assert row[WALL] == "0.9 [0.6, 3.5]"


def test_no_seed_reached_shows_the_budget(tmp_path: Path) -> None:
    write_run(tmp_path / "y_seed0", [0, 800], [10.0, 30.0], _result(800, 30.0, False))
    write_run(tmp_path / "y_seed1", [0, 900], [10.0, 40.0], _result(900, 40.0, False))
    assert _rows(plot_pipeline([tmp_path], tmp_path / "fig.png"))["y"][STEPS] == "none (> 800)"


def test_stop_value_printed_as_set(tmp_path: Path) -> None:
    """A stop value of 150.5 was printed '150' (rounded to a whole number from 100 up)."""
    write_run(tmp_path / "s_seed0", [0, 1000], [10.0, 151.0], _result(1000, 151.0, True) | {"stop_value": 150.5})
    assert _rows(plot_pipeline([tmp_path], tmp_path / "fig.png"))["s"]["stop value"] == "150.5"


def test_plateau_stop_is_not_reaching_the_stop_value(tmp_path: Path) -> None:
    """GSL's phase I ends at a plateau (``stop`` true, another ``stop_reason``) far below the stop value."""
    write_run(tmp_path / "p_seed0", [0, 1000], [10.0, 50.0],
              _result(1000, 50.0, True) | {"stop_reason": "plateau (no gain above plateau_tol=1 in 3 evaluations)"})
    write_run(tmp_path / "p_seed1", [0, 3000], [10.0, 80.0], _result(3000, 80.0, False))
    (group,) = collect_groups([str(tmp_path)], [])
    row = _rows(summary_table([group]))["p"]
    assert row["reached"] == "0/2" and row[STEPS] == "none (> 1,000)"
    _, band, _ = group_curve(group, TAG, "env_step", "se")
    assert band.n_seeds.tolist() == [2, 2, 1]  # the plateaued seed is not held at 50 up to 3,000 as if solved


def test_same_name_under_two_parents_is_two_groups(tmp_path: Path) -> None:
    """``-m plot runs/ppo runs/dqn`` where both hold CartPole-v1_seed<K>: two experiments, never one mean."""
    for algo, value in (("ppo", 200.0), ("dqn", 100.0)):
        for seed in (0, 1):
            write_run(tmp_path / algo / f"CartPole-v1_seed{seed}", [0, 1000], [10.0, value],
                      _result(1000, value, False))
    rows = _rows(plot_pipeline([tmp_path / "ppo", tmp_path / "dqn"], tmp_path / "fig.png"))
    assert set(rows) == {"ppo/CartPole-v1", "dqn/CartPole-v1"}
    assert rows["ppo/CartPole-v1"]["seeds"] == "2" and rows["ppo/CartPole-v1"][LAST] == "200.0 ± 0.0"
    assert rows["dqn/CartPole-v1"][LAST] == "100.0 ± 0.0"
    one = _rows(plot_pipeline([tmp_path / "ppo"], tmp_path / "fig.png"))
    assert set(one) == {"CartPole-v1"}  # one parent: the plain name, as before


def test_curves_aligned_by_hand(tmp_path: Path) -> None:
    """Seed 0 reached the stop value at 1,000 (held there after), seed 1 evaluates at other steps and ran out of
    budget at 1,500 (its line ends), seed 2 is still running (no result.json) and ran to 3,000."""
    write_run(tmp_path / "c_seed0", [0, 1000], [10.0, 200.0], _result(1000, 200.0, True))
    write_run(tmp_path / "c_seed1", [0, 700, 1500], [20.0, 60.0, 90.0], _result(1500, 90.0, False))
    write_run(tmp_path / "c_seed2", [0, 2000, 3000], [30.0, 100.0, 150.0])
    (group,) = collect_groups([str(tmp_path)], [])
    grid, band, _ = group_curve(group, TAG, "env_step", "se")
    assert grid.tolist() == [0, 700, 1000, 1500, 2000, 3000]
    nan = np.nan
    by_hand = np.array([[10, 10, 200, 200, 200, 200],  # held after reaching the stop value
                        [20, 60, 60, 90, nan, nan],  # budget spent: no value after its end
                        [30, 30, 30, 30, 100, 150]])
    n = (~np.isnan(by_hand)).sum(axis=0)
    assert band.n_seeds.tolist() == n.tolist() == [3, 3, 3, 3, 2, 2]
    np.testing.assert_allclose(band.mean, np.nanmean(by_hand, axis=0))
    np.testing.assert_allclose(band.high - band.mean, np.nanstd(by_hand, axis=0, ddof=1) / np.sqrt(n))


def test_non_finite_result_number_is_one_line(tmp_path: Path) -> None:
    write_run(tmp_path / "z_seed0", [0, 1000], [10.0, 20.0], _result(1000, 20.0, False, final_eval_return=float("nan")))
    write_run(tmp_path / "z_seed1", [0, 1000], [10.0, 30.0], _result(1000, 30.0, False, final_eval_return=25.0))
    with pytest.raises(PlotInputError, match=r"z_seed0: final_eval_return in result.json is nan, not a finite") as exc:
        plot_pipeline([tmp_path], tmp_path / "fig.png")
    assert "\n" not in str(exc.value) and not (tmp_path / "fig.png").exists()


def _task_runs(root: Path, runs_per_task: int) -> tuple[list[str], dict[str, tuple[float, float]]]:
    tasks = {"CartPole-v1": (0.0, 500.0), "Acrobot-v1": (-500.0, -100.0)}
    rng = np.random.default_rng(1)
    for label in ("A", "B"):
        for task, (low, high) in tasks.items():
            for seed in range(runs_per_task):
                score = float(low + (high - low) * rng.uniform(0.0, 1.2))
                write_run(root / label / f"{task}_seed{seed}", [0, 1000], [low, score], _result(1000, score, False),
                          env={"type": "gymnasium", "env_id": task})
    return [f"{label}={root}/{label}/*" for label in ("A", "B")], tasks


def test_aggregate_point_estimates_are_rliables(tmp_path: Path) -> None:
    metrics = pytest.importorskip("rliable.metrics")
    groups, tasks = _task_runs(tmp_path, 4)
    norms = [f"{t}={low:g},{high:g}" for t, (low, high) in tasks.items()]
    agg = collect_scores(collect_groups([], groups), norms=parse_norms(norms))
    estimates = interval_estimates(agg, reps=300)
    for label in ("A", "B"):
        raw = [[json.loads((tmp_path / label / f"{t}_seed{s}" / "result.json").read_text())["eval_return"]
                for t in agg.tasks] for s in range(4)]
        lows, highs = (np.array([tasks[t][k] for t in agg.tasks]) for k in (0, 1))
        scores = (np.array(raw) - lows) / (highs - lows)  # the hand normalisation: (score - low) / (high - low)
        np.testing.assert_allclose(agg.scores[label], scores)
        for name, estimator in (("median", metrics.aggregate_median), ("IQM", metrics.aggregate_iqm),
                                ("mean", metrics.aggregate_mean), ("optimality gap", metrics.aggregate_optimality_gap)):
            assert estimates[label][name][0] == pytest.approx(estimator(scores))


def test_one_run_per_task_prints_no_interval(tmp_path: Path) -> None:
    """A bootstrap over one run per task resamples that run only: its "interval" has no width and says nothing."""
    pytest.importorskip("rliable")
    groups, tasks = _task_runs(tmp_path, 1)
    norms = [f"{t}={low:g},{high:g}" for t, (low, high) in tasks.items()]
    table = plot_pipeline([], tmp_path / "agg.png", groups=groups, aggregate=True, norms=norms, reps=200)
    row = _rows(table.split("\n\n")[0])["A"]
    assert row["runs per task"] == "1"
    assert all(row[f"{m} [95% CI]"].endswith(" (no CI)") for m in ("median", "IQM", "mean", "optimality gap"))
    assert (tmp_path / "agg.png").is_file()


def _failed(env_step: int, eval_return: float) -> dict:
    """A failed run's result.json (runtime/train_loop.py): its last evaluation a good one, before it diverged."""
    return {"stop": False, "stop_reason": "failed: training diverged at train iter 9 (env step 1,500): loss is inf",
            "failed": True, "env_step": env_step, "eval_return": eval_return, "best_eval_return": eval_return,
            "wall_seconds": 9.0, "stop_value": 195}


def test_a_failed_run_is_shown_failed_not_finished_nor_censored(tmp_path: Path) -> None:
    """A failed run's result.json read as a finished one's: its good last evaluation went into the mean, and its
    env steps into 'not reached' as though its budget had run out."""
    write_run(tmp_path / "f_seed0", [0, 1000], [20.0, 200.0], _result(1000, 200.0, True, 2.0))
    write_run(tmp_path / "f_seed1", [0, 1500], [20.0, 300.0], _failed(1500, 300.0))
    write_run(tmp_path / "f_seed2", [0, 500], [20.0, 30.0])  # still running
    table, _, notes = plot_pipeline([tmp_path], tmp_path / "fig.png").partition("\n\n")
    row = _rows(table)["f"]
    assert row["seeds"] == "3 (1 failed, 1 unfinished)" and row["reached"] == "1/1"
    assert row[STEPS] == "1,000" and row[LAST] == "200.0" and row[WALL] == "2"
    assert notes == f"- failed: {tmp_path / 'f_seed1'}: training diverged at train iter 9 (env step 1,500): loss is inf"
    assert (tmp_path / "fig.png").is_file()  # its curve is drawn up to where it failed


def test_aggregate_refuses_a_failed_run_in_one_line(tmp_path: Path) -> None:
    write_run(tmp_path / "A" / "CartPole-v1_seed0", [0, 1000], [0.0, 400.0], _failed(1000, 400.0),
              env={"type": "gymnasium", "env_id": "CartPole-v1"})
    with pytest.raises(PlotInputError, match=r"CartPole-v1_seed0: the run failed \(training diverged at train iter "
                                             r"9 .*\); --aggregate needs each run's score \(--score last\)"):
        collect_scores(collect_groups([], [f"A={tmp_path}/A/*"]), norms=parse_norms(["CartPole-v1=0,500"]))

"""Reading and grouping experiment folders for ``ding_lite -m plot``: runs, seed groups, sweep groups and the
markdown summary. The figure is drawn by :mod:`ding_lite.plot.figure`, the aggregate one by
:mod:`ding_lite.plot.aggregate`; the command itself is :mod:`ding_lite.entry.plot`.
"""
from __future__ import annotations

import glob
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ding_lite.errors import PlotInputError
from ding_lite.plot.folder import Run, is_run_folder, load_run_folder
from ding_lite.plot.gsl import is_gsl_folder, load_gsl_run
from ding_lite.utils.curves import median_and_range
from ding_lite.utils.run_result import failure_line, run_failed
from ding_lite.worker.tracker import STOP_VALUE_REACHED

X_AXES = ("env_step", "wall_time")
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
_SEED_SUFFIX = re.compile(r"_seed\d+(_\d+)?$")  # cartpole_dqn_seed1, or cartpole_dqn_seed1_2 (a rerun's folder)


@dataclass
class Group:
    """Runs of one experiment over seeds: one curve with a band, one row of the summary."""

    label: str
    runs: list[Run]


def is_experiment(path: Path) -> bool:
    """A folder that a ding_lite pipeline wrote: tensorboard events under ``log/``, or a ``result.json``, or the
    phase folders of ``-m gsl`` (one run: :mod:`ding_lite.plot.gsl`)."""
    return is_run_folder(path) or is_gsl_folder(path)


def experiment_folders(path: Path) -> list[Path]:
    """``path`` itself if it is an experiment folder, else the experiment folders directly inside it."""
    if is_experiment(path):
        return [path]
    found = sorted(p for p in path.iterdir() if is_experiment(p)) if path.is_dir() else []
    if not found:
        what = "no such folder" if not path.exists() else "no log/events.out.tfevents.* or result.json in it " \
            "or in its sub-folders"
        raise PlotInputError(f"not an experiment folder: {path} ({what}); give folders written by ding_lite -m "
                             "serial or -m parallel")
    return found


def load_run(path: Path) -> Run:
    """Read one experiment folder's scalars and ``result.json`` (keys read as present, never assumed); a GSL folder
    is its generalist's phases joined on one env-step axis."""
    return load_gsl_run(path) if is_gsl_folder(path) else load_run_folder(path)


def seed_group_label(path: Path) -> str:
    """The experiment a seed's folder belongs to: its name without ``_seed<K>`` (``cartpole_dqn_seed1`` ->
    ``cartpole_dqn``)."""
    return _SEED_SUFFIX.sub("", path.name)


def seed_groups(paths: Sequence[Path]) -> dict[str, list[Path]]:
    """Seed folders grouped by :func:`seed_group_label` within their parent folder. The seeds of one experiment sit
    side by side (``-s 0 -s 1`` writes ``<name>_seed0``, ``<name>_seed1``); the same name under two parents
    (``ppo/CartPole-v1_seed0``, ``dqn/CartPole-v1_seed0``) is two experiments, labelled ``ppo/CartPole-v1`` and
    ``dqn/CartPole-v1``, never one mean over both."""
    by_parent: dict[tuple[str, Path], list[Path]] = {}
    for path in paths:
        by_parent.setdefault((seed_group_label(path), path.absolute().parent), []).append(path)
    names = [label for label, _ in by_parent]
    short = [parent.name for label, parent in by_parent if names.count(label) > 1]
    out = {}
    for (label, parent), found in by_parent.items():
        if names.count(label) > 1:  # parents of the same name (runs_a/ppo, runs_b/ppo): their whole path
            label = f"{parent.name if short.count(parent.name) == 1 else parent}/{label}"
        out[label] = found
    return out


SWEEP_FILE = "sweep.json"  # written by ding_lite -m sweep: its trials, each a group of -m plot


def sweep_groups(path: Path) -> dict[str, list[Path]] | None:
    """A sweep folder's trials as groups (``{trial label: its runs}``, best trial first), or None for another
    folder."""
    sweep_file = path / SWEEP_FILE
    if not sweep_file.is_file():
        return None
    try:
        trials = json.loads(sweep_file.read_text())["trials"]
        groups = {t["label"]: [path / run for run in t["runs"] if is_experiment(path / run)] for t in trials}
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise PlotInputError(f"cannot read {sweep_file}: {exc}") from None
    groups = {label: runs for label, runs in groups.items() if runs}
    if not groups:
        raise PlotInputError(f"the sweep in {path} has no finished run yet")
    return groups


def collect_groups(exp_dirs: Sequence[str], group_specs: Sequence[str]) -> list[Group]:
    """Groups from folders named on the command line (grouped by name over ``_seed<K>``; a sweep folder gives one
    group per trial) and from ``--group LABEL=DIR[,DIR...]`` (each DIR may be a glob). An empty group is an error
    naming it."""
    groups: dict[str, list[Path]] = {}
    for spec in group_specs:
        label, sep, dirs = spec.partition("=")
        if not sep or not label:
            raise PlotInputError(f"--group expects LABEL=DIR[,DIR...], got {spec!r}")
        matched = [Path(m) for d in dirs.split(",") if d for m in (sorted(glob.glob(d)) or [d])]
        if not matched:
            raise PlotInputError(f"group {label!r} is empty: --group {spec!r} names no folder")
        groups.setdefault(label, []).extend(p for m in matched for p in experiment_folders(m))
    seed_folders: list[Path] = []
    for d in exp_dirs:
        trials = sweep_groups(Path(d))
        for label, paths in (trials or {}).items():
            groups.setdefault(label, []).extend(paths)
        seed_folders += experiment_folders(Path(d)) if trials is None else []
    for label, paths in seed_groups(seed_folders).items():
        groups.setdefault(label, []).extend(paths)
    if not groups:
        raise PlotInputError("nothing to plot: give experiment folders (EXP_DIR ...) or --group LABEL=DIR,...")
    return [Group(label, [load_run(p) for p in dict.fromkeys(paths)]) for label, paths in groups.items()]


def check_metric(groups: Sequence[Group], metric: str) -> None:
    """Every group needs at least one run that logged ``metric``, and every logged value finite (a diverged run's NaN
    would drop out of the mean unseen); the error lists the tags that were logged, or names the run."""
    logged = sorted({tag for g in groups for r in g.runs for tag in r.scalars.series})
    if not any(metric in r.scalars.series for g in groups for r in g.runs):
        shown = ", ".join(logged) if logged else "none: the runs have not evaluated yet"
        raise PlotInputError(f"no run logged the metric {metric!r}; logged tags: {shown}")
    for g in groups:
        for r in g.runs:
            _check_finite(r, metric)
            _check_result_numbers(r)  # before the figure is written
        if not any(metric in r.scalars.series for r in g.runs):
            raise PlotInputError(f"group {g.label!r} is empty: none of its {len(g.runs)} runs logged {metric!r} "
                                 f"({', '.join(str(r.path) for r in g.runs)})")


def _check_finite(run: Run, metric: str) -> None:
    series = run.scalars.series.get(metric)
    if series is None:
        return
    bad = [(step, v) for step, v in zip(series.steps, series.values, strict=True) if not math.isfinite(v)]
    if bad:
        raise PlotInputError(f"{run.path}: {metric} is not finite at {len(bad)} of {len(series.values)} logged "
                             f"points (first {bad[0][1]} at step {bad[0][0]:,}); a mean over seeds cannot include "
                             "it: leave the run out (--group LABEL=DIR,...)")


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _median_range(values: Sequence[float]) -> str:
    stats = median_and_range(values)
    if stats is None:
        return "-"
    med, lo, hi = stats
    return _fmt(med) if lo == hi else f"{_fmt(med)} [{_fmt(lo)}, {_fmt(hi)}]"


def _steps_to_stop(summary: dict[str, Any]) -> str:
    """Median [min, max] over the runs that reached the stop value; the runs that did not are named beside it (left
    out of the median, which would otherwise read faster than the group is), with the fewest env steps they ran."""
    cell = _median_range(summary["steps_to_stop"])
    censored = summary["not_reached_at"]
    if not censored:
        return cell
    if not summary["steps_to_stop"]:
        return f"none (> {_fmt(min(censored))})"
    return f"{cell}; {len(censored)} not reached (> {_fmt(min(censored))})"


def _mean_sd(values: Sequence[float]) -> str:
    if not values:
        return "-"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.1f}"
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    return f"{mean:.1f} ± {sd:.1f}"


def reached_stop_value(result: dict[str, Any]) -> bool:
    """The run ended because an evaluation reached its stop value; GSL's phase I also ends at a plateau
    (``stop`` true, another ``stop_reason``), which is no such success."""
    return bool(result.get("stop")) and result.get("stop_reason", STOP_VALUE_REACHED) in (None, STOP_VALUE_REACHED)


def group_summary(group: Group) -> dict[str, Any]:
    """The numbers of a group's summary row, from each run's ``result.json``: env steps of the runs that reached
    the stop value, last eval return, fresh-seed final eval return (where recorded), wall seconds. A run that failed
    (its ``result.json`` says ``failed``) is counted apart and left out of every number, as an unfinished one."""
    finished = [r.result for r in group.runs if r.result and not run_failed(r.result)]
    return {
        "runs": len(group.runs),
        "finished": len(finished),
        "failed": [r for r in group.runs if run_failed(r.result)],
        "solved": sum(reached_stop_value(res) for res in finished),
        "steps_to_stop": [res["env_step"] for res in finished if reached_stop_value(res) and "env_step" in res],
        # right-censored: these runs ended (budget, plateau) at env_step without reaching their stop value
        "not_reached_at": [res["env_step"] for res in finished if not reached_stop_value(res)
                           and res.get("stop_value") is not None and "env_step" in res],
        "final_return": [res["eval_return"] for res in finished if res.get("eval_return") is not None],
        "final_eval_return": [res["final_eval_return"] for res in finished
                              if res.get("final_eval_return") is not None],
        "wall_seconds": [res["wall_seconds"] for res in finished if res.get("wall_seconds") is not None],
        "stop_values": sorted({res["stop_value"] for res in finished if res.get("stop_value") is not None}),
    }


SUMMARY_KEYS = ("env_step", "eval_return", "final_eval_return", "wall_seconds")  # result.json numbers summarised


def _check_result_numbers(run: Run) -> None:
    """A NaN in ``result.json`` (a diverged final evaluation) would make its column ``nan ± nan``, or, in a median,
    a number that is not the median: one line naming the run and the key instead. A failed run's numbers are not
    summarised (its last evaluation may be the diverged policy's)."""
    if run_failed(run.result):
        return
    for key in SUMMARY_KEYS:
        value = run.result.get(key)
        if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
            raise PlotInputError(f"{run.path}: {key} in result.json is {value!r}, not a finite number; the summary "
                                 "cannot include it: leave the run out (--group LABEL=DIR,...)")


def summary_table(groups: Sequence[Group]) -> str:
    """A markdown table, one row per group: seeds, how many reached the stop value, env steps to it (median
    [min, max] over those seeds, the others named as not reached), last eval return (mean ± sd over seeds), wall
    time; each header says which statistic its column is (docs/plot.md, "The summary")."""
    rows = [(g.label, group_summary(g)) for g in groups]
    fresh = any(s["final_eval_return"] for _, s in rows)
    head = ["group", "seeds", "stop value", "reached", "env steps to stop value, median [min, max]",
            "last eval return, mean ± sd"]
    head += ["final eval (fresh seeds), mean ± sd"] if fresh else []
    head += ["wall time (s), median [min, max]"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for label, s in rows:
        unfinished = s["runs"] - s["finished"] - len(s["failed"])
        notes = [f"{n} {what}" for n, what in ((len(s["failed"]), "failed"), (unfinished, "unfinished")) if n]
        seeds = f"{s['runs']} ({', '.join(notes)})" if notes else str(s["runs"])
        stop = ", ".join(f"{v:,g}" if abs(v) < 1e6 else f"{v:g}" for v in s["stop_values"]) or "-"  # as set
        cells = [label, seeds, stop, f"{s['solved']}/{s['finished']}", _steps_to_stop(s),
                 _mean_sd(s["final_return"])]
        cells += [_mean_sd(s["final_eval_return"])] if fresh else []
        cells += [_median_range(s["wall_seconds"])]
        lines.append("| " + " | ".join(cells) + " |")
    failed = [r for _, s in rows for r in s["failed"]]
    if failed:  # each failed run and why, under the table (its curve is drawn up to where it failed)
        lines += ["", *(f"- failed: {r.path}: {failure_line(r.result)}" for r in failed)]
    return "\n".join(lines)

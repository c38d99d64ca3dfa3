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
    for d in exp_dirs:
        trials = sweep_groups(Path(d))
        for label, paths in (trials or {}).items():
            groups.setdefault(label, []).extend(paths)
        for path in experiment_folders(Path(d)) if trials is None else ():
            groups.setdefault(seed_group_label(path), []).append(path)
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


def _mean_sd(values: Sequence[float]) -> str:
    if not values:
        return "-"
    mean = sum(values) / len(values)
    if len(values) == 1:
        return f"{mean:.1f}"
    sd = (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5
    return f"{mean:.1f} ± {sd:.1f}"


def group_summary(group: Group) -> dict[str, Any]:
    """The numbers of a group's summary row, from each run's ``result.json``: env steps of the runs that reached
    the stop value, last eval return, fresh-seed final eval return (where recorded), wall seconds."""
    finished = [r.result for r in group.runs if r.result]
    return {
        "runs": len(group.runs),
        "finished": len(finished),
        "solved": sum(bool(res.get("stop")) for res in finished),
        "steps_to_stop": [res["env_step"] for res in finished if res.get("stop") and "env_step" in res],
        "final_return": [res["eval_return"] for res in finished if res.get("eval_return") is not None],
        "final_eval_return": [res["final_eval_return"] for res in finished
                              if res.get("final_eval_return") is not None],
        "wall_seconds": [res["wall_seconds"] for res in finished if res.get("wall_seconds") is not None],
        "stop_values": sorted({res["stop_value"] for res in finished if res.get("stop_value") is not None}),
    }


def summary_table(groups: Sequence[Group]) -> str:
    """A markdown table, one row per group: seeds, how many reached the stop value, env steps to it (median
    [min, max] over those seeds), last eval return (mean ± sd over seeds), wall time."""
    rows = [(g.label, group_summary(g)) for g in groups]
    fresh = any(s["final_eval_return"] for _, s in rows)
    head = ["group", "seeds", "stop value", "reached", "env steps to stop value", "final return"]
    head += ["final eval, fresh seeds"] if fresh else []
    head += ["wall time (s)"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for label, s in rows:
        unfinished = s["runs"] - s["finished"]
        seeds = f"{s['runs']} ({unfinished} unfinished)" if unfinished else str(s["runs"])
        stop = ", ".join(_fmt(v) for v in s["stop_values"]) or "-"
        cells = [label, seeds, stop, f"{s['solved']}/{s['finished']}", _median_range(s["steps_to_stop"]),
                 _mean_sd(s["final_return"])]
        cells += [_mean_sd(s["final_eval_return"])] if fresh else []
        cells += [_median_range(s["wall_seconds"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)

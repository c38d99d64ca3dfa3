"""``ding_lite -m plot``: learning curves of experiment folders, grouped over seeds, and a markdown summary; with
``--aggregate``, methods compared over several tasks.

Reading and grouping live here; the figure is drawn by :mod:`ding_lite.entry.plot_figure` (matplotlib, imported
only when a figure is made, so that ``import ding_lite`` stays light), the aggregate one by
:mod:`ding_lite.entry.plot_aggregate`.
"""
from __future__ import annotations

import argparse
import glob
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ding_lite.errors import PlotInputError
from ding_lite.utils.curves import BANDS, median_and_range
from ding_lite.utils.events import EVENT_GLOB, RunScalars, read_scalars

X_AXES = ("env_step", "wall_time")
FIGURE_SUFFIXES = (".png", ".svg", ".pdf")
_SEED_SUFFIX = re.compile(r"_seed\d+(_\d+)?$")  # cartpole_dqn_seed1, or cartpole_dqn_seed1_2 (a rerun's folder)


@dataclass
class Run:
    """One experiment folder: its scalars and its ``result.json`` (empty while the run is still going).

    ``x_offset`` is added to its env-step x values: a later phase of a multi-phase run (each phase a folder of its
    own) starts where the phases before it ended, so that all phases share one env-step axis."""

    path: Path
    scalars: RunScalars
    result: dict[str, Any]
    x_offset: float = 0.0


@dataclass
class Group:
    """Runs of one experiment over seeds: one curve with a band, one row of the summary."""

    label: str
    runs: list[Run]


def is_experiment(path: Path) -> bool:
    """A folder that a ding_lite pipeline wrote: tensorboard events under ``log/``, or a ``result.json``, or the
    phase folders of ``-m gsl`` (one run: :mod:`ding_lite.entry.gsl_plot`)."""
    from ding_lite.entry.gsl_plot import is_gsl_folder

    return path.is_dir() and ((path / "result.json").is_file() or any((path / "log").glob(EVENT_GLOB))
                              or is_gsl_folder(path))


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
    from ding_lite.entry.gsl_plot import is_gsl_folder, load_gsl_run

    if is_gsl_folder(path):
        return load_gsl_run(path)
    result: dict[str, Any] = {}
    result_path = path / "result.json"
    if result_path.is_file():
        try:
            result = json.loads(result_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise PlotInputError(f"cannot read {result_path}: {exc}") from None
    try:
        scalars = read_scalars(path / "log")
    except ValueError as exc:
        raise PlotInputError(str(exc)) from None
    return Run(path, scalars, result)


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
    """Every group needs at least one run that logged ``metric``; the error lists the tags that were logged."""
    logged = sorted({tag for g in groups for r in g.runs for tag in r.scalars.series})
    if not any(metric in r.scalars.series for g in groups for r in g.runs):
        shown = ", ".join(logged) if logged else "none: the runs have not evaluated yet"
        raise PlotInputError(f"no run logged the metric {metric!r}; logged tags: {shown}")
    for g in groups:
        if not any(metric in r.scalars.series for r in g.runs):
            raise PlotInputError(f"group {g.label!r} is empty: none of its {len(g.runs)} runs logged {metric!r} "
                                 f"({', '.join(str(r.path) for r in g.runs)})")


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
        seeds = str(s["runs"]) if s["finished"] == s["runs"] else f"{s['runs']} ({s['runs'] - s['finished']} running)"
        stop = ", ".join(_fmt(v) for v in s["stop_values"]) or "-"
        cells = [label, seeds, stop, f"{s['solved']}/{s['finished']}", _median_range(s["steps_to_stop"]),
                 _mean_sd(s["final_return"])]
        cells += [_mean_sd(s["final_eval_return"])] if fresh else []
        cells += [_median_range(s["wall_seconds"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_pipeline(exp_dirs: Sequence[str | Path], output: str | Path = "plot.png", *, x: str = "env_step",
                  metric: str = "eval/return_mean", groups: Sequence[str] = (), band: str = "se",
                  title: str | None = None, dpi: int = 150, stop_line: bool = False, worst: int = 3,
                  aggregate: bool = False, score: str = "last", norms: Sequence[str] = (), reps: int = 2000) -> str:
    """Draw the curves of ``exp_dirs`` (and ``groups``, ``LABEL=DIR[,DIR...]``) into ``output``; returns the
    markdown summary. Every input is checked before the figure file is written.

    ``dpi``: PNG resolution; ``stop_line``: draw the stop value even outside the data's range; ``worst``: the
    per-variation panel names this many worst variations. With ``aggregate`` the figure and summary compare the
    groups over the tasks of their runs instead (:mod:`ding_lite.entry.plot_aggregate`: ``score``, ``norms``
    ``TASK=LOW,HIGH`` and ``reps`` bootstrap resamples).

    Example::

        from ding_lite.entry.plot import plot_pipeline
        print(plot_pipeline(["cartpole_ppo_seed0", "cartpole_ppo_seed1"], "ppo.png"))
    """
    output = Path(output)
    if output.suffix.lower() not in FIGURE_SUFFIXES:
        raise PlotInputError(f"-o {output}: the figure file must end in one of {', '.join(FIGURE_SUFFIXES)}")
    if x not in X_AXES:
        raise PlotInputError(f"--x {x}: choose one of {', '.join(X_AXES)}")
    if band not in BANDS:
        raise PlotInputError(f"--band {band}: choose one of {', '.join(BANDS)}")
    if not 10 <= dpi <= 2400:
        raise PlotInputError(f"--dpi {dpi}: choose a resolution between 10 and 2400 (300 for print)")
    if worst < 0:
        raise PlotInputError(f"--worst {worst}: give 0 or more variations to name")
    if reps < 1:
        raise PlotInputError(f"--reps {reps}: give 1 or more bootstrap resamples (default 2000)")
    found = collect_groups([str(d) for d in exp_dirs], groups)
    if aggregate:
        from ding_lite.entry.plot_aggregate import aggregate_pipeline

        return aggregate_pipeline(found, output, score=score, norms=norms, reps=reps, dpi=dpi, title=title)
    check_metric(found, metric)
    from ding_lite.entry.plot_figure import draw_figure

    draw_figure(found, output, x=x, metric=metric, band=band, title=title, stop_line=stop_line, worst=worst, dpi=dpi)
    return summary_table(found)


def build_plot_parser() -> argparse.ArgumentParser:
    """The ``ding_lite -m plot`` command line (its own parser: it takes folders, not a config)."""
    from ding_lite.cli import _OneLineParser

    parser = _OneLineParser(prog="ding_lite -m plot", description="Learning curves of experiment folders, grouped "
                            "over seeds, with a markdown summary on stdout.")
    parser.add_argument("-m", "--mode", choices=["plot"], default="plot", help=argparse.SUPPRESS)
    parser.add_argument("exp_dirs", nargs="*", metavar="EXP_DIR", help="experiment folders, or folders holding them; "
                        "<name>_seed<K> folders are grouped by <name>")
    parser.add_argument("-o", "--output", default="plot.png", help="figure file: .png, .svg or .pdf "
                        "(default plot.png)")
    parser.add_argument("--x", default="env_step", choices=X_AXES, help="x axis: the logged step (env steps for "
                        "eval/*, train iterations for learn/*) or seconds since the run started")
    parser.add_argument("--metric", default="eval/return_mean", help="tensorboard tag to draw "
                        "(default eval/return_mean)")
    parser.add_argument("--group", action="append", default=[], metavar="LABEL=DIR[,DIR...]",
                        help="a group of your own (DIR may be a glob); repeat for several")
    parser.add_argument("--band", default="se", choices=BANDS, help="band over seeds: standard error (se) or "
                        "bootstrap 95%% interval (ci95)")
    parser.add_argument("--title", default=None, help="figure title")
    parser.add_argument("--dpi", type=int, default=150, help="PNG resolution (default 150; 300 for print; .pdf and "
                        ".svg are vectors)")
    parser.add_argument("--stop-line", action="store_true", help="draw the stop value even where it lies outside the "
                        "data's range")
    parser.add_argument("--worst", type=int, default=3, metavar="K", help="per-variation panel: name the K worst "
                        "variations (default 3)")
    parser.add_argument("--aggregate", action="store_true", help="compare the groups over the tasks of their runs: "
                        "normalised scores, IQM, median, mean, optimality gap (95%% stratified-bootstrap intervals) "
                        "and performance profiles")
    parser.add_argument("--score", default="last", choices=["last", "final_eval", "best"], help="--aggregate: each "
                        "run's score (last evaluation, final evaluation on fresh seeds, best evaluation)")
    parser.add_argument("--norm", action="append", default=[], metavar="TASK=LOW,HIGH", help="--aggregate: scores "
                        "LOW and HIGH of TASK become 0 and 1 (default: random policy, gymnasium's reward_threshold)")
    parser.add_argument("--reps", type=int, default=2000, help="--aggregate: bootstrap resamples (default 2000)")
    return parser


def plot_command(argv: Sequence[str]) -> None:
    """Run ``ding_lite -m plot ...``: the summary to stdout, the figure's path to stderr."""
    args = build_plot_parser().parse_args(list(argv))
    table = plot_pipeline(args.exp_dirs, args.output, x=args.x, metric=args.metric, groups=args.group,
                          band=args.band, title=args.title, dpi=args.dpi, stop_line=args.stop_line, worst=args.worst,
                          aggregate=args.aggregate, score=args.score, norms=args.norm, reps=args.reps)
    print(table)
    print(f"figure: {args.output}", file=sys.stderr)

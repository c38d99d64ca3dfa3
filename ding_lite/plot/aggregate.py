"""``ding_lite -m plot --aggregate``: methods compared over several tasks at once, as Agarwal et al. (2021, "Deep
Reinforcement Learning at the Edge of the Statistical Precipice") recommend: normalised scores, the median, the
interquartile mean (IQM), the mean and the optimality gap with stratified-bootstrap 95% intervals, and performance
profiles (the fraction of runs scoring above each normalised score) with their bands.

- Each group is a method; each run's task is its env (the env's gymnasium id where it has one, else ``env.env_id``
  or ``env.type`` of its ``total_config.py``); every task of a group needs the same number of runs.
- A run's score is a number of its ``result.json`` (``--score``): the last evaluation (default), the best checkpoint's
  final evaluation on fresh seeds, or the best evaluation.
- Normalised score = (score - low) / (high - low) per task, 0 for a uniformly random policy and 1 at the task's
  reference: ``low`` is the random policy's mean return over 20 seeded episodes of the task's env (run here), ``high``
  gymnasium's ``reward_threshold`` for the env (the score at which gymnasium calls it solved), else the runs'
  ``stop_value``; ``--norm TASK=LOW,HIGH`` sets either. The optimality gap is the mean shortfall below 1.

The estimators are rliable's (``rliable.metrics``); the stratified bootstrap (runs resampled with replacement within
each task, percentile intervals, as ``rliable.library.StratifiedBootstrap``) is done here in numpy, because
``rliable.library`` does not import with current ``arch`` and ``pandas`` releases.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ding_lite.errors import PlotInputError
from ding_lite.extras import install_hint
from ding_lite.plot.tasks import RANDOM_EPISODES, random_score, run_env_section, task_of
from ding_lite.utils.run_result import failure_line, run_failed

if TYPE_CHECKING:
    from ding_lite.plot.runs import Group

SCORES = {"last": "eval_return", "final_eval": "final_eval_return", "best": "best_eval_return"}  # --score -> key
METRICS = ("median", "IQM", "mean", "optimality gap")


@dataclass(frozen=True)
class Norm:
    """How one task's scores are normalised: ``(score - low) / (high - low)``, and where ``low`` and ``high`` came
    from."""

    task: str
    low: float
    high: float
    low_from: str
    high_from: str


@dataclass
class Aggregate:
    """Normalised scores: ``scores[label]`` is a ``(runs, tasks)`` matrix over ``tasks`` (in that order)."""

    tasks: list[str]
    norms: dict[str, Norm]
    scores: dict[str, np.ndarray]


def _estimators() -> dict[str, Callable[[np.ndarray], float]]:
    try:
        from rliable import metrics
    except ImportError:
        raise PlotInputError(f"--aggregate needs rliable: {install_hint('rliable')}") from None
    return {"median": metrics.aggregate_median, "IQM": metrics.aggregate_iqm, "mean": metrics.aggregate_mean,
            "optimality gap": metrics.aggregate_optimality_gap}


def parse_norms(specs: Sequence[str]) -> dict[str, tuple[float, float]]:
    """``--norm TASK=LOW,HIGH`` options as ``{task: (low, high)}``."""
    out = {}
    for spec in specs:
        task, sep, bounds = spec.partition("=")
        parts = bounds.split(",")
        try:
            low, high = (float(p) for p in parts) if len(parts) == 2 else (None, None)
        except ValueError:
            low = high = None
        if not sep or not task or low is None or high is None or low == high \
                or not (math.isfinite(low) and math.isfinite(high)):
            raise PlotInputError(f"--norm expects TASK=LOW,HIGH with two different finite numbers, got {spec!r}")
        out[task] = (low, high)
    return out


def collect_scores(groups: Sequence[Group], score: str = "last",
                   norms: Mapping[str, tuple[float, float]] | None = None) -> Aggregate:
    """Each group's normalised ``(runs, tasks)`` score matrix; every input is checked (a run without a score, a
    task a group lacks, unequal runs per task, a task without a reference) with a one-line error."""
    if score not in SCORES:
        raise PlotInputError(f"--score {score}: choose one of {', '.join(SCORES)}")
    norms = dict(norms or {})
    raw: dict[str, dict[str, list[float]]] = {}  # label -> task -> raw scores
    stops: dict[str, set[float]] = {}
    envs: dict[str, dict[str, Any]] = {}
    for g in groups:
        for r in g.runs:
            if run_failed(r.result):  # its last evaluation may be the diverged policy's: no score of the method
                raise PlotInputError(f"{r.path}: the run failed ({failure_line(r.result)}); --aggregate needs each "
                                     f"run's score (--score {score}): leave the run out, or resume it")
            value = r.result.get(SCORES[score])
            if value is None:
                why = "no result.json yet (still running?)" if not r.result else f"no {SCORES[score]!r} in it"
                raise PlotInputError(f"{r.path}: {why}; --aggregate needs each run's score (--score {score})")
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise PlotInputError(f"{r.path}: {SCORES[score]} in result.json is {value!r}, not a finite number; "
                                     f"--aggregate needs each run's score (--score {score}): leave the run out")
            env_cfg = run_env_section(r)
            task = task_of(env_cfg)[0]
            envs.setdefault(task, env_cfg)
            raw.setdefault(g.label, {}).setdefault(task, []).append(float(value))
            if r.result.get("stop_value") is not None:
                stops.setdefault(task, set()).add(float(r.result["stop_value"]))
    tasks = sorted({t for per_task in raw.values() for t in per_task})
    unknown = sorted(set(norms) - set(tasks))
    if unknown:
        raise PlotInputError(f"--norm names {', '.join(unknown)}, which no run is on; the tasks are "
                             f"{', '.join(tasks)}")
    for label, per_task in raw.items():
        _check_runs(label, per_task, tasks)
    resolved = {t: _norm(t, envs[t], norms.get(t), stops.get(t, set())) for t in tasks}
    return Aggregate(tasks, resolved, {label: _matrix(per_task, tasks, resolved) for label, per_task in raw.items()})


def _norm(task: str, env_cfg: Mapping[str, Any], given: tuple[float, float] | None, stops: set[float]) -> Norm:
    if given is not None:
        return Norm(task, given[0], given[1], "--norm", "--norm")
    threshold = task_of(env_cfg)[1]
    if threshold is not None:
        high, high_from = float(threshold), "gymnasium reward_threshold"
    elif len(stops) == 1:
        high, high_from = next(iter(stops)), "the runs' stop_value"
    else:
        raise PlotInputError(f"task {task}: no reference score (gymnasium registers no reward_threshold for it and "
                             f"its runs have {'different stop values' if stops else 'no stop_value'}): give "
                             f"--norm {task}=LOW,HIGH")
    random = random_score(env_cfg)
    if high == random:
        raise PlotInputError(f"task {task}: the random policy already scores the reference {high:g}: give "
                             f"--norm {task}=LOW,HIGH")
    return Norm(task, random, high, f"random policy, {RANDOM_EPISODES} episodes", high_from)


def _check_runs(label: str, per_task: Mapping[str, list[float]], tasks: Sequence[str]) -> None:
    missing = [t for t in tasks if t not in per_task]
    if missing:
        raise PlotInputError(f"group {label!r} has no run on {', '.join(missing)}: every group needs every task")
    counts = {t: len(per_task[t]) for t in tasks}
    if len(set(counts.values())) > 1:
        shown = ", ".join(f"{n} on {t}" for t, n in counts.items())
        raise PlotInputError(f"group {label!r} has {shown}: give each task the same number of runs (seeds)")


def _matrix(per_task: Mapping[str, list[float]], tasks: Sequence[str], norms: Mapping[str, Norm]) -> np.ndarray:
    return np.array([[(per_task[t][i] - norms[t].low) / (norms[t].high - norms[t].low) for t in tasks]
                     for i in range(len(per_task[tasks[0]]))])


def stratified_bootstrap(scores_RT: np.ndarray, statistic: Callable[[np.ndarray], Any], reps: int,
                         rng: np.random.Generator) -> np.ndarray:
    """``statistic`` of ``reps`` resamples of a ``(runs, tasks)`` matrix, each task's runs drawn with replacement
    on their own (the task strata are kept): an array of ``reps`` values (or rows)."""
    runs, tasks = scores_RT.shape
    index = rng.integers(0, runs, size=(reps, runs, tasks))
    resampled = np.take_along_axis(scores_RT[None], index, axis=1)  # (reps, runs, tasks)
    return np.array([statistic(s) for s in resampled])


def interval_estimates(agg: Aggregate, reps: int = 2000, seed: int = 0
                       ) -> dict[str, dict[str, tuple[float, float, float]]]:
    """``{label: {metric: (point, low, high)}}`` for :data:`METRICS`, with percentile 95% intervals of a stratified
    bootstrap."""
    estimators = _estimators()
    out = {}
    for label, scores in agg.scores.items():
        rng = np.random.default_rng(seed)
        point = np.array([estimators[m](scores) for m in METRICS])
        if len(scores) < 2:  # one run per task: every resample is that run, a zero-width "interval" says nothing
            out[label] = {m: (float(point[i]), math.nan, math.nan) for i, m in enumerate(METRICS)}
            continue
        boot = stratified_bootstrap(scores, lambda s: [estimators[m](s) for m in METRICS], reps, rng)
        low, high = np.percentile(boot, [2.5, 97.5], axis=0)
        out[label] = {m: (float(point[i]), float(low[i]), float(high[i])) for i, m in enumerate(METRICS)}
    return out


def performance_profiles(agg: Aggregate, taus: np.ndarray, reps: int = 2000, seed: int = 0
                         ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``{label: (profile, low, high)}`` over ``taus``: the fraction of all (run, task) scores above each tau, with
    stratified-bootstrap 95% bands (rliable's run-score distribution)."""
    out = {}
    for label, scores in agg.scores.items():
        rng = np.random.default_rng(seed)
        profile = (scores[..., None] > taus).mean(axis=(0, 1))
        boot = stratified_bootstrap(scores, lambda s: (s[..., None] > taus).mean(axis=(0, 1)), reps, rng)
        low, high = np.percentile(boot, [2.5, 97.5], axis=0)
        out[label] = (profile, low, high)
    return out


def profile_taus(agg: Aggregate) -> np.ndarray:
    """81 thresholds from 0 to a little above the best normalised score (at least 1)."""
    top = max(1.0, max(float(s.max()) for s in agg.scores.values()))
    return np.linspace(0.0, 1.05 * top, 81)


def _cell(point: float, low: float, high: float) -> str:
    if math.isnan(low):
        return f"{point:.2f} (no CI)"
    return f"{point:.2f} [{low:.2f}, {high:.2f}]"


def aggregate_tables(agg: Aggregate, intervals: Mapping[str, Mapping[str, tuple[float, float, float]]]) -> str:
    """Markdown: one row per group (its runs per task and each metric with its interval), then how each task was
    normalised."""
    head = ["group", "runs per task", *(f"{m} [95% CI]" for m in METRICS)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for label, scores in agg.scores.items():
        lines.append("| " + " | ".join([label, str(len(scores)), *(_cell(*intervals[label][m]) for m in METRICS)])
                     + " |")
    lines += ["", "| task | low (normalised 0) | high (normalised 1) |", "| --- | --- | --- |"]
    for t in agg.tasks:
        n = agg.norms[t]
        lines.append(f"| {t} | {n.low:.4g} ({n.low_from}) | {n.high:.4g} ({n.high_from}) |")
    return "\n".join(lines)


def draw_aggregate(agg: Aggregate, intervals: Mapping[str, Mapping[str, tuple[float, float, float]]],
                   profiles: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray]], taus: np.ndarray,
                   colors: Mapping[str, Any], title: str | None = None) -> Any:
    """The aggregate figure: one interval panel per metric (a bar per group from the interval's low to its high, a
    tick at the point estimate) and the performance profiles with their bands, each group in its colour."""
    from ding_lite.plot.figure import _matplotlib

    Figure, FigureCanvasAgg = _matplotlib()
    labels = list(agg.scores)
    fig = Figure(figsize=(13.0, 1.2 + 0.45 * len(labels) + 1.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(METRICS) + 1, width_ratios=[1.0] * len(METRICS) + [2.2])
    rows = range(len(labels) - 1, -1, -1)  # the first group on top
    for ax, metric in zip(axes[:-1], METRICS, strict=True):
        for row, label in zip(rows, labels, strict=True):
            point, low, high = intervals[label][metric]
            if not math.isnan(low):  # no bar for a group with one run per task: it has no interval
                ax.barh(row, high - low, left=low, height=0.6, color=colors[label], alpha=0.75)
            ax.plot([point, point], [row - 0.3, row + 0.3], color="black", lw=1.5)
        ax.set_yticks(list(rows), labels if ax is axes[0] else [""] * len(labels))
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.set(title=metric, xlabel="normalised score")
        ax.grid(axis="x", alpha=0.3)
    ax = axes[-1]
    for label in labels:
        profile, band_low, band_high = profiles[label]
        ax.plot(taus, profile, color=colors[label], lw=1.8, label=label)
        ax.fill_between(taus, band_low, band_high, color=colors[label], alpha=0.2, lw=0)
    tasks = f"{len(agg.tasks)} task{'s' * (len(agg.tasks) != 1)}"
    ax.set(xlabel="normalised score τ", ylabel="fraction of runs with score > τ", ylim=(-0.02, 1.02),
           title=f"performance profile over {tasks}")
    ax.axvline(1.0, color="0.5", ls=":", lw=1)
    ax.legend(fontsize="small")
    fig.suptitle(title or f"{tasks}: {', '.join(agg.tasks)} (95% stratified-bootstrap intervals)", fontsize="medium")
    return fig


def aggregate_pipeline(groups: Sequence[Group], output: Path, *, score: str = "last",
                       norms: Sequence[str] = (), reps: int = 2000, dpi: int = 150,
                       title: str | None = None) -> str:
    """Scores, intervals and profiles of ``groups`` over their tasks, drawn into ``output``; returns the markdown
    tables. Every input is checked before the figure is written."""
    from ding_lite.plot.figure import group_colors, save_figure

    if reps < 100:
        raise PlotInputError(f"--reps {reps}: use at least 100 bootstrap resamples (a few thousand for a paper)")
    agg = collect_scores(groups, score, parse_norms(norms))
    intervals = interval_estimates(agg, reps)
    taus = profile_taus(agg)
    profiles = performance_profiles(agg, taus, reps)
    save_figure(draw_aggregate(agg, intervals, profiles, taus, group_colors(groups), title), Path(output), dpi)
    return aggregate_tables(agg, intervals)

"""The figure of ``ding_lite -m plot``: one panel for the chosen metric, plus one panel per :data:`PANELS` entry
whose tags some run logged (per-variation returns of env-variation runs, Elo ratings of self-play runs).

What makes it paste-ready: axis labels from :data:`METRIC_LABELS` (the tag itself where a tag is unknown), one colour
per group in every panel (:func:`group_colors`), the stop value drawn only where it lies in the data's range
(:func:`stop_lines_to_draw`), and PNG at ``dpi`` or vector PDF/SVG with text kept as text.

matplotlib is used through ``Figure`` and the Agg canvas directly: no pyplot, no global backend switch in the
caller's process.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ding_lite.errors import PlotInputError
from ding_lite.extras import install_hint
from ding_lite.plot.runs import reached_stop_value
from ding_lite.utils.atomic import atomic_write
from ding_lite.utils.curves import band_over_seeds, hold_on_grid
from ding_lite.utils.events import EVAL_RETURN_ITER_TAG, EVAL_RETURN_TAG
from ding_lite.utils.run_result import run_failed

if TYPE_CHECKING:
    from ding_lite.plot.runs import Group, Run

STOP_METRICS = (EVAL_RETURN_TAG, EVAL_RETURN_ITER_TAG)  # metrics that the stop value is a level of
STOP_LINE_MARGIN = 0.1  # the stop line is drawn where it lies within the data's range widened by this share of it
DEFAULT_DPI = 150

# y labels of the tags the pipelines write: (pattern, label; \g<key> is the pattern's key group). First match wins.
METRIC_LABELS: tuple[tuple[str, str], ...] = (
    (r"eval/return_mean(_iter)?", "evaluation return (mean over episodes)"),
    (r"eval/return_std", "evaluation return, std over episodes"),
    (r"eval/variation_(?P<key>[^/]+)/return_mean", r"evaluation return, variation \g<key>"),
    (r"eval/variation_(?P<key>[^/]+)/success_rate", r"success rate, variation \g<key>"),
    (r"collect/episode_return", "training episode return"),
    (r"collect/policy_lag", "policy lag (train iterations)"),
    (r"selfplay/eval_win_rate/(?P<key>.+)", r"win rate against \g<key>"),
    (r"selfplay/win_rate/(?P<key>.+)", r"win rate against snapshot \g<key> (training games)"),
    (r"selfplay/elo_learner", "Elo rating of the learner"),
    (r"selfplay/elo/(?P<key>.+)", r"Elo rating of \g<key>"),
    (r"selfplay/pool_size", "opponent snapshots in the pool"),
    (r"selfplay/sample_prob/(?P<key>.+)", r"probability of facing \g<key>"),
    (r"speed/env_steps_per_second", "env steps per second"),
    (r"speed/train_samples_per_second", "train samples per second"),
    (r"speed/collector(?P<key>\d+)_env_steps_per_second", r"env steps per second, collector \g<key>"),
    (r"speed/broadcast_ms", "weight broadcast (ms)"),
    (r"env/restarts", "env worker restarts"),
    (r"env/restart_rate", "env worker restarts per 1,000 env steps"),
    (r"parallel/actor_restarts", "Ray actor restarts"),
    (r"learn/loss", "loss"),
    (r"learn/total_loss", "total loss"),
    (r"learn/policy_loss", "policy loss"),
    (r"learn/value_loss", "value loss"),
    (r"learn/entropy", "policy entropy"),
    (r"learn/approx_kl", "approximate KL divergence"),
    (r"learn/clipfrac", "fraction of clipped ratios"),
    (r"learn/q_mean", "mean Q value"),
    (r"learn/(?P<key>.+)", r"\g<key>"),
)


def metric_label(tag: str) -> str:
    """The axis label of a tag (``eval/return_mean`` -> ``evaluation return (mean over episodes)``); the tag itself
    where :data:`METRIC_LABELS` does not know it."""
    for pattern, label in METRIC_LABELS:
        m = re.fullmatch(pattern, tag)
        if m:
            return m.expand(label)
    return tag


def main_label(groups: Sequence[Group], metric: str) -> str:
    """The metric panel's y label: :func:`metric_label`, except that the eval return of self-play runs is their win
    rate (wins + draws / 2) against the first evaluation opponent, named from their ``result.json``."""
    finished = [r.result for g in groups for r in g.runs if r.result and not run_failed(r.result)]
    tables = [res.get("eval_table") for res in finished]
    if metric in STOP_METRICS and finished and all(tables):
        opponents = {next(iter(t)).split("@")[0] for t in tables if t}
        if len(opponents) == 1:
            return f"win rate against {opponents.pop()} (evaluation)"
    return metric_label(metric)


def x_label(tag: str, x: str, offset: bool = False) -> str:
    """The x label: wall time, train iterations (``learn/*`` and ``*_iter`` tags) or env steps."""
    if x == "wall_time":
        return "wall time since the run started (s)"
    if tag.startswith("learn/") or tag.endswith("_iter") or tag in ("speed/broadcast_ms", "collect/policy_lag"):
        return "train iterations"
    return "env steps (all phases)" if offset else "env steps"


def group_colors(groups: Sequence[Any]) -> dict[str, Any]:
    """One colour per group label (matplotlib's default cycle, in group order), used in every panel."""
    import matplotlib

    cycle = [c["color"] for c in matplotlib.rcParams["axes.prop_cycle"]]
    return {g.label: cycle[i % len(cycle)] for i, g in enumerate(groups)}


def stop_lines_to_draw(stop_values: Sequence[float], low: float, high: float, force: bool = False) -> list[float]:
    """The stop values worth a line: those within the data's range ``[low, high]`` widened by
    :data:`STOP_LINE_MARGIN` of it on each side (a "never stop" value of 1e9 on a task scoring 200 would squash
    the curves); all of them with ``force``.

    Example: stop_lines_to_draw([195, 1000], 9.0, 190.0) == [195].
    """
    if force:
        return sorted(set(stop_values))
    span = max(high - low, 1e-9)
    return sorted({v for v in stop_values if low - STOP_LINE_MARGIN * span <= v <= high + STOP_LINE_MARGIN * span})


@dataclass(frozen=True)
class Panel:
    """An extra panel, drawn when some run logged a tag matching ``pattern``; its ``key`` group names the line.

    ``kind``: ``lines`` (a line per group and key, keys told apart by line style) or ``variations`` (per group the
    mean over the keys with a band from the worst to the best key, and the worst few keys named). A pipeline that
    logs a new family of tags gets its panel by adding an entry to :data:`PANELS`.
    """

    title: str
    pattern: re.Pattern
    ylabel: str
    kind: str = "lines"


PANELS = (
    Panel("return per env variation", re.compile(r"^eval/variation_(?P<key>[^/]+)/return_mean$"),
          "evaluation return", "variations"),
    Panel("Elo rating (self-play)", re.compile(r"^selfplay/elo_(?P<key>.+)$"), "Elo rating"),
)


def panel_keys(groups: Sequence[Group], panel: Panel) -> dict[str, str]:
    """``{key: tag}`` of the tags matching ``panel`` in any run, sorted by key (numerically where keys are ids)."""
    found = {}
    for g in groups:
        for r in g.runs:
            for tag in r.scalars.series:
                m = panel.pattern.match(tag)
                if m:
                    found[m.group("key")] = tag
    return dict(sorted(found.items(), key=lambda kv: (not kv[0].isdigit(), int(kv[0]) if kv[0].isdigit() else 0,
                                                      kv[0])))


def _x_values(run: Run, tag: str, x: str) -> list[float]:
    s = run.scalars.series[tag]
    if x == "wall_time":
        start = run.scalars.start_time if run.scalars.start_time is not None else s.wall_times[0]
        return [t - start for t in s.wall_times]
    return [float(v) + run.x_offset for v in s.steps]


def group_curve(group: Group, tag: str, x: str, band: str) -> tuple[np.ndarray, Any, list[tuple[list, list]]]:
    """The group's grid, :class:`~ding_lite.utils.curves.Band` and raw per-seed ``(xs, ys)`` for ``tag``.

    A run that ended by reaching its stop value is held at its last value up to the longest run's end; a run that
    ran out of budget (or is still running) leaves the mean where its data ends."""
    raw = [(_x_values(r, tag, x), r.scalars.series[tag].values, reached_stop_value(r.result)) for r in group.runs
           if tag in r.scalars.series]
    grid = np.unique(np.concatenate([np.asarray(xs, dtype=float) for xs, _, _ in raw]))
    values_SG = np.stack([hold_on_grid(xs, ys, grid, hold) for xs, ys, hold in raw])
    return grid, band_over_seeds(values_SG, band), [(xs, ys) for xs, ys, _ in raw]


def _draw_group(ax: Any, group: Group, tag: str, x: str, band: str, color: Any) -> list[float]:
    """The group's mean line, band and faint seed lines; returns every y drawn (for the stop-line rule)."""
    grid, stats, raw = group_curve(group, tag, x, band)
    n = len(raw)
    ax.plot(grid, stats.mean, color=color, lw=1.8, drawstyle="steps-post",
            label=f"{group.label} ({n} seed{'s' * (n > 1)})")
    ax.fill_between(grid, stats.low, stats.high, color=color, alpha=0.2, step="post", lw=0)
    for xs, ys in raw:
        ax.plot(xs, ys, color=color, lw=0.6, alpha=0.35, drawstyle="steps-post")
    return [float(y) for _, ys in raw for y in ys]


def build_figure(groups: Sequence[Group], *, x: str, metric: str, band: str, title: str | None = None,
                 stop_line: bool = False, worst: int = 3) -> Any:
    """The figure (a matplotlib ``Figure`` on an Agg canvas): the metric panel (mean line and band per group, faint
    per-seed lines, the stop value where :func:`stop_lines_to_draw` keeps it, or always with ``stop_line``) and the
    extra panels of :data:`PANELS`, each group in its colour everywhere."""
    Figure, FigureCanvasAgg = _matplotlib()
    extras = [(p, keys) for p in PANELS if (keys := panel_keys(groups, p))]
    fig = Figure(figsize=(6.4 * (1 + len(extras)), 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 1 + len(extras), squeeze=False)[0]
    colors = group_colors(groups)
    ax = axes[0]
    drawn = [y for g in groups for y in _draw_group(ax, g, metric, x, band, colors[g.label])]
    if metric in STOP_METRICS:
        stops = [r.result["stop_value"] for g in groups for r in g.runs if r.result.get("stop_value") is not None]
        for v in stop_lines_to_draw(stops, min(drawn), max(drawn), force=stop_line):
            ax.axhline(v, color="0.3", ls="--", lw=1, label=f"stop value {v:g}")
    band_name = "standard error" if band == "se" else "bootstrap 95% interval"
    offset = any(r.x_offset for g in groups for r in g.runs)
    ax.set(xlabel=x_label(metric, x, offset), ylabel=main_label(groups, metric),
           title=f"mean over seeds, band: {band_name}")
    ax.legend(fontsize="small")
    for ax, (panel, keys) in zip(axes[1:], extras, strict=True):
        if panel.kind == "variations":
            _draw_variations(ax, groups, panel, keys, x, band, colors, worst)
        else:
            _draw_lines(ax, groups, panel, keys, x, band, colors)
    if title:
        fig.suptitle(title)
    return fig


def _matplotlib() -> tuple[Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotInputError(f"-m plot needs matplotlib: {install_hint('matplotlib')}") from None
    return Figure, FigureCanvasAgg


def save_figure(fig: Any, output: Path, dpi: int = DEFAULT_DPI) -> None:
    """Write ``fig`` atomically in the format of ``output``'s suffix: PNG at ``dpi``; PDF and SVG as vectors with
    their text kept as text (TrueType fonts in PDFs, ``<text>`` in SVGs), so a paper's editor can restyle it."""
    import matplotlib

    fmt = output.suffix.lower().lstrip(".")
    with matplotlib.rc_context({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none"}):
        atomic_write(output, lambda f: fig.savefig(f, format=fmt, dpi=dpi))


def draw_figure(groups: Sequence[Group], output: Path, *, x: str, metric: str, band: str, title: str | None = None,
                stop_line: bool = False, worst: int = 3, dpi: int = DEFAULT_DPI) -> None:
    """:func:`build_figure`, then :func:`save_figure` into ``output``."""
    save_figure(build_figure(groups, x=x, metric=metric, band=band, title=title, stop_line=stop_line, worst=worst),
                output, dpi)


def _sub(group: Group, tag: str) -> Group:
    return type(group)(group.label, [r for r in group.runs if tag in r.scalars.series])


def _draw_lines(ax: Any, groups: Sequence[Group], panel: Panel, keys: dict[str, str], x: str, band: str,
                colors: dict[str, Any]) -> None:
    styles = ["-", "--", ":", "-."]
    for g in groups:
        for ki, (key, tag) in enumerate(keys.items()):
            sub = _sub(g, tag)
            if sub.runs:
                label = f"{g.label} · {key}" if len(keys) > 1 else g.label
                grid, stats, _ = group_curve(sub, tag, x, band)
                ax.plot(grid, stats.mean, color=colors[g.label], ls=styles[ki % len(styles)], drawstyle="steps-post",
                        label=label)
                ax.fill_between(grid, stats.low, stats.high, color=colors[g.label], alpha=0.15, step="post", lw=0)
    ax.set(xlabel=x_label(next(iter(keys.values())), x), ylabel=panel.ylabel, title=panel.title)
    ax.legend(fontsize="small")


def variation_curves(group: Group, keys: dict[str, str], x: str, band: str) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each variation's curve (mean over the group's seeds) on one grid: ``(grid, {key: values})``."""
    curves = {key: group_curve(_sub(group, tag), tag, x, band)[:2] for key, tag in keys.items()
              if _sub(group, tag).runs}
    grid = np.unique(np.concatenate([g for g, _ in curves.values()])) if curves else np.zeros(0)
    return grid, {key: hold_on_grid(list(g), list(b.mean), grid, True) for key, (g, b) in curves.items()}


def worst_variations(curves: dict[str, np.ndarray], k: int) -> list[str]:
    """The ``k`` variations with the lowest last value (ties by key order)."""
    def last(values: np.ndarray) -> float:
        finite = values[~np.isnan(values)]
        return float(finite[-1]) if len(finite) else np.inf

    return sorted(curves, key=lambda key: last(curves[key]))[:k]


def _draw_variations(ax: Any, groups: Sequence[Group], panel: Panel, keys: dict[str, str], x: str, band: str,
                     colors: dict[str, Any], worst: int) -> None:
    styles = ["--", ":", "-."]
    for g in groups:
        grid, curves = variation_curves(g, keys, x, band)
        if not curves:
            continue
        values_VG = np.stack(list(curves.values()))
        mean = np.nanmean(values_VG, axis=0)
        color = colors[g.label]
        ax.plot(grid, mean, color=color, lw=1.8, drawstyle="steps-post",
                label=f"{g.label}: mean of {len(curves)} variations")
        ax.fill_between(grid, np.nanmin(values_VG, axis=0), np.nanmax(values_VG, axis=0), color=color, alpha=0.15,
                        step="post", lw=0)
        for i, key in enumerate(worst_variations(curves, worst) if len(curves) > 1 else []):
            ax.plot(grid, curves[key], color=color, lw=0.9, ls=styles[i % len(styles)], drawstyle="steps-post",
                    label=f"{g.label}: variation {key}")
    ax.set(xlabel=x_label(next(iter(keys.values())), x), ylabel=panel.ylabel,
           title=f"{panel.title} (band: worst to best, the {worst} worst named)")
    ax.legend(fontsize="small")

"""The figure of ``ding_lite -m plot``: one panel for the chosen metric, plus one panel per :data:`PANELS` entry
whose tags some run logged (per-variation returns of GSL runs, Elo ratings of self-play runs).

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
from ding_lite.utils.atomic import atomic_write
from ding_lite.utils.curves import band_over_seeds, hold_on_grid

if TYPE_CHECKING:
    from ding_lite.entry.plot import Group, Run

STOP_METRICS = ("eval/return_mean", "eval/return_mean_iter")  # metrics that the stop value is a level of


@dataclass(frozen=True)
class Panel:
    """An extra panel, drawn when some run logged a tag matching ``pattern``; its ``key`` group names the line.

    A pipeline that logs a new family of tags gets its panel by adding an entry to :data:`PANELS`.
    """

    title: str
    pattern: re.Pattern
    ylabel: str


PANELS = (
    Panel("return per env variation (GSL)", re.compile(r"^eval/variation_(?P<key>[^/]+)/return_mean$"), "return"),
    Panel("Elo rating (self-play)", re.compile(r"^selfplay/elo_(?P<key>.+)$"), "Elo"),
)


def panel_keys(groups: Sequence[Group], panel: Panel) -> dict[str, str]:
    """``{key: tag}`` of the tags matching ``panel`` in any run, sorted by key."""
    found = {}
    for g in groups:
        for r in g.runs:
            for tag in r.scalars.series:
                m = panel.pattern.match(tag)
                if m:
                    found[m.group("key")] = tag
    return dict(sorted(found.items()))


def _x_values(run: Run, tag: str, x: str) -> list[float]:
    s = run.scalars.series[tag]
    if x == "wall_time":
        start = run.scalars.start_time if run.scalars.start_time is not None else s.wall_times[0]
        return [t - start for t in s.wall_times]
    return [float(v) for v in s.steps]


def group_curve(group: Group, tag: str, x: str, band: str) -> tuple[np.ndarray, Any, list[tuple[list, list]]]:
    """The group's grid, :class:`~ding_lite.utils.curves.Band` and raw per-seed ``(xs, ys)`` for ``tag``.

    A run that ended by reaching its stop value is held at its last value up to the longest run's end; a run that
    ran out of budget (or is still running) leaves the mean where its data ends."""
    raw = [(_x_values(r, tag, x), r.scalars.series[tag].values, bool(r.result.get("stop"))) for r in group.runs
           if tag in r.scalars.series]
    grid = np.unique(np.concatenate([np.asarray(xs, dtype=float) for xs, _, _ in raw]))
    values_SG = np.stack([hold_on_grid(xs, ys, grid, hold) for xs, ys, hold in raw])
    return grid, band_over_seeds(values_SG, band), [(xs, ys) for xs, ys, _ in raw]


def _draw_group(ax: Any, group: Group, tag: str, x: str, band: str, label: str, color: Any,
                show_seeds: bool) -> None:
    grid, stats, raw = group_curve(group, tag, x, band)
    n = len(raw)
    ax.plot(grid, stats.mean, color=color, lw=1.8, drawstyle="steps-post", label=f"{label} ({n} seed{'s' * (n > 1)})")
    ax.fill_between(grid, stats.low, stats.high, color=color, alpha=0.2, step="post", lw=0)
    if show_seeds:
        for xs, ys in raw:
            ax.plot(xs, ys, color=color, lw=0.6, alpha=0.35, drawstyle="steps-post")


def _x_label(metric: str, x: str) -> str:
    if x == "wall_time":
        return "wall time since the run started (s)"
    return "train iterations" if metric.startswith("learn/") or metric.endswith("_iter") else "env steps"


def draw_figure(groups: Sequence[Group], output: Path, *, x: str, metric: str, band: str,
                title: str | None = None) -> None:
    """Draw the metric panel (mean line and band per group, faint per-seed lines, stop value lines) and the
    extra panels, and write ``output`` atomically (format from its suffix)."""
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotInputError("-m plot needs matplotlib: pip install 'ding_lite[plot]'") from None
    extras = [(p, keys) for p in PANELS if (keys := panel_keys(groups, p))]
    fig = Figure(figsize=(6.4 * (1 + len(extras)), 4.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 1 + len(extras), squeeze=False)[0]
    colors = [c["color"] for c in matplotlib.rcParams["axes.prop_cycle"]]
    ax = axes[0]
    for i, g in enumerate(groups):
        _draw_group(ax, g, metric, x, band, g.label, colors[i % len(colors)], show_seeds=True)
    if metric in STOP_METRICS:
        stops = sorted({r.result["stop_value"] for g in groups for r in g.runs
                        if r.result.get("stop_value") is not None})
        for v in stops:
            ax.axhline(v, color="0.3", ls="--", lw=1, label=f"stop value {v:g}")
    band_name = "standard error" if band == "se" else "bootstrap 95% interval"
    ax.set(xlabel=_x_label(metric, x), ylabel=metric, title=f"{metric} (mean over seeds, band: {band_name})")
    ax.legend(fontsize="small")
    for ax, (panel, keys) in zip(axes[1:], extras, strict=True):
        _draw_panel(ax, groups, panel, keys, x, band, colors)
    if title:
        fig.suptitle(title)
    fmt = output.suffix.lower().lstrip(".")
    atomic_write(output, lambda f: fig.savefig(f, format=fmt, dpi=110))


def _draw_panel(ax: Any, groups: Sequence[Group], panel: Panel, keys: dict[str, str], x: str, band: str,
                colors: list) -> None:
    styles = ["-", "--", ":", "-."]
    for gi, g in enumerate(groups):
        for ki, (key, tag) in enumerate(keys.items()):
            sub = type(g)(g.label, [r for r in g.runs if tag in r.scalars.series])
            if sub.runs:
                label = f"{g.label} · {key}" if len(groups) > 1 else key
                grid, stats, _ = group_curve(sub, tag, x, band)
                color = colors[ki % len(colors)]
                ax.plot(grid, stats.mean, color=color, ls=styles[gi % len(styles)], drawstyle="steps-post",
                        label=label)
                ax.fill_between(grid, stats.low, stats.high, color=color, alpha=0.15, step="post", lw=0)
    ax.set(xlabel=_x_label(next(iter(keys.values())), x), ylabel=panel.ylabel, title=panel.title)
    ax.legend(fontsize="small")

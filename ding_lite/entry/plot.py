"""``ding_lite -m plot``: learning curves of experiment folders, grouped over seeds, and a markdown summary; with
``--aggregate``, methods compared over several tasks.

Reading and grouping live in :mod:`ding_lite.plot.runs`; the figure is drawn by :mod:`ding_lite.plot.figure`
(matplotlib, imported only when a figure is made, so that ``import ding_lite`` stays light), the aggregate one by
:mod:`ding_lite.plot.aggregate`.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ding_lite.errors import PlotInputError
from ding_lite.plot.runs import FIGURE_SUFFIXES, X_AXES, check_metric, collect_groups, summary_table
from ding_lite.utils.cli_args import OneLineParser
from ding_lite.utils.curves import BANDS
from ding_lite.utils.events import EVAL_RETURN_TAG


def plot_pipeline(exp_dirs: Sequence[str | Path], output: str | Path = "plot.png", *, x: str = "env_step",
                  metric: str = "eval/return_mean", groups: Sequence[str] = (), band: str = "se",
                  title: str | None = None, dpi: int = 150, stop_line: bool = False, worst: int = 3,
                  aggregate: bool = False, score: str = "last", norms: Sequence[str] = (), reps: int = 2000) -> str:
    """Draw the curves of ``exp_dirs`` (and ``groups``, ``LABEL=DIR[,DIR...]``) into ``output``; returns the
    markdown summary. Every input is checked before the figure file is written.

    ``dpi``: PNG resolution; ``stop_line``: draw the stop value even outside the data's range; ``worst``: the
    per-variation panel names this many worst variations. With ``aggregate`` the figure and summary compare the
    groups over the tasks of their runs instead (:mod:`ding_lite.plot.aggregate`: ``score``, ``norms``
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
        from ding_lite.plot.aggregate import aggregate_pipeline

        return aggregate_pipeline(found, output, score=score, norms=norms, reps=reps, dpi=dpi, title=title)
    check_metric(found, metric)
    from ding_lite.plot.figure import draw_figure

    draw_figure(found, output, x=x, metric=metric, band=band, title=title, stop_line=stop_line, worst=worst, dpi=dpi)
    return summary_table(found)


def build_plot_parser() -> argparse.ArgumentParser:
    """The ``ding_lite -m plot`` command line (its own parser: it takes folders, not a config)."""
    parser = OneLineParser(prog="ding_lite -m plot", description="Learning curves of experiment folders, grouped "
                            "over seeds, with a markdown summary on stdout.")
    parser.add_argument("-m", "--mode", choices=["plot"], default="plot", help=argparse.SUPPRESS)
    parser.add_argument("exp_dirs", nargs="*", metavar="EXP_DIR", help="experiment folders, or folders holding them; "
                        "<name>_seed<K> folders are grouped by <name>")
    parser.add_argument("-o", "--output", default="plot.png", help="figure file: .png, .svg or .pdf "
                        "(default plot.png)")
    parser.add_argument("--x", default="env_step", choices=X_AXES, help="x axis: the logged step (env steps for "
                        "eval/*, train iterations for learn/*) or seconds since the run started")
    parser.add_argument("--metric", default=EVAL_RETURN_TAG, help="tensorboard tag to draw "
                        f"(default {EVAL_RETURN_TAG})")
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

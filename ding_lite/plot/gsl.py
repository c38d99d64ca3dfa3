"""A GSL experiment folder for ``ding_lite -m plot``: the generalist's two phases as one run on one env-step axis.

``<exp>/`` of ``-m gsl`` holds a sub-experiment per phase (``phase1_generalist/``, ``specialist_k/``, ``demos/``,
``phase2_generalist/``). Given the top folder, ``-m plot`` draws the generalist: phase I's evaluations as logged, then
phase II's shifted by every env step spent before it (phase I, each specialist, the demo roll-outs), so that a GSL
curve and a PPO curve compare at equal total env steps. Tags logged per train iteration (``learn/*``, ``*_iter``)
are shifted by phase I's train iterations instead. The specialists' own curves (returns on their few variations) are
the sub-folders' to plot.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ding_lite.errors import PlotInputError
from ding_lite.gsl.plateau import DEMOS, PHASE1, PHASE2, SPECIALISTS_GLOB
from ding_lite.plot.folder import Run, is_run_folder, load_run_folder
from ding_lite.utils.events import RunScalars, ScalarSeries
from ding_lite.utils.run_folder import RESULT_FILE
from ding_lite.utils.run_result import run_failed


def is_gsl_folder(path: Path) -> bool:
    """A folder that ``-m gsl`` wrote: its phase-I sub-experiment is there (from the run's first evaluation on)."""
    return (path / PHASE1).is_dir() and is_run_folder(path / PHASE1)


def load_gsl_run(path: Path) -> Run:
    """The generalist of the GSL run in ``path`` as one :class:`Run`. Its ``result`` is phase II's with the env steps
    counted from the start of phase I (GSL's total), and empty while the GSL run is not finished; a GSL run whose
    phase (or specialist) failed has that phase's failed result."""
    phase1 = load_run_folder(path / PHASE1)
    if not is_run_folder(path / PHASE2):
        specialists = [_read_json(f / RESULT_FILE) for f in sorted(path.glob(SPECIALISTS_GLOB))]
        failed = [r for r in (phase1.result, *specialists) if run_failed(r)]
        return Run(path, phase1.scalars, failed[0] if failed else {})
    phase2 = load_run_folder(path / PHASE2)
    env_offset = env_steps_before_phase2(path)
    iter_offset = int(phase1.result.get("train_iter", _last_iter(phase1.scalars)))
    scalars = join_scalars(phase1.scalars, phase2.scalars, env_offset, iter_offset)
    top = _read_json(path / RESULT_FILE)
    result: dict[str, Any] = {}
    if phase2.result and ("summary" in top or run_failed(phase2.result)):  # the whole GSL run finished, or failed
        result = {**phase2.result, "env_step": env_offset + int(phase2.result["env_step"]),
                  "train_iter": iter_offset + int(phase2.result.get("train_iter", 0)),
                  "wall_seconds": top.get("wall_seconds", phase2.result.get("wall_seconds"))}
    return Run(path, scalars, result)


def env_steps_before_phase2(path: Path) -> int:
    """Env steps of phase I, every specialist and the demo roll-outs, read from their own files (the numbers the
    top ``result.json`` sums into ``env_steps.total``)."""
    folders = [path / PHASE1] + sorted(path.glob(SPECIALISTS_GLOB), key=lambda p: int(p.name.rsplit("_", 1)[-1]))
    steps = 0
    for folder in folders:
        result = _read_json(folder / RESULT_FILE)
        if "env_step" not in result:
            raise PlotInputError(f"{folder} has no finished result.json, but {path / PHASE2} exists: the GSL run "
                                 f"in {path} is inconsistent (resume it with -m gsl --resume)")
        steps += int(result["env_step"])
    return steps + int(_read_json(path / DEMOS / "summary.json").get("env_step", 0))


def join_scalars(first: RunScalars, second: RunScalars, env_offset: int, iter_offset: int) -> RunScalars:
    """``first``'s series followed by ``second``'s, whose steps are shifted by ``iter_offset`` for tags logged per
    train iteration and by ``env_offset`` for the others (logged per env step)."""
    series: dict[str, ScalarSeries] = {}
    for tag in dict.fromkeys([*first.series, *second.series]):
        a, b = first.series.get(tag, ScalarSeries()), second.series.get(tag, ScalarSeries())
        offset = iter_offset if is_iteration_tag(tag) else env_offset
        series[tag] = ScalarSeries(a.steps + [s + offset for s in b.steps], a.values + b.values,
                                   a.wall_times + b.wall_times)
    start = first.start_time if first.start_time is not None else second.start_time
    return RunScalars(series, start)


def is_iteration_tag(tag: str) -> bool:
    """Tags the pipelines log at the train iteration rather than the env step."""
    return tag.startswith("learn/") or tag.endswith("_iter")


def _last_iter(scalars: RunScalars) -> int:
    steps = [s for tag, series in scalars.series.items() if is_iteration_tag(tag) for s in series.steps]
    return max(steps, default=0)


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise PlotInputError(f"cannot read {path}: {exc}") from None

"""The report of a benchmark suite (``benchmarks/zoo.py``): tables, aggregate scores and figures from the runs' curves.

Per run: the final return (the mean of the last 3 evaluations), the training seconds and env steps to the first
evaluation at or above the published reference, the wall time. Per task, side and route: the median and range over
seeds. Over tasks: the interquartile mean and the median of normalised scores ``(final - random) / (reference -
random)`` with stratified-bootstrap 95% intervals (Agarwal et al. 2021, ``rliable``; 2,000 resamples). Written to
``out`` (``summary.json``, the curves as ``runs/*.jsonl``, ``curves.png``, ``aggregate.png``) and into the suite's
block of the docs page.
"""
from __future__ import annotations

import functools
import json
import math
import re
import shutil
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.zoo import CURVE, DONE, FINAL_EVALS, Plan, RunSpec

BOOTSTRAP_REPS = 2000


@dataclass
class RunData:
    spec: RunSpec
    curve: list[dict[str, Any]]  # the periodic evaluations, in env-step order
    final: dict[str, Any] | None  # the run's final evaluation (suites that keep it)
    done: dict[str, Any] | None  # done.json (None: unfinished)

    @property
    def group(self) -> str:
        return f"{self.spec.side}-{self.spec.route}"

    def final_return(self) -> float | None:
        if len(self.curve) < FINAL_EVALS:
            return None
        return statistics.mean(r["return_mean"] for r in self.curve[-FINAL_EVALS:])

    def time_to(self, value: float) -> tuple[float, int] | None:
        """Training seconds (from the first evaluation, at env step 0, after every side's setup; evaluations
        excluded) and env steps of the first evaluation with a mean return of at least ``value``."""
        hit = next((r for r in self.curve if r["return_mean"] >= value), None)
        return None if hit is None else (hit["train_seconds"] - self.curve[0]["train_seconds"], hit["env_step"])

    def wall_seconds(self) -> float | None:
        """The pipeline's own wall time where the run reports it (ding_lite's ``result.json``) and ran in one go,
        else training plus evaluation seconds of the curve (a resumed run's pipeline timed its last part only)."""
        if self.done and self.done.get("wall_seconds") is not None and not self.done.get("resumed"):
            return float(self.done["wall_seconds"])
        if not self.curve:
            return None
        last = self.final or self.curve[-1]
        return last["train_seconds"] + sum(r["eval_seconds"] for r in self.curve) + \
            (self.final["eval_seconds"] if self.final else 0.0)


def load_run(spec: RunSpec) -> RunData:
    folder = Path(spec.folder)
    lines = [json.loads(x) for x in (folder / CURVE).read_text().splitlines() if x.strip()] \
        if (folder / CURVE).is_file() else []
    by_step: dict[int, dict[str, Any]] = {}
    for line in lines:
        if not line.get("final"):
            by_step[line["env_step"]] = line  # a resumed run's repeat of a step: the later one
    finals = [line for line in lines if line.get("final")]
    done = json.loads((folder / DONE).read_text()) if (folder / DONE).is_file() else None
    return RunData(spec, [by_step[k] for k in sorted(by_step)], finals[-1] if finals else None, done)


def _median_range(values: Sequence[float], fmt: str = ",.0f") -> str:
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{med:{fmt}} ({min(values):{fmt}} to {max(values):{fmt}})" if len(values) > 1 else f"{med:{fmt}}"


def task_rows(plan: Plan, runs: list[RunData]) -> list[dict[str, Any]]:
    """One row per task, side and route: seeds, finals, median and range, times to the reference."""
    rows = []
    for task in plan.suite.tasks:
        for group in dict.fromkeys(r.group for r in runs if r.spec.task == task.name):
            mine = [r for r in runs if r.spec.task == task.name and r.group == group]
            # the final return of finished runs only: an unfinished run's last evaluations are listed apart
            finals = [f for r in mine if r.done is not None and (f := r.final_return()) is not None]
            partial = [(r.spec.seed, r.curve[-1]["env_step"], f) for r in mine
                       if r.done is None and (f := r.final_return()) is not None]
            # an unfinished run that has not reached the reference yet is unknown, not infinitely slow
            hits = [h for r in mine if (h := r.time_to(task.reference.value)) is not None or r.done is not None]
            walls = [w for r in mine if r.done and (w := r.wall_seconds()) is not None]
            rows.append({
                "task": task.name, "group": group, "seeds": [r.spec.seed for r in mine],
                "finished": sum(r.done is not None for r in mine),
                "env_steps": max((r.curve[-1]["env_step"] for r in mine if r.curve), default=0),
                "finals": finals, "median_final": statistics.median(finals) if finals else None,
                "partial": partial,
                "reference": task.reference.value, "reference_source": task.reference.source,
                "reference_url": task.reference.url,
                # a seed that never reached the reference counts as infinitely slow (the median may still exist)
                "seconds_to_reference": [h[0] if h else math.inf for h in hits],
                "steps_to_reference": [h[1] if h else None for h in hits],
                "median_seconds_to_reference": statistics.median([h[0] if h else math.inf for h in hits])
                if hits else None,
                "wall_seconds": walls, "final_evals": [r.final["return_mean"] for r in mine if r.final],
                # a resumed run's CPU time is its last part's: left out
                "cpu_seconds": [r.done["cpu_seconds"] for r in mine
                                if r.done and r.done.get("cpu_seconds") and not r.done.get("resumed")],
                "loads": [r.curve[-1]["load"] for r in mine if r.curve],
            })
    return rows


def speed_ratios(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Per task: ding_lite's median training seconds to the reference over the peer's (same task, first route)."""
    out = {}
    for task in dict.fromkeys(r["task"] for r in rows):
        mine = [r for r in rows if r["task"] == task]
        ours = next((r for r in mine if r["group"].startswith("ding_lite-")), None)
        peer = next((r for r in mine if not r["group"].startswith("ding_lite-")), None)
        if ours and peer and ours["median_seconds_to_reference"] is not None and \
                peer["median_seconds_to_reference"] not in (None, math.inf):
            out[task] = ours["median_seconds_to_reference"] / peer["median_seconds_to_reference"]
    return out


def _functions(x: Any) -> Any:
    import numpy as np
    from rliable import metrics

    return np.array([metrics.aggregate_iqm(x), metrics.aggregate_median(x), metrics.aggregate_mean(x)])


def interval_estimates(matrices: dict[str, Any], reps: int = BOOTSTRAP_REPS) -> tuple[dict[str, Any], dict[str, Any]]:
    """Point estimates and 95% stratified-bootstrap percentile intervals of IQM, median and mean for each
    ``(runs, tasks)`` score matrix: ``rliable.library.get_interval_estimates``, or :func:`stratified_bootstrap`
    where rliable's ``arch`` dependency fails to import (arch 7.2 with pandas 3)."""
    rly = _rliable_library()
    if rly is None:
        return stratified_bootstrap(matrices, reps)
    points, intervals = rly.get_interval_estimates(matrices, _functions, reps=reps)
    return points, {k: (v[0], v[1]) for k, v in intervals.items()}


@functools.cache
def _rliable_library() -> Any:
    """``rliable.library``, or None where it does not import (tried once: a failed import is not cached by Python)."""
    try:
        from rliable import library
    except Exception:  # noqa: BLE001 - any import failure of arch
        return None
    return library


def stratified_bootstrap(matrices: dict[str, Any], reps: int = BOOTSTRAP_REPS,
                         seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    """rliable's interval procedure: each resample draws the runs of every task with replacement, within that
    task (stratified), and the 2.5 and 97.5 percentiles of the aggregates over the resamples bound the interval."""
    import numpy as np

    rng = np.random.default_rng(seed)
    points, intervals = {}, {}
    for name, x in matrices.items():
        n_runs, n_tasks = x.shape
        boot = np.stack([_functions(np.take_along_axis(x, rng.integers(n_runs, size=(n_runs, n_tasks)), axis=0))
                         for _ in range(reps)])
        points[name] = _functions(x)
        intervals[name] = (np.percentile(boot, 2.5, axis=0), np.percentile(boot, 97.5, axis=0))
    return points, intervals


def aggregate(plan: Plan, runs: list[RunData]) -> dict[str, dict[str, Any]]:
    """IQM, median and mean of normalised final scores per side-route over the tasks, with stratified-bootstrap
    95% intervals; only groups with a final return on every task for the same seeds."""
    try:
        import numpy as np
        import rliable.metrics  # noqa: F401 - the extra [bench]
    except ImportError:
        return {}
    tasks = [t for t in plan.suite.tasks if any(s.task == t.name for s in plan.specs)]  # the tasks asked for
    matrices = {}
    for group in dict.fromkeys(r.group for r in runs):
        per_task = []
        for task in tasks:
            scores = {r.spec.seed: (f - task.random) / (task.reference.value - task.random)
                      for r in runs if r.group == group and r.spec.task == task.name
                      and r.done is not None and (f := r.final_return()) is not None}
            per_task.append(scores)
        seeds = sorted(set.intersection(*(set(s) for s in per_task))) if per_task else []
        if seeds:
            matrices[group] = np.array([[scores[s] for scores in per_task] for s in seeds])  # (runs, tasks)
    if not matrices:
        return {}
    points, intervals = interval_estimates(matrices)
    return {group: {"runs": int(matrices[group].shape[0]), "tasks": [t.name for t in tasks],
                    **{name: {"value": float(points[group][k]), "ci95": [float(intervals[group][0][k]),
                                                                        float(intervals[group][1][k])]}
                       for k, name in enumerate(("iqm", "median", "mean"))}}
            for group in matrices}


def markdown(plan: Plan, rows: list[dict[str, Any]], agg: dict[str, dict[str, Any]], ratios: dict[str, float],
             out_rel: str, figures: Sequence[str]) -> str:
    """The suite's block of the docs page."""
    lines = [f"Suite `{plan.suite.name}`: {plan.suite.description}. Made by `python benchmarks/zoo.py --suite "
             f"{plan.suite.name}`; curves in `{out_rel}/runs/`.", "",
             "| task | side-route | seeds done | env steps | final return, median (range) | final evaluation | "
             "reference | ≥ reference | train s to reference, median | wall s, median | CPU s, median | load |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        med = r["median_final"]
        reached = "-" if med is None else ("yes" if med >= r["reference"] else "no")
        secs = r["median_seconds_to_reference"]
        secs_cell = "-" if secs is None else ("not reached" if secs == math.inf else f"{secs:,.0f}")
        wall = f"{statistics.median(r['wall_seconds']):,.0f}" if r["wall_seconds"] else "-"
        cpu = f"{statistics.median(r['cpu_seconds']):,.0f}" if r["cpu_seconds"] else "-"
        load = f"{min(r['loads']):.1f}-{max(r['loads']):.1f}" if r["loads"] else "-"
        lines.append(f"| {r['task']} | {r['group']} | {r['finished']}/{len(r['seeds'])} | {r['env_steps']:,} | "
                     f"{_median_range(r['finals'])} | {_median_range(r['final_evals'], '.1f')} | "
                     f"{r['reference']:,.2f} | {reached} | {secs_cell} | {wall} | {cpu} | {load} |")
    unfinished = [f"{r['task']} {r['group']} seed {seed}: {final:,.0f} at {step:,} env steps"
                  for r in rows for seed, step, final in r["partial"]]
    if unfinished:
        lines += ["", "Unfinished runs (not in the final-return column; mean of their last 3 evaluations so far): "
                  + "; ".join(unfinished) + "."]
    sources = dict.fromkeys((r["reference_source"], r["reference_url"]) for r in rows)
    lines += [""] + [f"Reference: [{src}]({url})." for src, url in sources]
    if ratios:
        lines += ["", "Training seconds to the reference, ding_lite's median over the peer's (side by side, same "
                  "hyperparameters): " + ", ".join(f"{t} **{v:.2f}**" for t, v in ratios.items()) + "."]
    if agg:
        lines += ["", "Normalised final scores over tasks ((final - random) / (reference - random); 95% "
                  "stratified-bootstrap intervals, rliable):", "",
                  "| side-route | runs x tasks | IQM | median | mean |", "| --- | --- | --- | --- | --- |"]
        for group, a in agg.items():
            cells = " | ".join(f"{a[k]['value']:.2f} [{a[k]['ci95'][0]:.2f}, {a[k]['ci95'][1]:.2f}]"
                               for k in ("iqm", "median", "mean"))
            lines.append(f"| {group} | {a['runs']} x {len(a['tasks'])} | {cells} |")
    lines += [""] + [f"![{Path(f).stem}]({out_rel}/{Path(f).name})" for f in figures]
    return "\n".join(lines) + "\n"


def draw_curves(plan: Plan, runs: list[RunData], path: Path) -> bool:
    """One panel per task: each side-route's median return over seeds against env steps, the range shaded, the
    reference dashed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
    except ImportError:
        return False
    tasks = [t for t in plan.suite.tasks if any(r.spec.task == t.name and r.curve for r in runs)]
    if not tasks:
        return False
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.2 * len(tasks), 3.3), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        for group in dict.fromkeys(r.group for r in runs if r.spec.task == task.name):
            curves = [r.curve for r in runs if r.spec.task == task.name and r.group == group and r.curve]
            steps = sorted(set.intersection(*({p["env_step"] for p in c} for c in curves)))
            if not steps:
                continue
            values = np.array([[{p["env_step"]: p["return_mean"] for p in c}[s] for s in steps] for c in curves])
            ax.plot(steps, np.median(values, 0), label=f"{group} ({len(curves)} seeds)")
            ax.fill_between(steps, values.min(0), values.max(0), alpha=0.2)
        ax.axhline(task.reference.value, ls="--", color="grey", lw=1, label="reference")
        ax.set_title(task.name)
        ax.set_xlabel("env steps")
        ax.set_ylabel("eval return")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def draw_aggregate(agg: dict[str, dict[str, Any]], path: Path) -> bool:
    """IQM, median and mean with their 95% intervals per side-route."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    if not agg:
        return False
    names = ("iqm", "median", "mean")
    fig, axes = plt.subplots(1, 3, figsize=(10, 0.6 + 0.45 * len(agg)), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        for y, a in enumerate(agg.values()):
            lo, hi = a[name]["ci95"]
            ax.barh(y, hi - lo, left=lo, height=0.5, alpha=0.5)
            ax.plot([a[name]["value"]] * 2, [y - 0.25, y + 0.25], color="black")
        ax.set_yticks(range(len(agg)), list(agg) if name == "iqm" else [""] * len(agg))
        ax.axvline(1.0, ls="--", color="grey", lw=1)
        ax.set_title(name.upper() if name == "iqm" else name.capitalize())
        ax.set_xlabel("normalised score")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_docs_block(docs: Path, suite: str, block: str) -> None:
    """Replace the suite's block (between ``<!-- zoo:NAME start -->`` and ``<!-- zoo:NAME end -->``) of ``docs``."""
    start, end = f"<!-- zoo:{suite} start -->", f"<!-- zoo:{suite} end -->"
    text = docs.read_text() if docs.is_file() else ""
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: f"{start}\n{block}{end}", text)
    else:
        text += f"\n{start}\n{block}{end}\n"
    docs.write_text(text)


def report(plan: Plan, out: Path, docs: Path | None) -> None:
    """Print and write the suite's tables and figures; the last printed line is ``ratio X``."""
    runs = [load_run(spec) for spec in plan.specs]
    runs = [r for r in runs if r.curve]
    if not runs:
        raise SystemExit(f"zoo: no run of suite '{plan.suite.name}' has a curve yet")
    (out / "runs").mkdir(parents=True, exist_ok=True)
    for r in runs:
        shutil.copyfile(Path(r.spec.folder) / CURVE,
                        out / "runs" / f"{r.spec.task}__{r.group}__seed{r.spec.seed}.jsonl")
    rows, agg = task_rows(plan, runs), aggregate(plan, runs)
    ratios = speed_ratios(rows)
    figures = [str(p) for p, draw in ((out / "curves.png", lambda p: draw_curves(plan, runs, p)),
                                      (out / "aggregate.png", lambda p: draw_aggregate(agg, p))) if draw(p)]
    (out / "summary.json").write_text(json.dumps({"suite": plan.suite.name, "rows": rows, "aggregate": agg,
                                                  "speed_ratios": ratios}, indent=1, default=str))
    out_rel = _relative(out, docs.parent) if docs is not None else str(out)
    block = markdown(plan, rows, agg, ratios, out_rel, figures)
    print(block)
    if docs is not None:
        write_docs_block(docs, plan.suite.name, block)
    if ratios:
        print(f"ratio {max(ratios.values()):.2f}")
    else:
        finals = [r["median_final"] / r["reference"] for r in rows if r["median_final"] is not None]
        print(f"ratio {min(finals):.2f}" if finals else "ratio nan")


def _relative(path: Path, start: Path) -> str:
    try:
        return str(path.resolve().relative_to(start.resolve()))
    except ValueError:
        return str(path)

"""What a finished (or resumed) sweep reports: Ray Tune's view of its trials, ``sweep.json``, ``results.md`` and the
best trial's ``best_config.py``, from the trials' ``trial.json`` records (:mod:`ding_lite.sweep.trials`)."""
from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ding_lite.plot.runs import SWEEP_FILE
from ding_lite.sweep.space import override
from ding_lite.sweep.trials import COMPLETE, OBJECTIVE, TRIAL_FILE, TRIALS_DIR, SweepSpec


def tune_status(grid: Any) -> dict[str, dict[str, Any]]:
    """Ray Tune's view of each trial: ``{trial_id: {'error': str | None, 'last': last result}}``."""
    out = {}
    for result in grid:
        metrics = result.metrics or {}
        out[Path(result.path).name] = {"error": None if result.error is None else _error_line(result.error),
                              "last": {k: metrics.get(k) for k in (OBJECTIVE, "env_step", COMPLETE)},
                              "config": result.config}
    return out


def _error_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    found = [line for line in text if "Error" in line or "error:" in line]
    return (found[-1] if found else (text[-1] if text else type(error).__name__)).strip()


def write_results(spec: SweepSpec, tune_status: Mapping[str, Mapping[str, Any]], ray_address: str | None = None
                  ) -> dict[str, Any]:
    """``sweep.json``, ``results.md`` and ``best_config.py`` from the trials' ``trial.json`` files (and Ray Tune's
    statuses: a trial without a finished record was stopped by the pruner or failed)."""
    from ding_lite.build import load_config
    from ding_lite.config import save_config
    from ding_lite.runtime.experiment import write_json

    folder = Path(spec.sweep_dir)
    trials = []
    abandoned = []
    for path in sorted((folder / TRIALS_DIR).glob(f"*/{TRIAL_FILE}")):
        data = json.loads(path.read_text())
        if tune_status and data["trial_id"] not in tune_status:
            # a trial a killed driver started after Ray Tune last saved its state: the restored search does not know
            # it and drew another in its place, so it is not one of the sweep's num_samples trials
            abandoned.append({"trial_id": data["trial_id"], "label": data.get("label"), "dir": str(path.parent)})
            continue
        status = tune_status.get(data["trial_id"], {})
        if data["status"] != "done":
            failed = status.get("error") or data.get("error")  # Ray Tune's record, or the trial's own
            data["status"] = "failed" if failed else ("pruned" if status else "unfinished")
            data["error"] = data.get("error") or status.get("error")
            data["objective"] = (status.get("last") or {}).get(OBJECTIVE) if status.get("last") else None
            write_json(path, data)  # trial.json says so too: a pruned trial's said 'running' for good
        trials.append(data)
    sign = -1.0 if spec.mode == "max" else 1.0
    trials.sort(key=lambda t: (t["status"] != "done", t["objective"] is None,
                               sign * t["objective"] if t["objective"] is not None else 0.0, t["trial_id"]))
    best = trials[0] if trials and trials[0]["status"] == "done" else None
    summary: dict[str, Any] = {"spec": asdict(spec), "metric": spec.metric, "mode": spec.mode,
                               "ray_address": ray_address, "trials": trials, "best": best}
    if abandoned:
        summary["abandoned"] = abandoned
        print(f"[sweep] {len(abandoned)} trial folder(s) of the killed run that the resumed search does not know, "
              f"left out of the results: " + ", ".join(a["dir"] for a in abandoned), file=sys.stderr, flush=True)
    if best is not None:
        cfg = load_config(spec.config, strict=spec.strict,
                          overrides=[*spec.overrides, *(override(k, v) for k, v in best["params"].items())])
        cfg.exp_name = str(folder / "best")
        save_config(cfg, folder / "best_config.py")
        summary["best_config"] = str(folder / "best_config.py")
        summary["command"] = reproduce_command(spec, folder / "best_config.py")
    write_json(folder / SWEEP_FILE, summary)
    table = results_table(spec, trials)
    (folder / "results.md").write_text(table + "\n")
    return summary


def reproduce_command(spec: SweepSpec, best_config: Path) -> str:
    """The ``-m serial`` command that reruns the best trial's seeds with its budget."""
    words = ["ding_lite", "-m", "serial", "-c", str(best_config), *(f"-s {s}" for s in spec.seeds)]
    words += [f"--max-env-step {spec.max_env_step}"] if spec.max_env_step is not None else []
    words += [f"--max-train-iter {spec.max_train_iter}"] if spec.max_train_iter is not None else []
    return " ".join(words)


def results_table(spec: SweepSpec, trials: Sequence[Mapping[str, Any]]) -> str:
    """Markdown, one row per trial, best first: rank, values, status, objective (mean ± sd over seeds) and each
    seed's value."""
    keys = [d.partition("=")[0].strip() for d in spec.space]
    head = ["rank", "trial", *keys, "status", f"{spec.metric} ({spec.mode})", "per seed"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for rank, t in enumerate(trials, 1):
        per_seed = t.get("per_seed") or []
        if t["status"] == "done" and len(per_seed) > 1:
            objective = f"{t['objective']:.2f} ± {statistics.stdev(per_seed):.2f}"
        else:
            objective = "-" if t["objective"] is None else f"{t['objective']:.2f}"
        if t["status"] == "pruned":
            objective += " (first seed, at the cut)"
        cells = [str(rank), t["trial_id"], *(_cell(t["params"].get(k)) for k in keys), t["status"], objective,
                 ", ".join(f"{v:.2f}" for v in per_seed) or "-"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)

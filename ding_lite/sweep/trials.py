"""The machinery of ``ding_lite -m sweep`` (see :mod:`ding_lite.entry.sweep`): the sweep spec, one trial's seeds,
Ray Tune's search and scheduler (the spec's checks: :mod:`.checks`; the results table and ``sweep.json``:
:mod:`.results`)."""
from __future__ import annotations

import contextlib
import contextvars
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ding_lite.errors import ConfigError, PluginImportError, first_line
from ding_lite.extras import install_hint
from ding_lite.runtime.replay_ckpt import remove_buffer_files
from ding_lite.sweep.space import (
    override,
    trial_label,
)
from ding_lite.utils.events import EVAL_RETURN_TAG
from ding_lite.utils.run_folder import CKPT_DIR
from ding_lite.utils.run_result import finished_result
from ding_lite.utils.trackers import EXTRA_TRACKERS, TRACKER_REGISTRY, RunInfo

METRICS = {"eval_return": "max", "final_eval_return": "max", "best_eval_return": "max", "env_step": "min",
           "wall_seconds": "min"}  # result.json numbers a sweep can optimise, with their natural direction
PRUNABLE = ("eval_return", "best_eval_return", "final_eval_return")  # objectives that evaluations estimate early
PRUNERS = ("asha", "median", "none")
SPEC_FILE = "sweep_spec.json"  # what a --resume must match
TRIALS_DIR = "trials"  # <sweep>/trials/<trial id>/: a trial's seeds' runs and its record
TRIAL_FILE = "trial.json"  # a trial's record: values, runs, status, objective (_TrialRecord)
TUNE_DIR = "tune"
OBJECTIVE = "objective"
COMPLETE = "all_seeds"  # True in a trial's last report, after every seed ran (Tune's own "done" is set on a cut too)
TUNE_EXTRA = install_hint("optuna")


def seed_run_name(seed: int) -> str:
    """The folder of a trial's run of ``seed``, in the trial's folder."""
    return f"run_seed{seed}"


# The trial whose evaluations the 'ray_tune' tracker reports (set by run_trial around its first seed).
_REPORTING: contextvars.ContextVar[Callable[[float, int], None] | None] = contextvars.ContextVar(
    "ding_lite_sweep_reporting", default=None)


@dataclass
class SweepSpec:
    """Everything a trial needs (it travels to the Ray workers) and a ``--resume`` must match."""

    config: str  # absolute path of the config file
    sweep_dir: str  # absolute path of the sweep folder
    space: list[str]  # the --space texts
    search: str
    seeds: list[int]
    metric: str
    mode: str
    overrides: list[str] = field(default_factory=list)  # the sweep's --set, applied before the trial's values
    max_env_step: int | None = None
    max_train_iter: int | None = None
    num_samples: int = 1
    pruner: str = "none"
    prune_after: int | None = None  # env steps before the first pruning decision
    search_seed: int = 0
    strict: bool = False

    def trial_dir(self, trial_id: str) -> Path:
        return Path(self.sweep_dir) / TRIALS_DIR / trial_id


# ---- the trial (runs in a Ray worker) --------------------------------------------------------------------------
@TRACKER_REGISTRY.register("ray_tune")
class RayTuneReporter:
    """Reports a sweep trial's evaluation returns (``eval/return_mean``) to Ray Tune as they come, for pruning;
    ``-m sweep`` adds it to the first seed's trackers (:data:`~ding_lite.utils.trackers.EXTRA_TRACKERS`). Elsewhere
    it is an error."""

    def __init__(self, info: RunInfo) -> None:
        report = _REPORTING.get()
        if report is None:
            raise ConfigError("log.backends: 'ray_tune' reports the evaluations of a -m sweep trial to Ray Tune and "
                              "works only inside one; leave it out")
        self._report = report

    def scalar(self, tag: str, value: float, step: int) -> None:
        if tag == EVAL_RETURN_TAG:
            self._report(value, step)

    def close(self) -> None:
        pass


def run_trial(params: dict[str, Any], spec: SweepSpec, train: Callable[..., dict[str, Any]],
              workdir: str | None = None) -> None:
    """One trial: the config with ``params`` over every seed (seeds with a ``result.json`` are kept as they are),
    each run by ``train`` (the serial pipeline, passed in by ``-m sweep``); reports the objective to Ray Tune and
    writes ``trial.json``. ``workdir``: the folder the sweep was started in, where the runs resolve the config's
    relative paths (demo files, checkpoints), as a serial run does; kept where this machine has it (Ray Tune starts
    each trial in a folder of its own)."""
    from ray import tune

    trial_id = tune.get_context().get_trial_id()
    trial_dir = spec.trial_dir(trial_id)
    trial_dir.mkdir(parents=True, exist_ok=True)
    record = _TrialRecord(trial_dir, trial_id, params, spec)
    # the runs' console lines go to the trial's console.log, not interleaved on the sweep's console
    with _working_dir(workdir), open(trial_dir / "console.log", "a", buffering=1) as console, \
            contextlib.redirect_stderr(console):
        try:
            results = _run_seeds(params, spec, trial_dir, record, train)
        except Exception as exc:  # trial.json says why, not 'running' forever (Ray Tune records the error too)
            record.fail(exc)
            raise
    values = [float(r[spec.metric]) for r in results]
    record.save(results, "done")
    tune.report({OBJECTIVE: statistics.fmean(values), "env_step": int(results[0]["env_step"]),
                 COMPLETE: True})


@contextlib.contextmanager
def _working_dir(folder: str | None) -> Iterator[None]:
    """Run in ``folder`` where it exists here (a cluster node may not have it), then go back."""
    if folder is None or not Path(folder).is_dir():
        yield
        return
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _run_seeds(params: Mapping[str, Any], spec: SweepSpec, trial_dir: Path, record: _TrialRecord,
               train: Callable[..., dict[str, Any]]) -> list[dict[str, Any]]:
    from ray import tune

    overrides = [*spec.overrides, *(override(k, v) for k, v in params.items())]
    results = []
    for i, seed in enumerate(spec.seeds):
        exp = trial_dir / seed_run_name(seed)
        done = finished_result(exp)  # a seed that failed is run again, as one cut mid-run (it has a checkpoint)
        if done is None:
            resume = _prepare_rerun(exp)
            prunes = i == 0 and spec.pruner != "none"
            token = _REPORTING.set(_reporter(tune, spec) if prunes else None)
            # the reporter is added to the run's trackers, not to its log.backends: the run's total_config.py named
            # 'ray_tune' before, and -m serial -c that file failed (the tracker exists only in a sweep's trial)
            extra = EXTRA_TRACKERS.set((RayTuneReporter,) if prunes else ())
            try:
                done = train(spec.config, seed, spec.max_env_step, spec.max_train_iter, exp_dir=exp,
                              resume=resume, strict=spec.strict, progress=False, overrides=tuple(overrides))
            finally:
                EXTRA_TRACKERS.reset(extra)
                _REPORTING.reset(token)
            remove_buffer_files(exp / CKPT_DIR)  # a finished seed is never resumed: its buffer files only fill the disk
        results.append(done)
        record.save(results, "running")
    return results


def _reporter(tune: Any, spec: SweepSpec) -> Callable[[float, int], None]:
    def report(eval_return: float, env_step: int) -> None:
        tune.report({OBJECTIVE: float(eval_return), "env_step": int(env_step), COMPLETE: False})

    return report


def _prepare_rerun(exp: Path) -> bool:
    """A seed cut mid-run: resume from its newest checkpoint if it wrote one, else start it again from scratch."""
    from ding_lite.utils.checkpoint import latest_checkpoint

    if latest_checkpoint(exp / CKPT_DIR) is not None:
        return True
    if exp.exists():
        shutil.rmtree(exp)
    return False


class _TrialRecord:
    """``trial.json`` of a trial: its values, runs, status and (once known) objective."""

    def __init__(self, trial_dir: Path, trial_id: str, params: Mapping[str, Any], spec: SweepSpec) -> None:
        self.path = trial_dir / TRIAL_FILE
        self.data: dict[str, Any] = {"trial_id": trial_id, "label": trial_label(params), "params": dict(params),
                                     "runs": [f"{TRIALS_DIR}/{trial_id}/{seed_run_name(s)}" for s in spec.seeds],
                                     "seeds": list(spec.seeds), "metric": spec.metric, "started": time.time()}
        self.save([], "running")

    def save(self, results: Sequence[Mapping[str, Any]], status: str) -> None:
        from ding_lite.runtime.experiment import write_json

        metric = self.data["metric"]
        per_seed = [float(r[metric]) for r in results]
        self.data.update(status=status, per_seed=per_seed, updated=time.time(),
                         objective=statistics.fmean(per_seed) if status == "done" else None)
        write_json(self.path, self.data)

    def fail(self, exc: BaseException) -> None:
        """Mark the trial failed with the error's first line (its traceback is in Ray Tune's trial logs)."""
        from ding_lite.runtime.experiment import write_json

        self.data.update(status="failed", error=f"{type(exc).__name__}: {first_line(exc)}", updated=time.time(),
                         objective=None)
        write_json(self.path, self.data)


# ---- the driver ------------------------------------------------------------------------------------------------
def import_tune() -> Any:
    """``ray.tune``, or a :class:`PluginImportError` naming the extra."""
    try:
        from ray import tune
    except ImportError as exc:
        raise PluginImportError(f"-m sweep needs Ray Tune, which is not installed ({exc}): {TUNE_EXTRA}") from None
    return tune


def scheduler(spec: SweepSpec) -> Any:
    from ray.tune.schedulers import ASHAScheduler, MedianStoppingRule

    grace = spec.prune_after if spec.prune_after is not None else max(1, int(spec.max_env_step or 0) // 4)
    if spec.pruner == "asha":
        # max_t far beyond any run: ASHA stops a trial that reaches max_t, which would cut a trial's later seeds
        return ASHAScheduler(time_attr="env_step", max_t=10**12, grace_period=grace, reduction_factor=2)
    if spec.pruner == "median":
        return MedianStoppingRule(time_attr="env_step", grace_period=grace, min_samples_required=2)
    return None


def search_alg(spec: SweepSpec) -> Any:
    if spec.search == "optuna":
        try:
            from ray.tune.search.optuna import OptunaSearch
        except ImportError as exc:
            raise PluginImportError(f"--search optuna needs optuna ({exc}): {TUNE_EXTRA}") from None
        return OptunaSearch(seed=spec.search_seed)
    from ray.tune.search import BasicVariantGenerator

    return BasicVariantGenerator(random_state=spec.search_seed)


def trial_dirname(trial: Any) -> str:
    return str(trial.trial_id)  # Ray Tune's folder of a trial is named by its id, as trials/<id>/ is

"""What a sweep prints while Ray Tune runs it: one line per finished or failed trial, and none of Ray Tune's own
tracebacks of a failed trial (they stay in its ``error.txt``)."""
from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

from ding_lite.sweep.space import trial_label
from ding_lite.sweep.trials import COMPLETE, OBJECTIVE, TRIAL_FILE, SweepSpec


def trial_error(spec: SweepSpec, trial_id: str) -> str:
    """The error a failed trial's ``trial.json`` records (its run's exception, in one line), for the console line:
    Ray Tune's own report of it is a traceback of Ray's frames."""
    try:
        error = json.loads((spec.trial_dir(trial_id) / TRIAL_FILE).read_text()).get("error")
    except (OSError, ValueError, AttributeError):
        error = None
    return str(error) if error else "its run raised (no trial.json error recorded)"


class RayTrialTracebacks(logging.Filter):
    """Drops Ray Tune's log records of a failed trial (its traceback through Ray's frames, then the list of the
    trials that did not complete): the sweep prints one line per failed trial with its run's error instead
    (:func:`trial_lines`), and the traceback stays in ``tune/sweep/<trial id>/error.txt``."""

    LOGGERS = ("ray.tune.execution.tune_controller", "ray.tune.tune")

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not (message.startswith("Trial task failed") or message.startswith("Trials did not complete"))


@contextlib.contextmanager
def ray_trial_tracebacks_dropped() -> Iterator[None]:
    """Ray Tune's loggers filtered by :class:`RayTrialTracebacks` for the block."""
    quiet = RayTrialTracebacks()
    for name in quiet.LOGGERS:
        logging.getLogger(name).addFilter(quiet)
    try:
        yield
    finally:
        for name in quiet.LOGGERS:
            logging.getLogger(name).removeFilter(quiet)


def trial_lines(spec: SweepSpec) -> Any:
    """A Tune callback: one console line per finished or failed trial."""
    from ray import tune

    class Lines(tune.Callback):
        def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            result = trial.last_result or {}
            state = "done" if result.get(COMPLETE) else "stopped by the pruner"
            print(f"[sweep] trial {trial.trial_id} ({trial_label(trial.config)}): {state}, {spec.metric} "
                  f"{result.get(OBJECTIVE, float('nan')):.2f}", file=sys.stderr, flush=True)

        def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
            print(f"[sweep] trial {trial.trial_id} ({trial_label(trial.config)}): failed: "
                  f"{trial_error(spec, trial.trial_id)}; see {spec.trial_dir(trial.trial_id)}", file=sys.stderr,
                  flush=True)

    return Lines()

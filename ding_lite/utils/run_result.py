"""A training run's ``result.json`` as its readers take it (``-m plot``, ``-m sweep``, ``-m gsl``'s phases): a run
that ended by an error writes one too, marked ``failed`` (:func:`failed_entries`), which no reader may take for a
finished run. Light on purpose (no torch): the plot and sweep drivers import it."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.errors import first_line
from ding_lite.utils.run_folder import RESULT_FILE

FAILED_PREFIX = "failed: "  # a failed run's stop_reason: this, then the error's line


def run_failed(result: Mapping[str, Any]) -> bool:
    """The run ended by an error (``failed`` true; a ``result.json`` written before the key existed is a finished
    run's: failed runs wrote none)."""
    return bool(result.get("failed"))


def failure_line(result: Mapping[str, Any]) -> str:
    """Why a failed run failed: its ``stop_reason`` without the prefix."""
    return str(result.get("stop_reason") or "").removeprefix(FAILED_PREFIX)


def finished_result(folder: Path) -> dict[str, Any] | None:
    """The ``result.json`` of the run in ``folder`` if that run finished (its budget spent or a stop rule met);
    None where there is none, where it is not readable (written atomically: not ours) or where the run failed."""
    path = folder / RESULT_FILE
    try:
        result = json.loads(path.read_text()) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None
    return result if isinstance(result, dict) and not run_failed(result) else None


def failed_entries(exc: BaseException, env_step: int, train_iter: int, last_eval: Any,
                   best_return: float) -> dict[str, Any]:
    """The entries of a failed run's ``result.json`` that differ from a finished run's: ``stop`` false (no stop
    rule ended it), ``failed`` true, ``stop_reason`` ``failed: <the error's line>``, where it got to, and its
    evaluations so far (``last_eval``: the last one's result, None before the first; ``best_return`` -inf then,
    written as null: JSON has no -inf)."""
    return {"stop": False, "stop_reason": FAILED_PREFIX + first_line(exc), "failed": True, "env_step": env_step,
            "train_iter": train_iter, "eval_return": None if last_eval is None else last_eval.mean,
            "eval_return_std": None if last_eval is None else last_eval.std,
            "best_eval_return": best_return if math.isfinite(best_return) else None}

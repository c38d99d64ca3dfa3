"""One plain experiment folder as ``-m plot`` reads it: its scalars and its ``result.json``."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ding_lite.errors import PlotInputError
from ding_lite.utils.events import EVENT_GLOB, RunScalars, read_scalars
from ding_lite.utils.run_folder import LOG_DIR, RESULT_FILE


@dataclass
class Run:
    """One experiment folder: its scalars and its ``result.json`` (empty while the run is still going).

    ``x_offset`` is added to its env-step x values: a later phase of a multi-phase run (each phase a folder of its
    own) starts where the phases before it ended, so that all phases share one env-step axis."""

    path: Path
    scalars: RunScalars
    result: dict[str, Any]
    x_offset: float = 0.0


def is_run_folder(path: Path) -> bool:
    """A folder that one pipeline run wrote: tensorboard events under ``log/``, or a ``result.json``."""
    return path.is_dir() and ((path / RESULT_FILE).is_file() or any((path / LOG_DIR).glob(EVENT_GLOB)))


def load_run_folder(path: Path) -> Run:
    """Read one run folder's scalars and ``result.json`` (keys read as present, never assumed)."""
    result: dict[str, Any] = {}
    result_path = path / RESULT_FILE
    if result_path.is_file():
        try:
            result = json.loads(result_path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise PlotInputError(f"cannot read {result_path}: {exc}") from None
    try:
        scalars = read_scalars(path / LOG_DIR)
    except ValueError as exc:
        raise PlotInputError(str(exc)) from None
    return Run(path, scalars, result)

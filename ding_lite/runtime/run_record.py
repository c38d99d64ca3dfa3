"""A training run's record across ``--resume`` segments (:class:`RunRecord`), kept in every checkpoint under
``"run"``: the wall time, the resumes, and where the logs stood (see :mod:`ding_lite.runtime.train_loop`)."""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ding_lite.utils.events import drop_events_after
from ding_lite.utils.log import TEXT_LOG
from ding_lite.utils.run_folder import LOG_DIR

if TYPE_CHECKING:
    from ding_lite.worker.learner import BaseLearner


class RunRecord:
    """What every checkpoint keeps about the run itself (under ``"run"``), so that ``--resume`` continues the run and
    not only the learner: the wall time of all segments so far, the resumes so far, and where the text log and the
    event files stood when the checkpoint was written (the resumed run cuts both back there: what the killed run
    logged after its checkpoint, the resumed run logs again, once). A checkpoint written at the train iteration and
    env step of an evaluation, after that evaluation began (the run's final one), keeps where the logs stood before
    it: a resumed run evaluates its first iteration again (the same seeds, the same returns) and logs that once."""

    def __init__(self, exp_dir: Path, start: float) -> None:
        self.exp_dir = exp_dir
        self.start = start
        self.seconds_before = 0.0  # wall time of the segments before this one
        self.resumes: list[dict[str, Any]] = []
        # the run's (train_iter, env_step) now, given by follow() once the learner and collector exist
        self._position: Callable[[], tuple[int, int]] | None = None
        self._last_eval: Callable[[], int | None] = lambda: None  # train_iter of the last evaluation (follow())
        self._eval_mark: tuple[tuple[int, int], float, int] | None = None  # position, time, log bytes at an eval

    def wall_seconds(self) -> float:
        return self.seconds_before + time.perf_counter() - self.start

    def _log_bytes(self) -> int:
        text_log = self.exp_dir / LOG_DIR / TEXT_LOG
        return text_log.stat().st_size if text_log.is_file() else 0

    def follow(self, position: Callable[[], tuple[int, int]],
               last_eval: Callable[[], int | None] | None = None) -> None:
        """Read the run's ``(train_iter, env_step)`` from ``position`` (the learner and collector are built after the
        record, which the learner's checkpoints take their ``"run"`` entry from), and the train iteration of its last
        evaluation from ``last_eval`` (kept so that a resumed run evaluates when the uninterrupted one would)."""
        self._position = position
        if last_eval is not None:
            self._last_eval = last_eval

    def mark_eval(self, train_iter: int, env_step: int) -> None:
        """An evaluation at ``train_iter`` and ``env_step`` begins: where the logs stand now."""
        self._eval_mark = ((train_iter, env_step), time.time(), self._log_bytes())

    def state(self) -> dict[str, Any]:
        """The record for a checkpoint written now."""
        saved_at, log_bytes, last_eval = time.time(), self._log_bytes(), self._last_eval()
        mark = self._eval_mark
        if mark is not None and self._position is not None and mark[0] == self._position():
            # nothing ran since that evaluation began, and the resumed run starts with an evaluation at this very
            # point (None: evaluate first): without the cut, it was logged twice at the same step (tensorboard, the
            # text log)
            saved_at, log_bytes, last_eval = mark[1], mark[2], None
        return {"wall_seconds": round(self.wall_seconds(), 3), "resumes": list(self.resumes),
                "saved_at": saved_at, "log_bytes": log_bytes, "last_eval_iter": last_eval}

    def resume_from(self, saved: dict[str, Any], ckpt: Path, learner: BaseLearner) -> None:
        """Continue the record of the checkpoint ``ckpt`` (``saved``, its ``"run"`` entry) and cut the logs back to
        it."""
        self.seconds_before = float(saved.get("wall_seconds", 0.0))
        self.resumes = [*saved.get("resumes", []), {"checkpoint": _relative(ckpt, self.exp_dir),
                                                    "train_iter": learner.train_iter, "env_step": learner.env_step}]
        log_dir = self.exp_dir / LOG_DIR
        if "log_bytes" in saved:
            _truncate(log_dir / TEXT_LOG, int(saved["log_bytes"]))
        if "saved_at" in saved and log_dir.is_dir():
            drop_events_after(log_dir, float(saved["saved_at"]))


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path)


def _truncate(path: Path, size: int) -> None:
    if path.is_file() and path.stat().st_size > size:
        os.truncate(path, size)

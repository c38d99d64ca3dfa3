"""Experiment logging: a text log, tensorboardX scalars, console lines (one per eval) and a progress bar."""
from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from ding_lite.errors import output_error
from ding_lite.utils.events import ScalarWriter

LOGGER_NAME = "ding_lite"
TEXT_LOG = "train.log"  # in <exp_dir>/log/


def setup_console_logging(level: int = logging.INFO) -> logging.Logger:
    """Console handler of the ``ding_lite`` logger: plain ``message`` lines on stderr (idempotent)."""
    logger = logging.getLogger(LOGGER_NAME)
    if not any(getattr(h, "_ding_lite_console", False) for h in logger.handlers):
        handler = _TqdmSafeHandler()
        handler._ding_lite_console = True  # type: ignore[attr-defined]
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger


class _TqdmSafeHandler(logging.StreamHandler):
    """Writes through ``tqdm.write`` so that log lines do not tear an active progress bar."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = self.format(record)
            if "tqdm" in sys.modules:
                from tqdm import tqdm

                tqdm.write(msg, file=sys.stderr)
            else:
                sys.stderr.write(msg + "\n")
        except Exception:  # logging must never kill a run
            self.handleError(record)


class ExperimentLogger:
    """Scalars to tensorboardX (``<exp_dir>/log``), text lines to ``<exp_dir>/log/train.log`` and the console.

    Args:
        exp_dir: experiment folder (None: console only, nothing written).
        progress_total: env-step budget for the progress bar (None: open-ended).
        progress: show a tqdm bar on an interactive terminal.
    """

    def __init__(self, exp_dir: Path | None, progress_total: int | None = None, progress: bool = True) -> None:
        self.console = setup_console_logging()
        self._writer: Any = None
        self._file: Any = None
        self._text_path: Path | None = None
        if exp_dir is not None:
            log_dir = Path(exp_dir) / "log"
            self._text_path = log_dir / TEXT_LOG
            try:
                log_dir.mkdir(parents=True, exist_ok=True)
                self._file = open(self._text_path, "a", buffering=1)  # noqa: SIM115 (closed in close())
            except OSError as exc:
                raise output_error(exc, self._text_path) from exc
            self._writer = ScalarWriter(log_dir, flush_secs=10)  # tensorboard; a refused write raises here
        self._text_failed = False
        self._bar: Any = None
        if progress and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=progress_total, unit="step", dynamic_ncols=True, leave=False)
        self._bar_step = 0

    def scalar(self, tag: str, value: float, step: int) -> None:
        """One tensorboard scalar."""
        if self._writer is not None:
            self._writer.add_scalar(tag, float(value), step)

    def scalars(self, prefix: str, values: dict[str, Any], step: int) -> None:
        """Several scalars under ``prefix/``; tensors and numpy scalars are converted here, only when logged."""
        for k, v in values.items():
            if getattr(v, "ndim", 0) == 0:
                self.scalar(f"{prefix}/{k}", float(v), step)

    def info(self, msg: str) -> None:
        """A line on the console and in the text log."""
        self.console.info(msg)
        self.text(msg)

    def text(self, msg: str) -> None:
        """A line in the text log only (a write the system refuses raises :class:`~ding_lite.errors.OutputError`)."""
        if self._file is not None:
            try:
                self._file.write(msg + "\n")
            except OSError as exc:
                self._text_failed = True
                raise output_error(exc, self._text_path) from exc

    def progress(self, env_step: int, **postfix: Any) -> None:
        """Move the bar to ``env_step`` and show ``postfix`` (iterations, last eval return); None values are left
        out, floats shown with one decimal (tqdm would round them to 3 significant digits)."""
        if self._bar is None:
            return
        if self._bar.total is not None:  # the last collect may overshoot the budget: the bar stops at its total
            env_step = min(env_step, int(self._bar.total))
        self._bar.update(env_step - self._bar_step)
        self._bar_step = env_step
        shown = {k: f"{v:.1f}" if isinstance(v, float) else v for k, v in postfix.items() if v is not None}
        if shown:
            self._bar.set_postfix(shown, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        writer, self._writer = self._writer, None
        file, self._file = self._file, None
        try:
            if writer is not None:
                writer.close()
        finally:
            if file is not None:
                _close_text(file, self._text_path, failed=self._text_failed)


def _close_text(file: Any, path: Path | None, failed: bool) -> None:
    """Close the text log; a refused final flush raises :class:`~ding_lite.errors.OutputError`, unless a refused
    write was raised already."""
    try:
        file.close()
    except OSError as exc:
        if not failed:
            raise output_error(exc, path) from exc

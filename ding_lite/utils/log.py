"""Experiment logging: a text log, scalars to the trackers (tensorboard, wandb, mlflow), console lines (one per eval,
plus a ``[log]`` line now and then off a terminal) and a progress bar with live throughput."""
from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ding_lite.errors import output_error
from ding_lite.utils.run_folder import LOG_DIR
from ding_lite.utils.throughput import RateMeter, Rates, rate_text

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
    """A run's scalars to the trackers of ``cfg.log.backends`` (tensorboard by default, ``<exp_dir>/log``), text
    lines to ``<exp_dir>/log/train.log`` and the console, and live throughput (see :meth:`progress`).

    Args:
        exp_dir: experiment folder (None: console only, nothing written).
        progress_total: env-step budget for the progress bar (None: open-ended).
        progress: show a tqdm bar on an interactive terminal.
        cfg: the compiled config: its ``log`` section (trackers, console lines) and the learner's
            ``log_show_after_iter`` (the interval of the throughput scalars). None: tensorboard only.
        clock: seconds of a monotonic clock (the throughput's; tests give a fake one).
        folder_check: raises if ``exp_dir`` is no longer the run's folder (removed or moved meanwhile); called by
            :meth:`check_folder` (the learner before each checkpoint, the train loop before each evaluation).
    """

    def __init__(self, exp_dir: Path | None, progress_total: int | None = None, progress: bool = True,
                 cfg: Mapping[str, Any] | None = None, clock: Callable[[], float] = time.perf_counter,
                 folder_check: Callable[[], None] | None = None) -> None:
        from ding_lite.utils.trackers import LOG_CONFIG, build_trackers

        self.console = setup_console_logging()
        cfg = cfg or {}
        log_cfg = {**LOG_CONFIG, **(cfg.get("log") or {})}
        self._trackers: list[Any] = []
        self._file: Any = None
        self._text_path: Path | None = None
        if exp_dir is not None:
            log_dir = Path(exp_dir) / LOG_DIR
            self._text_path = log_dir / TEXT_LOG
            try:
                log_dir.mkdir(parents=True, exist_ok=True)
                self._file = open(self._text_path, "a", buffering=1)  # noqa: SIM115 (closed in close())
            except OSError as exc:
                raise output_error(exc, self._text_path) from exc
            try:  # a refused write raises here (tensorboard's event file is opened in this thread)
                self._trackers = build_trackers({**cfg, "log": log_cfg}, Path(exp_dir))
            except BaseException:
                self._file.close()
                raise
        self._text_failed = False
        self._bar: Any = None
        if progress and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=progress_total, unit="step", dynamic_ncols=True, leave=False)
        self._bar_step = 0
        self._total = progress_total
        self._print_every = float(log_cfg.get("print_every_seconds") or 0.0) if self._bar is None else 0.0
        self._log_every_iter = _log_interval(cfg)
        self._meters: dict[str, RateMeter] = {}  # 'tensorboard', 'print', 'bar': each its own window
        self._logged_iter = 0
        self._bar_rates: Rates | None = None
        self._clock = clock
        self._folder_check = folder_check

    def scalar(self, tag: str, value: float, step: int) -> None:
        """One scalar, to every tracker."""
        for tracker in self._trackers:
            tracker.scalar(tag, float(value), int(step))

    def scalars(self, prefix: str, values: dict[str, Any], step: int) -> None:
        """Several scalars under ``prefix/``; tensors and numpy scalars are converted here, only when logged."""
        for k, v in values.items():
            if is_scalar(v):
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

    def progress(self, env_step: int, train_iter: int = 0, samples: int = 0, eval_return: float | None = None
                 ) -> None:
        """Called once per collect-and-train round with the run's counters (``samples``: rows handed to the
        learner so far). Keeps the throughput: ``speed/env_steps_per_second`` and ``speed/train_samples_per_second``
        to the trackers each time ``train_iter`` passes a multiple of the learner's ``log_show_after_iter``; on a
        terminal the bar (env steps, iterations, last eval return, both rates); elsewhere a plain ``[log]`` line
        every ``log.print_every_seconds``."""
        now = self._clock()
        if not self._meters:  # the first call opens the windows: a resumed run starts at its checkpoint's counts
            self._meters = {k: RateMeter(env_step, samples, now) for k in ("tensorboard", "print", "bar")}
            self._logged_iter = train_iter
        if self._log_every_iter > 0 and train_iter // self._log_every_iter > self._logged_iter // self._log_every_iter:
            rates = self._meters["tensorboard"].rates(env_step, samples, now)
            self.scalar("speed/env_steps_per_second", rates.env_steps_per_second, env_step)
            self.scalar("speed/train_samples_per_second", rates.train_samples_per_second, env_step)
            self._meters["tensorboard"].mark(env_step, samples, now)
            self._logged_iter = train_iter
        if self._print_every > 0 and self._meters["print"].seconds(now) >= self._print_every:
            self.info(self._log_line(env_step, train_iter, eval_return, self._meters["print"].rates(env_step, samples,
                                                                                                   now)))
            self._meters["print"].mark(env_step, samples, now)
        if self._bar is not None:
            self._update_bar(env_step, train_iter, samples, eval_return, now)

    def _log_line(self, env_step: int, train_iter: int, eval_return: float | None, rates: Rates) -> str:
        share = f" ({100 * env_step / self._total:.0f}%)" if self._total else ""
        last = "-" if eval_return is None else f"{eval_return:.2f}"
        return (f"[log] env_step {env_step:,}{share}  iter {train_iter:,}  env steps/s "
                f"{rate_text(rates.env_steps_per_second)}  train samples/s {rate_text(rates.train_samples_per_second)}"
                f"  last eval {last}")

    def _update_bar(self, env_step: int, train_iter: int, samples: int, eval_return: float | None,
                    now: float) -> None:
        meter = self._meters["bar"]
        if meter.seconds(now) >= BAR_RATE_WINDOW:  # rates over the last full window: steady numbers, not flicker
            self._bar_rates = meter.rates(env_step, samples, now)
            meter.mark(env_step, samples, now)
        if self._bar.total is not None:  # the last collect may overshoot the budget: the bar stops at its total
            env_step = min(env_step, int(self._bar.total))
        self._bar.update(env_step - self._bar_step)
        self._bar_step = env_step
        shown: dict[str, Any] = {"iter": train_iter}
        if eval_return is not None:
            shown["eval"] = f"{eval_return:.1f}"  # tqdm would round a float to 3 significant digits
        if self._bar_rates is not None:
            shown["env/s"] = rate_text(self._bar_rates.env_steps_per_second)
            shown["samples/s"] = rate_text(self._bar_rates.train_samples_per_second)
        self._bar.set_postfix(shown, refresh=False)

    def check_folder(self) -> None:
        """Raise :class:`~ding_lite.errors.OutputError` if the experiment folder was removed or moved meanwhile."""
        if self._folder_check is not None:
            self._folder_check()

    def flush_events(self) -> None:
        """Write out the buffered tensorboard events now (the learner calls it before each checkpoint): a resume
        cuts the event files back to its checkpoint's time (:func:`~ding_lite.utils.events.drop_events_after`), so
        what was logged before a checkpoint must be on disk with it, or a run killed within ``flush_secs`` of its
        checkpoint loses those events for good. Other trackers are not cut back on resume and keep their own
        rhythm."""
        from ding_lite.utils.trackers import TensorboardTracker

        for tracker in self._trackers:
            if isinstance(tracker, TensorboardTracker):
                tracker.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        trackers, self._trackers = self._trackers, []
        file, self._file = self._file, None
        try:
            for tracker in trackers:
                tracker.close()
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


BAR_RATE_WINDOW = 2.0  # seconds over which the progress bar's rates are measured


def is_scalar(value: Any) -> bool:
    """A learn log value that is logged as a number: a Python or numpy number, a 0-dim numeric array or a 0-dim
    tensor. Anything else a policy returns (a string, None, a list, a vector such as ``priority``) is not logged."""
    if isinstance(value, (int, float, np.number, np.bool_)):  # bool is an int
        return not isinstance(value, np.complexfloating)
    if isinstance(value, np.ndarray):
        return value.ndim == 0 and value.dtype.kind in "biuf"
    return getattr(value, "ndim", None) == 0 and not isinstance(value, str)  # a 0-dim tensor


def _log_interval(cfg: Mapping[str, Any]) -> int:
    """The learner's ``log_show_after_iter`` (100 where the config has no learner section)."""
    hook = (((cfg.get("policy") or {}).get("learn") or {}).get("learner") or {}).get("hook") or {}
    return int(hook.get("log_show_after_iter", 100) or 0)

"""ding_lite/utils/log.py and throughput.py: the progress bar (env steps, iterations, last eval return, live rates) on
an interactive terminal, a plain [log] line every few seconds elsewhere, and the throughput scalars at every log
interval, on a fake clock with rates computed by hand."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from ding_lite.utils.events import read_scalars
from ding_lite.utils.log import ExperimentLogger
from ding_lite.utils.throughput import RateMeter, Rates, rate_text

pytestmark = pytest.mark.unittest


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _cfg(log_every_iter: int = 10, print_every: float = 5.0) -> dict:
    return {"log": {"print_every_seconds": print_every},
            "policy": {"learn": {"learner": {"hook": {"log_show_after_iter": log_every_iter}}}}}


def test_rate_meter_by_hand() -> None:
    meter = RateMeter(100, 400, now=10.0)
    assert meter.rates(1100, 2400, now=12.0) == Rates(500.0, 1000.0, 2.0)
    meter.mark(1100, 2400, now=12.0)
    assert meter.rates(1400, 2400, now=16.0) == Rates(75.0, 0.0, 4.0)
    assert meter.rates(1400, 2400, now=12.0).seconds == 0.0
    assert rate_text(1234.4) == "1,234" and rate_text(12.34) == "12.3" and rate_text(float("nan")) == "-"


def test_progress_bar_shows_env_steps_iterations_eval_return_and_rates(tmp_path: Path, monkeypatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    clock = _Clock()
    logger = ExperimentLogger(tmp_path, progress_total=1000, progress=True, cfg=_cfg(), clock=clock)
    logger.progress(256, 4, 256, 123.4)
    clock.now += 2.0  # one full rate window: 256 env steps and 1,024 samples in 2 s
    logger.progress(512, 8, 1280, 187.5)
    logger.info("[eval] a line printed above the bar")
    logger.close()
    shown = terminal.getvalue()
    assert "512/1000" in shown and "iter=8" in shown and "eval=187.5" in shown, shown
    assert "env/s=128" in shown and "samples/s=512" in shown, shown
    assert "[eval] a line printed above the bar" in shown and "[log]" not in shown
    assert "[eval] a line printed above the bar" in (tmp_path / "log" / "train.log").read_text()


def test_off_a_terminal_a_log_line_every_few_seconds(tmp_path: Path, monkeypatch) -> None:
    pipe = io.StringIO()  # isatty() is False, as in CI logs or under nohup
    monkeypatch.setattr(sys, "stderr", pipe)
    clock = _Clock()
    logger = ExperimentLogger(tmp_path, progress_total=4000, progress=True, cfg=_cfg(print_every=5.0), clock=clock)
    logger.progress(0, 0, 0)
    clock.now += 4.0
    logger.progress(400, 8, 800)  # 4 s: no line yet
    clock.now += 1.0
    logger.progress(1000, 20, 2000, 55.5)  # 5 s since the start: 1,000 env steps and 2,000 samples
    clock.now += 1.0
    logger.progress(1200, 24, 2400, 55.5)
    logger.close()
    lines = [line for line in pipe.getvalue().splitlines() if line.startswith("[log]")]
    assert lines == ["[log] env_step 1,000 (25%)  iter 20  env steps/s 200  train samples/s 400  last eval 55.50"]
    assert "iter=" not in pipe.getvalue()  # no bar
    assert lines[0] in (tmp_path / "log" / "train.log").read_text()


def test_throughput_scalars_at_every_log_interval(tmp_path: Path) -> None:
    clock = _Clock()
    logger = ExperimentLogger(tmp_path, progress=False, cfg=_cfg(log_every_iter=10, print_every=0), clock=clock)
    for i in range(1, 8):  # 4 iterations and 64 env steps per round, 0.5 s each; 32 samples per iteration
        clock.now += 0.5
        logger.progress(64 * i, 4 * i, 128 * i)
    logger.close()
    series = read_scalars(tmp_path / "log").series
    env_rate, sample_rate = series["speed/env_steps_per_second"], series["speed/train_samples_per_second"]
    # iterations 4, 8, 12, ...: 10 is passed at round 3 (iter 12), 20 at round 5 (iter 20), 30 not yet (iter 28)
    # the first call opens the window at round 1 (64 env steps, t=100.5)
    assert env_rate.steps == [192, 320] and sample_rate.steps == [192, 320]
    assert env_rate.values == pytest.approx([128 / 1.0, 128 / 1.0])
    assert sample_rate.values == pytest.approx([256 / 1.0, 256 / 1.0])

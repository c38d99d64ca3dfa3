"""ding_lite/utils/log.py: the progress bar (env steps, iterations, last eval return) on an interactive terminal."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from ding_lite.utils.log import ExperimentLogger

pytestmark = pytest.mark.unittest


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_shows_env_steps_iterations_and_eval_return(tmp_path: Path, monkeypatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    logger = ExperimentLogger(tmp_path, progress_total=1000, progress=True)
    logger.progress(256, iter=4, eval=123.4)
    logger.progress(512, iter=8, eval=187.5)
    logger.info("[eval] a line printed above the bar")
    logger.close()
    shown = terminal.getvalue()
    assert "512/1000" in shown and "iter=8" in shown and "eval=187.5" in shown, shown
    assert "[eval] a line printed above the bar" in shown
    assert "[eval] a line printed above the bar" in (tmp_path / "log" / "train.log").read_text()


def test_no_bar_off_a_terminal(tmp_path: Path, monkeypatch) -> None:
    pipe = io.StringIO()  # isatty() is False, as in CI logs
    monkeypatch.setattr(sys, "stderr", pipe)
    logger = ExperimentLogger(tmp_path, progress_total=1000, progress=True)
    logger.progress(512, iter=8, eval=187.5)
    logger.close()
    assert "iter=8" not in pipe.getvalue()

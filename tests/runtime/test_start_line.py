"""The run's ``[start]`` line (ding_lite/runtime/train_loop.py start_line) names the stop value the run compares with.
It wrote it with ``:g``, which keeps 6 significant digits: a stop value of 1234567 read ``>= 1.23457e+06`` and
3000.125 read ``>= 3000.12``, thresholds the run does not use."""
from __future__ import annotations

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.build import load_config
from ding_lite.runtime.train_loop import start_line

pytestmark = pytest.mark.unittest


@pytest.mark.parametrize(("stop_value", "shown"), [(195, "195"), (0.95, "0.95"), (-1e-3, "-0.001"), (1e6, "1e+06"),
                                                   (1234567, "1234567"), (3000.125, "3000.125")])
def test_the_start_line_shows_the_stop_value_the_run_compares_with(stop_value: float, shown: str) -> None:
    cfg = load_config(str(DIZOO_CARTPOLE / "cartpole_dqn_config.py"), overrides=[f"env.stop_value={stop_value!r}"])
    line = start_line(cfg, 0, None, None)
    assert f"ends at a mean eval return >= {shown} (" in line, line
    assert float(shown) == stop_value

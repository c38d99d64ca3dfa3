"""A -m gsl run's own total_config.py (the top folder's, beside each phase's): the resolved config with its gsl
section, which compiles strictly to what ran and, run again with -m gsl, writes the same files again."""
from __future__ import annotations

from pathlib import Path

import pytest

from ding_lite.build import fill_model_shapes_from_env, load_config
from ding_lite.cli import main
from tests.entry.test_gsl import TINY

pytestmark = pytest.mark.unittest

SMALL = ["gsl.phase1_max_env_step=256", "gsl.n_low=2", "gsl.n_specialists=1", "gsl.specialist_max_env_step=256",
         "gsl.demo_episodes_per_variation=1", "gsl.phase2_max_env_step=256", "policy.eval.final_episodes=1"]
TOTALS = ("total_config.py", "phase1_generalist/total_config.py", "specialist_0/total_config.py",
          "phase2_generalist/total_config.py")


def test_a_gsl_run_saves_a_total_config_that_runs_again(tmp_path: Path, capsys) -> None:
    config = tmp_path / "gsl_tiny.py"
    config.write_text(TINY.replace("USE_RAY", "False"))
    sets = [arg for kv in SMALL for arg in ("--set", kv)]
    first, second = tmp_path / "a", tmp_path / "b"
    assert main(["-m", "gsl", "-c", str(config), "-s", "2", "--strict", "--exp-name", str(first), "--no-progress",
                 *sets]) == 0
    total = first / "total_config.py"
    # before, the top folder held no total_config.py: the gsl section (phase budgets, specialists) was nowhere
    expected = load_config(config, overrides=SMALL, seed=2)
    fill_model_shapes_from_env(expected)
    expected.exp_name = str(first)
    assert load_config(total, strict=True) == expected
    assert main(["-m", "gsl", "-c", str(total), "-s", "2", "--strict", "--exp-name", str(second),
                 "--no-progress"]) == 0
    for name in TOTALS:
        assert (second / name).read_text() == (first / name).read_text().replace(str(first), str(second)), name
    # -m eval of it: the top folder holds no checkpoint; the one error line names the phase config that plays one
    capsys.readouterr()
    assert main(["-m", "eval", "-c", str(total), "--n-episode", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    final = first / "phase2_generalist" / "total_config.py"
    assert len(err) == 1 and f"-m eval -c {final}" in err[0], err
    assert main(["-m", "eval", "-c", str(final), "--n-episode", "1"]) == 0

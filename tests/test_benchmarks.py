"""The benchmark scripts stay runnable: each imports cleanly against the current package (they are not run in CI)."""
from __future__ import annotations

import importlib.util
import sys

import pytest
from conftest import REPO_ROOT

pytestmark = pytest.mark.unittest

SCRIPTS = sorted((REPO_ROOT / "benchmarks").glob("*.py"))


def load_benchmark(script):
    """The script as a module: its imports and definitions run; the benchmark itself needs ``__main__``."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import would: dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.name for s in SCRIPTS])
def test_benchmark_script_imports(script) -> None:
    module = load_benchmark(script)
    assert module.__doc__, f"{script.name} needs a docstring saying what it measures and how to run it"


def test_offpolicy_mujoco_counts_a_closing_evaluation_once(tmp_path) -> None:
    """The serial pipeline evaluates at 19,999 env steps and again at 20,000 when its budget ends: one evaluation of
    one policy, which the final return (the mean of the last 3) must not count twice (SB3's side has one there)."""
    from tensorboardX import SummaryWriter

    bench = load_benchmark(REPO_ROOT / "benchmarks" / "offpolicy_mujoco.py")
    writer = SummaryWriter(str(tmp_path / "exp" / "log"))
    for step, ret in ((9_999, 100.0), (19_999, 200.0), (20_000, 210.0)):
        writer.add_scalar("eval/return_mean", ret, step)
        writer.add_scalar("speed/env_steps_per_second", 100.0, step)
    writer.close()
    curve = bench.ding_lite_curve(tmp_path)
    assert [(p["env_step"], p["ret"]) for p in curve] == [(9_999, 100.0), (20_000, 210.0)]

"""ding_lite driven from Python (a notebook, a script): the pipelines called several times in one process, with the
caller's config objects; what docs/quickstart.md's 'Using ding_lite from Python' section states."""
from __future__ import annotations

import copy
import logging
import os
import signal
import sys
import threading
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from conftest import DIZOO_CARTPOLE

from ding_lite.config import compile_config, read_config
from ding_lite.config.frozen import is_frozen
from ding_lite.config.reader import read_saved_config
from ding_lite.entry import serial_pipeline
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

PPO = DIZOO_CARTPOLE / "cartpole_ppo_config.py"
TINY = dict(max_env_step=64, progress=False)  # one collect round and its evaluations: a fraction of a second


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def _learning_rate(result: dict) -> float:
    return read_saved_config(Path(result["exp_dir"]) / "total_config.py")["policy"]["learn"]["learning_rate"]


@pytest.mark.parametrize("overrides", [(), ("policy.learn.batch_size=32",)])
def test_a_compiled_config_passed_in_stays_the_callers(tmp_path: Path, overrides: tuple[str, ...]) -> None:
    # the run resolved and froze the caller's CompiledConfig itself: the caller's next cell, changing one key for a
    # second run, raised FrozenConfigError
    cfg = compile_config(*read_config(PPO))
    before = copy.deepcopy(cfg)
    serial_pipeline(cfg, exp_dir=tmp_path / "a", overrides=overrides, seed=3, **TINY)
    assert not is_frozen(cfg) and cfg == before
    cfg.policy.learn.learning_rate = 0.0123  # the caller reuses its config with one key changed
    assert _learning_rate(serial_pipeline(cfg, exp_dir=tmp_path / "b", overrides=overrides, **TINY)) == 0.0123


def test_the_same_call_twice_gives_the_same_run_in_a_fresh_folder() -> None:
    main, create = read_config(PPO)
    given = copy.deepcopy((main, create))
    first = serial_pipeline((main, create), **TINY)
    second = serial_pipeline((main, create), **TINY)
    assert (main, create) == given  # the caller's dicts are not changed
    assert Path(second["exp_dir"]).name == Path(first["exp_dir"]).name + "_1"  # a fresh folder, never overwritten
    ignore = ("exp_dir", "wall_seconds")
    assert {k: v for k, v in first.items() if k not in ignore} == {k: v for k, v in second.items() if k not in ignore}


def test_nothing_is_left_behind_in_the_callers_process(tmp_path: Path) -> None:
    serial_pipeline(str(PPO), exp_dir=tmp_path / "warm", **TINY)  # the console handler is set up once, here
    logger = logging.getLogger("ding_lite")
    seen = (len(os.listdir("/proc/self/fd")), threading.active_count(), len(logger.handlers),
            signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), list(sys.path), os.getcwd())
    for k in range(2):
        serial_pipeline(str(PPO), exp_dir=tmp_path / f"run{k}", **TINY)
    assert (len(os.listdir("/proc/self/fd")), threading.active_count(), len(logger.handlers),
            signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), list(sys.path), os.getcwd()) == seen


def test_errors_are_raised_to_the_caller_and_the_next_call_works(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="policy.learn.nope"):  # raised, never SystemExit
        serial_pipeline(str(PPO), exp_dir=tmp_path / "bad", strict=True, overrides=("policy.learn.nope=1",), **TINY)
    assert not (tmp_path / "bad").exists()  # a refused start leaves nothing
    assert serial_pipeline(str(PPO), exp_dir=tmp_path / "good", **TINY)["env_step"] >= 64


def test_the_docs_lines_load_and_evaluate_the_saved_policy(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The block of docs/quickstart.md's Python API section that acts with and evaluates the best checkpoint, run as
    written there, after a run."""
    page = (Path(__file__).parents[2] / "docs" / "quickstart.md").read_text()
    block = page.split("To act with the best one, or evaluate it:")[1].split("```python\n")[1].split("```")[0]
    result = serial_pipeline(str(PPO), seed=0, exp_dir=tmp_path / "ppo", **TINY)
    capsys.readouterr()
    scope: dict = {"result": result}
    exec(compile(block, "quickstart.md", "exec"), scope)
    assert scope["policy"].eval_mode is not None and gym.make("CartPole-v1").action_space.contains(
        int(scope["action"]))
    assert float(capsys.readouterr().out.strip().splitlines()[-1]) > 0  # the printed mean eval return


@pytest.mark.parametrize("value", [threading.Lock(), os, torch.zeros(2, requires_grad=True) * 2],
                         ids=["lock", "module", "tensor-in-a-graph"])
def test_a_compiled_config_holding_a_value_deepcopy_refuses_still_runs(tmp_path: Path, value: object) -> None:
    # the run's copy of the caller's config was a plain copy.deepcopy: such a value (which the run used in place
    # before) raised TypeError / RuntimeError from deep inside copy.py
    cfg = compile_config(*read_config(PPO))
    cfg.env.user_object = value
    serial_pipeline(cfg, exp_dir=tmp_path / "a", **TINY)
    assert cfg.env.user_object is value and not is_frozen(cfg)

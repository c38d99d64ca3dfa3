"""Saving compiled configs (ding_lite/config/writer.py): total_config.py runs again and compiles to the same config."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import DIZOO_CARTPOLE

from ding_lite.build import load_config
from ding_lite.config import compile_config, config_to_source, read_config, save_config
from ding_lite.entry.serial import serial_pipeline

pytestmark = pytest.mark.unittest


def test_source_round_trip_of_awkward_values(tmp_path: Path) -> None:
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1", stop_value=float("inf")),
                              policy=dict(type="dqn", model=dict(encoder_hidden_size_list=(32, 16))),
                              exp_name="it's \"quoted\"\n"))
    path = save_config(cfg, tmp_path / "sub" / "total_config.py")
    main, create = read_config(path)
    assert create == {}
    assert math.isinf(main["env"]["stop_value"]) and main["env"]["stop_value"] > 0
    assert main["exp_name"] == "it's \"quoted\"\n"
    assert compile_config(main, strict=True) == cfg
    assert "main_config = " in config_to_source(cfg)


def test_infinities_of_both_signs_and_nan_are_written_as_such(tmp_path: Path) -> None:
    # mutation audit: -inf stays -inf (a lower bound, a best return so far), not inf
    path = save_config(dict(env=dict(low=-math.inf, high=math.inf, missing=math.nan), policy=dict()),
                       tmp_path / "total_config.py")
    env = read_config(path)[0]["env"]
    assert (env["low"], env["high"]) == (-math.inf, math.inf) and math.isnan(env["missing"])


def test_total_config_of_a_run_is_a_runnable_config(tmp_path: Path) -> None:
    dizoo = DIZOO_CARTPOLE / "cartpole_ppo_config.py"
    overrides = ("policy.collect.n_sample=32", "policy.learn.epoch_per_collect=1")
    first = serial_pipeline(dizoo, seed=3, max_env_step=32, exp_dir=tmp_path / "a", overrides=overrides,
                            progress=False)
    total = tmp_path / "a" / "total_config.py"
    assert first["env_step"] == 32
    # it compiles, strictly (no unknown key), to the config the run used, naming the run's own folder
    expected = load_config(dizoo, overrides=overrides, seed=3)
    expected.exp_name = str(tmp_path / "a")
    assert load_config(total, strict=True) == expected
    # and it runs as a config file itself, writing the same total config again
    second = serial_pipeline(total, seed=3, max_env_step=32, exp_dir=tmp_path / "b", progress=False)
    assert second["env_step"] == 32
    assert (tmp_path / "b" / "total_config.py").read_text() == \
        total.read_text().replace(str(tmp_path / "a"), str(tmp_path / "b"))

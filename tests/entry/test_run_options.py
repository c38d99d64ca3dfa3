"""One run-options record (RunOptions) for the CLI's training modes and the training pipelines' preludes."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from ding_lite.cli import build_parser, training_run
from ding_lite.entry.parallel import parallel_pipeline
from ding_lite.entry.parallel_selfplay import parallel_selfplay_pipeline
from ding_lite.entry.selfplay import selfplay_pipeline
from ding_lite.entry.serial import serial_pipeline
from ding_lite.runtime.train_loop import RunOptions

pytestmark = pytest.mark.unittest

PIPELINES = [serial_pipeline, selfplay_pipeline, parallel_pipeline, parallel_selfplay_pipeline]


@pytest.mark.parametrize("pipeline", PIPELINES, ids=lambda f: f.__name__)
def test_every_training_pipeline_takes_the_options_as_keywords_with_the_records_defaults(pipeline) -> None:
    params = inspect.signature(pipeline).parameters
    for name, value in RunOptions().keywords().items():
        assert name in params and params[name].default == value, name


def test_the_cli_builds_the_options_from_its_flags(tmp_path) -> None:
    config = tmp_path / "c.py"
    config.write_text("main_config = dict(exp_name='exp', env=dict(env_id='CartPole-v1'), policy=dict(type='dqn'))\n")
    args = build_parser().parse_args(["-c", str(config), "--max-env-step", "50", "--resume", "--no-progress",
                                      "--exp-name", str(tmp_path / "run"), "--set", "policy.learn.batch_size=8"])
    cfg, options = training_run(args, seed=3, n_seeds=2)
    assert cfg.policy.learn.batch_size == 8  # the CLI compiled the config: the options carry no overrides
    assert options == RunOptions(3, 50, None, exp_dir=options.exp_dir, resume=True, progress=False)
    assert str(options.exp_dir).endswith("run_seed3")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 4  # type: ignore[misc]

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
from ding_lite.runtime.run_start import RunOptions

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


@pytest.mark.parametrize(("flags", "env_steps", "train_iters"), [
    (["--max-env-step", "300000"], 300000, None),
    (["--env-step", "1e7"], 10_000_000, None),  # DI-engine's flag, in its float notation
    (["--train-iter", "2e3"], None, 2000),
])
def test_budgets_in_di_engine_spelling(flags: list[str], env_steps: int | None, train_iters: int | None) -> None:
    args = build_parser().parse_args(["-c", "c.py", *flags])
    assert (args.max_env_step, args.max_train_iter) == (env_steps, train_iters)


def test_set_takes_one_or_more_overrides_each_time_in_order() -> None:
    args = build_parser().parse_args(["-c", "c.py", "--set", "a=1", "b=2", "--max-env-step", "9", "--set", "a=3"])
    assert args.overrides == ["a=1", "b=2", "a=3"] and args.max_env_step == 9
    assert build_parser().parse_args(["-c", "c.py"]).overrides == []


def test_di_engine_flag_names() -> None:
    args = build_parser().parse_args(["-m", "eval", "-c", "c.py", "--load-path", "a.pth.tar", "--replay-path", "vids"])
    assert (args.load_ckpt, args.video) == ("a.pth.tar", "vids")


@pytest.mark.parametrize("value", ["1.5", "inf", "nan", "1e", "-1e3"])
def test_a_budget_that_is_not_a_whole_number_of_at_least_1_is_refused(value: str, capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["-c", "c.py", "--env-step", value])
    assert "argument --max-env-step/--env-step:" in capsys.readouterr().err


def test_serial_onpolicy_is_the_serial_mode(tmp_path, monkeypatch) -> None:
    """DI-engine's ``ding -m serial_onpolicy -c cfg.py -s 0`` (in its on-policy configs' comments) runs here too."""
    from ding_lite.cli import RUNNERS, main

    assert RUNNERS["serial_onpolicy"] is RUNNERS["serial"]
    config = tmp_path / "c.py"
    config.write_text("main_config = dict(env=dict(env_id='CartPole-v1', collector_env_num=2, evaluator_env_num=1,"
                      " n_evaluator_episode=1), policy=dict(type='ppo', numba=False, collect=dict(n_sample=64),"
                      " eval=dict(final_episodes=0)))\n")
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "serial_onpolicy", "-c", str(config), "--env-step", "1e2", "--exp-name", "run",
                 "--no-progress"]) == 0
    assert (tmp_path / "run" / "result.json").is_file()


def test_without_s_a_run_takes_the_configs_seed(tmp_path) -> None:
    """The config's ``seed`` is the default of ``-s``: a saved ``total_config.py`` (which holds its run's seed) runs,
    resumes and evaluates that seed again without ``-s``; ``-s`` still wins."""
    config = tmp_path / "c.py"
    config.write_text("main_config = dict(exp_name='exp', seed=7, env=dict(env_id='CartPole-v1'), "
                      "policy=dict(type='dqn'))\n")
    args = build_parser().parse_args(["-c", str(config)])
    assert args.seed is None
    cfg, options = training_run(args, seed=None, n_seeds=1)
    assert cfg.seed == 7 and options.seed == 7
    cfg, options = training_run(build_parser().parse_args(["-c", str(config), "-s", "2"]), seed=2, n_seeds=1)
    assert cfg.seed == 2 and options.seed == 2

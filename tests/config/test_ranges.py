"""Value ranges by key name (ding_lite/config/ranges.py): checked on every compiled config, wherever a key sits."""
from __future__ import annotations

import math
import re

import pytest

from ding_lite.config import compile_config
from ding_lite.config.ranges import (
    COUNT,
    ENV_COUNT,
    NON_NEGATIVE,
    POSITIVE,
    POSITIVE_OR_INF,
    SIZES,
    UNIT,
    bound_for,
    check_ranges,
)
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

ENV = dict(type="gymnasium", env_id="CartPole-v1")


@pytest.mark.parametrize("path,bound", [
    ("policy.learn.learning_rate", POSITIVE), ("policy.learn.learning_rate_critic", POSITIVE),
    ("policy.learn.batch_size", COUNT), ("policy.learn.demo_batch_size", COUNT), ("env.evaluator_env_num", ENV_COUNT),
    ("policy.learn.entropy_weight", NON_NEGATIVE), ("policy.learn.weight_decay", NON_NEGATIVE),
    ("policy.collect.gae_lambda", UNIT), ("policy.other.eps.end", UNIT), ("env.manager.step_timeout", POSITIVE_OR_INF),
    ("policy.model.encoder_hidden_size_list", SIZES), ("policy.model.head_layer_num", NON_NEGATIVE),
    # counts of a failure budget, not times: before, the '*_window' rule refused 0 and offered inf (no int)
    ("parallel.max_actor_restarts_per_window", NON_NEGATIVE), ("env.manager.max_retry_per_window", NON_NEGATIVE),
])
def test_a_key_is_ruled_by_its_name_wherever_it_sits(path: str, bound) -> None:
    assert bound_for(path) is bound
    if bound is not UNIT:  # eps.start/end are ruled by their path: plain start/end mean other things elsewhere
        assert bound_for("a_plugin_section." + path.rsplit(".", 1)[-1]) is bound


def test_unknown_names_none_and_switches_pass() -> None:
    check_ranges({"policy": {"init_log_std": -2.0, "learning_rate": None, "priority_IS_weight": False},
                  "env": {"stop_value": -math.inf}})


@pytest.mark.parametrize("tree,message", [
    ({"policy": {"model": {"encoder_hidden_size_list": [64, 0]}}},
     "policy.model.encoder_hidden_size_list must be at least 1, got [64, 0]"),
    ({"policy": {"model": {"init_log_std": math.nan}}}, "policy.model.init_log_std is NaN"),
    ({"policy": {"model": {"init_log_std": math.inf}}},
     "policy.model.init_log_std must be a finite number (in [-87.3, 88.7] (e^x, the standard deviation, must be a "
     "positive finite float32)), got inf"),
    # e^x is inf or 0 in float32: before, the first action or loss was inf or NaN, refused as a diverged run after
    # the run's folder was written (found by the config fuzzer)
    ({"policy": {"model": {"init_log_std": 1e12}}}, "policy.model.init_log_std must be in [-87.3, 88.7]"),
    ({"policy": {"model": {"init_log_std": 89.0}}}, "policy.model.init_log_std must be in [-87.3, 88.7]"),
    ({"policy": {"model": {"init_log_std": -1e12}}}, "policy.model.init_log_std must be in [-87.3, 88.7]"),
    ({"env": {"manager": {"step_timeout": 0}}}, "env.manager.step_timeout must be > 0 (inf: never), got 0"),
    ({"policy": {"learn": {"dual_clip": 1.0}}}, "policy.learn.dual_clip must be > 1, got 1.0"),
    # a model's filters (connect four's pool_channels): before, -1 was a torch traceback as the model was built
    ({"policy": {"model": {"pool_channels": -1}}}, "policy.model.pool_channels must be at least 1, got -1"),
    # the maze's wall_prob: before, -1 or inf ran (no walls, every wall) and inf shaping was a NaN reward after the
    # run's folder was written (found by the config fuzzer)
    ({"env": {"wall_prob": -0.1}}, "env.wall_prob must be in [0, 1], got -0.1"),
    ({"env": {"wall_prob": math.inf}}, "env.wall_prob must be a finite number (in [0, 1]), got inf"),
    ({"env": {"shaping": math.inf}}, "env.shaping must be a finite number (a real number, not inf), got inf"),
])
def test_out_of_range_values_name_the_key_and_the_range(tree, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_ranges(tree)


def test_an_infinite_timeout_is_accepted_and_the_seed_is_checked_too() -> None:
    cfg = compile_config(dict(env=ENV, policy=dict(type="ppo")), overrides=["env.manager.type=subprocess",
                                                                           "env.manager.step_timeout=inf"])
    assert cfg.env.manager.step_timeout == math.inf
    with pytest.raises(ConfigError, match=re.escape("seed must be in [0, 4294967295]")):
        compile_config(dict(env=ENV, policy=dict(type="ppo")), seed=-1)


@pytest.mark.parametrize("override,message", [
    ("policy.model.encoder_hidden_size_list=[128.5]", "policy.model.encoder_hidden_size_list must be a whole number "
                                                      "(at least 1), got [128.5]"),
    ("policy.model.obs_shape=4.5", "policy.model.obs_shape must be a whole number (at least 1), got 4.5"),
])
def test_a_count_or_size_must_be_a_whole_number(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[override])


def test_integral_floats_of_counts_and_sizes_become_ints() -> None:
    """As ``1e4`` for an int setting does: ``nn.Linear(4, 128.0)`` and ``range(2.0)`` would fail later."""
    cfg = compile_config(dict(env=ENV, policy=dict(type="dqn")), overrides=[
        "policy.model.encoder_hidden_size_list=[128.0, 64]", "policy.model.obs_shape=4.0",
        "policy.model.action_shape=2.0"])
    model = cfg.policy.model
    assert model.encoder_hidden_size_list == [128, 64] and model.obs_shape == 4 and model.action_shape == 2
    assert all(type(x) is int for x in [*model.encoder_hidden_size_list, model.obs_shape, model.action_shape])


@pytest.mark.parametrize("override,message", [
    # None where the default is a value: a count, a rate, a seed, a switch (found by a config-key fuzzer: before, a
    # traceback from deep inside the run, or a switch silently off)
    ("env.collector_env_num=None", "config key 'env.collector_env_num' must be an int, got None (default: 8)"),
    ("policy.learn.learning_rate=None", "config key 'policy.learn.learning_rate' must be a number, got None"),
    ("policy.learn.batch_size=None", "config key 'policy.learn.batch_size' must be an int, got None"),
    ("seed=None", "config key 'seed' must be an int, got None (default: 0)"),
    ("policy.eval.evaluator.eval_freq=None", "config key 'policy.eval.evaluator.eval_freq' must be an int, got None"),
    ("policy.cuda=None", "config key 'policy.cuda' must be a bool, got None (default: False)"),
    # a bool for a key named like a number whose default is None: True would be taken as 1
    ("policy.learn.dual_clip=True", "policy.learn.dual_clip must be a number (> 1), got bool True"),
    ("policy.learn.value_clip_ratio=True", "policy.learn.value_clip_ratio must be a number (> 0), got bool True"),
    ("policy.model.actor_head_hidden_size=True", "policy.model.actor_head_hidden_size must be a number (at least 1), "
                                                 "got bool True"),
    # a list where one number belongs, and None inside a list of sizes
    ("env.stop_value=[1]", "env.stop_value must be a number, got a list [1]"),
    ("policy.collect.discount_factor=[1]", "policy.collect.discount_factor must be a number (a number in [0, 1]), "
                                           "got a list [1]"),
    ("policy.learn.dual_clip=[None]", "policy.learn.dual_clip must be a number (> 1), got a list [None]"),
    ("policy.model.encoder_hidden_size_list=[None]", "policy.model.encoder_hidden_size_list must be a list of numbers "
                                                     "(at least 1), got [None]"),
    # a dict where a number belongs, for a key whose default is None (before, env.stop_value={} was a TypeError
    # traceback at the first evaluation, after the run's folder was made; found by the config fuzzer)
    ("env.stop_value={}", "env.stop_value must be a number, got a dict {}: give a number, or None"),
    ("policy.learn.dual_clip={'a': 1}", "policy.learn.dual_clip must be a number (> 1), got a dict {'a': 1}"),
])
def test_none_bools_and_lists_where_a_number_belongs_are_config_errors(override: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        compile_config(dict(env=ENV, policy=dict(type="ppo"), seed=0), overrides=[override])


@pytest.mark.parametrize("override", [
    "policy.learn.grad_clip_value=None", "policy.collect.reward_clip=None", "policy.collect.n_sample=None",
    "env.manager.type=subprocess env.manager.step_timeout=None", "env.max_episode_steps=None", "policy.model.type=None",
    "policy.model.obs_shape=[4]", "policy.learn.dual_clip=None", "policy.collect.discount_factor=None",
])
def test_none_where_the_reference_gives_it_a_meaning_and_lists_of_sizes_pass(override: str) -> None:
    compile_config(dict(env=ENV, policy=dict(type="ppo")), overrides=override.split())


@pytest.mark.parametrize("override", ["parallel.max_actor_restarts_per_window=0",
                                      "env.manager.type=subprocess env.manager.max_retry_per_window=0"])
def test_a_budget_of_no_failures_per_window_is_accepted(override: str) -> None:
    """0 stops at the first failure within the window, as max_actor_restarts=0 does in a row (before: refused as a
    time, 'must be > 0 (inf: never)', and inf then refused as no int)."""
    compile_config(dict(env=ENV, policy=dict(type="ppo")), overrides=override.split())
    with pytest.raises(ConfigError, match=re.escape(f"{override.split()[-1].split('=')[0]} must be ≥ 0, got -1")):
        compile_config(dict(env=ENV, policy=dict(type="ppo")), overrides=override.replace("=0", "=-1").split())


@pytest.mark.parametrize("override,message", [("env.wall_prob=-1", "env.wall_prob must be in [0, 1], got -1"),
                                              ("env.shaping=-inf", "env.shaping must be a finite number")])
def test_an_env_probability_and_shaping_weight_are_checked_in_a_dizoo_config(override: str, message: str) -> None:
    from conftest import REPO_ROOT

    from ding_lite.build import load_config

    config = REPO_ROOT / "dizoo" / "grid" / "maze" / "config" / "maze_gsl_config.py"
    load_config(config, overrides=["env.shaping=-0.5"])  # a finite weight of either sign is the user's
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(config, overrides=[override])

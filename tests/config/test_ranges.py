"""Value ranges by key name (ding_lite/config/ranges.py): checked on every compiled config, wherever a key sits."""
from __future__ import annotations

import math
import re

import pytest

from ding_lite.config import compile_config
from ding_lite.config.ranges import COUNT, NON_NEGATIVE, POSITIVE, POSITIVE_OR_INF, UNIT, bound_for, check_ranges
from ding_lite.errors import ConfigError

pytestmark = pytest.mark.unittest

ENV = dict(type="gymnasium", env_id="CartPole-v1")


@pytest.mark.parametrize("path,bound", [
    ("policy.learn.learning_rate", POSITIVE), ("policy.learn.learning_rate_critic", POSITIVE),
    ("policy.learn.batch_size", COUNT), ("policy.learn.demo_batch_size", COUNT), ("env.evaluator_env_num", COUNT),
    ("policy.learn.entropy_weight", NON_NEGATIVE), ("policy.learn.weight_decay", NON_NEGATIVE),
    ("policy.collect.gae_lambda", UNIT), ("policy.other.eps.end", UNIT), ("env.manager.step_timeout", POSITIVE_OR_INF),
    ("policy.model.encoder_hidden_size_list", COUNT), ("policy.model.head_layer_num", NON_NEGATIVE),
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
    ({"env": {"manager": {"step_timeout": 0}}}, "env.manager.step_timeout must be > 0 (inf: never), got 0"),
    ({"policy": {"learn": {"dual_clip": 1.0}}}, "policy.learn.dual_clip must be > 1, got 1.0"),
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

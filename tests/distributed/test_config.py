"""The ``parallel`` config section's checks (ding_lite/distributed/config.py), without Ray."""
from __future__ import annotations

import pytest

from ding_lite.distributed.config import PARALLEL_CONFIG, check_parallel_config
from ding_lite.errors import ConfigError


@pytest.mark.unittest
@pytest.mark.parametrize("key", ["n_collectors", "broadcast_interval", "max_actor_restarts", "collector_num_cpus",
                                 "evaluator_num_cpus"])
def test_none_where_a_number_is_needed_is_a_config_error_naming_the_key(key):
    # the range checks of every config let None through (a switch turned off); these keys have no such meaning,
    # and int(None) / float(None) was a bare TypeError traceback from `--set parallel.n_collectors=None`
    with pytest.raises(ConfigError, match=rf"parallel\.{key} cannot be None: give a number \(default: "):
        check_parallel_config({**PARALLEL_CONFIG, key: None})


@pytest.mark.unittest
@pytest.mark.parametrize("key", ["num_cpus", "actor_restart_window", "max_actor_restarts_per_window"])
def test_none_keeps_its_documented_meaning_where_it_has_one(key):
    check_parallel_config({**PARALLEL_CONFIG, key: None})

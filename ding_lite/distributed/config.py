"""The ``parallel`` config section: its defaults (merged into every compiled config) and its checks."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ding_lite.errors import ConfigError
from ding_lite.registry import CONFIG_SECTION_REGISTRY

# The ``parallel`` section of every config (registered: compile_config merges it in; the serial pipeline ignores it).
PARALLEL_CONFIG: dict[str, Any] = dict(
    n_collectors=2,  # collector actors
    num_cpus=None,  # CPUs of the embedded local Ray instance (None: this machine's CPU count); unused with --address
    collector_num_cpus=1.0,  # CPUs Ray reserves for each collector actor
    evaluator_num_cpus=0.0,  # CPUs Ray reserves for the evaluator actor (it runs while the learner waits for it)
    broadcast_interval=1,  # off-policy: new weights go out every this many train iterations (on-policy: every round)
    max_actor_restarts=3,  # replacements per actor slot in a row (a batch or evaluation clears it); the next stops
    actor_restart_window=3600.0,  # seconds over which max_actor_restarts_per_window counts (None: no rate guard)
    max_actor_restarts_per_window=10,  # replacements per actor slot within actor_restart_window s; the next stops
)
CONFIG_SECTION_REGISTRY.register("parallel")(PARALLEL_CONFIG)


def check_parallel_config(par: Mapping[str, Any]) -> None:
    """Raise a :class:`ConfigError` naming the key for values no run can use (the range checks of every config let
    None through, a setting switched off: here only ``num_cpus`` and the rate guard's two keys may be None)."""
    for key in ("n_collectors", "broadcast_interval", "max_actor_restarts", "collector_num_cpus",
                "evaluator_num_cpus"):
        if par[key] is None:
            raise ConfigError(f"parallel.{key} cannot be None: give a number (default: {PARALLEL_CONFIG[key]!r})")
    for key, low in (("n_collectors", 1), ("broadcast_interval", 1), ("max_actor_restarts", 0)):
        if int(par[key]) < low:
            raise ConfigError(f"parallel.{key} must be at least {low}, got {par[key]!r}")
    window, per_window = par["actor_restart_window"], par["max_actor_restarts_per_window"]
    if window is not None and not (_is_number(window) and window > 0):
        raise ConfigError(f"parallel.actor_restart_window must be a positive number of seconds or None (no rate "
                          f"guard), got {window!r}")
    if per_window is not None and not (_is_number(per_window) and per_window >= 0):
        raise ConfigError(f"parallel.max_actor_restarts_per_window must be a number >= 0 or None (no rate guard), "
                          f"got {per_window!r}")
    for key in ("collector_num_cpus", "evaluator_num_cpus"):
        if float(par[key]) < 0:
            raise ConfigError(f"parallel.{key} must be >= 0, got {par[key]!r}")
    if par["num_cpus"] is not None and int(par["num_cpus"]) < 1:
        raise ConfigError(f"parallel.num_cpus must be a positive int or None (the CPU count), got {par['num_cpus']!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

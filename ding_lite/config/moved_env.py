"""A config pointed at another env by ``--set`` (``env.env_id``, ``env.type``): the settings that belong to the
config's own env and would mislead on the other are refused in one line naming the key to set.

- ``env.stop_value`` is a return of the config's env: CartPole's 195 is never reached on Acrobot (returns in
  [-500, 0]), Pendulum's -250 is passed at once on MountainCarContinuous (a still car scores 0). Kept while
  ``--set env.env_id`` changes the task, it ended the run at once or never, without a word.
- ``env.env_id`` given to an env type that builds one env (``cartpole``, ``pendulum``) was only an unknown-key
  warning, and the run trained the old env.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import gymnasium as gym

from ding_lite.config.reader import parse_override
from ding_lite.errors import ConfigError
from ding_lite.registry import ENV_REGISTRY


def override_paths(overrides: Iterable[str]) -> list[str]:
    """The dotted keys that ``--set`` overrides write."""
    return [".".join(parse_override(text)[0]) for text in overrides]


def check_env_id_read(after: Mapping[str, Any], env_defaults: Mapping[str, Any], overridden: Iterable[str]) -> None:
    """A :class:`ConfigError` for ``--set env.env_id`` on an env type that does not read it (``env_defaults``: the
    type's declared keys)."""
    env_id = after.get("env_id")
    if "env.env_id" not in set(overridden) or env_id is None or "env_id" in env_defaults:
        return
    env_type = after.get("type")
    builds = built_id(env_type)
    raise ConfigError(f"env.env_id={env_id!r} is not read by env type '{env_type}'"
                      f"{f' (it always builds {builds})' if builds else ''}: add --set env.type=gymnasium to run a "
                      f"gymnasium id (or the env type that builds {env_id})")


def stop_value_error(before: Mapping[str, Any], after: Mapping[str, Any], overridden: Iterable[str]) -> str | None:
    """The error for a stop value kept from another task (``before``/``after``: the ``env`` sections without and
    with the overrides, which write the keys ``overridden``), or None. A message, not a raise: a run raises it after
    its env and model checks (start_run), whose errors come first; an evaluation reads no stop value."""
    stop = after.get("stop_value")
    written = set(overridden)
    # only a new env id moves the task: an env.type alone is a route (envpool or gymnasium) or a wrapper of the same
    # env (a test's faulty CartPole), whose returns the stop value still fits
    if stop is None or "env.env_id" not in written or written & {"env", "env.stop_value"}:
        return None
    old, new = task_name(before), task_name(after)
    if old == new:
        return None
    new_id = str(after.get("env_id") or new)
    hint = reward_threshold(new_id)
    return (f"env.stop_value={stop!r} is a return of the config's env '{old}', not for '{new_id}' (--set changed "
            f"the env): set env.stop_value for it"
            f"{f' (gymnasium reward_threshold for {new_id}: {hint:g})' if hint is not None else ''}, or "
            f"env.stop_value=None to train for the whole budget")


def task_name(env: Mapping[str, Any]) -> str:
    """The task an env section runs, whatever the route: its ``env_id`` (or the gymnasium id its type always builds,
    class attribute ``gym_id``, else the type) without its version (Hopper-v3 and Hopper-v4 are one task)."""
    env_type = env.get("type") or "gymnasium"
    name = str(env.get("env_id") or built_id(env_type) or env_type)
    name = name.rpartition(":")[2]  # gymnasium's 'package:Id'
    base, _, version = name.rpartition("-v")
    return base if base and version.isdigit() else name


def built_id(env_type: Any) -> str | None:
    """The gymnasium id a registered env type always builds (its class attribute ``gym_id``: ``cartpole``'s
    CartPole-v1), else None."""
    if not isinstance(env_type, str) or env_type not in ENV_REGISTRY:
        return None
    return getattr(ENV_REGISTRY.get(env_type), "gym_id", None)


def reward_threshold(env_id: str) -> float | None:
    """gymnasium's ``reward_threshold`` for ``env_id`` (the return at which its docs call the task solved), if any."""
    try:
        threshold = gym.spec(env_id).reward_threshold
    except Exception:  # not a gymnasium id (envpool's, a plugin's): no hint
        return None
    return None if threshold is None else float(threshold)

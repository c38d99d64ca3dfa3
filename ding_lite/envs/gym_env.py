"""Env types: building gymnasium envs from the ``env`` config section."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import gymnasium as gym

from ding_lite.envs.env_outputs import close_env
from ding_lite.envs.hooks import EvalConfig
from ding_lite.envs.spaces import with_encoded_observations
from ding_lite.errors import ConfigError, DingLiteError, EnvError, PluginImportError
from ding_lite.registry import ENV_REGISTRY, did_you_mean, import_modules

# Keys every env section has, whatever its type (merged under the env type's own ``config``).
ENV_SECTION_DEFAULTS: dict[str, Any] = dict(
    type="gymnasium",  # registered env type
    import_names=[],  # modules imported before the env is built (they register custom env types)
    collector_env_num=8,  # envs stepped by the collector
    evaluator_env_num=5,  # envs stepped by the evaluator
    n_evaluator_episode=5,  # episodes per evaluation, spread over the evaluator envs
    stop_value=None,  # stop training once a trained policy's mean eval return reaches this (None: never)
    manager=dict(),  # env manager section (type and its settings)
    variations=None,  # env family: a count n (ids 0..n-1) or a list of variation ids (None: no variations)
)


# gymnasium ids whose raw observations no array holds, and the env type that wraps them (envs/suites.py): MiniGrid
# and BabyAI observe Dict(image, direction, mission=MissionSpace), the minigrid type the image alone
SUITE_ROUTES = {"MiniGrid-": "minigrid", "BabyAI-": "minigrid"}


@ENV_REGISTRY.register("gymnasium")
class GymnasiumEnv:
    """Factory for any env in gymnasium's registry: ``env=dict(type='gymnasium', env_id='CartPole-v1')``."""

    config: dict[str, Any] = dict(
        env_id=None,  # gymnasium id, e.g. 'CartPole-v1' ('package:Id': the package that registers Id is imported first)
        kwargs={},  # extra keyword arguments for gymnasium.make
        max_episode_steps=None,  # override the id's time limit (None: keep gymnasium's)
    )

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        env_id = cfg.get("env_id")
        check_env_id(env_id)
        kwargs = dict(cfg.get("kwargs") or {})
        if cfg.get("max_episode_steps") is not None:
            kwargs["max_episode_steps"] = int(cfg["max_episode_steps"])
        return gym.make(str(env_id), disable_env_checker=True, **kwargs)

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Fail early (before anything is written) on a missing or unknown env id."""
        check_env_id(cfg.get("env_id"))


def check_env_id(env_id: Any) -> None:
    """Raise a :class:`ConfigError` naming ``env.env_id`` if it is not in gymnasium's registry."""
    if not env_id:
        raise ConfigError("env.env_id is required for env type 'gymnasium' (e.g. env_id='CartPole-v1')")
    if not isinstance(env_id, str):  # a list failed as unhashable in the registry look-up, with a traceback
        raise ConfigError(f"env.env_id must be a string (a gymnasium id such as 'CartPole-v1'), got "
                          f"{'dict' if isinstance(env_id, Mapping) else type(env_id).__name__} {env_id!r}")
    module, _, name = str(env_id).rpartition(":")
    if module:  # gymnasium's 'package:EnvId': gymnasium.make imports the package that registers the id
        try:
            import_modules([module])
        except PluginImportError as exc:
            raise PluginImportError(f"env.env_id='{env_id}': {exc}") from exc.__cause__
        if name in gym.registry:
            return
        raise ConfigError(f"env.env_id='{env_id}': importing '{module}' registered no gymnasium env '{name}'"
                          + did_you_mean(name, gym.registry.keys()))
    if env_id not in gym.registry:
        hint = did_you_mean(env_id, gym.registry.keys()) or (
            f" (an id that a package registers needs the package imported first: env_id='<package>:{env_id}', or "
            f"env.import_names=['<package>'])")
        raise ConfigError(f"unknown gymnasium env id env.env_id='{env_id}'{hint}")


def check_env_constructor(env_type: Any, type_name: str) -> None:
    """A :class:`ConfigError` when a registered env type cannot take the ``env`` section it is built with
    (``env_type(cfg)``): a constructor without a positional parameter fails at the first build, and one whose first
    parameter has a default of another kind (``def __init__(self, size=5)``, gymnasium's keyword style) would
    silently get the whole section as that argument."""
    try:
        parameters = list(inspect.signature(env_type).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: nothing to read
        return
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
        return
    positional = [p for p in parameters
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    name = getattr(env_type, "__qualname__", repr(env_type))
    how = ("take the section (def __init__(self, cfg)) and read your settings from it, declared with their defaults "
           "in a `config` class dict so that the env section accepts them (see the custom env tutorial)")
    if not positional:
        raise ConfigError(f"env type '{type_name}' ({name}) is built as {name}(cfg) with the env section, but its "
                          f"constructor takes no positional argument: {how}")
    first = positional[0]
    if first.default is not inspect.Parameter.empty and first.default is not None \
            and not isinstance(first.default, Mapping):
        raise ConfigError(f"env type '{type_name}' ({name}) is built as {name}(cfg) with the env section, but its "
                          f"first parameter '{first.name}' defaults to {first.default!r}, so it would get the whole "
                          f"section: {how}")


def env_fn(env_cfg: Mapping[str, Any]) -> Callable[[], gym.Env]:
    """A picklable callable that builds one env of the section's type."""
    return partial(build_env, dict(env_cfg))


def eval_env_config(env_cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``env`` section an evaluation plays: the env type's ``eval_config`` where it has one (Atari: whole games,
    unclipped rewards, so that the reported return is the game's score), else the section itself."""
    name = env_cfg.get("type")
    env_type = ENV_REGISTRY.get(name) if isinstance(name, str) and name in ENV_REGISTRY else None
    return env_type.eval_config(env_cfg) if isinstance(env_type, EvalConfig) else env_cfg


def build_env(env_cfg: Mapping[str, Any]) -> gym.Env:
    """Build one env from the ``env`` section; an env constructor that raises is reported with its type."""
    import_modules(env_cfg.get("import_names"), "env")  # a spawned worker process starts with empty registries
    env_type = ENV_REGISTRY.get(env_cfg["type"])
    try:
        env = env_type(env_cfg)
    except DingLiteError:  # already names its culprit
        raise
    except Exception as exc:
        raise EnvError(f"building env type '{env_cfg['type']}' failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(env, gym.Env):
        raise EnvError(f"env type '{env_cfg['type']}' built a {type(env).__name__}, not a gymnasium.Env")
    name = env_cfg.get("env_id") or env_cfg["type"]
    for attribute in ("observation_space", "action_space"):
        try:
            space = getattr(env, attribute)
        except AttributeError:
            space = None
        if not isinstance(space, gym.Space):
            close_env(env, f"env '{name}'")
            what = f"no {attribute}" if space is None else \
                f"an {attribute} of type {type(space).__module__}.{type(space).__name__}, not a gymnasium space"
            raise EnvError(f"env '{name}' has {what}: a gymnasium env sets self.observation_space and "
                           f"self.action_space (gymnasium.spaces) in its __init__")
    # Discrete, MultiBinary, ... observations become vectors here, so that every model, buffer and env manager
    # sees arrays (envs/spaces.py)
    try:
        return with_encoded_observations(env, f"env '{name}'")
    except ConfigError as exc:
        close_env(env, f"env '{name}'")
        route = next((t for prefix, t in SUITE_ROUTES.items() if str(name).startswith(prefix)), None)
        if env_cfg["type"] == "gymnasium" and route is not None:
            raise ConfigError(f"{exc}; or use env type '{route}' (env=dict(type='{route}', env_id='{name}')), "
                              f"which observes what its suite's models read") from exc
        raise

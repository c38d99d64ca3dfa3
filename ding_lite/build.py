"""The build layer (see docs/architecture.md): a config resolved (loaded, compiled, model shapes filled and checked)
and every component built from its config section (policy, buffer, collector, evaluator, env managers), for the
pipelines and for users' own scripts."""
from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from easydict import EasyDict

from ding_lite.config import compile_config, read_config
from ding_lite.config.compile import SECTIONS_BY_PATH, CompiledConfig, section_at
from ding_lite.config.frozen import thawed
from ding_lite.envs.env_manager import BaseEnvManager
from ding_lite.envs.env_outputs import close_env
from ding_lite.envs.gym_env import build_env, check_env_constructor, env_fn, eval_env_config
from ding_lite.envs.hooks import BuildsOwnEnvs, ChecksConfig, HasVariations
from ding_lite.envs.probe import try_reset_and_step
from ding_lite.envs.spaces import is_masked, observation_part
from ding_lite.envs.variations import variation_env_fns, variation_ids
from ding_lite.errors import ConfigError, naming_envs
from ding_lite.league.seats import check_single_agent
from ding_lite.model.encoders import UINT8_SCALE
from ding_lite.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, POLICY_REGISTRY, add_config_folder, import_modules
from ding_lite.utils.seed import SeedPlan

logger = logging.getLogger("ding_lite")

ConfigLike = Any  # a path, a (main, create) tuple or list, a raw main dict or a compiled EasyDict


def load_config(config: ConfigLike, *, strict: bool = False, overrides: Iterable[str] = (),
                seed: int | None = None) -> EasyDict:
    """Compile whatever the caller has: a config file path, DI-engine's ``(main_config, create_config)`` tuple, a
    unified dict, or a :class:`CompiledConfig` (a writable copy of it, unless there are overrides)."""
    overrides = list(overrides)
    if isinstance(config, CompiledConfig) and not overrides:
        config = thawed(config)  # the run resolves (and freezes) a copy of its own, never the caller's object
        if seed is not None:
            config.seed = seed
        return config
    main: Mapping[str, Any]
    create: Mapping[str, Any]
    if isinstance(config, (str, os.PathLike)):
        main, create = read_config(config)
        add_config_folder(Path(config).parent)  # its import_names may name modules next to it
    elif isinstance(config, (tuple, list)) and len(config) == 2:  # DI-engine's __main__ blocks pass either
        main, create = config
    elif isinstance(config, Mapping):
        main, create = config, {}
    else:
        raise ConfigError(f"a config must be a file path, a (main_config, create_config) pair or a dict, got "
                          f"{type(config).__name__}")
    return compile_config(main, create, strict=strict, overrides=overrides, seed=seed)


def check_env_config(env_cfg: Mapping[str, Any]) -> None:
    """Fail before anything is built or written if the env section cannot work (e.g. an unknown gymnasium id)."""
    env_type = ENV_REGISTRY.get(env_cfg["type"])
    check_env_constructor(env_type, env_cfg["type"])
    if isinstance(env_type, ChecksConfig):
        env_type.check_config(env_cfg)
    variation_ids(env_cfg)  # ids out of range are config errors (envs/variations.py)


def fill_model_shapes(cfg: EasyDict, observation_space: gym.Space, action_space: gym.Space) -> None:
    """Set ``policy.model.obs_shape`` / ``action_shape`` / ``action_space`` from the env where the config left
    them unset (None)."""
    check_action_space_kind(cfg, action_space)
    check_action_masks(cfg, observation_space)
    model = cfg.policy.model
    if "obs_shape" in model and model.obs_shape is None:
        shape = list(observation_part(observation_space).shape or ())
        model.obs_shape = shape[0] if len(shape) == 1 else shape
    if "image_scale" in model and model.image_scale is None:
        # pixels (uint8 frames, or 0..255 in a wider dtype, float32 once encoded) are scaled to [0, 1] inside the
        # model; any other image is taken as it is (a float image in [0, 1] is scaled already: 1/255 again would
        # shrink its inputs, and the first layer's learning, 255 times)
        part = observation_part(observation_space)
        if len(part.shape or ()) >= 2:  # a vector observation has no image to scale: left unset in the saved config
            pixels = isinstance(part, gym.spaces.Box) and (part.dtype == np.uint8 or float(np.max(part.high)) == 255.0)
            model.image_scale = UINT8_SCALE if pixels else 1.0
    if "action_space" in model and model.action_space is None:
        model.action_space = "discrete" if isinstance(action_space, gym.spaces.Discrete) else "continuous"
    if "action_shape" in model and model.action_shape is None:
        if isinstance(action_space, gym.spaces.Discrete):
            model.action_shape = int(action_space.n)
        else:
            shape = list(action_space.shape or ())
            model.action_shape = shape[0] if len(shape) == 1 else shape
    if "action_low" in model or "action_high" in model:  # a model that rescales its actions to the env's bounds
        fill_action_bounds(cfg, action_space)


def check_action_space_kind(cfg: EasyDict, action_space: gym.Space) -> None:
    """A :class:`ConfigError` for an action space other than ``Discrete`` or ``Box``, or when the policy says it
    cannot act in the env's kind (a policy class declares ``supports_discrete = False`` or ``supports_continuous =
    False``; undeclared: not checked, so that a plugin policy without the flags keeps working)."""
    policy_type = cfg.policy.get("type")
    env_id = cfg.env.get("env_id") or cfg.env.get("type")
    if not isinstance(action_space, (gym.spaces.Box, gym.spaces.Discrete)):
        raise ConfigError(f"env '{env_id}' has the action space {action_space}: ding_lite's policies act in Discrete "
                          f"or Box action spaces; wrap the env so that it takes one of those (e.g. one Discrete "
                          f"action per combination of a MultiDiscrete's)")
    if policy_type not in POLICY_REGISTRY:
        return
    box = isinstance(action_space, gym.spaces.Box)
    if getattr(POLICY_REGISTRY.get(policy_type), "supports_continuous" if box else "supports_discrete", None) \
            is not False:
        return
    need, other, examples = ("discrete", "continuous", "sac, td3, ppo") if box else \
        ("continuous (Box)", "discrete", "dqn, ppo")
    raise ConfigError(f"policy '{policy_type}' acts in a {need} action space, but env '{env_id}' has {action_space}: "
                      f"use a policy for {other} actions (e.g. {examples})")


def check_action_masks(cfg: EasyDict, observation_space: gym.Space) -> None:
    """A :class:`ConfigError` when the env observes an action mask (:mod:`ding_lite.envs.spaces`) and the policy
    does not declare ``supports_action_mask``: it would take illegal actions, or fail on the observation dict."""
    policy_type = cfg.policy.get("type")
    if not is_masked(observation_space) or policy_type not in POLICY_REGISTRY or \
            getattr(POLICY_REGISTRY.get(policy_type), "supports_action_mask", False):
        return
    users = ", ".join(name for name in POLICY_REGISTRY.names()
                      if getattr(POLICY_REGISTRY.get(name), "supports_action_mask", False))
    env_id = cfg.env.get("env_id") or cfg.env.get("type")
    raise ConfigError(f"env '{env_id}' observes an action mask, which policy '{policy_type}' does not use (it would "
                      f"take illegal actions): use a policy that acts among the legal actions ({users}), or wrap the "
                      f"env to observe obs['observation'] alone and handle illegal actions itself")


def fill_action_bounds(cfg: EasyDict, action_space: gym.Space) -> None:
    """Set ``policy.model.action_low`` / ``action_high`` from the env's ``Box`` where the config left them unset; a
    discrete action space, or a Box without finite bounds where the config gives none, is a :class:`ConfigError`."""
    model = cfg.policy.model
    env_id = cfg.env.get("env_id") or cfg.env.get("type")
    if not isinstance(action_space, gym.spaces.Box):
        raise ConfigError(f"policy '{cfg.policy.type}' acts in a continuous (Box) action space, but env '{env_id}' "
                          f"has {action_space}: use a policy for discrete actions (e.g. dqn, ppo)")
    for key, bound in (("action_low", action_space.low), ("action_high", action_space.high)):
        if model.get(key) is not None:
            continue
        if not np.isfinite(bound).all():
            raise ConfigError(f"policy '{cfg.policy.type}' rescales its actions to the env's bounds, but env "
                              f"'{env_id}' has an action space without finite bounds ({action_space}): bound it "
                              f"(a wrapper that rescales), or give policy.model.action_low and action_high")
        model[key] = [float(b) for b in np.asarray(bound, dtype=np.float64).reshape(-1)]


def check_model_shapes(cfg: EasyDict, observation_space: gym.Space, action_space: gym.Space) -> None:
    """A model section that does not fit the env (e.g. ``obs_shape=3`` on CartPole's 4 numbers) is a
    :class:`ConfigError` naming the key, its value and the env's, raised before anything is built or written.

    Observation shapes are compared by their number of elements (an image model may take the env's frames in
    another axis order); discrete actions by their count, continuous ones by their number."""
    model = cfg.policy.model
    env_id = cfg.env.get("env_id") or cfg.env.get("type")
    obs = model.get("obs_shape")
    env_obs = tuple(observation_part(observation_space).shape or ())
    # both shapes in one line: a config moved to another env (CartPole's 4 and 2 on Acrobot) had one error per run
    wrong: list[str] = []
    if obs is not None and env_obs:
        given = tuple(obs) if isinstance(obs, (list, tuple)) else (int(obs),)
        if math.prod(given) != math.prod(env_obs):
            wrong.append(f"policy.model.obs_shape={obs!r} does not fit env '{env_id}', whose observations have "
                         f"shape {list(env_obs)}: set it to {_shape_value(env_obs)} or leave it out (the env fills "
                         f"it in)")
    act = model.get("action_shape")
    env_act: Any = None
    kind: str | None = None
    if isinstance(action_space, gym.spaces.Discrete):
        env_act, kind = int(action_space.n), "discrete"
    elif isinstance(action_space, gym.spaces.Box):
        env_act, kind = _shape_value(tuple(action_space.shape or ())), "continuous"
    if act is not None and env_act is not None:
        given_n = math.prod(act) if isinstance(act, (list, tuple)) else int(act)
        env_n = env_act if isinstance(env_act, int) else math.prod(env_act)
        if given_n != env_n:
            wrong.append(f"policy.model.action_shape={act!r} does not fit env '{env_id}', whose {kind} action space "
                         f"has {env_n} {'actions' if kind == 'discrete' else 'dimensions'}: set it to {env_act!r} or "
                         f"leave it out (the env fills it in)")
    if wrong:
        raise ConfigError("; ".join(wrong))
    if kind is None:
        return
    space = model.get("action_space")
    if space in ("discrete", "continuous") and space != kind:
        raise ConfigError(f"policy.model.action_space='{space}' does not fit env '{env_id}', whose action space is "
                          f"{kind}: set it to '{kind}' or leave it out (the env fills it in)")
    # DI-engine's bound_type='tanh' assumes envs that take [-1, 1] (act_scale); on wider bounds the greedy action
    # never left [-1, 1] (Pendulum-v1's torques stayed within half their range)
    unit = isinstance(action_space, gym.spaces.Box) and bool((action_space.low == -1).all()) \
        and bool((action_space.high == 1).all())
    if model.get("bound_type") == "tanh" and kind == "continuous" and not unit:
        raise ConfigError(f"policy.model.bound_type='tanh' keeps the Gaussian's mean in [-1, 1], but env '{env_id}' "
                          f"takes actions in {action_space}: leave bound_type out (the env's bounds clip the "
                          f"actions), or rescale the env's actions to [-1, 1] (gymnasium.wrappers.RescaleAction)")


def _shape_value(shape: tuple[int, ...]) -> Any:
    return shape[0] if len(shape) == 1 else list(shape)


def build(cfg: EasyDict, section: str, *args: Any, **kwargs: Any) -> Any:
    """Build the component that the config section at dotted path ``section`` names (one of
    :data:`~ding_lite.config.compile.COMPONENT_SECTIONS`): its registry's ``type`` entry called with the section first,
    then ``args`` and ``kwargs``; e.g. ``build(cfg, "policy", enable_field=["eval"])``,
    ``build(cfg, "policy.collect.collector", env_manager, policy.collect_mode)``,
    ``build(cfg, "policy.other.replay_buffer", seed=seed)``."""
    component = SECTIONS_BY_PATH.get(section)
    if component is None:
        raise ValueError(f"'{section}' is not a component section; known: {', '.join(SECTIONS_BY_PATH)}")
    node = section_at(cfg, section)
    return component.registry.build(node["type"], node, *args, **kwargs)


def build_evaluator(cfg: EasyDict, env_manager: Any, policy: Any, seed: int, n_episode: int | None = None,
                    stop: bool = True, best_return: float = -math.inf) -> Any:
    """The configured evaluator over ``env.n_evaluator_episode`` episodes (or ``n_episode``); ``stop=False``: it
    never declares the stop value reached; ``best_return``: the best mean return before its first evaluation."""
    return build(cfg, "policy.eval.evaluator", env_manager, policy.eval_mode,
                 cfg.env.n_evaluator_episode if n_episode is None else n_episode,
                 cfg.env.stop_value if stop else None, seed, best_return=best_return)


def build_env_managers(cfg: EasyDict, seed: int, collect: bool = True, evaluate: bool = True) -> tuple[Any, Any]:
    """Collector and evaluator env managers (None where not asked); model shapes are filled from their spaces."""
    check_env_config(cfg.env)
    with naming_envs("collector"):
        collector_env = build_env_manager(cfg.env, cfg.env.collector_env_num, seed) if collect else None
    try:
        with naming_envs("evaluator"):
            evaluator_env = build_eval_env_manager(cfg.env, cfg.env.evaluator_env_num, SeedPlan(seed).evaluator) \
                if evaluate else None
    except BaseException:
        if collector_env is not None:
            collector_env.close()
        raise
    probe = collector_env if collector_env is not None else evaluator_env
    if probe is None:
        raise ValueError("build_env_managers needs collect=True or evaluate=True")
    try:
        fill_model_shapes(cfg, probe.observation_space, probe.action_space)
        check_model_shapes(cfg, probe.observation_space, probe.action_space)
    except BaseException:
        for env in (collector_env, evaluator_env):
            if env is not None:
                env.close()
        raise
    return collector_env, evaluator_env


def warn_of_unread_variations(env_cfg: Mapping[str, Any]) -> None:
    """``env.variations`` on an env type that declares no ``num_variations``: a warning, since only an env whose
    reset reads ``options['variation']`` plays them (CartPole played every id as the same env, without a word)."""
    env_type = ENV_REGISTRY.get(env_cfg["type"])
    if env_cfg.get("variations") is not None and not isinstance(env_type, HasVariations):
        logger.warning("warning: env.variations is set, but env type '%s' declares no num_variations (see "
                       "docs/gsl.md#env-variations): unless its reset reads options['variation'], every id plays the "
                       "same env", env_cfg["type"])


def fill_model_shapes_from_env(cfg: EasyDict) -> None:
    """Resolve a plain env's part of a config before anything is built or written: check the env section, fill the
    model shapes from one probe env (closed again) and check them; under the ``base`` env manager it is also reset and
    stepped once (gymnasium's API and the outputs the collectors take, :mod:`ding_lite.envs.probe`). The probe is one
    env as the env managers build it: ``build_env``, or a one-env manager where the manager makes its own envs
    (envpool)."""
    check_single_agent(cfg)
    check_env_config(cfg.env)
    warn_of_unread_variations(cfg.env)
    manager_type = ENV_MANAGER_REGISTRY.get((cfg.env.get("manager") or {}).get("type", "base"))
    probe = build_env_manager(cfg.env, 1) if isinstance(manager_type, BuildsOwnEnvs) else build_env(cfg.env)
    try:
        fill_model_shapes(cfg, probe.observation_space, probe.action_space)
        check_model_shapes(cfg, probe.observation_space, probe.action_space)
        if manager_type is BaseEnvManager:  # in this process, as the run will; not a worker's env (envs/probe.py)
            try_reset_and_step(probe, f"env '{cfg.env.get('env_id') or cfg.env.type}'")
    finally:
        if isinstance(probe, gym.Env):
            close_env(probe, f"env '{cfg.env.get('env_id') or cfg.env.type}' (a probe of its spaces)")
        else:
            probe.close()


def import_plugins(cfg: Mapping[str, Any], where: str = "", folders: Iterable[str] = ()) -> None:
    """Import the modules of every ``import_names`` in a compiled config, so that a fresh process (a Ray actor) knows
    every custom type the config names; ``folders``: the driver's config folders (``config_folders()``), searched
    as the driver searched them."""
    for folder in folders:
        add_config_folder(folder)
    for key, value in cfg.items():
        if key == "import_names":
            import_modules(value, where or "config")
        elif isinstance(value, Mapping):
            import_plugins(value, f"{where}.{key}" if where else str(key))


def build_env_manager(env_cfg: Mapping[str, Any], env_num: int, seed: int | None = None) -> Any:
    """Build the section's env manager over ``env_num`` envs, seeded with ``seed`` (env i gets seed + i); with
    ``env.variations`` each env plays its share of the variations (see :mod:`ding_lite.envs.variations`)."""
    manager_cfg = env_cfg.get("manager") or {}
    manager_type = ENV_MANAGER_REGISTRY.get(manager_cfg.get("type", "base"))
    if isinstance(manager_type, BuildsOwnEnvs):  # a manager that makes its envs (envpool)
        if env_cfg.get("variations") is not None:
            raise ConfigError(f"env.variations needs an env manager that builds its envs one by one (base, "
                              f"subprocess); env.manager.type={manager_cfg.get('type')!r} makes its own")
        manager = manager_type.from_env_config(env_cfg, env_num, manager_cfg)
    else:
        fns = variation_env_fns(env_cfg, env_num)
        manager = manager_type(fns or [env_fn(env_cfg) for _ in range(env_num)], manager_cfg)
        if fns:  # the schedule the envs play: an episode cut by truncate() is tagged with its variation too
            manager.follow_variations(variation_ids(env_cfg) or [])
    if seed is not None:
        manager.seed(seed)
    return manager


def build_eval_env_manager(env_cfg: Mapping[str, Any], env_num: int, seed: int | None = None) -> Any:
    """:func:`build_env_manager` over the section an evaluation plays (:func:`eval_env_config`)."""
    return build_env_manager(eval_env_config(env_cfg), env_num, seed)

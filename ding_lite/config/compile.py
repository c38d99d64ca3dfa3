"""Compiling a config: create sections folded in, plugins imported, component defaults merged under the user's
values, every key and type checked, ``--set`` overrides applied."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from easydict import EasyDict

from ding_lite.config.di_engine import BUFFER_SECTION, di_engine_type, drop_built_in_imports, resolve_di_engine_keys
from ding_lite.config.key_checks import check_config, warn_unknown_keys, with_unknown_keys
from ding_lite.config.moved_env import check_env_id_read, override_paths, stop_value_error
from ding_lite.config.ranges import check_ranges, whole_counts
from ding_lite.config.reader import apply_overrides
from ding_lite.envs.gym_env import ENV_SECTION_DEFAULTS
from ding_lite.errors import ConfigError
from ding_lite.registry import (
    BUFFER_REGISTRY,
    COLLECTOR_REGISTRY,
    CONFIG_SECTION_REGISTRY,
    ENV_MANAGER_REGISTRY,
    ENV_REGISTRY,
    EVALUATOR_REGISTRY,
    MODEL_REGISTRY,
    POLICY_REGISTRY,
    Registry,
    did_you_mean,
    import_modules,
)
from ding_lite.utils.dicts import deep_merge, to_plain
from ding_lite.worker.learner import BaseLearner

TOP_LEVEL_DEFAULTS: dict[str, Any] = dict(
    exp_name="ding_lite_exp",  # experiment folder
    seed=0,  # default seed when the CLI gives none
    env=dict(),
    policy=dict(),
)

# Where each create_config section (DI-engine's form) lands in the compiled config.
CREATE_SECTIONS: dict[str, tuple[str, ...]] = {
    "env": ("env",),
    "env_manager": ("env", "manager"),
    "policy": ("policy",),
    "model": ("policy", "model"),
    "replay_buffer": ("policy", "other", "replay_buffer"),
    "collector": ("policy", "collect", "collector"),
    "evaluator": ("policy", "eval", "evaluator"),
    "learner": ("policy", "learn", "learner"),
}


def unify(main: Mapping[str, Any], create: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Fold ``create_config`` (and create-style top-level sections of a unified config) into one nested dict."""
    cfg = to_plain(main)
    sections = dict(to_plain(create or {}))
    for name in ("env_manager", "replay_buffer", "collector", "evaluator", "learner"):
        if name in cfg:  # unified form: the section sits at the top level of main_config
            sections[name] = _fold(sections.get(name, {}), cfg.pop(name))
    for name, section in sections.items():
        if name not in CREATE_SECTIONS:
            raise ConfigError(f"unknown create_config section '{name}'{did_you_mean(name, CREATE_SECTIONS)}"
                              f"; known: {', '.join(CREATE_SECTIONS)}")
        if not isinstance(section, Mapping):
            raise ConfigError(f"create_config.{name} must be a dict, got {type(section).__name__}")
        node = cfg
        for part in CREATE_SECTIONS[name]:
            node = node.setdefault(part, {})
        _check_one_type(name, node, section)
        node.update(_fold(section, node))
    return cfg


def _fold(create_section: Mapping[str, Any], main_section: Mapping[str, Any]) -> dict[str, Any]:
    """A ``create_config`` section folded with the ``main_config`` section it lands on: where both set a key,
    ``main_config``'s value wins (it holds the settings; ``create_config`` names the components), at any depth,
    whether the section sits nested (``policy.model``) or at the top level of a unified config (``env_manager``);
    ``import_names`` listed in both are all imported (``create_config``'s first)."""
    merged = deep_merge(create_section, main_section)
    ours, theirs = main_section.get("import_names"), create_section.get("import_names")
    if isinstance(ours, (list, tuple)) and isinstance(theirs, (list, tuple)):
        both = [*theirs, *ours]  # a name that is no string is refused later (import_modules), naming the section
        merged["import_names"] = [name for i, name in enumerate(both) if name not in both[:i]]
    return merged


def _check_one_type(name: str, main_section: Any, create_section: Mapping[str, Any]) -> None:
    """A component named twice, differently, in main_config and in create_config is a :class:`ConfigError` (one would
    be dropped without a word)."""
    if not isinstance(main_section, Mapping):
        return  # a section that is no dict: the type check names it
    ours, theirs = main_section.get("type"), create_section.get("type")
    if ours is not None and theirs is not None and ours != theirs:
        path = ".".join(CREATE_SECTIONS[name])
        raise ConfigError(f"{path}.type is {ours!r} in main_config but create_config.{name}.type is {theirs!r}: name "
                          f"the {name} once (in create_config, or in main_config's {path} section)")


class CompiledConfig(EasyDict):
    """A config that went through :func:`compile_config` (pipelines take it as is, without compiling again).

    No methods or properties here: EasyDict turns class attributes into config keys."""


def ignored_keys(cfg: Any) -> list[str]:
    """The unknown keys that compiling ``cfg`` dropped (dotted paths; empty for a config not compiled here)."""
    return list(getattr(cfg, "__dict__", {}).get("_ignored_keys", []))


def _set_ignored_keys(cfg: CompiledConfig, keys: Iterable[str]) -> None:
    # object.__setattr__: EasyDict's would make it a config key (saved in total_config.py, checked on reload)
    object.__setattr__(cfg, "_ignored_keys", list(keys))


def compile_config(main: Mapping[str, Any], create: Mapping[str, Any] | None = None, *, strict: bool = False,
                   overrides: Iterable[str] = (), seed: int | None = None) -> CompiledConfig:
    """Return the full config: defaults of every named component ⊕ the user's config ⊕ ``overrides``.

    Unknown keys are reported with the nearest known key (a warning, or a :class:`ConfigError` with ``strict``);
    a value of the wrong type is a :class:`ConfigError` naming its dotted path.
    """
    user = unify(main, create)
    before = dict(user.get("env") or {}) if isinstance(user.get("env"), Mapping) else {}  # overrides write in place
    overrides = list(overrides)
    user = apply_overrides(user, overrides)
    if seed is not None:
        user["seed"] = seed
    for section in ("env", "policy"):
        if user.get(section) is None:
            raise ConfigError(f"config has no '{section}' section: main_config needs {section}=dict(...)")
        if not isinstance(user[section], Mapping):
            raise ConfigError(f"config section '{section}' must be a dict, {section}=dict(...), got "
                              f"{user[section]!r}")
    drop_built_in_imports(user)
    defaults = component_defaults(user)
    resolve_di_engine_keys(user, defaults)
    written = override_paths(overrides)
    check_env_id_read(user["env"], defaults["env"], written)
    unknown: list[str] = []  # warned of once the config is known good, else part of the refusal's one line
    try:
        ignored = check_config(user, defaults, strict=strict, notes=unknown)
        check_policy_kind(user, defaults)
        cfg = CompiledConfig(deep_merge(defaults, user))
        whole_counts(cfg)
        check_config_values(cfg)
    except ConfigError as exc:
        raise with_unknown_keys(exc, unknown) from exc.__cause__
    warn_unknown_keys(unknown)
    _set_ignored_keys(cfg, ignored)
    # as _ignored_keys: not a config key; start_run raises it (config/moved_env.py)
    object.__setattr__(cfg, "_moved_env_error", stop_value_error(before, user["env"], written))
    return cfg


def moved_env_error(cfg: Any) -> str | None:
    """Why the config's stop value does not fit the env that ``--set`` moved it to (None: it fits, or was not moved)."""
    return getattr(cfg, "__dict__", {}).get("_moved_env_error")


def check_moved_env(cfg: Any) -> None:
    """A :class:`ConfigError` saying :func:`moved_env_error`, if any: raised by a run (and a sweep's check) after the
    env's own checks, whose errors (an unknown id, an action space the policy cannot take) come first."""
    error = moved_env_error(cfg)
    if error:
        raise ConfigError(error)


def check_config_values(cfg: Mapping[str, Any]) -> None:
    """Every value within its key's range (:mod:`~ding_lite.config.ranges`), and a replay buffer that can serve one
    batch; else a :class:`ConfigError` naming the key."""
    check_ranges(cfg)
    policy = cfg["policy"]
    size = policy.get("other", {}).get("replay_buffer", {}).get("replay_buffer_size")
    batch = policy.get("learn", {}).get("batch_size")
    if not policy.get("on_policy") and size is not None and batch is not None and size < batch:
        raise ConfigError(f"policy.other.replay_buffer.replay_buffer_size={size} is smaller than "
                          f"policy.learn.batch_size={batch}: the buffer could never serve a batch")


def check_policy_kind(user: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """``policy.on_policy`` as the policy type declares it (a DI-engine config may restate it); else a
    :class:`ConfigError`. It says how the policy learns (each fresh collect, or batches from a replay buffer), which
    its learn step is written for: it is the policy's, not a setting (ACER with on_policy=True got no replay buffer
    and its first update failed on an empty batch)."""
    given, own = user["policy"].get("on_policy"), defaults["policy"].get("on_policy")
    if "on_policy" in user["policy"] and given != own:
        how = "on each fresh collect (no replay buffer)" if own else "from its replay buffer"
        raise ConfigError(f"policy.on_policy={given!r}: policy '{defaults['policy']['type']}' learns {how}, "
                          f"on_policy={own}; it is the policy type's, not a setting: leave it out (or pick a policy "
                          f"that learns {'off' if own else 'on'}-policy)")


@dataclass(frozen=True)
class ComponentSection:
    """A config section that names a registered component by ``type``.

    ``default_type``: the type when the section names none (a function of the types resolved so far, or None: the
    user must name one); ``defaults``: the section's defaults given the component class and its type name."""

    path: str
    registry: Registry
    default_type: str | Callable[[Mapping[str, str]], str] | None
    defaults: Callable[[Any, str], dict[str, Any]]


def _declared_defaults(component: ComponentSection, type_name: str) -> dict[str, Any]:
    """The defaults of the section's component ``type_name``; a class (a plugin's) whose ``config`` or
    ``default_config()`` is not a dict is a :class:`ConfigError` naming it, not an AttributeError while merging.
    A model's ``config`` is exempt: one that is no dict marks a DI-engine style model (keyword arguments)."""
    cls = component.registry.get(type_name)
    what = f"{component.path} type '{type_name}'"
    for klass in getattr(cls, "__mro__", ()) if component.path != "policy.model" else ():
        declared = vars(klass).get("config", {})
        if not isinstance(declared, Mapping):
            raise ConfigError(f"{what}: {klass.__qualname__}.config must be a dict of the section's keys and their "
                              f"defaults, got a {type(declared).__name__}")
    defaults = component.defaults(cls, type_name)
    if not isinstance(defaults, Mapping):
        raise ConfigError(f"{what}: {getattr(cls, '__qualname__', cls)}.default_config() must return a dict of the "
                          f"section's keys and their defaults, got a {type(defaults).__name__}")
    return defaults


def _model_defaults(model_cls: Any, model_type: str) -> dict[str, Any]:
    """A model section's defaults: ``type`` and ``import_names`` always; the class's ``config`` if it declares one,
    else (a DI-engine style model taking keyword arguments) its constructor's parameters, with their defaults (None
    for those without: ``obs_shape`` and ``action_shape`` are then filled in from the env)."""
    config = getattr(model_cls, "config", None)
    if not isinstance(config, Mapping):
        import inspect

        params = list(inspect.signature(model_cls).parameters.values())
        config = {p.name: None if p.default is inspect.Parameter.empty else p.default for p in params
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return {"type": model_type, **_with_import_names(config)}


def _with_import_names(config: Mapping[str, Any]) -> dict[str, Any]:
    """A component's defaults plus ``import_names``: every section may name modules to import before it is built."""
    return {**config, "import_names": config.get("import_names", [])}


def _class_defaults(cls: Any, type_name: str) -> dict[str, Any]:
    return _with_import_names(cls.config)


def _env_defaults(cls: Any, type_name: str) -> dict[str, Any]:
    return deep_merge(ENV_SECTION_DEFAULTS, getattr(cls, "config", {}))


def _policy_defaults(cls: Any, type_name: str) -> dict[str, Any]:
    return cls.default_config()


def _policy_default_model(types: Mapping[str, str]) -> str:
    from ding_lite.policy.base_policy import default_model_name  # the policy package imports every policy

    return default_model_name(POLICY_REGISTRY.get(types["policy"]))


# Every component section, parents before their parts: where it sits, its registry, its default type, its defaults.
COMPONENT_SECTIONS: tuple[ComponentSection, ...] = (
    ComponentSection("env", ENV_REGISTRY, ENV_SECTION_DEFAULTS["type"], _env_defaults),
    ComponentSection("env.manager", ENV_MANAGER_REGISTRY, "base", _class_defaults),
    ComponentSection("policy", POLICY_REGISTRY, None, _policy_defaults),
    ComponentSection("policy.model", MODEL_REGISTRY, _policy_default_model, _model_defaults),
    ComponentSection(BUFFER_SECTION, BUFFER_REGISTRY, "uniform", _class_defaults),
    ComponentSection("policy.collect.collector", COLLECTOR_REGISTRY, "sample", _class_defaults),
    ComponentSection("policy.eval.evaluator", EVALUATOR_REGISTRY, "interaction", _class_defaults),
)
SECTIONS_BY_PATH = {section.path: section for section in COMPONENT_SECTIONS}

# Defaults of the policy's parts that no registered component declares.
POLICY_PART_DEFAULTS: dict[str, Any] = dict(
    learn=dict(learner=BaseLearner.config),
    eval=dict(
        final_episodes=20,  # after the run: episodes (fresh seeds) that evaluate the best checkpoint (0: none)
    ),
)


def component_defaults(user: dict[str, Any]) -> dict[str, Any]:
    """Defaults of every component the user's config names (importing its ``import_names`` first) and of every
    registered top-level section (:data:`~ding_lite.registry.CONFIG_SECTION_REGISTRY`). A type named by DI-engine's
    name is renamed to ding_lite's in ``user`` (:func:`~ding_lite.config.di_engine.di_engine_type`)."""
    sections: dict[str, Mapping[str, Any]] = {}
    for component in COMPONENT_SECTIONS:  # every import first: a module may register a type another section names
        node = sections[component.path] = section_at(user, component.path)
        _import_section(node, component.path)
        named = node.get("type")
        if named is None and "type" in node and isinstance(node, dict):
            del node["type"]  # type=None asks for the section's default type: the merged config must keep that
        if named is not None and not isinstance(named, str):
            raise ConfigError(f"{component.path}.type must be a string naming a registered {component.registry.kind}, "
                              f"got {type(named).__name__} {named!r}")
        if component.default_type is None and not named:
            registry = component.registry
            raise ConfigError(f"{component.path}.type is not set: name a registered {registry.kind} (known: "
                              f"{', '.join(registry.names())})")
    types: dict[str, str] = {}
    tree: dict[str, Any] = {}
    for component in COMPONENT_SECTIONS:
        node = sections[component.path]
        default = component.default_type
        if component.path == BUFFER_SECTION and not node and tree["policy"].get("on_policy"):
            continue  # an on-policy policy has no replay buffer unless the config asks for one
        types[component.path] = _di_engine_type(user, component.path, node, tree.get("policy", {})) \
            or node.get("type") or (default(types) if callable(default) else str(default))
        defaults = _declared_defaults(component, types[component.path])
        parent, _, name = component.path.rpartition(".")
        into = tree
        for part in parent.split(".") if parent else ():
            into = into.setdefault(part, {})
        # a parent's own defaults (e.g. PPO's log interval for its collector) win over its parts' generic ones
        into[name] = deep_merge(defaults, into[name]) if name in into else defaults
    tree["policy"] = deep_merge(POLICY_PART_DEFAULTS, tree["policy"])
    top = {name: CONFIG_SECTION_REGISTRY.get(name) for name in CONFIG_SECTION_REGISTRY.names()}
    return deep_merge(TOP_LEVEL_DEFAULTS, {**top, **tree})


def _di_engine_type(user: dict[str, Any], path: str, node: Mapping[str, Any],
                    policy_defaults: Mapping[str, Any]) -> str | None:
    """The type that DI-engine's name for the section's component (and, for the replay buffer, ``policy.priority``)
    asks for (None: as named), written into the user's config so that it is what gets built and saved."""
    # only a bool turns it on: anything else (priority=1e308) is refused by the type check, with no note before it
    priority = "priority" in policy_defaults and user["policy"].get("priority", policy_defaults["priority"]) is True
    mapped = di_engine_type(path, node.get("type"), priority)
    if mapped is not None:
        section = user
        for part in path.split("."):
            section = section.setdefault(part, {})
        section["type"] = mapped
    return mapped


def section_at(cfg: Mapping[str, Any], path: str) -> Mapping[str, Any]:
    """The section at dotted ``path`` of ``cfg`` ({} where absent or None); a non-dict is a :class:`ConfigError`."""
    node = cfg
    where = ""
    for name in path.split("."):
        node = _section(node, name, where)
        where = f"{where}.{name}" if where else name
    return node


def _section(parent: Mapping[str, Any], name: str, where: str) -> Mapping[str, Any]:
    value = parent.get(name, {})
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where + '.' if where else ''}{name} must be a dict, got {type(value).__name__} {value!r}")
    return value


def _import_section(section: Mapping[str, Any], where: str) -> None:
    import_modules(section.get("import_names"), where)


# ---- validation ------------------------------------------------------------------------------------------------

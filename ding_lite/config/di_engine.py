"""DI-engine's config keys, values and names that ding_lite spells or places differently, or that have no effect in
either.

A DI-engine config runs here with the package renamed (docs/coming_from_di_engine.md). Keys that name a ding_lite
setting by another path are moved onto it (:data:`ALIASES`); keys that configure nothing in either framework are
accepted with a one-line note saying why (:data:`NO_EFFECT`). Both apply only where the key is not a setting of the
configured components (PPO knows ``collect.gae_lambda``; ACER does not, and DI-engine's ACER ignores it too). Component
types DI-engine names otherwise are renamed (:func:`di_engine_type`), imports of DI-engine modules whose component is
built in are dropped (:func:`drop_built_in_imports`), and a few values are translated (``grad_clip_type``, an
activation given as a module, the KL keys of PPO, envpool's batch sizes), each with a note or a
:class:`ConfigError` where ding_lite does not offer what the value asks for.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ding_lite.errors import ConfigError
from ding_lite.utils.log import setup_console_logging

# (DI-engine's path, ding_lite's path): the same setting
ALIASES: tuple[tuple[str, str], ...] = (
    ("policy.action_space", "policy.model.action_space"),  # DI-engine's PPO also reads it at the policy level
    ("policy.learn.unroll_len", "policy.collect.unroll_len"),  # ACER: the replayed sequence length, set in both
    ("policy.collect.discount_factor", "policy.learn.discount_factor"),  # ACER's γ is a learn setting here
    ("policy.learn.discount_factor", "policy.collect.discount_factor"),  # PPO's γ (GAE) is a collect setting here
    ("policy.collect.gae_lambda", "policy.learn.gae_lambda"),
    ("policy.learn.gae_lambda", "policy.collect.gae_lambda"),
    ("policy.random_collect_size", "policy.learning_starts"),  # DQN/SAC/TD3: env steps of random actions first
    ("env.frame_stack", "env.stack_num"),  # Atari: frames stacked into one observation
    ("policy.unroll_len", "policy.collect.unroll_len"),  # ACER: DI-engine's latest configs set it at the top
    ("policy.collect.n_episode", "policy.collect.collector.n_episode"),  # episodes per collect ('episode' collector)
)

# DI-engine's path -> why it configures nothing here
NO_EFFECT: dict[str, str] = {
    "policy.learn.lambda_": "DI-engine's ACER does not read it either (its Retrace target uses no λ)",
    "policy.collect.gae_lambda": "this policy computes no GAE (DI-engine's ACER does not read it either)",
    "policy.collect.collector.collect_print_freq": "the collector's statistics go to tensorboard at every collect "
                                                   "(collect/episode_return)",
    "env.replay_path": "training records no videos (DI-engine's serial pipeline does not either; its eval entry "
                       "does)",
    "env.manager.shared_memory": "the subprocess env manager always passes observations through shared memory (the "
                                 "base manager steps its envs in-process)",
    "env.manager.cfg_type": "DI-engine's config bookkeeping",
    "policy.learn.learner.train_iterations": "the budget is --max-train-iter",
    "policy.learn.multi_gpu": "ding_lite trains on one device",
    "policy.multi_gpu": "ding_lite trains on one device (-m parallel spreads the collection over Ray actors)",
    "policy.collect.collector_env_num": "the collector's env count is env.collector_env_num (DI-engine's policies "
                                        "do not read this key either)",
    "policy.priority": "this policy reports no priorities to a replay buffer",
    "env.manager.reset_inplace": "envs are reset where they run (DI-engine's in-place reset is a shared-memory "
                                 "detail)",
    "policy.learn.resume_training": "a checkpoint loaded by --load-ckpt or load_ckpt_before_run always continues its "
                                    "env_step and train_iter here (DI-engine's resume_training=True)",
    "policy.learn.reparameterization": "the actor's gradient is always the reparameterised one here",
    "policy.command": "DI-engine's commander section; exploration schedules are policy.other.eps here",
    "policy.learn.update_per_collect": "each collect is learned in epoch_per_collect passes (DI-engine's on-policy "
                                       "PPO does not read it either)",
    "policy.priority_IS_weight": "the 'prioritized' buffer's importance weights are always applied",
    "policy.collect.n_episode": "the 'sample' collector collects policy.collect.n_sample env steps per collect; "
                                "whole episodes per collect are policy.collect.collector.n_episode with "
                                "policy.collect.collector.type='episode'",
}


BUFFER_SECTION = "policy.other.replay_buffer"
# DI-engine's component type names that ding_lite spells otherwise: section -> {DI-engine's name: ding_lite's}
TYPE_NAMES: dict[str, dict[str, str]] = {
    "env.manager": {"env_pool": "envpool"},
    BUFFER_SECTION: {"naive": "uniform", "deque": "uniform"},  # both sample uniformly, oldest out first
}


# DI-engine's modules (the package renamed) that hold a component ding_lite has built in: import_names entry -> why
BUILT_IN_MODULES: dict[str, str] = {
    "ding_lite.data.buffer.deque_buffer_wrapper": "DI-engine's 'deque' buffer is the built-in 'uniform'",
}


def drop_built_in_imports(user: dict[str, Any]) -> None:
    """Remove from every ``import_names`` of ``user`` (in place) the DI-engine modules of :data:`BUILT_IN_MODULES`,
    with a note: the package renamed, they name modules ding_lite does not have, for components it has."""
    for node in _sections(user):
        names = node.get("import_names")
        # only strings are module names: anything else stays, for import_modules to refuse naming the section
        if isinstance(names, (list, tuple)) and any(_built_in(name) for name in names):
            for name in names:
                if _built_in(name):
                    setup_console_logging().info("note: import_names entry '%s' is not needed: %s", name,
                                                 BUILT_IN_MODULES[name])
            node["import_names"] = [name for name in names if not _built_in(name)]


def _built_in(name: Any) -> bool:
    return isinstance(name, str) and name in BUILT_IN_MODULES


def _sections(tree: dict[str, Any]) -> list[dict[str, Any]]:
    """``tree`` and every dict below it."""
    found = [tree]
    for value in tree.values():
        if isinstance(value, dict):
            found += _sections(value)
    return found


def di_engine_type(section: str, name: str | None, priority: bool) -> str | None:
    """ding_lite's type for the component DI-engine names ``name`` in ``section`` (None: the config names none);
    None where the config's own name (or the section's default) stands. ``priority``: the policy's
    ``policy.priority``.

    DI-engine's default replay buffer ('priority', also called 'advanced') samples by the priorities the policy
    reports when ``policy.priority`` is on, and uniformly otherwise: so a config that turns ``priority`` on and names
    no buffer gets prioritized replay, as it does in DI-engine."""
    if section == BUFFER_SECTION and (name in ("priority", "advanced") or (not name and priority)):
        mapped = "prioritized" if priority else "uniform"
        why = f"DI-engine's {f'{name!r}' if name else 'default'} buffer with policy.priority={priority}"
    elif name in TYPE_NAMES.get(section, {}):
        mapped, why = TYPE_NAMES[section][str(name)], f"DI-engine's {name!r}"
    else:
        return None
    setup_console_logging().info("note: %s.type is '%s' (%s)", section, mapped, why)
    return mapped


def resolve_di_engine_keys(user: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    """Move DI-engine's aliases onto ding_lite's keys and drop no-effect keys (with a note), in ``user`` in place.

    An alias and its ding_lite key given with different values is a :class:`ConfigError` naming both."""
    for alias, target in ALIASES:
        if _has(user, alias) and not _has(defaults, alias) and _has(defaults, target):
            value = _pop(user, alias)
            if _has(user, target) and _get(user, target) != value:
                raise ConfigError(f"config keys '{alias}'={value!r} (DI-engine's) and '{target}'="
                                  f"{_get(user, target)!r} name the same setting with different values: keep one")
            _set(user, target, value)
    _resolve_grad_clip_type(user, defaults)
    _resolve_activation_module(user)
    _resolve_pretrained_kl(user, defaults)
    _resolve_env_batch_sizes(user, defaults)
    for path, why in NO_EFFECT.items():
        if _has(user, path) and not _has(defaults, path):
            if path == UPDATE_PER_COLLECT and not _on_policy(user, defaults):
                continue  # an off-policy policy's replay schedule reads it: one that does not declare it is told so
            _pop(user, path)
            setup_console_logging().info("note: DI-engine config key '%s' has no effect here: %s", path, why)


UPDATE_PER_COLLECT = "policy.learn.update_per_collect"


def _on_policy(user: Mapping[str, Any], defaults: Mapping[str, Any]) -> bool:
    path = "policy.on_policy"
    return bool(_get(user, path) if _has(user, path) else _has(defaults, path) and _get(defaults, path))


GRAD_CLIP_TYPE = "policy.learn.grad_clip_type"
GRAD_CLIP_VALUE = "policy.learn.grad_clip_value"


def _resolve_grad_clip_type(user: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    """DI-engine's ``learn.grad_clip_type``: 'clip_norm' is what ``grad_clip_value`` does here (the global gradient
    norm); None clips nothing, so ``grad_clip_value`` becomes None; any other kind is a :class:`ConfigError`.
    """
    if not _has(user, GRAD_CLIP_TYPE) or _has(defaults, GRAD_CLIP_TYPE) or not _has(defaults, GRAD_CLIP_VALUE):
        return
    kind = _pop(user, GRAD_CLIP_TYPE)
    if kind is None:
        _set(user, GRAD_CLIP_VALUE, None)
        why = "no gradient clip: policy.learn.grad_clip_value=None"
    elif kind == "clip_norm":
        why = "policy.learn.grad_clip_value clips the global gradient norm"
    else:
        raise ConfigError(f"policy.learn.grad_clip_type={kind!r} (DI-engine's) is not offered here: "
                          f"policy.learn.grad_clip_value clips the global gradient norm, DI-engine's 'clip_norm' "
                          f"(set grad_clip_type='clip_norm', or None for no clip)")
    setup_console_logging().info("note: DI-engine config key '%s'=%r: %s", GRAD_CLIP_TYPE, kind, why)


KL_KEYS = ("policy.learn.kl_beta", "policy.learn.kl_type")
PRETRAINED = "policy.learn.pretrained_model_path"


def _resolve_pretrained_kl(user: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    """DI-engine's PPO KL term towards a pretrained policy (``kl_beta``, ``kl_type``) is off without
    ``pretrained_model_path``: then the keys configure nothing; with a path it is a :class:`ConfigError`."""
    if _has(defaults, PRETRAINED) or not any(_has(user, key) for key in (*KL_KEYS, PRETRAINED)):
        return
    path = _pop(user, PRETRAINED) if _has(user, PRETRAINED) else None
    if path is not None:
        raise ConfigError(f"{PRETRAINED}={path!r}: DI-engine's KL term towards a pretrained policy is not offered "
                          f"here; PPO-DAPG (policy type 'ppo_dapg') learns from demonstrations instead")
    for key in KL_KEYS:
        if _has(user, key) and not _has(defaults, key):
            _pop(user, key)
    setup_console_logging().info("note: DI-engine config keys %s have no effect without %s (None here, as in "
                                 "DI-engine)", ", ".join(KL_KEYS), PRETRAINED)


def _resolve_env_batch_sizes(user: dict[str, Any], defaults: Mapping[str, Any]) -> None:
    """DI-engine's envpool ``collector_batch_size`` / ``evaluator_batch_size``: equal to the env count it steps all
    envs together, as ding_lite's managers always do; a smaller batch (DI-engine's asynchronous stepping) is noted."""
    for role in ("collector", "evaluator"):
        key, count = f"env.{role}_batch_size", f"env.{role}_env_num"
        if not _has(user, key) or _has(defaults, key):
            continue
        batch = _pop(user, key)
        envs = _get(user, count) if _has(user, count) else _get(defaults, count)
        why = "all envs step together here" if batch == envs else \
            f"all {envs} envs step together here (DI-engine steps the first {batch} ready ones asynchronously)"
        setup_console_logging().info("note: DI-engine config key '%s'=%r: %s", key, batch, why)


def _resolve_activation_module(user: dict[str, Any]) -> None:
    """DI-engine's ``model.activation=nn.Tanh()`` (a module) is the activation's name here (``'tanh'``)."""
    import torch.nn as nn

    from ding_lite.model.common import ACTIVATIONS

    path = "policy.model.activation"
    module = _get(user, path) if _has(user, path) else None
    if not isinstance(module, nn.Module):
        return
    names = [name for name, cls in ACTIVATIONS.items() if type(module) is cls]
    if not names:
        raise ConfigError(f"{path}={module!r} is not an activation offered here; known: "
                          f"{', '.join(f'{cls.__name__}() or {name!r}' for name, cls in ACTIVATIONS.items())}")
    _set(user, path, names[0])
    setup_console_logging().info("note: %s=%r is the activation '%s'", path, module, names[0])


def _has(tree: Mapping[str, Any], path: str) -> bool:
    node: Any = tree
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _get(tree: Mapping[str, Any], path: str) -> Any:
    node: Any = tree
    for part in path.split("."):
        node = node[part]
    return node


def _pop(tree: dict[str, Any], path: str) -> Any:
    *parents, key = path.split(".")
    node: Any = tree
    for part in parents:
        node = node[part]
    return node.pop(key)


def _set(tree: dict[str, Any], path: str, value: Any) -> None:
    *parents, key = path.split(".")
    node: Any = tree
    for part in parents:
        node = node.setdefault(part, {})
    node[key] = value

"""What a policy class must provide for the workers, checked where a plugin's mistake is cheapest to name: the methods
when the policy is built (before anything is written), the results each time a collect or eval forward or a
``_get_train_sample`` returns.

A port that keeps DI-engine's signatures (``_process_transition(obs, policy_output, timestep)``,
``_forward_collect(data, eps)``), or a class that leaves out a method its modes call, is a :class:`ConfigError` in one
line, not a ``TypeError`` or ``NotImplementedError`` traceback in the middle of a run."""
from __future__ import annotations

import inspect
import io
import pickle
from collections.abc import Callable, Mapping
from typing import Any

from ding_lite.data.keys import ACTION
from ding_lite.errors import ConfigError
from ding_lite.utils.checkpoint import load_failure

# How the workers call a policy's methods: method -> (the call as written in messages, positional args, keywords).
HOOK_CALLS: dict[str, tuple[str, tuple[Any, ...], dict[str, Any]]] = {
    "_forward_learn": ("_forward_learn(batch)", (None,), {}),
    "_forward_collect": ("_forward_collect(obs, env_step=...)", (None,), {"env_step": 0}),
    "_process_transition": ("_process_transition(policy_output)", (None,), {}),
    "_get_train_sample": ("_get_train_sample(rollout)", (None,), {}),
    "_forward_eval": ("_forward_eval(obs)", (None,), {}),
}

# The methods each enabled mode calls that the base class leaves to a subclass.
REQUIRED = {
    "learn": ("_init_learn", "_forward_learn"),
    "collect": ("_init_collect", "_forward_collect", "_get_train_sample"),
    "eval": ("_init_eval", "_forward_eval"),
}
WHAT_DIFFERS = "see 'What differs' in docs/coming_from_di_engine.md"


def check_signatures(policy: Any, base: type) -> None:
    """A :class:`ConfigError` if ``policy`` (an instance of a subclass of ``base``) leaves out a method that its
    enabled modes call (``base``'s stub), or has one that cannot take the arguments the workers pass."""
    cls = type(policy)
    missing = [name for field in policy._enabled for name in REQUIRED.get(field, ())
               if getattr(cls, name) is getattr(base, name)]
    if missing:
        raise ConfigError(f"policy '{policy.cfg.get('type')}': {cls.__qualname__} does not implement "
                          f"{', '.join(missing)}, which its modes call (see docs/tutorial_custom_policy.md)")
    for name, (call, args, kwargs) in HOOK_CALLS.items():
        try:
            signature = inspect.signature(getattr(policy, name))
        except (TypeError, ValueError):  # a builtin or C-implemented callable: nothing to check
            continue
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ConfigError(f"policy '{policy.cfg.get('type')}': {cls.__qualname__}.{name}{signature} does not "
                              f"fit how ding_lite calls it, {call}; {WHAT_DIFFERS}") from exc


def check_learn_state(policy: Any) -> None:
    """A :class:`ConfigError` naming the entry of ``policy._learn_state`` whose ``state_dict()`` a checkpoint could
    not give back (``torch.save`` fails on it, or ``torch.load(weights_only=True)`` refuses it: a custom object, a
    lambda), checked once when the learn mode is built: else the run writes checkpoints that neither ``--resume`` nor
    ``-m eval`` (nor its own final evaluation) can read."""
    import torch

    for name, obj in policy._learn_state.items():
        buffer = io.BytesIO()
        try:
            torch.save(obj.state_dict(), buffer)
            buffer.seek(0)
            torch.load(buffer, map_location="cpu", weights_only=True)
        except (pickle.PickleError, RuntimeError, AttributeError, TypeError, ValueError) as exc:
            raise ConfigError(f"policy '{policy.cfg.get('type')}': {type(policy).__qualname__}._learn_state['{name}']"
                              f".state_dict() cannot go into a checkpoint and be read back ({load_failure(exc)}): "
                              f"keep tensors, numbers, strings and lists / dicts of them in it") from exc


def checked_forward(forward: Callable[..., Any], policy: Any, method: str) -> Callable[..., Any]:
    """``forward`` (a collect or eval forward) whose result must hold one action per observation: ``{'action': (N,
    ...)}`` for N observations. Anything else is a :class:`ConfigError` naming the method, not a ``KeyError`` in the
    collector or an env that refuses its action."""

    def checked(obs: Any, *args: Any, **kwargs: Any) -> Any:
        output = forward(obs, *args, **kwargs)
        try:
            n_actions = len(output[ACTION])
        except (KeyError, TypeError, IndexError):
            n_actions = None
        if n_actions is None or n_actions != _batch_size(obs):
            raise ConfigError(f"policy '{policy.cfg.get('type')}': {type(policy).__qualname__}.{method} returned "
                              f"{_describe(output)} for {_batch_size(obs)} observations; it must return a dict with "
                              f"'{ACTION}' holding one action per observation, (N, ...) for N; {WHAT_DIFFERS}")
        device = getattr(getattr(output[ACTION], "device", None), "type", "cpu")
        if device != "cpu":  # the env managers turn actions into numpy arrays, which a GPU tensor cannot become
            raise ConfigError(f"policy '{policy.cfg.get('type')}': {type(policy).__qualname__}.{method} returned "
                              f"'{ACTION}' as a tensor on {output[ACTION].device}; the envs take numpy arrays on the "
                              f"CPU: return action.cpu().numpy()")
        return output

    return checked


def checked_transition(process_transition: Callable[[dict], Any], policy: Any) -> Callable[[dict], Any]:
    """``process_transition`` whose result must be a dict of the columns the policy adds to each transition (the
    collector stores ``obs``, ``next_obs``, ``reward`` and the episode ends itself); anything else is a
    :class:`ConfigError` naming the method, not an ``AttributeError`` in the collector's hot loop."""

    def checked(policy_output: dict) -> Any:
        columns = process_transition(policy_output)
        if not isinstance(columns, Mapping):
            raise ConfigError(f"policy '{policy.cfg.get('type')}': {type(policy).__qualname__}._process_transition"
                              f"(policy_output) returned a {type(columns).__name__}; it must return a dict of the "
                              f"columns it adds to the transitions (e.g. {{'action': ..., 'logit': ...}}); "
                              f"{WHAT_DIFFERS}")
        return columns

    return checked


def checked_samples(get_train_sample: Callable[[dict], Any], policy: Any) -> Callable[[dict], Any]:
    """``get_train_sample`` whose result must be a dict of columns (arrays with one leading dimension), the form the
    buffer and the learner take; DI-engine's list of sample dicts is a :class:`ConfigError` naming the method."""

    def checked(rollout: dict) -> Any:
        samples = get_train_sample(rollout)
        if not isinstance(samples, Mapping):
            raise ConfigError(f"policy '{policy.cfg.get('type')}': {type(policy).__qualname__}._get_train_sample"
                              f"(rollout) returned a {type(samples).__name__}; it must return a dict of arrays "
                              f"(B, ...), one column per key, not DI-engine's list of sample dicts; {WHAT_DIFFERS}")
        lengths = _column_lengths(samples)
        if len(set(lengths.values())) > 1:  # else the buffer fails to store them, or a batch pairs the wrong rows
            raise ConfigError(f"policy '{policy.cfg.get('type')}': {type(policy).__qualname__}._get_train_sample"
                              f"(rollout) returned columns of different lengths ({_listed(lengths)}); every column "
                              f"must hold one row per sample, (B, ...) with the same B")
        return samples

    return checked


def _column_lengths(samples: Mapping[str, Any]) -> dict[str, int]:
    """The leading length of each column of ``samples`` (a dict column, such as a masked observation's: of each
    of its arrays, under ``key.part``); values without one (a 0-dim array, a number) are left out."""
    lengths: dict[str, int] = {}
    for key, value in samples.items():
        if isinstance(value, Mapping):
            lengths.update({f"{key}.{part}": n for part, n in _column_lengths(value).items()})
        elif len(getattr(value, "shape", ()) or ()) > 0:
            lengths[str(key)] = int(value.shape[0])
    return lengths


def _listed(lengths: Mapping[str, int]) -> str:
    return ", ".join(f"'{key}': {n}" for key, n in lengths.items())


def _batch_size(obs: Any) -> int:
    """N of a batch of observations (an array, or a dict of arrays such as a masked env's)."""
    while isinstance(obs, Mapping):
        obs = next(iter(obs.values()))
    return len(obs)


def _describe(output: Any) -> str:
    if not isinstance(output, Mapping):
        return f"a {type(output).__name__}"
    if ACTION not in output:
        return f"keys {sorted(map(str, output))} (no '{ACTION}')"
    action = output[ACTION]
    return f"'{ACTION}' of shape {list(getattr(action, 'shape', ()) or [])}" if hasattr(action, "shape") else \
        f"'{ACTION}' = {type(action).__name__}"

"""Freezing a compiled config once a run has resolved it (``exp_name``, model shapes, ``env.end_when_out``).

From then on every part of the run reads the same values: a write (attribute or item, at any depth) raises a
:class:`FrozenConfigError` naming the key. A deep copy (``copy.deepcopy``) or a pickled copy is an ordinary, writable
config again.
"""
from __future__ import annotations

import copy
from typing import Any

from easydict import EasyDict

from ding_lite.config.compile import CompiledConfig
from ding_lite.errors import DingLiteError

_PATH = "_frozen_path"  # dotted path of a frozen section (in its __dict__, not a config key)


class FrozenConfigError(DingLiteError, TypeError):
    """A write to a config after the run froze it."""


def _refuse(node: Any, key: Any, value: Any = None, what: str = "set") -> None:
    where = node.__dict__.get(_PATH, "")
    name = f"{where}.{key}" if where else str(key)
    shown = f" = {value!r}" if what == "set" else ""
    raise FrozenConfigError(f"cannot {what} config key {name}{shown}: the run's config is frozen once the run "
                            f"resolved it (exp_name, model shapes, seeds); change it before the run starts (the "
                            f"config file or --set {name}=...), or change a copy (copy.deepcopy(cfg))")


class _FrozenMixin:
    """Every write raises; copies are writable (see the module docstring). Only dunder methods (and ``update`` /
    ``pop``, which EasyDict skips) may be defined here: EasyDict turns other class attributes into config keys."""

    def __setattr__(self, name: str, value: Any) -> None:
        _refuse(self, name, value)

    def __setitem__(self, name: str, value: Any) -> None:
        _refuse(self, name, value)

    def __delattr__(self, name: str) -> None:
        _refuse(self, name, what="delete")

    def __delitem__(self, name: str) -> None:
        _refuse(self, name, what="delete")

    def update(self, *args: Any, **kwargs: Any) -> None:
        _refuse(self, ", ".join(map(str, dict(*args, **kwargs))) or "(none)", what="update")

    def pop(self, name: Any, *default: Any) -> Any:
        _refuse(self, name, what="pop")

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        items: dict[str, Any] = dict(_items(self))
        return _thawed_class(self)({k: copy.deepcopy(v, memo) for k, v in items.items()})

    def __reduce__(self) -> Any:
        return (_rebuild, (_thawed_class(self), dict(_items(self))))


class FrozenSection(_FrozenMixin, EasyDict):
    """A nested section of a frozen config."""


class FrozenConfig(_FrozenMixin, CompiledConfig):
    """A compiled config, frozen (still a :class:`CompiledConfig`: pipelines take it as is)."""


def _thawed_class(node: Any) -> type:
    return CompiledConfig if isinstance(node, CompiledConfig) else EasyDict


def _items(node: Any) -> Any:
    return dict.items(node)  # the dict's own items (a frozen node's methods are not called)


def _rebuild(cls: type, items: dict[str, Any]) -> Any:
    return cls(items)


def freeze(cfg: CompiledConfig) -> CompiledConfig:
    """Freeze ``cfg`` in place (every nested section too) and return it; writes raise from now on."""
    _freeze(cfg, "")
    return cfg


def is_frozen(cfg: Any) -> bool:
    return isinstance(cfg, _FrozenMixin)


def thawed(cfg: CompiledConfig) -> CompiledConfig:
    """A writable deep copy of a compiled config, frozen or not; unknown-key notes kept. A pipeline given a compiled
    config resolves and freezes this copy: the caller's stays as it was, writable, to change for the next run. A
    value that cannot be deep-copied (a module, a lock, a tensor inside a graph) is shared with the copy, not copied:
    such a config ran before the copy was made, and must still run."""
    try:
        out = copy.deepcopy(cfg)
    except Exception:  # deepcopy raises whatever such a value's pickling raises (TypeError, RuntimeError...)
        out = copy.deepcopy(cfg, _uncopyable(cfg, {}))
    if "_ignored_keys" in cfg.__dict__:
        object.__setattr__(out, "_ignored_keys", list(cfg.__dict__["_ignored_keys"]))
    return out


def _uncopyable(node: Any, memo: dict[int, Any]) -> dict[int, Any]:
    """A ``deepcopy`` memo that maps each value of ``node`` that cannot be deep-copied to itself: a copy shares it."""
    if isinstance(node, dict):
        for value in dict.values(node):
            _uncopyable(value, memo)
    elif isinstance(node, (list, tuple)):
        for value in node:
            _uncopyable(value, memo)
    else:
        try:
            copy.deepcopy(node)
        except Exception:
            memo[id(node)] = node
    return memo


def _freeze(node: Any, path: str) -> None:
    if isinstance(node, list):
        for item in node:
            _freeze(item, path)
        return
    if not isinstance(node, EasyDict) or is_frozen(node):
        return
    for key, value in dict.items(node):
        _freeze(value, f"{path}.{key}" if path else str(key))
    object.__setattr__(node, _PATH, path)
    object.__setattr__(node, "__class__", FrozenConfig if isinstance(node, CompiledConfig) else FrozenSection)

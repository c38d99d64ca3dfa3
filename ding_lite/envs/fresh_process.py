"""What a ``'spawn'`` or ``'forkserver'`` env worker needs from the main process, checked before any worker starts.

Such a worker is a fresh Python process: it gets its env factory by pickling, and its registries hold only what it
imports itself (``build_env`` imports the env section's ``import_names``). An env type registered in the config file
itself, or a factory that cannot be pickled, would otherwise fail inside every worker, which the manager restarts
``max_retry`` times before it stops with a warning per restart; here it is one :class:`ConfigError` before the run
writes anything.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import pickle
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ding_lite.errors import ConfigError
from ding_lite.registry import ENV_REGISTRY

_FIX = "or use env.manager.context='fork'"


def fresh_process_env_fns(env_fns: Sequence[Callable[[], Any]], method: str) -> list[Callable[[], Any]]:
    """The factories to send to ``method`` workers: each that builds a registered env type first imports the module
    that registered it (the config file may import it without naming it in ``import_names``). A type defined where
    a fresh process cannot import it, or a factory that cannot be pickled, is a :class:`ConfigError` naming it."""
    sendable: list[Callable[[], Any]] = []
    for fn in env_fns:
        module = _registering_module(fn, method)
        if module is not None:
            fn = partial(_import_then_build, module, fn)
        try:
            pickle.dumps(fn, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # noqa: BLE001 (pickling raises PicklingError, AttributeError, TypeError, ...)
            raise ConfigError(f"env.manager.context={method!r} sends each env factory to its worker by pickling, "
                              f"and {_culprit(fn)} cannot be pickled ({type(exc).__name__}: {exc}); "
                              f"give it as a module-level name {_FIX}") from None
        sendable.append(fn)
    return sendable


def _import_then_build(module: str, fn: Callable[[], Any]) -> Any:
    importlib.import_module(module)  # registers the env type in this fresh process
    return fn()


def _env_section(fn: Any) -> Mapping[str, Any] | None:
    """The env section a ding_lite factory (``partial(build_env, section, ...)``) builds from, else None."""
    if isinstance(fn, partial) and fn.args and isinstance(fn.args[0], Mapping) and "type" in fn.args[0]:
        return fn.args[0]
    return None


def _registering_module(fn: Any, method: str) -> str | None:
    section = _env_section(fn)
    name = section.get("type") if section is not None else None
    if not isinstance(name, str) or name not in ENV_REGISTRY:
        return None
    env_type = ENV_REGISTRY.get(name)
    # the registering module, not env_type's own: that one need not register it (a plugin registering a library's
    # class); a fresh process importing only the class's module would not know the name
    module = ENV_REGISTRY.registered_in(name) or getattr(env_type, "__module__", None)
    if not isinstance(module, str) or module in ("__main__", "__mp_main__"):
        return None  # a fresh process runs the main script again (as multiprocessing does), registering it there
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:  # e.g. a class in the config file, which runs as '__ding_lite_config__' and is no module
        where = _defined_in(env_type) or module
        raise ConfigError(f"env.manager.context={method!r} starts each env worker in a fresh Python process, which "
                          f"cannot import env type '{name}': it is defined in {where} (module '{module}', not "
                          f"importable); define it in a module named in env.import_names {_FIX}")
    return module


def _defined_in(obj: Any) -> str | None:
    """The file that defined ``obj`` (a class of a config file has no module to ask: read its methods' code)."""
    members = vars(obj).values() if inspect.isclass(obj) else [obj]
    for member in members:
        code = getattr(inspect.unwrap(member) if callable(member) else member, "__code__", None)
        if code is not None:
            return str(code.co_filename)
    return None


def _culprit(fn: Any) -> str:
    """The first value of the factory's env section that cannot be pickled (``env.kwargs.reward_fn``), else the
    factory itself."""
    section = _env_section(fn.args[1] if isinstance(fn, partial) and fn.func is _import_then_build else fn)
    found = _unpicklable(section, "env") if section is not None else None
    return found or f"the env factory {getattr(fn, '__qualname__', type(fn).__name__)}"


def _unpicklable(value: Any, path: str) -> str | None:
    """The dotted path of the first leaf of ``value`` (named ``path``) that cannot be pickled, else None."""
    if isinstance(value, Mapping):
        parts = [(f"{path}.{key}", item) for key, item in value.items()]
    elif isinstance(value, (list, tuple)):
        parts = [(f"{path}[{i}]", item) for i, item in enumerate(value)]
    else:
        try:
            pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
        except Exception:  # noqa: BLE001
            return path
        return None
    return next((found for where, item in parts if (found := _unpicklable(item, where))), None)

"""Registries: name -> class tables that configs build from by ``type``.

Plugins join a registry with a decorator::

    from ding_lite.registry import POLICY_REGISTRY  # or: from ding_lite.utils import POLICY_REGISTRY

    @POLICY_REGISTRY.register('my_dqn')
    class MyDQN(DQNPolicy): ...

and a config names the module that holds them in ``import_names`` so it is imported before the section is built.
Installed packages may also register through the ``ding_lite.plugins`` entry-point group.
Each registry has one name, DI-engine's (``POLICY_REGISTRY``, ``MODEL_REGISTRY``, ...); the short names of earlier
versions (``POLICY``, ``MODEL``, ...) still import, with a ``DeprecationWarning`` naming the new one.
Built-in modules are imported lazily, on the first lookup, so that ``import ding_lite`` stays cheap.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import importlib.util
import os
import sys
import traceback
from collections.abc import Iterable
from typing import Any, TypeVar

from ding_lite.di_engine_names import replacement
from ding_lite.errors import (
    ConfigError,
    DingLiteError,
    DuplicateRegistrationError,
    PluginImportError,
    UnknownTypeError,
    first_line,
)
from ding_lite.extras import install_hint

T = TypeVar("T")

PLUGIN_GROUP = "ding_lite.plugins"


def closest_match(name: str, candidates: Iterable[str]) -> str | None:
    """Return the candidate that ``name`` abbreviates (``eppo`` for ``ensemble_ppo``: the initials of the words
    before the last one, then the last), else the closest one (difflib ratio >= 0.6), or None."""
    candidates = list(candidates)
    for candidate in candidates:
        words = candidate.split("_")
        if len(words) > 1 and name.lower() == "".join(w[:1] for w in words[:-1]) + words[-1]:
            return candidate
    matches = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(name: Any, candidates: Iterable[str]) -> str:
    """The tail of an unknown-name error: `` (did you mean 'X'?)`` for X the :func:`closest_match` of ``name``
    among ``candidates``, else ``''``."""
    hint = closest_match(str(name), candidates)
    return f" (did you mean '{hint}'?)" if hint else ""


class Registry:
    """A table of named classes (or factories) of one kind.

    Args:
        kind: what the entries are, used in messages ("policy", "env", ...).
        builtin_modules: modules that register the built-in entries; imported on first lookup.
    """

    def __init__(self, kind: str, builtin_modules: Iterable[str] = ()) -> None:
        self.kind = kind
        self._entries: dict[str, Any] = {}
        self._registered_in: dict[str, str] = {}  # name -> the module whose code registered it (registered_in)
        self._builtin_modules = tuple(builtin_modules)
        self._builtins_loaded = False

    def register(self, name: str, module: Any = None, force_overwrite: bool = False) -> Any:
        """Decorator registering the decorated object under ``name``; ``register(name, obj)`` (DI-engine's call
        form) registers ``obj`` at once and returns it.

        A new definition of the registered object (same module and qualified name: a notebook cell run again, edited
        or not, a module reloaded) replaces it; another object under a taken name raises
        :class:`DuplicateRegistrationError`, unless ``force_overwrite`` (DI-engine's keyword) says to replace it.
        """
        caller = sys._getframe(1).f_globals.get("__name__", "")

        def decorator(obj: T) -> T:
            old = self._entries.get(name)
            if old is not None and not force_overwrite and not _same_object(old, obj):
                raise DuplicateRegistrationError(
                    f"{self.kind} type '{name}' is already registered by {qualified_name(old)}; "
                    f"{qualified_name(obj)} cannot take the same name: choose another name (or replace it with "
                    f"register('{name}', force_overwrite=True))"
                )
            self._entries[name] = obj
            # the caller's module: the one that registers, which may not be the one defining obj (a plugin module
            # registering a library's class); a fresh process must import this one to know the name
            self._registered_in[name] = caller
            return obj

        # without this, register('x', MyEnv) took MyEnv for force_overwrite and registered nothing, silently
        return decorator if module is None else decorator(module)

    def registered_in(self, name: str) -> str | None:
        """The module whose code registered ``name`` (None: not registered here)."""
        return self._registered_in.get(name)

    def get(self, name: str) -> Any:
        """Return the entry registered as ``name``; an unknown name raises with the known names and the closest."""
        if name not in self._entries:
            self._load_builtins()
        if name not in self._entries:
            _load_plugins()
        if name not in self._entries:
            known = sorted(self._entries)
            raise UnknownTypeError(
                f"unknown {self.kind} type '{name}'{did_you_mean(name, known)}; known {self.kind} types: "
                f"{', '.join(known)}. "
                f"A custom {self.kind} must be registered with @{self.kind.upper()}_REGISTRY.register('{name}') in a "
                f"module "
                f"listed in the section's import_names"
            )
        return self._entries[name]

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Build the entry registered as ``name`` with the given arguments."""
        return self.get(name)(*args, **kwargs)

    def names(self) -> list[str]:
        """All registered names (built-ins included), sorted."""
        self._load_builtins()
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        self._load_builtins()
        return name in self._entries

    def _load_builtins(self) -> None:
        if self._builtins_loaded:
            return
        self._builtins_loaded = True
        for module in self._builtin_modules:
            importlib.import_module(module)


def import_object(path: str, key: str = "env.import_path", what: str = "returning a PettingZoo env") -> Any:
    """The object at ``'package.module:attr'`` (or ``'package.module.attr'``); a miss names ``key`` and says what
    the callable should be."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing and install_hint(missing):  # a package of an extra (PettingZoo in a base install): name the extra
            raise ConfigError(f"{key}='{path}' cannot be imported: it needs the {missing.split('.')[0]} package, "
                              f"which is not installed: {install_hint(missing)}") from exc
        if missing and not (module_name == missing or module_name.startswith(f"{missing}.")):
            # the module exists but needs a package that is not installed (PettingZoo's chess needs 'chess')
            raise ConfigError(f"{key}='{path}' cannot be imported: it needs module '{missing}', which is not "
                              f"installed (install the package that provides it)") from exc
        raise ConfigError(f"{key}='{path}' cannot be imported ({type(exc).__name__}: {exc}); give "
                          f"'package.module:callable' {what}") from exc


def _same_object(a: Any, b: Any) -> bool:
    # A module executed again (a notebook cell re-run, edited or not; importlib.reload or autoreload of an edited
    # module) defines a new object with the same qualified name in the same module: a new version of the same
    # registration, not a clash. The source line is not compared: an edit above the definition moves it.
    # A lambda's qualified name names no definition (every lambda of a module is '<lambda>'): two lambdas are one
    # registration only from the same line (the same expression executed again).
    if a is b:
        return True
    if qualified_name(a) != qualified_name(b):
        return False
    return not qualified_name(a).endswith("<lambda>") or _first_line(a) == _first_line(b)


def _first_line(obj: Any) -> int | None:
    code = getattr(obj, "__code__", None)
    return code.co_firstlineno if code is not None else None


def qualified_name(obj: Any) -> str:
    """``module.QualName`` of a registered class or function, for messages (its repr if it has no name)."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


_plugins_loaded = False


def _load_plugins() -> None:
    """Import every module advertised in the ``ding_lite.plugins`` entry-point group (once)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry_point in importlib.metadata.entry_points(group=PLUGIN_GROUP):
        try:
            entry_point.load()
        except Exception as exc:  # a broken plugin must name itself, not crash deep inside
            raise PluginImportError(
                f"plugin entry point '{entry_point.name}' ({entry_point.value}) of group {PLUGIN_GROUP} failed to "
                f"import: {exc}"
            ) from exc


def import_modules(names: Iterable[str] | str | None, section: str = "") -> None:
    """Import each module in ``names`` (a config section's ``import_names``), naming the section on failure."""
    if not names:
        return
    if isinstance(names, str):
        names = [names]
    where = f" listed in {section}.import_names" if section else ""
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise ConfigError(f"{section + '.' if section else ''}import_names must be a list of module names (strings, "
                          f"e.g. ['my_package.my_env']), got {type(names).__name__} {names!r}")
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if _ours(exc.name):  # a DI-engine module with the package renamed: no path or install fixes that
                raise PluginImportError(f"cannot import module '{name}'{where}: ding_lite has no module "
                                        f"'{exc.name}'; {replacement(exc)}{DI_ENGINE_HELPERS}") from exc
            if exc.name and install_hint(exc.name):  # a package of an extra (a dizoo game needs pettingzoo)
                raise PluginImportError(f"module '{name}'{where} needs the {exc.name.split('.')[0]} package, which "
                                        f"is not installed: {install_hint(exc.name)}") from exc
            if exc.name and not (name == exc.name or name.startswith(exc.name + ".")):
                # found, but its own code imports a module that is missing: the plugin's line, not a search path
                raise PluginImportError(f"module '{name}'{where} was found, but it imports '{exc.name}', which is "
                                        f"not found{_where(exc)}: install it, or fix that import") from exc
            missing = f" (module '{exc.name}' not found)" if exc.name and exc.name != name else ""
            raise PluginImportError(
                f"cannot import module '{name}'{where}{missing}; searched {_searched()}: check the module path and "
                f"that its package is installed or on PYTHONPATH"
            ) from exc
        except ImportError as exc:
            # e.g. DI-engine's `from ding.utils import split_data_generator`, renamed: a name ding_lite does not have
            hint = f"; {replacement(exc)}{DI_ENGINE_HELPERS}" if _ours(exc.name) else ""
            raise PluginImportError(f"cannot import module '{name}'{where}: {first_line(exc)}{hint}") from exc
        except DingLiteError:
            raise  # a clash of names or a config error the module found: its own message says it
        except Exception as exc:  # the module's own code failed: name the module, as a config file that fails does
            raise PluginImportError(f"module '{name}'{where} failed while being imported: "
                                    f"{type(exc).__name__}: {first_line(exc)}{_where(exc)}") from exc


def _where(exc: BaseException) -> str:
    """`` (at <file>:<line>)``: where in a plugin's code (the innermost frame outside importlib's own) ``exc``
    was raised while its module was imported, so that a one-line error still points at the user's line."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if not frame.filename.startswith("<")]
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


DI_ENGINE_HELPERS = ("DI-engine's helpers and what replaces them are listed under 'DI-engine's helpers' in "
                     "docs/coming_from_di_engine.md")


def _ours(module: str | None) -> bool:
    return (module or "").split(".")[0] == "ding_lite"


def missing_own_module(name: str) -> bool:
    """``name`` is under ``ding_lite`` and no such module exists: DI-engine's module path with the package renamed
    (``ding_lite.model.template.pg``)."""
    if not _ours(name):
        return False
    try:
        return importlib.util.find_spec(name) is None
    except ModuleNotFoundError:  # a parent package is missing
        return True


_CONFIG_FOLDERS: list[str] = []  # folders of the config files read so far, searched for their import_names


def add_config_folder(folder: str | os.PathLike) -> None:
    """Search ``folder`` (a config file's) for modules named in ``import_names``, as ``python my_config.py`` would.

    Appended to ``sys.path`` (not put first, so it cannot shadow an installed package) and kept for the process:
    spawned env workers inherit ``sys.path`` and unpickle the same classes."""
    path = os.path.abspath(folder)
    if path not in _CONFIG_FOLDERS:
        _CONFIG_FOLDERS.append(path)
    if path not in sys.path:
        sys.path.append(path)


def config_folders() -> list[str]:
    """The config folders searched so far: a fresh process (a Ray actor) adds them too, so that it finds what the
    driver found next to its config file."""
    return list(_CONFIG_FOLDERS)


def _searched() -> str:
    """The folders an import searched that a user chooses: the working folder, config folders, PYTHONPATH."""
    folders = [os.getcwd(), *_CONFIG_FOLDERS]
    folders += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    unique = list(dict.fromkeys(os.path.abspath(p) for p in folders))
    return "the working folder, config folders and PYTHONPATH (" + ", ".join(unique) + ") and installed packages"


POLICY_REGISTRY = Registry("policy", ["ding_lite.policy"])
MODEL_REGISTRY = Registry("model", ["ding_lite.model"])
ENV_REGISTRY = Registry("env", ["ding_lite.envs"])
ENV_MANAGER_REGISTRY = Registry("env_manager", ["ding_lite.envs"])
BUFFER_REGISTRY = Registry("buffer", ["ding_lite.data"])
COLLECTOR_REGISTRY = Registry("collector", ["ding_lite.worker"])
EVALUATOR_REGISTRY = Registry("evaluator", ["ding_lite.worker", "ding_lite.gsl.plateau"])  # plateau: GSL phase I
LEARNER_HOOK_REGISTRY = Registry("learner_hook", ["ding_lite.worker"])
OPPONENT_REGISTRY = Registry("opponent", ["ding_lite.league.opponents"])  # scripted self-play opponents (baselines)

# Top-level config sections owned by a pipeline or another component (name -> the section's default dict), merged
# into every compiled config. The owner registers its section next to its defaults, e.g.
# ``CONFIG_SECTION_REGISTRY.register('parallel')(PARALLEL_CONFIG)``; a plugin adds one the same way. Built-in owners
# are listed here (one module a line), so that compiling a config imports them without importing any pipeline.
CONFIG_SECTION_REGISTRY = Registry("config_section", [
    "ding_lite.data.demo",  # demo: ding_lite -m collect_demo
    "ding_lite.distributed.config",  # parallel: ding_lite -m parallel
    "ding_lite.league.config",  # league: ding_lite -m selfplay
    "ding_lite.gsl.plateau",  # gsl: ding_lite -m gsl
    "ding_lite.utils.trackers",  # log: trackers (tensorboard, wandb, mlflow) and console lines
])

# The short names of earlier versions (``POLICY``, ``ENV``, ...): still importable for old plugins, with a warning that
# names the registry's one name (DI-engine's).
_OLD_NAMES = {name[: -len("_REGISTRY")]: name for name in (
    "POLICY_REGISTRY", "MODEL_REGISTRY", "ENV_REGISTRY", "ENV_MANAGER_REGISTRY", "BUFFER_REGISTRY",
    "COLLECTOR_REGISTRY", "EVALUATOR_REGISTRY", "LEARNER_HOOK_REGISTRY", "OPPONENT_REGISTRY")}


def __getattr__(name: str) -> Registry:
    if name in _OLD_NAMES:
        import warnings

        warnings.warn(f"ding_lite.registry.{name} is now called {_OLD_NAMES[name]} (DI-engine's name)",
                      DeprecationWarning, stacklevel=2)
        return globals()[_OLD_NAMES[name]]
    raise AttributeError(f"module 'ding_lite.registry' has no attribute '{name}'")

ALL_REGISTRIES = {
    r.kind: r for r in (POLICY_REGISTRY, MODEL_REGISTRY, ENV_REGISTRY, ENV_MANAGER_REGISTRY, BUFFER_REGISTRY,
                        COLLECTOR_REGISTRY, EVALUATOR_REGISTRY, LEARNER_HOOK_REGISTRY, OPPONENT_REGISTRY,
                        CONFIG_SECTION_REGISTRY)
}

"""Reading config files (Python files holding dicts) and ``--set`` overrides."""
from __future__ import annotations

import ast
import difflib
import os
import runpy
import traceback
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ding_lite.errors import ConfigError, first_line
from ding_lite.registry import add_config_folder
from ding_lite.utils.dicts import to_plain
from ding_lite.utils.run_folder import CONFIG_FILE


def _nearest_config(path: Path) -> Path | None:
    """The existing config file nearest to the missing ``path``: each part of it that does not exist replaced by the
    closest name in its folder (a folder for the folders, a ``.py`` file for the file), as long as one is close; None
    where a part has no close name. A typo in a folder name (``dizoo/classic_contrl/...``) gets a suggestion too, not
    only one in the file name."""
    found = Path(path.anchor)
    parts = path.parts[1:] if path.anchor else path.parts
    for i, name in enumerate(parts):
        last = i == len(parts) - 1
        if (found / name).is_file() if last else (found / name).is_dir():
            found = found / name
            continue
        try:
            names = [p.name for p in found.iterdir()
                     if (p.suffix == ".py" and p.is_file() if last else p.is_dir())]
        except OSError:  # a folder that cannot be read
            return None
        near = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
        if not near:
            return None
        found = found / near[0]
    return found if found.is_file() else None


def _installed_dizoo(path: Path) -> str:
    """A hint for ``dizoo/...`` outside a checkout: ``pip install ding_lite`` installs dizoo's configs as a package,
    not in the current directory, so the docs' ``-c dizoo/...`` paths are found there."""
    if path.is_absolute() or path.parts[:1] != ("dizoo",):
        return ""
    try:
        import dizoo
    except ImportError:
        return ""
    if getattr(dizoo, "__file__", None) is None:  # a dizoo/ folder of the user's own, without __init__.py
        return ""
    installed = Path(dizoo.__file__).parent.parent / path
    return f" (the installed copy is {installed})" if installed.is_file() else ""


def read_config(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run a config file and return ``(main_config, create_config)`` as plain dicts.

    Accepted forms: DI-engine's ``main_config`` + ``create_config``, or a unified ``main_config`` whose sections
    carry their own ``type`` / ``import_names`` (``create_config`` then absent or empty). The file runs with
    ``__name__ != '__main__'``, so its own ``if __name__ == '__main__':`` block does not start a run.
    """
    path = Path(path)
    if path.is_dir():
        saved = path / CONFIG_FILE
        hint = f": an experiment folder's config is {saved}" if saved.is_file() else ""
        raise ConfigError(f"config file {path} is a folder, not a .py config file{hint}")
    if not path.is_file():
        near = _nearest_config(path)
        hint = f" (did you mean {near}?)" if near is not None else _installed_dizoo(path)
        raise ConfigError(f"config file not found: {path}{hint}")
    try:
        namespace = runpy.run_path(str(path), run_name="__ding_lite_config__")
    except SyntaxError as exc:
        where = f" at line {exc.lineno}" if exc.lineno else ""
        if path.suffix != ".py":  # a YAML or JSON file, a script: say what a config file is
            raise ConfigError(f"config file {path} is not Python (syntax error{where}: {exc.msg}): a ding_lite config "
                              f"is a .py file that defines main_config = dict(...)") from exc
        raise ConfigError(f"config file {path} has a syntax error{where}: {exc.msg}") from exc
    except SystemExit as exc:  # a config is read for its dicts; one that ends the process must say so
        raise ConfigError(f"config file {path} called sys.exit({exc.code!r}) while being read: a config file only "
                          f"defines main_config (move run code under `if __name__ == '__main__':`)") from exc
    except Exception as exc:
        raise ConfigError(f"config file {path} failed to run{_where(exc, path)}: {type(exc).__name__}: "
                          f"{exc}") from exc
    main = namespace.get("main_config")
    if not isinstance(main, Mapping):
        found = sorted(k for k, v in namespace.items() if isinstance(v, Mapping) and not k.startswith("_"))
        hint = f" (it defines {', '.join(found)})" if found else ""
        raise ConfigError(f"config file {path} defines no main_config dict{hint}: set main_config = dict(env=..., "
                          f"policy=...) and, in DI-engine's form, create_config = dict(env=dict(type=...), "
                          f"policy=dict(type=...))")
    create = namespace.get("create_config") or {}
    if not isinstance(create, Mapping):
        raise ConfigError(f"config file {path}: create_config must be a dict, got {type(create).__name__}")
    folders = namespace.get("config_folders") or []  # a saved config's: where the original found its import_names
    if not isinstance(folders, (list, tuple)) or not all(isinstance(f, str) for f in folders):
        raise ConfigError(f"config file {path}: config_folders must be a list of folder paths, got {folders!r}")
    for folder in folders:
        add_config_folder(folder)
    return to_plain(main), to_plain(create)


def _where(exc: BaseException, path: Path) -> str:
    """`` at <config>:<line>`` of the config's line that raised ``exc``, followed by ``(<file>:<line>)`` where the
    error rose in code the config called (a module it imports); empty where no frame is the config's."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]  # not importlib's
    own = [f for f in frames if os.path.realpath(f.filename) == os.path.realpath(path)]
    if not own:
        return ""
    where = f" at {path.name}:{own[-1].lineno}"
    if frames[-1] is not own[-1]:
        where += f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})"
    return where


def read_saved_config(path: str | os.PathLike) -> dict[str, Any]:
    """The ``main_config`` of a config that ding_lite saved (``<exp>/total_config.py``), read as data: its literal is
    evaluated, nothing in the file runs (an experiment folder may come from anywhere; only config files the user
    names are run). A file whose ``main_config`` is not a plain literal is a :class:`ConfigError`."""
    path = Path(path)
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ConfigError(f"cannot read {path} as a saved config: {first_line(exc)}") from exc
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "main_config"
                                                for t in node.targets):
            try:
                value = ast.literal_eval(_FloatNames().visit(node.value))
            except (ValueError, TypeError, SyntaxError) as exc:
                raise ConfigError(f"{path} is not a config that ding_lite saved: its main_config is not plain data "
                                  f"(it is read, never run)") from exc
            if isinstance(value, dict):
                return value
    raise ConfigError(f"{path} is not a config that ding_lite saved: it assigns no main_config dict literal")


class _FloatNames(ast.NodeTransformer):
    """``inf`` and ``nan``, the names the saved config defines for those floats, as the constants they stand for."""

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in ("inf", "nan"):
            return ast.copy_location(ast.Constant(float(node.id)), node)
        return node


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse one ``--set a.b.c=value`` into (['a', 'b', 'c'], value); the value is a Python literal or a string."""
    if "=" not in text:
        raise ConfigError(f"--set expects KEY=VALUE with a dotted key (e.g. policy.learn.batch_size=64), got '{text}'")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".")]
    if not all(parts):
        raise ConfigError(f"--set key '{key}' is not a dotted path like policy.learn.batch_size")
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError):
        value = raw.strip()  # a bare word such as ppo or CartPole-v1
        if value[:1] in "[{(" and value:  # meant as a container: as a string it would be one odd name
            raise ConfigError(f"--set {text}: {value} is not a Python literal: quote the strings inside it "
                              f"(e.g. {key.strip()}=['name']) and the whole argument for the shell "
                              f"(--set \"{key.strip()}=['name']\")") from None
        if value.lower().lstrip("+-") in _FLOAT_WORDS:
            value = float(value)  # inf, -inf, nan: numbers, as total_config.py writes them (NaN is then refused)
    return parts, value


_FLOAT_WORDS = ("inf", "infinity", "nan")


def apply_overrides(cfg: dict[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """Apply ``--set`` overrides to a (plain, nested) config in place; returns it."""
    for text in overrides:
        parts, value = parse_override(text)
        node = cfg
        for i, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(f"--set {text}: '{'.'.join(parts[:i + 1])}' is a value, not a section")
            node = child
        node[parts[-1]] = value
    return cfg

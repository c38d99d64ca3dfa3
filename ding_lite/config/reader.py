"""Reading config files (Python files holding dicts) and ``--set`` overrides."""
from __future__ import annotations

import ast
import os
import runpy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ding_lite.errors import ConfigError
from ding_lite.utils.dicts import to_plain


def read_config(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run a config file and return ``(main_config, create_config)`` as plain dicts.

    Accepted forms: DI-engine's ``main_config`` + ``create_config``, or a unified ``main_config`` whose sections
    carry their own ``type`` / ``import_names`` (``create_config`` then absent or empty). The file runs with
    ``__name__ != '__main__'``, so its own ``if __name__ == '__main__':`` block does not start a run.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        namespace = runpy.run_path(str(path), run_name="__ding_lite_config__")
    except SyntaxError as exc:
        raise ConfigError(f"config file {path} has a syntax error at line {exc.lineno}: {exc.msg}") from exc
    except Exception as exc:
        raise ConfigError(f"config file {path} failed to run: {type(exc).__name__}: {exc}") from exc
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
    return to_plain(main), to_plain(create)


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
    return parts, value


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

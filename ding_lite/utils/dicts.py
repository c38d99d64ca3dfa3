"""Plain-dict helpers: deep merge and dotted access."""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return a new dict: ``base`` with ``override`` merged in recursively (override wins at the leaves).

    Example::

        deep_merge({'a': {'x': 1, 'y': 2}}, {'a': {'y': 3}})  # {'a': {'x': 1, 'y': 3}}
    """
    out = {k: copy.deepcopy(v) for k, v in base.items()}
    for k, v in override.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def to_plain(obj: Any) -> Any:
    """Convert nested mappings (EasyDict included) and tuples to plain dicts and lists."""
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    return obj

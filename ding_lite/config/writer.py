"""Saving a compiled config as a runnable Python config file."""
from __future__ import annotations

import math
import pprint
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.utils.atomic import atomic_write
from ding_lite.utils.dicts import to_plain

_HEADER = '''"""Compiled ding_lite config (defaults merged, overrides applied). Run it again with:

    ding_lite -m serial -c {name}
"""
inf = float("inf")
nan = float("nan")

'''


def config_to_source(cfg: Mapping[str, Any], name: str = "total_config.py") -> str:
    """Python source defining ``main_config`` (unified form: each section carries its own type)."""
    plain = _literal_safe(to_plain(cfg))
    body = pprint.pformat(plain, indent=4, width=110, sort_dicts=False)
    return _HEADER.format(name=name) + f"main_config = {body}\ncreate_config = {{}}\n"


def save_config(cfg: Mapping[str, Any], path: str | Path) -> Path:
    """Write the config to ``path`` as a runnable config file, atomically (a full disk leaves no half file)."""
    path = Path(path)
    source = config_to_source(cfg, path.name).encode()
    return atomic_write(path, lambda f: f.write(source))


class _Name:
    """A bare name in the generated source (``inf``, ``nan``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


def _literal_safe(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _literal_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_literal_safe(v) for v in obj]
    if isinstance(obj, float) and (math.isinf(obj) or math.isnan(obj)):
        return _Name("nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf"))
    return obj

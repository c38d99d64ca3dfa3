"""Saving a compiled config as a runnable Python config file."""
from __future__ import annotations

import math
import os
import pprint
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ding_lite.registry import config_folders
from ding_lite.utils.atomic import atomic_write
from ding_lite.utils.dicts import to_plain
from ding_lite.utils.run_folder import CONFIG_FILE

_HEADER = '''"""Compiled ding_lite config (defaults merged, overrides applied). Run it again with:

    ding_lite -m serial -c {name}
"""
inf = float("inf")
nan = float("nan")

'''


def config_to_source(cfg: Mapping[str, Any], name: str = CONFIG_FILE, folders: Sequence[str] = ()) -> str:
    """Python source defining ``main_config`` (unified form: each section carries its own type) and, where given,
    ``config_folders``: the folders of the config files it came from, searched for its ``import_names`` when the
    file is read again (a plugin module kept next to the original config file is found from the copy as well)."""
    plain = _literal_safe(to_plain(cfg))
    body = pprint.pformat(plain, indent=4, width=110, sort_dicts=False)
    where = ""
    if folders:
        where = ("# the folders of the config files it was compiled from: searched for its import_names, as that "
                 f"file's folder was\nconfig_folders = {pprint.pformat(list(folders), width=110)}\n")
    return _HEADER.format(name=name) + where + f"main_config = {body}\ncreate_config = {{}}\n"


def save_config(cfg: Mapping[str, Any], path: str | Path, folders: Sequence[str] | None = None) -> Path:
    """Write the config to ``path`` as a runnable config file, atomically (a full disk leaves no half file).
    ``folders``: where its ``import_names`` are searched besides ``path``'s folder (default: the config folders that
    this process imported one of them from)."""
    path = Path(path)
    here = os.path.abspath(path.parent)
    folders = [f for f in (_plugin_folders(cfg) if folders is None else folders) if os.path.abspath(f) != here]
    source = config_to_source(cfg, path.name, folders).encode()
    return atomic_write(path, lambda f: f.write(source))


def _plugin_folders(cfg: Mapping[str, Any]) -> list[str]:
    """The config folders (:func:`~ding_lite.registry.config_folders`) holding a module that an ``import_names`` of
    ``cfg`` names, imported from there."""
    files = [getattr(sys.modules.get(name), "__file__", None) or "" for name in _import_names(cfg)]
    return [folder for folder in config_folders() if any(f.startswith(folder + os.sep) for f in files)]


def _import_names(node: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for key, value in node.items():
        if key == "import_names" and isinstance(value, (list, tuple)):
            names += [name for name in value if isinstance(name, str)]
        elif isinstance(value, Mapping):
            names += _import_names(value)
    return names


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

"""The pipeline a dizoo config is run with, read from its sections: ``gsl`` for a config with a ``gsl`` section,
``selfplay`` for one with a ``league`` section, else ``serial`` (as the configs' docstrings and docs/ run them)."""
from __future__ import annotations

import os

from ding_lite.config import read_config


def config_mode(path: str | os.PathLike) -> str:
    """``'gsl'``, ``'selfplay'`` or ``'serial'``: the ``-m`` that trains the config at ``path``."""
    main_config = read_config(path)[0]
    if "gsl" in main_config:
        return "gsl"
    return "selfplay" if "league" in main_config else "serial"

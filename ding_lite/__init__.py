"""ding_lite: a light, registry-based reinforcement-learning framework.

Heavy modules (torch, gymnasium) load on first use, so ``import ding_lite`` stays fast::

    import ding_lite
    ding_lite.serial_pipeline('dizoo/classic_control/cartpole/config/cartpole_ppo_config.py', seed=0)
"""
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "serial_pipeline": "ding_lite.entry.serial",
    "parallel_pipeline": "ding_lite.entry.parallel",
    "eval_pipeline": "ding_lite.entry.eval",
    "compile_config": "ding_lite.config",
    "read_config": "ding_lite.config",
    "Policy": "ding_lite.policy.base_policy",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ding_lite' has no attribute '{name}'")

"""Env type for tests/entry/test_parallel.py: it builds in the test process and fails in any other (a Ray actor), to
show how an actor that cannot start is reported."""
from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from ding_lite.registry import ENV_REGISTRY

DRIVER_PID_VAR = "DING_LITE_TEST_DRIVER_PID"


@ENV_REGISTRY.register("test_driver_only_cartpole")
class DriverOnlyCartPole(gym.Wrapper):
    """CartPole-v1 in the process whose pid is in ``DING_LITE_TEST_DRIVER_PID``; a RuntimeError anywhere else."""

    config: dict[str, Any] = dict()

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        if os.environ.get(DRIVER_PID_VAR) != str(os.getpid()):
            raise RuntimeError("this env builds only in the test driver")
        super().__init__(gym.make("CartPole-v1", disable_env_checker=True))

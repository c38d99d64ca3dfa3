"""Collection in this process: the collector a run's parts drive when they do not collect on Ray actors."""
from __future__ import annotations

from typing import Any

from ding_lite.build import build
from ding_lite.utils.log import ExperimentLogger


class LocalCollection:
    """Collection in this process, one of the two ways a run's parts collect (the other is
    :class:`~ding_lite.distributed.collection.RayCollection`): the configured collector over ``env`` (an env manager,
    or the self-play arena over one) with the policy's collect mode."""

    def __init__(self, cfg: Any, env: Any, policy: Any) -> None:
        self.env = env
        self.collector = build(cfg, "policy.collect.collector", env, policy.collect_mode)

    def log_to(self, logger: ExperimentLogger | None) -> None:
        """Local collectors log nothing of their own."""

    def env_restarts(self) -> dict[str, int]:
        return {"collector": self.env.restart_count}

    def stats(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        self.env.close()

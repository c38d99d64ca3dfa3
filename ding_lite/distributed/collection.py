"""Collection on Ray actors: the weights in the object store, the actor factory and the driver-side collectors,
started and closed together (the other way to collect is :mod:`ding_lite.runtime.collection`)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ding_lite.distributed.actors import CollectorShell
from ding_lite.distributed.remote import ActorFactory, RemoteCollectors, Weights
from ding_lite.distributed.session import check_resources


class RayCollection:
    """Collection on Ray actors, one of the two ways a run's parts collect (the other is
    :class:`~ding_lite.runtime.collection.LocalCollection`): the learner's weights in the object store, the actor
    factory and the driver-side collectors, started here and closed together.

    Args:
        ray: the ``ray`` module, connected.
        cfg: the compiled config (model shapes filled: it travels to the actors).
        seed: the run's seed (the actors' seeds derive from it).
        policy: the learner's policy (its collect mode's weights are broadcast).
        shell: the collector actors' class (a self-play run's plays its own games).
        collectors: builds the driver-side collectors from ``(ray, cfg, factory, weights)``.
    """

    def __init__(self, ray: Any, cfg: Any, seed: int, policy: Any, shell: type = CollectorShell,
                 collectors: Callable[..., RemoteCollectors] = RemoteCollectors) -> None:
        check_resources(ray, cfg.parallel)
        self.ray = ray
        self.n_collectors = int(cfg.parallel.n_collectors)
        self.weights = Weights(ray, policy)
        self.factory = ActorFactory(ray, cfg, seed, collector_shell=shell)
        try:
            self.collector = collectors(ray, cfg, self.factory, self.weights)
        except BaseException:
            self.factory.close()
            raise

    def wait_ready(self) -> None:
        """Block until every actor is built (start-up errors surface here)."""
        self.factory.wait_ready()

    def log_to(self, logger: Any) -> None:
        """Log through the experiment's logger from now on."""
        for part in (self.factory, self.weights, self.collector):
            part.log_to(logger)

    def env_restarts(self) -> dict[str, int]:
        """Env worker restarts inside the collector actors, as of each one's last batch (dead actors' kept)."""
        return {"collector": self.collector.retired_env_restarts + sum(self.collector.env_restarts)}

    def stats(self) -> dict[str, Any]:
        return {"mode": "parallel", "n_collectors": self.n_collectors, "actor_restarts": self.factory.restarts,
                **self.collector.stats()}

    def close(self) -> None:
        self.factory.close()

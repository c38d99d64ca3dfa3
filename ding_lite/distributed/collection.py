"""Collection on Ray actors, one of the two collection choices of a run's parts (:mod:`ding_lite.runtime.parts`;
the other collects in this process, :mod:`ding_lite.runtime.collection`): the weights in the object store, the actor
factory and the driver-side collectors, started and closed together; a plain env's evaluation on an evaluator
actor."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ding_lite.distributed.remote import ActorFactory, RemoteCollectors, RemoteEvaluator, Weights, restart_rate, to_cpu
from ding_lite.distributed.session import check_resources
from ding_lite.runtime.restarts import RunCounts
from ding_lite.utils.checkpoint import load_checkpoint
from ding_lite.utils.seed import SeedPlan
from ding_lite.worker.evaluator import EvalResult

COUNTS_ENTRY = "parallel_counts"  # the checkpoint entry of the whole run's counts (RayCollection.counts)


class RayCollection:
    """Collection on ``parallel.n_collectors`` Ray actors: the learner's weights in the object store, the actor
    factory and the driver-side collectors (:class:`~ding_lite.distributed.remote.RemoteCollectors`).

    Each actor builds its own env manager from the config; the game (``game.actor_games(ray)``) may wrap it (the
    self-play arena, told the pool before each collect) and hear of each batch's ended episodes (game results).

    Args:
        ray: the ``ray`` module, connected (bind it with ``functools.partial`` to make the choice).
        cfg: the resolved config (it travels to the actors).
        seeds: the segment's seeds (the actors' derive from them).
        policy: the learner's policy (its collect mode's weights are broadcast).
        game: what is played.
    """

    env = None  # actors step their own env managers

    def __init__(self, ray: Any, cfg: Any, seeds: SeedPlan, policy: Any, game: Any) -> None:
        check_resources(ray, cfg.parallel)
        # the driver's policy has every mode but collects nothing: it merges the statistics the actors' samples carry
        policy.collect_elsewhere()
        self.ray, self.cfg = ray, cfg
        self.n_collectors = int(cfg.parallel.n_collectors)
        games, link = game.actor_games(ray)
        self.weights = Weights(ray, policy)
        self.factory = ActorFactory(ray, cfg, seeds, games)
        self.evaluator_actor = False  # whether a plain env's evaluation runs on an actor of this factory
        try:
            self.collector = RemoteCollectors(ray, cfg, self.factory, self.weights, link)
        except BaseException:
            self.factory.close()
            raise
        # the whole run's, across resumes (ding_lite/runtime/restarts.py): result.json and parallel/actor_restarts
        self.counts = RunCounts(self._segment_counts, maxima=("policy_lag_max",))

    def _segment_counts(self) -> dict[str, int | float]:
        """This segment's counts (its actors, broadcasts and batches since it started)."""
        factory, weights, collector = self.factory, self.weights, self.collector
        return {"actor_restarts": factory.restarts, "actor_seconds": factory.clock() - factory.born,
                "weight_broadcasts": weights.count, "broadcast_seconds": weights.seconds,
                "batches_received": collector.batches, "policy_lag_sum": collector.lag_sum,
                "policy_lag_max": collector.lag_max}

    def run_counts(self) -> dict[str, RunCounts]:
        """The actor restarts, broadcasts, batches and policy lag of the whole run (checkpoint entry
        ``parallel_counts``)."""
        return {COUNTS_ENTRY: self.counts}

    def evaluation(self, policy: Any, best_return: float = -math.inf) -> RayEvaluation:
        """A plain env's evaluation on an evaluator actor of this collection's factory."""
        self.evaluator_actor = True
        return RayEvaluation(RemoteEvaluator(self.ray, self.cfg, self.factory, self.weights, best_return), policy)

    def wait_ready(self) -> None:
        """Block until every actor is built (start-up errors surface here)."""
        self.factory.wait_ready()

    def log_to(self, logger: Any) -> None:
        """Log through the experiment's logger from now on (and say what runs where)."""
        self.factory.log_to(logger, self.counts)
        for part in (self.weights, self.collector):
            part.log_to(logger)
        par = self.cfg.parallel
        evaluator = " and 1 evaluator actor" if self.evaluator_actor else ""
        logger.info(f"[parallel] Ray at {self.ray.get_runtime_context().gcs_address}: {par.n_collectors} collector "
                    f"actors ({float(par.collector_num_cpus):g} CPU each){evaluator}; "
                    f"{'synchronous on-policy rounds' if self.cfg.policy.on_policy else 'asynchronous off-policy'}")

    def env_restarts(self) -> dict[str, int]:
        """Env worker restarts inside the collector actors, as of each one's last batch (dead actors' kept)."""
        return {"collector": self.collector.retired_env_restarts + sum(self.collector.env_restarts)}

    def stats(self) -> dict[str, Any]:
        """``result.json``'s parallel entries: counts, their rates and means of the whole run (all segments); the
        speeds and ``weights_load_ms_mean`` of this segment's actors."""
        run = self.counts.totals()
        batches, broadcasts = int(run["batches_received"]), int(run["weight_broadcasts"])
        return {
            "mode": "parallel",
            "ray_address": self.ray.get_runtime_context().gcs_address,
            "n_collectors": self.n_collectors,
            "actor_restarts": int(run["actor_restarts"]),
            "actor_restart_rate": restart_rate(int(run["actor_restarts"]), float(run["actor_seconds"])),
            "weight_broadcasts": broadcasts,
            "broadcast_ms_mean": round(1000 * run["broadcast_seconds"] / max(broadcasts, 1), 3),
            "batches_received": batches,
            "policy_lag_mean": round(run["policy_lag_sum"] / batches, 3) if batches else None,
            "policy_lag_max": int(run["policy_lag_max"]),
            **self.collector.stats(),
        }

    def close(self) -> None:
        self.factory.close()


class RayEvaluation:
    """A plain env's evaluation on the evaluator actor (through its driver-side stand-in)."""

    def __init__(self, evaluator: RemoteEvaluator, policy: Any) -> None:
        self.evaluator, self.policy = evaluator, policy

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> EvalResult:
        """Evaluate ``ckpt``'s weights (None: the learner's current ones) on the evaluator actor over ``n_episode``
        episodes seeded from ``seed``, as the serial pipeline does after its run."""
        weights = load_checkpoint(ckpt)["policy"] if ckpt is not None else to_cpu(self.policy.eval_mode.state_dict())
        return self.evaluator.final_eval(weights, n_episode, seed)

    def stats(self) -> dict[str, Any]:
        return {}

    def env_restarts(self) -> int:
        """The evaluator actors' env worker restarts: the current one's as of its last evaluation, dead ones'
        kept."""
        return self.evaluator.retired_env_restarts + self.evaluator.env_restarts

    def close(self) -> None:
        """The evaluator actor closes with the collection's factory."""

"""Parallel pipeline on Ray: the serial train loop, with collection and evaluation in Ray actors.

The driver (this process) holds the learner and the replay buffer. ``parallel.n_collectors`` collector actors and one
evaluator actor run the plain collector / evaluator classes inside the shells of :mod:`ding_lite.distributed.actors`;
each builds its own envs and policy from the config. The learner's weights go into Ray's object store once per
broadcast and every actor loads that one copy. The loop itself is the serial pipeline's: the driver-side stand-ins of
:mod:`ding_lite.distributed.remote` answer ``collect`` / ``eval`` as the local workers do (both kinds of parts are
:class:`~ding_lite.runtime.parts.TrainingParts`), and :mod:`ding_lite.distributed.session` connects to Ray.

- Off-policy: asynchronous. ``collect`` returns the batch of whichever collector finished first (``ray.wait``); the
  loop pushes it, trains ``update_per_collect`` times, and the next ``collect`` sends that collector off again with
  the newest weights. The policy lag (learner iteration minus the weights' iteration) is logged per batch.
- On-policy: synchronous rounds. Every collector collects with the same weights version; the loop trains on the
  union of their samples.

Ray is optional (``pip install -e .[ray]``) and imported only when a parallel run starts.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ding_lite.build import ConfigLike, build, fill_model_shapes_from_env
from ding_lite.distributed.collection import RayCollection
from ding_lite.distributed.config import PARALLEL_CONFIG, check_parallel_config
from ding_lite.distributed.remote import RemoteEvaluator, to_cpu
from ding_lite.distributed.session import RAY_INSTALL_HINT, import_ray, ray_session
from ding_lite.runtime.train_loop import RunOptions, run_training, start_run
from ding_lite.utils.checkpoint import load_checkpoint
from ding_lite.utils.log import setup_console_logging
from ding_lite.worker.evaluator import EvalResult

__all__ = ["PARALLEL_CONFIG", "RAY_INSTALL_HINT", "check_parallel_config", "import_ray", "parallel_pipeline",
           "ray_session"]

def parallel_pipeline(config: ConfigLike, seed: int = 0, max_env_step: int | None = None,
                      max_train_iter: int | None = None, *, address: str | None = None,
                      exp_dir: str | Path | None = None, resume: bool = False, load_ckpt: str | Path | None = None,
                      strict: bool = False, overrides: tuple[str, ...] = (), progress: bool = True) -> dict[str, Any]:
    """Train as :func:`~ding_lite.entry.serial.serial_pipeline` does, with collectors and evaluator as Ray actors.

    ``config``, ``seed``, ``max_env_step``, ``max_train_iter``, ``exp_dir``, ``resume``, ``load_ckpt``, ``strict``,
    ``overrides`` and ``progress`` are as in ``serial_pipeline``; the config's ``parallel`` section sizes the run.

    Args:
        address: Ray cluster to join (``'auto'`` or ``'HOST:PORT'``, as printed by ``ray start --head``). None starts
            an embedded local Ray instance for this run and stops it afterwards. If this process is already connected
            to Ray (``ray.init`` was called), that connection is used and left open.

    Returns:
        The serial result dict plus the parallel statistics, also written to ``<exp_dir>/result.json``.

    Example::

        from ding_lite.entry import parallel_pipeline
        parallel_pipeline('dizoo/classic_control/cartpole/config/cartpole_dqn_config.py', seed=0)
    """
    ray = import_ray()
    with start_run(config, RunOptions(seed, max_env_step, max_train_iter, exp_dir, resume, load_ckpt, strict,
                                             overrides, progress)) as run:
        cfg = run.cfg
        check_parallel_config(cfg.parallel)
        fill_model_shapes_from_env(cfg)  # env errors surface here, before any actor starts
        setup_console_logging()
        with ray_session(ray, address, cfg.parallel.num_cpus), ParallelParts(ray, cfg, seed, run.best_return) as parts:
            return run_training(run, parts)


class ParallelParts:
    """The parts :func:`~ding_lite.runtime.train_loop.run_training` drives: the learner's policy and the buffer in this
    process, collection (:class:`~ding_lite.distributed.collection.RayCollection`) and evaluation on actors (started
    here, all closed together)."""

    def __init__(self, ray: Any, cfg: Any, seed: int, best_return: float = -math.inf) -> None:
        self.ray = ray
        self.cfg = cfg
        self.policy = build(cfg, "policy", enable_field=["learn"])
        self.buffer = None if cfg.policy.on_policy else build(cfg, "policy.other.replay_buffer", seed=seed)
        self.collection = RayCollection(ray, cfg, seed, self.policy)
        try:
            self.collector = self.collection.collector
            self.evaluator = RemoteEvaluator(ray, cfg, self.collection.factory, self.collection.weights, best_return)
            self.collection.wait_ready()
        except BaseException:
            self.collection.close()
            raise

    def attach(self, learner: Any, logger: Any) -> None:
        """Log through the experiment's logger from now on."""
        self.collection.log_to(logger)
        par = self.cfg.parallel
        logger.info(f"[parallel] Ray at {self.ray.get_runtime_context().gcs_address}: {par.n_collectors} collector "
                    f"actors ({float(par.collector_num_cpus):g} CPU each) and 1 evaluator actor; "
                    f"{'synchronous on-policy rounds' if self.cfg.policy.on_policy else 'asynchronous off-policy'}")

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> EvalResult:
        """Evaluate ``ckpt``'s weights (None: the learner's current ones) on the evaluator actor over ``n_episode``
        episodes seeded from ``seed``, as the serial pipeline does after its run."""
        weights = load_checkpoint(ckpt)["policy"] if ckpt is not None else to_cpu(self.policy.eval_mode.state_dict())
        return self.evaluator.final_eval(weights, n_episode, seed)

    def env_restarts(self) -> dict[str, int]:
        """Env worker restarts inside the actors' env managers (each logs its own): the collectors' as of each one's
        last batch, the evaluator's as of its last evaluation; actors that died keep their count."""
        return {**self.collection.env_restarts(),
                "evaluator": self.evaluator.retired_env_restarts + self.evaluator.env_restarts}

    def stats(self) -> dict[str, Any]:
        factory, weights = self.collection.factory, self.collection.weights
        return {
            "mode": "parallel",
            "ray_address": self.ray.get_runtime_context().gcs_address,
            "n_collectors": int(self.cfg.parallel.n_collectors),
            "actor_restarts": factory.restarts,
            "actor_restart_rate": factory.restart_rate(),
            "weight_broadcasts": weights.count,
            "broadcast_ms_mean": round(1000 * weights.seconds / max(weights.count, 1), 3),
            **self.collector.stats(),
            "buffer_size": None if self.buffer is None else len(self.buffer),
        }

    def __enter__(self) -> ParallelParts:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.collection.close()

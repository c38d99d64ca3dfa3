"""Parallel pipeline on Ray: the serial train loop, with collection and evaluation in Ray actors.

The driver (this process) holds the learner and the replay buffer. ``parallel.n_collectors`` collector actors and one
evaluator actor run the plain collector / evaluator classes inside the shells of :mod:`ding_lite.distributed.actors`;
each builds its own envs and policy from the config. The learner's weights go into Ray's object store once per
broadcast and every actor loads that one copy. The loop itself is the serial pipeline's: the driver-side stand-ins of
:mod:`ding_lite.distributed.remote` answer ``collect`` / ``eval`` as the local workers do (both kinds of parts are
:class:`~ding_lite.runtime.parts.TrainingParts`), and :mod:`ding_lite.distributed.session` connects to Ray. The
parts are the serial pipeline's with the other collection choice
(:class:`~ding_lite.distributed.collection.RayCollection`).

- Off-policy: asynchronous. ``collect`` returns the batch of whichever collector finished first (``ray.wait``); the
  loop pushes it, trains ``update_per_collect`` times, and the next ``collect`` sends that collector off again with
  the newest weights. The policy lag (learner iteration minus the weights' iteration) is logged per batch.
- On-policy: synchronous rounds. Every collector collects with the same weights version; the loop trains on the
  union of their samples.

Ray is optional (``pip install -e .[ray]``) and imported only when a parallel run starts.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from ding_lite.build import ConfigLike, fill_model_shapes_from_env
from ding_lite.distributed.collection import RayCollection
from ding_lite.distributed.config import PARALLEL_CONFIG, check_parallel_config
from ding_lite.distributed.session import RAY_INSTALL_HINT, import_ray, ray_session
from ding_lite.runtime.parts import PlainEnv, RunParts
from ding_lite.runtime.run_start import RunOptions, start_run
from ding_lite.runtime.train_loop import run_training
from ding_lite.utils.log import setup_console_logging

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
    options = RunOptions(seed, max_env_step, max_train_iter, exp_dir, resume, load_ckpt, strict, overrides, progress)
    with start_run(config, options, resolve_parallel_config) as run:
        setup_console_logging()
        with ray_session(ray, address, run.cfg.parallel.num_cpus), \
                RunParts.for_run(run, PlainEnv, partial(RayCollection, ray)) as parts:
            return run_training(run, parts)


def resolve_parallel_config(cfg: Any) -> None:
    """Before anything is built or written: the ``parallel`` section checked, the env checked and the model shapes
    filled from one probe env (the config travels to the actors resolved)."""
    check_parallel_config(cfg.parallel)
    fill_model_shapes_from_env(cfg)

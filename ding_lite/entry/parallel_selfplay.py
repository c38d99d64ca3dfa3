"""Self-play on Ray (``-m parallel`` with a config that has a multi-agent game and ``league.seats``).

The driver holds the learner, the buffer, the opponent pool (snapshot files, payoff table, Elo) and the evaluation;
each collector actor holds its own games and its own frozen opponents. A new snapshot goes into Ray's object store
once (``ray.put`` of its state dict) and every actor that draws it loads it from there; with each collect an actor is
told the pool's snapshot names, their sampling probabilities and the refs of their weights. Game results come back
with the collected episodes and are recorded in the driver's payoff table (:mod:`ding_lite.distributed.league`). The
parts are the self-play pipeline's with the other collection choice
(:class:`~ding_lite.distributed.collection.RayCollection`).
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from ding_lite.build import ConfigLike
from ding_lite.distributed.collection import RayCollection
from ding_lite.distributed.config import check_parallel_config
from ding_lite.distributed.session import import_ray, ray_session
from ding_lite.runtime.parts import RunParts
from ding_lite.runtime.run_start import RunOptions, start_run
from ding_lite.runtime.selfplay import SelfPlayGame, resolve_selfplay_config
from ding_lite.runtime.train_loop import run_training
from ding_lite.utils.log import setup_console_logging


def parallel_selfplay_pipeline(config: ConfigLike, seed: int = 0, max_env_step: int | None = None,
                               max_train_iter: int | None = None, *, address: str | None = None,
                               exp_dir: str | Path | None = None, resume: bool = False,
                               load_ckpt: str | Path | None = None, strict: bool = False,
                               overrides: tuple[str, ...] = (), progress: bool = True) -> dict[str, Any]:
    """:func:`~ding_lite.entry.selfplay.selfplay_pipeline` with the collectors as Ray actors; arguments as for
    :func:`~ding_lite.entry.parallel.parallel_pipeline`."""
    ray = import_ray()
    options = RunOptions(seed, max_env_step, max_train_iter, exp_dir, resume, load_ckpt, strict, overrides, progress)
    with start_run(config, options, resolve_parallel_selfplay_config) as run:
        setup_console_logging()
        with ray_session(ray, address, run.cfg.parallel.num_cpus), \
                RunParts.for_run(run, SelfPlayGame, partial(RayCollection, ray)) as parts:
            return run_training(run, parts)


def resolve_parallel_selfplay_config(cfg: Any) -> None:
    """Before anything is built or written: the ``parallel`` section checked, then the self-play resolution
    (:func:`~ding_lite.runtime.selfplay.resolve_selfplay_config`: the config travels to the actors resolved)."""
    check_parallel_config(cfg.parallel)
    resolve_selfplay_config(cfg)

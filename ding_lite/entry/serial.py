"""Serial pipeline: one process, one loop for on- and off-policy training (the loop itself is
:mod:`ding_lite.runtime.train_loop`, shared with the parallel pipeline)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ding_lite.build import ConfigLike
from ding_lite.runtime.collection import LocalCollection
from ding_lite.runtime.parts import PlainEnv, RunParts
from ding_lite.runtime.run_start import RunOptions, start_run
from ding_lite.runtime.train_loop import run_training


def serial_pipeline(config: ConfigLike, seed: int = 0, max_env_step: int | None = None,
                    max_train_iter: int | None = None, *, exp_dir: str | Path | None = None, resume: bool = False,
                    load_ckpt: str | Path | None = None, strict: bool = False, overrides: tuple[str, ...] = (),
                    progress: bool = True) -> dict[str, Any]:
    """Train until the eval return reaches ``env.stop_value``, or a budget runs out.

    Args:
        config: a config file path, DI-engine's ``(main_config, create_config)``, a dict, or a compiled config.
        seed: seed of envs, torch and numpy.
        max_env_step: env-step budget (None: unbounded).
        max_train_iter: train-iteration budget (None: unbounded).
        exp_dir: experiment folder (default: ``cfg.exp_name``); if it already holds a run and ``resume`` is off,
            ``<exp_dir>_1``, ``<exp_dir>_2``, ... is used instead (the result's ``exp_dir`` says which).
        resume: continue from the latest ``<exp_dir>/ckpt/iteration_N.pth.tar`` (train_iter and env_step too).
        load_ckpt: start from this checkpoint's policy weights and counters.
        strict: unknown config keys are errors.
        overrides: ``a.b.c=value`` strings applied last.
        progress: show a progress bar on an interactive terminal.

    Returns:
        The result dict also written to ``<exp_dir>/result.json``.

    Example::

        from ding_lite.entry import serial_pipeline
        serial_pipeline('dizoo/classic_control/cartpole/config/cartpole_dqn_config.py', seed=0)
    """
    options = RunOptions(seed, max_env_step, max_train_iter, exp_dir, resume, load_ckpt, strict, overrides, progress)
    with start_run(config, options) as run, RunParts.for_run(run, PlainEnv, LocalCollection) as parts:
        return run_training(run, parts)


# DI-engine runs on-policy configs through serial_pipeline_onpolicy; here one serial pipeline runs both kinds
serial_pipeline_onpolicy = serial_pipeline

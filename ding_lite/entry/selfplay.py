"""Self-play pipeline: the serial training loop over a multi-agent game whose other seats are played by frozen
snapshots of the learner (an opponent pool in ``<exp>/league/``) and scripted baselines."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ding_lite.build import ConfigLike
from ding_lite.runtime.collection import LocalCollection
from ding_lite.runtime.parts import RunParts
from ding_lite.runtime.run_start import RunOptions, start_run
from ding_lite.runtime.selfplay import SelfPlayGame, resolve_selfplay_config
from ding_lite.runtime.train_loop import run_training


def selfplay_pipeline(config: ConfigLike, seed: int = 0, max_env_step: int | None = None,
                      max_train_iter: int | None = None, *, exp_dir: str | Path | None = None, resume: bool = False,
                      load_ckpt: str | Path | None = None, strict: bool = False, overrides: tuple[str, ...] = (),
                      progress: bool = True) -> dict[str, Any]:
    """Train the learner against its own snapshots and baselines; arguments as for
    :func:`~ding_lite.entry.serial.serial_pipeline`. ``result.json`` gains ``league`` (snapshots, payoff table, Elo
    ratings) and ``eval_table`` (win / draw / loss per eval opponent).

    Example::

        from ding_lite.entry.selfplay import selfplay_pipeline
        selfplay_pipeline('dizoo/board_games/snake/config/snake_arena_dqn_config.py', seed=0, max_env_step=20000)
    """
    options = RunOptions(seed, max_env_step, max_train_iter, exp_dir, resume, load_ckpt, strict, overrides, progress)
    with start_run(config, options, resolve_selfplay_config) as run, \
            RunParts.for_run(run, SelfPlayGame, LocalCollection) as parts:
        return run_training(run, parts)

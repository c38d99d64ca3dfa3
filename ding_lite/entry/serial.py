"""Serial pipeline: one process, one loop for on- and off-policy training (the loop itself is
:mod:`ding_lite.runtime.train_loop`, shared with the parallel pipeline)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ding_lite.build import ConfigLike, build, build_env_managers, build_evaluator
from ding_lite.runtime.collection import LocalCollection
from ding_lite.runtime.train_loop import RunOptions, run_training, start_run
from ding_lite.utils.checkpoint import load_policy_weights
from ding_lite.utils.log import ExperimentLogger
from ding_lite.utils.seed import SeedPlan
from ding_lite.worker.learner import BaseLearner


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
    with start_run(config, RunOptions(seed, max_env_step, max_train_iter, exp_dir, resume, load_ckpt, strict,
                                      overrides, progress)) as run, _Parts(run.cfg, seed, run.best_return) as parts:
        return run_training(run, parts)


class _Parts:
    """Every worker of a serial run, built before anything is written and closed together."""

    def __init__(self, cfg: Any, seed: int, best_return: float = -math.inf) -> None:
        self.cfg = cfg
        self.collector_env, self.evaluator_env = build_env_managers(cfg, seed)
        try:
            self.policy = build(cfg, "policy")
            self.collection = LocalCollection(cfg, self.collector_env, self.policy)
            self.collector = self.collection.collector
            self.evaluator = build_evaluator(cfg, self.evaluator_env, self.policy, SeedPlan(seed).evaluator,
                                             best_return=best_return)
            self.buffer = None if cfg.policy.on_policy else build(cfg, "policy.other.replay_buffer", seed=seed)
        except BaseException:
            self.close()
            raise

    def attach(self, learner: BaseLearner, logger: ExperimentLogger) -> None:
        """Local workers need nothing from the learner or the logger."""

    def stats(self) -> dict[str, Any]:
        return {}

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> Any:
        """Evaluate ``ckpt``'s weights (None: the current ones) over ``n_episode`` episodes seeded from ``seed``; the
        run has ended, so loading into the shared model disturbs nothing."""
        if ckpt is not None:
            load_policy_weights(self.policy.eval_mode, ckpt)
        return build_evaluator(self.cfg, self.evaluator_env, self.policy, seed, n_episode, stop=False).eval()

    def env_restarts(self) -> dict[str, int]:
        """Env worker restarts per env manager (only the ``subprocess`` manager restarts workers)."""
        return {**self.collection.env_restarts(), "evaluator": self.evaluator_env.restart_count}

    def close(self) -> None:
        self.collector_env.close()
        self.evaluator_env.close()

    def __enter__(self) -> _Parts:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

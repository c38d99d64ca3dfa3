"""Collection in this process, one of the two collection choices of a run's parts
(:mod:`ding_lite.runtime.parts`); the other collects on Ray actors (:mod:`ding_lite.distributed.collection`)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ding_lite.build import build, build_eval_env_manager, build_evaluator
from ding_lite.runtime.restarts import RunCounts
from ding_lite.utils.checkpoint import load_policy_weights
from ding_lite.utils.log import ExperimentLogger
from ding_lite.utils.seed import SeedPlan
from ding_lite.worker.evaluator import EvalResult


class LocalCollection:
    """Collection in this process: the configured collector (``policy.collect.collector``) with the policy's collect
    mode over the game's env manager (``game.collector_env``: the config's env, or the self-play arena over it)."""

    def __init__(self, cfg: Any, seeds: SeedPlan, policy: Any, game: Any) -> None:
        self.cfg, self.seeds = cfg, seeds
        self.env = game.collector_env(int(cfg.env.collector_env_num), seeds.collector)
        try:
            self.collector = build(cfg, "policy.collect.collector", self.env, policy.collect_mode)
        except BaseException:
            self.env.close()
            raise

    def evaluation(self, policy: Any, best_return: float = -math.inf) -> LocalEvaluation:
        """A plain env's evaluation, here too."""
        return LocalEvaluation(self.cfg, self.seeds.evaluator, policy, best_return)

    def wait_ready(self) -> None:
        """Built in the constructor: nothing to wait for."""

    def log_to(self, logger: ExperimentLogger | None) -> None:
        """Local collectors log nothing of their own."""

    def env_restarts(self) -> dict[str, int]:
        return {"collector": self.env.restart_count}

    def run_counts(self) -> dict[str, RunCounts]:
        """Local collection counts nothing but env restarts."""
        return {}

    def stats(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        self.env.close()


class LocalEvaluation:
    """The configured evaluator (``policy.eval.evaluator``) with the policy's eval mode over its own env manager
    (``env.evaluator_env_num`` envs seeded from ``seed``: the run's evaluation seed, ``SeedPlan.evaluator``)."""

    def __init__(self, cfg: Any, seed: int, policy: Any, best_return: float = -math.inf) -> None:
        self.cfg, self.policy = cfg, policy
        self.env = build_eval_env_manager(cfg.env, int(cfg.env.evaluator_env_num), seed)
        try:
            self.evaluator = build_evaluator(cfg, self.env, policy, seed, best_return=best_return)
        except BaseException:
            self.env.close()
            raise

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> EvalResult:
        """Evaluate ``ckpt``'s weights (None: the current ones) over ``n_episode`` episodes seeded from ``seed``; the
        run has ended, so loading into the shared model disturbs nothing."""
        if ckpt is not None:
            load_policy_weights(self.policy.eval_mode, ckpt)
        return build_evaluator(self.cfg, self.env, self.policy, seed, n_episode, stop=False).eval()

    def stats(self) -> dict[str, Any]:
        return {}

    def env_restarts(self) -> int:
        return int(self.env.restart_count)

    def close(self) -> None:
        self.env.close()

"""Evaluator: exactly ``n_evaluator_episode`` episodes with the policy's eval mode, and the stop decision."""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from typing import Any, NamedTuple

import numpy as np

from ding_lite.data.keys import ACTION
from ding_lite.envs.manager_types import EpisodeEnd
from ding_lite.envs.variations import SUCCESS, VARIATION, per_variation_table
from ding_lite.errors import ConfigError, naming_envs, optional_count
from ding_lite.registry import EVALUATOR_REGISTRY
from ding_lite.worker.episodes import run_episodes
from ding_lite.worker.tracker import BestReturnTracker, PlateauDetector, Tracked

logger = logging.getLogger("ding_lite")


class EvalResult(NamedTuple):
    """Outcome of one evaluation."""

    train_iter: int
    env_step: int
    returns: np.ndarray  # (n_episode,) episode returns
    lengths: np.ndarray  # (n_episode,) episode lengths
    stop: bool  # mean return reached stop_value
    improved: bool  # best mean return so far
    seconds: float
    # env variations (see ding_lite/envs/variations.py): per-episode info['variation'] and info['success'], None
    # where the episode's env did not report it
    variations: list[Any] | None = None
    successes: list[Any] | None = None
    stop_reason: str = "stop value reached"  # what ``stop`` means when set (the plateau evaluator says 'plateau ...')

    def per_variation(self) -> dict[str, dict[str, Any]]:
        """Mean return and success rate per variation id (empty when the envs have no variations)."""
        if not self.variations or all(v is None for v in self.variations):
            return {}
        return per_variation_table(self.variations, self.returns, self.successes)

    @property
    def mean(self) -> float:
        return float(np.mean(self.returns))

    @property
    def std(self) -> float:
        return float(np.std(self.returns))


def episode_successes(ends: Sequence[EpisodeEnd], cut: Sequence[bool] | np.ndarray) -> list[Any]:
    """Each episode's ``info['success']`` (None where the env reports none). An episode cut at the step cap ended
    without a final info of the env's: where the env reports success (another episode's final info has the flag), a
    cut one counts as not successful. Left out, a variation whose episodes mostly stalled had the success rate of the
    few that ended, and one whose episodes were all cut was ranked by return among success rates (GSL's worst
    variations)."""
    flags = [e.info.get(SUCCESS) for e in ends]
    if any(cut) and any(f is not None for f in flags):
        flags = [False if c and f is None else f for f, c in zip(flags, cut, strict=True)]
    return flags


def eval_step_cap(cfg: Mapping[str, Any]) -> int | None:
    """``policy.eval.evaluator.max_episode_steps`` of the section ``cfg``, checked: a positive int or None."""
    return optional_count("policy.eval.evaluator.max_episode_steps", cfg.get("max_episode_steps"))


@EVALUATOR_REGISTRY.register("interaction")
class InteractionEvaluator(Tracked):
    """Runs exactly ``n_episode`` episodes spread over the eval envs (env i runs its share, extra episodes of an env
    that is ahead are not counted), with the same seeds every time, so evaluations are comparable.

    With ``max_episode_steps`` an episode that reaches that many steps is cut there, as a time limit would cut it,
    and counted with its return so far (a warning says how many); its env goes on with its next episode, so every
    env plays its share whatever its episodes' lengths and the mean stays unbiased. Every evaluation ends in bounded
    time, whatever the policy does (one that never presses FIRE, say).

    Args:
        cfg: the ``policy.eval.evaluator`` section.
        env_manager: env manager over ``evaluator_env_num`` envs.
        policy: the policy's ``eval_mode``.
        n_episode: episodes per evaluation (``env.n_evaluator_episode``).
        stop_value: mean return at which training stops (None: never).
        seed: base seed of the eval envs.
        best_return: the best mean return before the first evaluation (a resumed run's; see
            :class:`~ding_lite.worker.tracker.BestReturnTracker`).
        plateau: also stop at a plateau of the mean return (GSL's phase I); None: only at ``stop_value``.
    """

    config: dict[str, Any] = dict(
        type="interaction",
        eval_freq=1000,  # evaluate every this many train iterations
        video_every=0,  # training runs: an episode as <exp>/videos/eval_iter<N>_ep0.mp4 every this many evals (0: none)
        max_episode_steps=None,  # cut each episode here, truncated (None: the env's own); counted so far, warned
    )

    def __init__(self, cfg: Mapping[str, Any], env_manager: Any, policy: Any, n_episode: int,
                 stop_value: float | None = None, seed: int = 0, *, best_return: float = -math.inf,
                 plateau: PlateauDetector | None = None) -> None:
        if n_episode < 1:
            raise ConfigError(f"env.n_evaluator_episode must be at least 1, got {n_episode!r}")
        self.cfg = cfg
        self.env = env_manager
        self.policy = policy
        self.n_episode = n_episode
        self.seed = seed
        self.max_episode_steps = eval_step_cap(cfg)
        self.tracker = BestReturnTracker(int(cfg.get("eval_freq", self.config["eval_freq"])), stop_value,
                                         best_return, plateau)

    @property
    def stop_value(self) -> float | None:
        """Mean return at which training stops (None: never)."""
        return self.tracker.stop_value

    def eval(self, train_iter: int = 0, env_step: int = 0) -> EvalResult:
        """Run the episodes; returns an :class:`EvalResult` (``stop`` compares the mean with ``stop_value``)."""
        start = time.perf_counter()
        self.env.seed(self.seed)
        self.policy.reset()
        with naming_envs("evaluator"), getattr(self.policy, "rollout_weights", nullcontext)():  # fixed weights
            run = run_episodes(self.env, lambda obs: self.policy.forward(obs)[ACTION], self.n_episode,
                               max_episode_steps=self.max_episode_steps)
        if run.capped:  # a final evaluation or -m eval passes no train_iter: then none is named
            at = f" at train_iter {train_iter}" if train_iter or env_step else ""
            logger.warning(f"warning: evaluation{at}: {run.capped} of {len(run.returns)} "
                           f"episode(s) cut at policy.eval.evaluator.max_episode_steps={self.max_episode_steps} steps, "
                           f"counted with their return so far (a policy that stalls, e.g. one that never presses FIRE, "
                           f"may never end an episode)")
        improved = self.tracker.update(float(np.mean(run.returns)), train_iter)
        return EvalResult(train_iter, env_step, run.returns, run.lengths, self.tracker.should_stop, improved,
                          time.perf_counter() - start, [e.info.get(VARIATION) for e in run.ends],
                          episode_successes(run.ends, run.cut), self.tracker.stop_reason)

    def close(self) -> None:
        self.env.close()

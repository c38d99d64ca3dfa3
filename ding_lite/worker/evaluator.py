"""Evaluator: exactly ``n_evaluator_episode`` episodes with the policy's eval mode, and the stop decision."""
from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any, NamedTuple

import numpy as np

from ding_lite.envs.env_manager import episode_quota
from ding_lite.envs.variations import SUCCESS, VARIATION, per_variation_table
from ding_lite.errors import ConfigError
from ding_lite.registry import EVALUATOR

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


@EVALUATOR.register("interaction")
class InteractionEvaluator:
    """Runs exactly ``n_episode`` episodes spread over the eval envs (env i runs its share, extra episodes of an env
    that is ahead are not counted), with the same seeds every time, so evaluations are comparable.

    With ``max_episode_steps`` an episode that reaches that many steps is stopped and counted with its return so far
    (a warning says how many), and its env plays no more episodes in that evaluation: every evaluation ends in
    bounded time, whatever the policy does (one that never presses FIRE, say).

    Args:
        cfg: the ``policy.eval.evaluator`` section.
        env_manager: env manager over ``evaluator_env_num`` envs.
        policy: the policy's ``eval_mode``.
        n_episode: episodes per evaluation (``env.n_evaluator_episode``).
        stop_value: mean return at which training stops (None: never).
        seed: base seed of the eval envs.
    """

    config: dict[str, Any] = dict(
        type="interaction",
        eval_freq=1000,  # evaluate every this many train iterations
        video_every=0,  # training runs: an episode as <exp>/videos/eval_iter<N>_ep0.mp4 every this many evals (0: none)
        max_episode_steps=None,  # cap on each episode's steps (None: the env's own); counted so far, warned
    )

    def __init__(self, cfg: Mapping[str, Any], env_manager: Any, policy: Any, n_episode: int,
                 stop_value: float | None = None, seed: int = 0) -> None:
        if n_episode < 1:
            raise ConfigError(f"env.n_evaluator_episode must be at least 1, got {n_episode!r}")
        self.cfg = cfg
        self.env = env_manager
        self.policy = policy
        self.n_episode = n_episode
        self.stop_value = stop_value
        self.seed = seed
        self.eval_freq = int(cfg.get("eval_freq", self.config["eval_freq"]))
        cap = cfg.get("max_episode_steps")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ConfigError(f"policy.eval.evaluator.max_episode_steps must be a positive int or None, got {cap!r}")
        self.max_episode_steps: int | None = cap
        self.best_return = -np.inf
        self._last_eval_iter: int | None = None

    def should_eval(self, train_iter: int) -> bool:
        """True at the first call and whenever ``eval_freq`` iterations passed since the last evaluation."""
        return self._last_eval_iter is None or train_iter - self._last_eval_iter >= self.eval_freq

    def eval(self, train_iter: int = 0, env_step: int = 0) -> EvalResult:
        """Run the episodes; returns an :class:`EvalResult` (``stop`` compares the mean with ``stop_value``)."""
        start = time.perf_counter()
        self._last_eval_iter = train_iter
        n_env = self.env.env_num
        quota = episode_quota(self.n_episode, n_env)
        returns: list[float] = []
        lengths: list[int] = []
        variations: list[Any] = []
        successes: list[Any] = []
        self.env.seed(self.seed)
        obs = self.env.reset()
        self.policy.reset()
        # each env's running episode (for the step cap): return and steps so far
        running, steps = np.zeros(n_env), np.zeros(n_env, dtype=np.int64)
        capped = 0
        with getattr(self.policy, "rollout_weights", nullcontext)():  # the weights are fixed during an evaluation
            while quota.any():
                result = self.env.step(self.policy.forward(obs)["action"])
                running += result.reward
                steps += 1
                for episode in result.episodes:
                    if quota[episode.env_id] > 0:
                        quota[episode.env_id] -= 1
                        returns.append(episode.episode_return)
                        lengths.append(episode.episode_length)
                        variations.append(episode.info.get(VARIATION))
                        successes.append(episode.info.get(SUCCESS))
                    running[episode.env_id], steps[episode.env_id] = 0.0, 0
                if self.max_episode_steps is not None:
                    for i in np.flatnonzero((steps >= self.max_episode_steps) & (quota > 0)):
                        returns.append(float(running[i]))
                        lengths.append(int(steps[i]))
                        variations.append(None)
                        successes.append(None)
                        quota[i], capped = 0, capped + 1
                obs = result.obs
        if capped:
            logger.warning(f"evaluation at train_iter {train_iter}: {capped} episode(s) stopped at "
                           f"policy.eval.evaluator.max_episode_steps={self.max_episode_steps} steps, counted with "
                           f"their return so far (a policy that stalls, e.g. one that never presses FIRE, may never "
                           f"end an episode)")
        mean = float(np.mean(returns))
        improved = mean > self.best_return
        self.best_return = max(self.best_return, mean)
        stop = self.stop_value is not None and mean >= self.stop_value
        return EvalResult(train_iter, env_step, np.asarray(returns), np.asarray(lengths), stop, improved,
                          time.perf_counter() - start, variations, successes)

    def close(self) -> None:
        self.env.close()

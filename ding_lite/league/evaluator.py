"""Self-play evaluation: the learner's eval mode against each baseline and the newest snapshots, as win / draw /
loss rates; the win rate (wins + draws / 2) against the first baseline is the run's eval return."""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ding_lite.data.keys import ACTION
from ding_lite.league.arena import SelfPlayEnvManager
from ding_lite.league.payoff import DRAW, WIN
from ding_lite.league.seats import LEARNER
from ding_lite.worker.episodes import run_episodes
from ding_lite.worker.evaluator import EvalResult
from ding_lite.worker.tracker import BestReturnTracker, Tracked

logger = logging.getLogger(__name__)


def seat_plans(seats: Sequence[str], opponent: str, swap_seats: bool) -> dict[str, list[str]]:
    """The seat lists to evaluate against ``opponent``: every non-learner seat played by it; with ``swap_seats``
    one list per distinct rotation of the seats, named ``'<opponent>@seat<k>'`` by the seat k that the config's
    first learner seat moves to, so first and second player are reported apart."""
    base = [LEARNER if s == LEARNER else opponent for s in seats]
    if not swap_seats:
        return {opponent: base}
    first = base.index(LEARNER)
    plans: dict[str, list[str]] = {}
    for k in range(len(base)):
        rotated = base[-k:] + base[:-k] if k else list(base)  # seat j's player moves to seat j + k
        if rotated not in plans.values():  # ['learner', 'pool', 'learner', 'pool'] has two rotations, not four
            plans[f"{opponent}@seat{(first + k) % len(base)}"] = rotated
    return plans


class SelfPlayEvaluator(Tracked):
    """Same interface as :class:`~ding_lite.worker.evaluator.InteractionEvaluator` (``should_eval``, ``eval``,
    ``best_return``: here the best win rate against the first opponent), plus ``table``: per opponent (and learner
    seat), wins / draws / losses of the last evaluation.

    Args:
        inner: env manager over packed games (``evaluator_env_num`` envs).
        layout, seats, players, swap_seats: as for :class:`SelfPlayEnvManager`.
        policy: the learner's eval mode.
        opponents: callable giving the current list of opponents (baselines, then newest snapshots).
        n_episode: games per opponent (and learner seat).
        eval_freq: train iterations between evaluations.
        stop_value: win rate against the first opponent at which training stops (None: never).
        seed: seed of the eval games.
        max_episode_steps: a game that reaches this many learner steps is cut there and counted as a draw, with a
            warning, and its env starts its next game, as in the interaction evaluator
            (``policy.eval.evaluator.max_episode_steps``; None: no cap). ``env.max_episode_steps`` cuts every game,
            in training too.
    """

    def __init__(self, inner: Any, layout: Any, seats: Sequence[str], players: Any, swap_seats: bool, policy: Any,
                 opponents: Callable[[], list[str]], n_episode: int, eval_freq: int,
                 stop_value: float | None = None, seed: int = 0, *, best_return: float = -math.inf,
                 on_table: Callable[[dict[str, dict[str, float]], int], None] | None = None,
                 max_episode_steps: int | None = None) -> None:
        self.inner, self.layout, self.seats, self.players = inner, layout, list(seats), players
        self.swap_seats, self.policy, self.opponents = swap_seats, policy, opponents
        self.n_episode, self.seed, self.max_episode_steps = n_episode, seed, max_episode_steps
        self.tracker = BestReturnTracker(eval_freq, stop_value, best_return)
        self.table: dict[str, dict[str, float]] = {}
        self.on_table = on_table  # told each evaluation's table and env step (None: nobody)
        self._seat_scores: list[list[float]] = []  # every seat's score of each game of this evaluation
        self._warned_shared = False

    def eval(self, train_iter: int = 0, env_step: int = 0) -> EvalResult:
        """Play every opponent; returns an :class:`EvalResult` whose returns are the scores (1 / 0.5 / 0) of the
        games against the first opponent."""
        start = time.perf_counter()
        self.table = {}
        self._seat_scores = []
        # scripted opponents start from their seeds, as the envs do (play seeds them): equal weights, equal games, and
        # -m eval of a checkpoint plays the games of the run's evaluation of it (its random player drew on before)
        self.players.reset()
        primary: list[float] = []
        lengths: list[int] = []
        for k, opponent in enumerate(self.opponents()):
            for label, seats in seat_plans(self.seats, opponent, self.swap_seats).items():
                scores, lens = self.play(seats, label)
                self.table[label] = _rates(scores)
                if k == 0:
                    primary += scores
                    lengths += lens
        self._warn_shared_reward()
        improved = self.tracker.update(float(np.mean(primary)), train_iter)
        if self.on_table is not None:
            self.on_table(self.table, env_step)
        return EvalResult(train_iter, env_step, np.asarray(primary), np.asarray(lengths), self.tracker.should_stop,
                          improved, time.perf_counter() - start)

    def play(self, seats: list[str], label: str) -> tuple[list[float], list[int]]:
        """``n_episode`` games with these seats, named ``label`` in warnings (each env plays its share, as the
        interaction evaluator does); returns the learner's scores and the games' lengths. Games cut by a worker
        failure are not counted; games cut at ``max_episode_steps`` are draws."""
        arena = SelfPlayEnvManager(self.inner, self.layout, seats, self.players, seed=self.seed)
        self.inner.seed(self.seed)
        self.policy.reset()
        run = run_episodes(arena, lambda obs: self.policy.forward(obs)[ACTION], self.n_episode,
                           max_episode_steps=self.max_episode_steps, counts=lambda end: "score" in end.info)
        if run.capped:
            logger.warning(f"warning: self-play evaluation against {label}: {run.capped} of {len(run.returns)} game(s) "
                           f"cut at policy.eval.evaluator.max_episode_steps={self.max_episode_steps} steps, "
                           f"counted as draws")
        self._seat_scores += [end.info["scores"] for end, cut in zip(run.ends, run.cut, strict=True)
                              if not cut and "scores" in end.info]
        return [DRAW if cut else end.info["score"] for end, cut in zip(run.ends, run.cut, strict=True)], \
            run.lengths.tolist()

    def _warn_shared_reward(self) -> None:
        """Once per run: every game of an evaluation gave every seat one nonzero score. A zero-sum game ties only
        at 0 (a chess game cut at its move cap); equal nonzero scores throughout are a reward the seats share (a
        cooperative game: MPE's simple_spread with local_ratio=0, pursuit), where every game is a draw."""
        games = self._seat_scores
        if self._warned_shared or not games or not all(len(set(g)) == 1 and g[0] != 0 for g in games):
            return
        self._warned_shared = True
        mean = float(np.mean([g[0] for g in games]))
        logger.warning(f"warning: self-play evaluation: in all {len(games)} games every seat scored the same (the "
                       f"learner {mean:.3g} on average): the seats share their reward (a cooperative game?), so "
                       f"every game is a draw, and the win rates, the eval return (0.5), ckpt_best, env.stop_value, "
                       f"the Elo ratings and PFSP carry no signal; self-play ranks players whose seats compete")

    def close(self) -> None:
        self.inner.close()


def _rates(scores: list[float]) -> dict[str, float]:
    s = np.asarray(scores)
    n = max(len(s), 1)
    return {"win": float((s == WIN).sum() / n), "draw": float((s == DRAW).sum() / n),
            "loss": float((s < DRAW).sum() / n), "games": float(len(s)),
            "win_rate": float(s.mean()) if len(s) else 0.0}

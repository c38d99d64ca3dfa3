"""When a run evaluates, its best mean return so far and when it stops: one tracker that every evaluator (the
interaction one, the self-play one, the Ray evaluator's driver side, GSL's plateau one) keeps."""
from __future__ import annotations

import math
from typing import Any

from ding_lite.errors import ConfigError


class PlateauDetector:
    """Says when a sequence of evaluation returns stopped improving.

    ``update(x)`` returns True once ``patience`` evaluations in a row did not beat the best so far by more than
    ``tol``. The first evaluation sets the bar. Example: patience 2, tol 0.1: 1.0, 1.05, 1.08 → plateau at the third
    (neither 1.05 nor 1.08 beats 1.0 + 0.1)."""

    def __init__(self, patience: int, tol: float) -> None:
        if patience < 1:
            raise ConfigError(f"gsl.plateau_patience must be at least 1, got {patience}")
        if tol < 0:
            raise ConfigError(f"gsl.plateau_tol must be at least 0, got {tol}")
        self.patience, self.tol = int(patience), float(tol)
        self.best = -math.inf
        self.stale = 0  # evaluations since the last gain

    def update(self, value: float) -> bool:
        """Record one evaluation; True when the plateau is reached."""
        if value > self.best + self.tol or self.best == -math.inf:
            self.best = value
            self.stale = 0
        else:
            self.stale += 1
        return self.stale >= self.patience

    def state_dict(self) -> dict[str, Any]:
        return {"best": self.best, "stale": self.stale}


STOP_VALUE_REACHED = "stop value reached"


class BestReturnTracker:
    """Should an evaluation run now, was it the best so far, should the run stop.

    Args:
        eval_freq: train iterations between evaluations (the first call of :meth:`should_evaluate` always says yes).
        stop_value: mean return at which the run stops (None: never), from the first evaluation after a train
            iteration on (an evaluation at train iteration 0 only records the return).
        best_return: the best mean return before this tracker's first evaluation (a resumed run's, so that its
            ``ckpt_best`` is replaced only by a better policy).
        plateau: also stop once this detector sees a plateau of the mean return (GSL's phase I); None: no such rule.
    """

    def __init__(self, eval_freq: int, stop_value: float | None = None, best_return: float = -math.inf,
                 plateau: PlateauDetector | None = None) -> None:
        self.eval_freq = int(eval_freq)
        self.stop_value = stop_value
        self.best_return = float(best_return)
        self.plateau = plateau
        self.plateaued = False  # the plateau was reached (it stays reached)
        self.reached = False  # the last evaluation reached stop_value
        self.last_eval_iter: int | None = None

    def should_evaluate(self, train_iter: int) -> bool:
        """True at the first call and whenever ``eval_freq`` iterations passed since the last evaluation."""
        return self.last_eval_iter is None or train_iter - self.last_eval_iter >= self.eval_freq

    def continue_schedule(self, last_eval_iter: int | None) -> None:
        """A resumed run: the next evaluation is ``eval_freq`` iterations after ``last_eval_iter`` (None: at once)."""
        self.last_eval_iter = None if last_eval_iter is None else int(last_eval_iter)

    def update(self, mean: float, train_iter: int) -> bool:
        """Record the mean return of the evaluation at ``train_iter``; True when it beats the best so far (an equal
        one does not)."""
        self.last_eval_iter = train_iter
        improved = mean > self.best_return
        self.best_return = max(self.best_return, mean)
        # the untrained policy (train iteration 0) never stops a run: a lucky initialisation (PPO's CartPole seed 4
        # scores 196 on its 5 evaluation episodes before any update) is not a solved task
        self.reached = self.stop_value is not None and mean >= self.stop_value and train_iter > 0
        if self.plateau is not None:
            self.plateaued = self.plateaued or self.plateau.update(mean)
        return improved

    @property
    def should_stop(self) -> bool:
        """The last evaluation reached ``stop_value``, or the plateau rule fired."""
        return self.reached or self.plateaued

    @property
    def stop_reason(self) -> str:
        """What :attr:`should_stop` means, in the log's words."""
        if self.reached or self.plateau is None:
            return STOP_VALUE_REACHED
        return (f"plateau (no gain above plateau_tol={self.plateau.tol:g} in "
                f"plateau_patience={self.plateau.patience} evaluations)")

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint keeps (the learner's ``best_eval_return`` is ``best_return``)."""
        return {"best_return": self.best_return, "last_eval_iter": self.last_eval_iter,
                **({"plateau": self.plateau.state_dict(), "plateaued": self.plateaued} if self.plateau else {})}


class Tracked:
    """What every evaluator answers from its :class:`BestReturnTracker` (``self.tracker``): the best mean return so
    far and whether to evaluate now; an evaluator class lists it as a base instead of writing the two out."""

    tracker: BestReturnTracker

    @property
    def best_return(self) -> float:
        """The best mean return so far (the start checkpoint's, before the first evaluation)."""
        return self.tracker.best_return

    def should_eval(self, train_iter: int) -> bool:
        """True at the first call and whenever ``eval_freq`` iterations passed since the last evaluation."""
        return self.tracker.should_evaluate(train_iter)

    @property
    def last_eval_iter(self) -> int | None:
        """The train iteration of the last evaluation (None: none yet)."""
        return self.tracker.last_eval_iter

    def continue_schedule(self, last_eval_iter: int | None) -> None:
        """A resumed run: the next evaluation is ``eval_freq`` iterations after ``last_eval_iter`` (None: at once)."""
        self.tracker.continue_schedule(last_eval_iter)

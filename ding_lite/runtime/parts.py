"""What a training pipeline hands the shared train loop: its parts, named as Protocols.

The serial pipeline's parts are local workers (``ding_lite.entry.serial``); the parallel pipeline's are driver-side
stand-ins for Ray actors (``ding_lite.entry.parallel``). The loop touches nothing else of them, so a new pipeline (a
different cluster framework, a new kind of worker) needs only these methods.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from ding_lite.data.batch import Batch
from ding_lite.envs.env_manager import EpisodeEnd
from ding_lite.worker.evaluator import EvalResult


class CollectorPart(Protocol):
    """Where the loop gets samples: ``env_step`` counts every env step collected, on from where
    :meth:`continue_from` set it (a resume)."""

    @property
    def env_step(self) -> int: ...

    def continue_from(self, env_step: int) -> None:
        """Count env steps on from ``env_step``."""
        ...

    def collect(self, n_sample: int, train_iter: int = 0) -> tuple[Batch, list[EpisodeEnd]]:
        """The policy's train samples of about ``n_sample`` env steps, and the episodes that ended meanwhile."""
        ...


class EvaluatorPart(Protocol):
    """How the loop evaluates: ``best_return`` is the best mean return so far (a resume starts from its
    checkpoint's, given to the evaluator's constructor)."""

    @property
    def best_return(self) -> float: ...

    def should_eval(self, train_iter: int) -> bool:
        """True when an evaluation is due at ``train_iter``."""
        ...

    def eval(self, train_iter: int = 0, env_step: int = 0) -> EvalResult:
        """Evaluate the current weights of the learner's policy."""
        ...


class TrainingParts(Protocol):
    """Every worker of one training run, built before anything is written and closed together (a context manager).

    ``policy`` is the learner's policy; ``buffer`` the replay buffer (None on-policy)."""

    @property
    def policy(self) -> Any: ...

    @property
    def collector(self) -> CollectorPart: ...

    @property
    def evaluator(self) -> EvaluatorPart: ...

    @property
    def buffer(self) -> Any: ...

    def attach(self, learner: Any, logger: Any) -> None:
        """Called once the learner and the experiment's logger exist (before the loop starts)."""
        ...

    def stats(self) -> dict[str, Any]:
        """Entries the pipeline adds to ``result.json``."""
        ...

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> EvalResult:
        """After the run: ``ckpt``'s weights (None: the learner's current ones) over ``n_episode`` episodes seeded
        from ``seed``, with no stop rule."""
        ...

    def env_restarts(self) -> dict[str, int]:
        """Env worker restarts so far per env manager (name -> count), for tensorboard, the log and the result."""
        ...

    def __enter__(self) -> TrainingParts:
        ...

    def __exit__(self, *exc: Any) -> None:
        ...

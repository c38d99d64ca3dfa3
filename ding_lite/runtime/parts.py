"""A training run's parts: what the shared train loop drives (named as Protocols), and the one class that composes
them from two independent choices.

- **What is played** (a :class:`Game`): the config's env (:class:`PlainEnv`), or the self-play arena over a
  multi-agent game against frozen snapshots (:class:`~ding_lite.runtime.selfplay.SelfPlayGame`).
- **Where it is collected** (a :class:`Collection`): in this process
  (:class:`~ding_lite.runtime.collection.LocalCollection`), or on Ray actors
  (:class:`~ding_lite.distributed.collection.RayCollection`).

:class:`RunParts` puts one of each together with the learner's policy and the replay buffer; the four training
pipelines (serial, parallel, self-play, parallel self-play) differ only in the two choices they pass. The loop touches
nothing of the parts but the methods named here, so a new pipeline (another cluster framework, a new kind of game)
needs only a new choice.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from ding_lite.build import build, build_env_manager
from ding_lite.data.batch import Batch
from ding_lite.envs.env_manager import EpisodeEnd
from ding_lite.runtime.restarts import RunCounts
from ding_lite.utils.seed import SeedPlan
from ding_lite.worker.evaluator import EvalResult


class StartCheckpoint(NamedTuple):
    """The checkpoint a resumed run continues, and its contents: read once, by
    :func:`~ding_lite.runtime.run_start.start_run`, so that every part takes what it keeps there from ``state``
    (the file is read once, as it was checked)."""

    path: Path
    state: Mapping[str, Any]


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

    @property
    def last_eval_iter(self) -> int | None: ...

    def continue_schedule(self, last_eval_iter: int | None) -> None:
        """A resumed run: the next evaluation is due ``eval_freq`` iterations after ``last_eval_iter`` (None: now)."""
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

    def stop_rules(self) -> list[str] | None:
        """What ends the run besides its budgets, in the ``[start]`` line's words (None: the eval return's rule)."""
        ...

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> EvalResult:
        """After the run: ``ckpt``'s weights (None: the learner's current ones) over ``n_episode`` episodes seeded
        from ``seed``, with no stop rule."""
        ...

    def env_restarts(self) -> dict[str, int]:
        """Env worker restarts so far per env manager (name -> count), for tensorboard, the log and the result."""
        ...

    def run_counts(self) -> dict[str, RunCounts]:
        """Counts of the whole run besides the env restarts (checkpoint entry -> counts): saved with every
        checkpoint, continued from the checkpoint a resume starts at (:mod:`ding_lite.runtime.restarts`)."""
        ...

    def __enter__(self) -> TrainingParts:
        ...

    def __exit__(self, *exc: Any) -> None:
        ...


class Evaluation(Protocol):
    """Where a run evaluates: the evaluator the loop calls, the final evaluation after the run, and the evaluation's
    env manager (local, on an actor, or the self-play games)."""

    @property
    def evaluator(self) -> EvaluatorPart: ...

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> EvalResult:
        """``ckpt``'s weights (None: the learner's current ones) over ``n_episode`` episodes seeded from ``seed``."""
        ...

    def env_restarts(self) -> int:
        """Env worker restarts of the evaluation's env manager(s) so far."""
        ...

    def stats(self) -> dict[str, Any]:
        """Entries for ``result.json`` (a self-play run's last eval table)."""
        ...

    def close(self) -> None: ...


class Collection(Protocol):
    """Where a run collects: its collector, and the evaluation of a plain env next to it. Built by a choice's
    constructor ``(cfg, seeds, policy, game)`` (``seeds``: the segment's :class:`~ding_lite.utils.seed.SeedPlan`)."""

    @property
    def collector(self) -> CollectorPart: ...

    @property
    def env(self) -> Any:
        """The env manager the collector steps in this process (None where actors step their own)."""
        ...

    def evaluation(self, policy: Any, best_return: float) -> Evaluation:
        """The evaluation of a plain env where this collection runs (the loop waits for each evaluation)."""
        ...

    def wait_ready(self) -> None:
        """Block until every worker is built (start-up errors surface here)."""
        ...

    def log_to(self, logger: Any) -> None: ...

    def env_restarts(self) -> dict[str, int]: ...

    def run_counts(self) -> dict[str, RunCounts]:
        """Its counts of the whole run (checkpoint entry -> counts; ``TrainingParts.run_counts``)."""
        ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class Game(Protocol):
    """What a run plays (the config's env, or the self-play arena), as the parts need it. Built by a choice's
    constructor ``(cfg, seeds, policy, exp_dir, resume_from)`` (``seeds``: the segment's
    :class:`~ding_lite.utils.seed.SeedPlan`; ``resume_from``: a resumed run's :class:`StartCheckpoint`, else None)."""

    def collector_env(self, env_num: int, seed: int) -> Any:
        """The env manager a collector in this process steps (an env manager, or the arena over one)."""
        ...

    def actor_games(self, ray: Any) -> tuple[Any, Any]:
        """For collection on Ray actors: ``(games, link)``. ``games`` (pickled to every collector actor, None: the
        plain env) wraps the actor's env manager (``wrap(cfg, seed, inner)``) and takes the driver's message before
        each collect (``update(message)``); ``link`` (None: none) stays in the driver, gives that message
        (``message()``) and receives each batch's ended episodes (``received(episodes)``)."""
        ...

    def evaluation(self, collection: Collection, best_return: float) -> Evaluation:
        """How the learner is evaluated (a plain env: where ``collection`` runs)."""
        ...

    def attach(self, learner: Any, logger: Any) -> None:
        """Called once the learner and the experiment's logger exist."""
        ...

    def after_collect(self, env_step: int) -> None:
        """Called after each collect with the run's env step."""
        ...

    def stop_rules(self) -> list[str] | None:
        """What ends the run besides its budgets, in the ``[start]`` line's words (None: the eval return's rule)."""
        ...

    def stats(self) -> dict[str, Any]: ...


GameChoice = Callable[[Any, SeedPlan, Any, Path | None, StartCheckpoint | None], Game]
CollectionChoice = Callable[[Any, SeedPlan, Any, Game], Collection]


class PlainEnv:
    """What is played, the usual choice: the config's env (``env.manager`` over ``env.collector_env_num`` envs),
    evaluated where the collection runs. The other choice is the self-play arena
    (:class:`~ding_lite.runtime.selfplay.SelfPlayGame`)."""

    def __init__(self, cfg: Any, seeds: SeedPlan, policy: Any, exp_dir: Path | None = None,
                 resume_from: StartCheckpoint | None = None) -> None:
        self.cfg, self.policy = cfg, policy

    def collector_env(self, env_num: int, seed: int) -> Any:
        return build_env_manager(self.cfg.env, env_num, seed)

    def actor_games(self, ray: Any) -> tuple[Any, Any]:
        return None, None  # each actor steps its env manager as it is

    def evaluation(self, collection: Collection, best_return: float) -> Evaluation:
        return collection.evaluation(self.policy, best_return)

    def attach(self, learner: Any, logger: Any) -> None:
        """A plain env needs nothing from the learner or the logger."""

    def after_collect(self, env_step: int) -> None:
        """Nothing happens between collects."""

    def stop_rules(self) -> None:
        """The eval return's stop value (and a plateau evaluator's plateau): the [start] line's default."""
        return None

    def stats(self) -> dict[str, Any]:
        return {}


class RunParts:
    """Every part of one training run (a :class:`TrainingParts`), composed of the two choices (module docstring):
    the learner's policy, the game (``game``), the collection (``collection``) with its collector, the evaluation,
    and the replay buffer (None on-policy). Built before anything is written, closed together (a context manager).

    Args:
        cfg: the run's resolved config (model shapes filled).
        seed: the run's seed (every other seed derives from it), or the segment's
            :class:`~ding_lite.utils.seed.SeedPlan` (a resumed segment's collects on seeds of its own).
        game: what is played: :class:`PlainEnv` or :class:`~ding_lite.runtime.selfplay.SelfPlayGame`.
        collection: where: :class:`~ding_lite.runtime.collection.LocalCollection`, or
            :class:`~ding_lite.distributed.collection.RayCollection` with its ``ray`` bound (``functools.partial``).
        exp_dir: the experiment folder (the self-play pool lives in it).
        resume_from: the checkpoint a resumed run continues, with its contents (None: a fresh start).
        best_return: the best mean eval return before this run (a resume's); ``ckpt_best`` is replaced only by a
            better policy.

    Example::

        with RunParts(cfg, 0, PlainEnv, LocalCollection) as parts:
            samples, episodes = parts.collector.collect(64)
    """

    def __init__(self, cfg: Any, seed: int | SeedPlan, game: GameChoice, collection: CollectionChoice, *,
                 exp_dir: Path | None = None, resume_from: StartCheckpoint | None = None,
                 best_return: float = -math.inf) -> None:
        self.cfg = cfg
        seeds = seed if isinstance(seed, SeedPlan) else SeedPlan(seed)
        self.policy = build(cfg, "policy")
        self.game = game(cfg, seeds, self.policy, exp_dir, resume_from)
        self.collection = collection(cfg, seeds, self.policy, self.game)
        try:
            self.evaluation = self.game.evaluation(self.collection, best_return)
        except BaseException:
            self.collection.close()
            raise
        try:
            self.collection.wait_ready()
            self.buffer = None if cfg.policy.on_policy else build(cfg, "policy.other.replay_buffer",
                                                                  seed=seeds.collector)
            space = getattr(self.collection.env, "observation_space", None)  # None: collected by Ray actors
            if self.buffer is not None and space is not None and hasattr(self.buffer, "check_observations_fit"):
                self.buffer.check_observations_fit(space)  # a buffer that cannot fit, before anything is written
        except BaseException:
            self.close()
            raise
        self.collector = GameCollector(self.collection.collector, self.game)
        self.evaluator = self.evaluation.evaluator

    @classmethod
    def for_run(cls, run: Any, game: GameChoice, collection: CollectionChoice) -> RunParts:
        """The parts of a started run (:func:`~ding_lite.runtime.run_start.start_run`'s result)."""
        return cls(run.cfg, run.seeds, game, collection, exp_dir=run.exp_dir, resume_from=run.resume_from,
                   best_return=run.best_return)

    @property
    def collector_env(self) -> Any:
        """The env manager the collector steps in this process (None where actors collect)."""
        return self.collection.env

    def attach(self, learner: Any, logger: Any) -> None:
        """The collection logs through ``logger`` from now on; the game gets the learner (a self-play run's pool
        goes into its checkpoints)."""
        self.collection.log_to(logger)
        self.game.attach(learner, logger)

    def stats(self) -> dict[str, Any]:
        return {**self.game.stats(), **self.evaluation.stats(), **self.collection.stats(),
                "buffer_size": None if self.buffer is None else len(self.buffer)}

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> EvalResult:
        return self.evaluation.final_eval(n_episode, seed, ckpt)

    def stop_rules(self) -> list[str] | None:
        """The game's stop rules in words, for the run's ``[start]`` line."""
        return self.game.stop_rules()

    def env_restarts(self) -> dict[str, int]:
        """Env worker restarts per env manager (only the ``subprocess`` manager restarts workers)."""
        return {**self.collection.env_restarts(), "evaluator": self.evaluation.env_restarts()}

    def run_counts(self) -> dict[str, RunCounts]:
        return self.collection.run_counts()

    def close(self) -> None:
        try:
            self.collection.close()
        finally:
            self.evaluation.close()

    def __enter__(self) -> RunParts:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class GameCollector:
    """The collection's collector (local, or the driver-side stand-in of the actors), and the game's turn after
    each collect (a self-play run's snapshot schedule)."""

    def __init__(self, collector: Any, game: Game) -> None:
        self.inner, self._game = collector, game

    @property
    def env_step(self) -> int:
        return int(self.inner.env_step)

    def continue_from(self, env_step: int) -> None:
        self.inner.continue_from(env_step)

    def collect(self, n_sample: int, train_iter: int = 0) -> tuple[Batch, list[EpisodeEnd]]:
        out = self.inner.collect(n_sample, train_iter)
        self._game.after_collect(self.env_step)
        return out

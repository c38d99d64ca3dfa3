"""The learner's hooks, each a key of ``policy.learn.learner.hook`` (``LEARNER_HOOK_REGISTRY``): load a checkpoint
before the run, write and prune checkpoints, log the learn scalars. A hook is called with the learner at each of
its ``position`` (or ``positions``: then with the position too), one of ``learner.POSITIONS``."""
from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ding_lite.errors import int_at_least
from ding_lite.registry import LEARNER_HOOK_REGISTRY
from ding_lite.utils.checkpoint import ITERATION_PREFIX, RESUME_PREFIX, checkpoint_iteration
from ding_lite.utils.run_folder import CKPT_SUFFIX

if TYPE_CHECKING:
    from ding_lite.worker.learner import BaseLearner


@LEARNER_HOOK_REGISTRY.register("load_ckpt_before_run")
class LoadCkptHook:
    """Loads the configured checkpoint before the run ('' disables), unless the learner already started from one.

    The pipelines pass this path on as their start checkpoint (checked before anything is written; ``--resume`` and
    ``--load-ckpt`` take precedence), so there the hook finds the learner loaded and does nothing; it serves code that
    drives a learner directly."""

    position = "before_run"

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, learner: BaseLearner) -> None:
        if self.path and learner.loaded_from is None:
            learner.load_checkpoint(self.path)


@LEARNER_HOOK_REGISTRY.register("save_ckpt_after_iter")
class SaveCkptHook:
    """Writes ``iteration_N.pth.tar`` every ``freq`` iterations."""

    position = "after_iter"

    def __init__(self, freq: int) -> None:
        self.freq = int(freq)

    def __call__(self, learner: BaseLearner) -> None:
        if self.freq > 0 and learner.train_iter % self.freq == 0:
            learner.save_checkpoint(f"{ITERATION_PREFIX}{learner.train_iter}")


@LEARNER_HOOK_REGISTRY.register("save_ckpt_after_run")
class FinalCkptHook:
    """Writes ``iteration_N.pth.tar`` when the run ends, unless it did nothing (no env step, no update): a run whose
    budget ran out before its first update (e.g. off-policy, before ``learning_starts``) writes ``iteration_0``, so
    that ``--resume`` continues it with its env steps and replay buffer."""

    position = "after_run"

    def __init__(self, enabled: bool) -> None:
        self.enabled = bool(enabled)

    def __call__(self, learner: BaseLearner) -> None:
        if self.enabled and (learner.train_iter > 0 or learner.env_step > 0):
            learner.save_checkpoint(f"{ITERATION_PREFIX}{learner.train_iter}")


@LEARNER_HOOK_REGISTRY.register("keep_iteration_ckpt")
class KeepIterationCkptHook:
    """After each ``iteration_N.pth.tar`` written, deletes all but the newest ``keep`` of those up to its N (0: none
    deleted). ``--resume`` reads only the newest readable one, and ``ckpt_best`` / ``resume_N`` are not touched.
    Those of a larger N (a run resumed from an earlier one) are left alone: they are not this run's to delete."""

    position = "after_save"

    def __init__(self, keep: int) -> None:
        self.keep = int_at_least("policy.learn.learner.hook.keep_iteration_ckpt", keep, 0, "0: keep all")

    def __call__(self, learner: BaseLearner) -> None:
        newest = learner.last_saved
        mine = checkpoint_iteration(newest, ITERATION_PREFIX) if newest is not None else None
        if self.keep == 0 or newest is None or mine is None:
            return
        found = ((checkpoint_iteration(p, ITERATION_PREFIX), p)
                 for p in newest.parent.glob(f"{ITERATION_PREFIX}*{CKPT_SUFFIX}"))
        older = sorted((n, p) for n, p in found if n is not None and n <= mine)
        for _, path in older[:-self.keep]:
            path.unlink(missing_ok=True)


@LEARNER_HOOK_REGISTRY.register("save_resume_ckpt")
class ResumeCkptHook:
    """Keeps ``ckpt/resume_N.pth.tar`` fresh for ``--resume`` at a bounded cost: one is written at an evaluation
    once ``at_eval_after_seconds`` passed since the last, or after an iteration once ``every_seconds`` passed;
    the newest ``keep`` are kept (older ones deleted)."""

    positions = ("after_iter", "after_eval")

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        self.every_seconds = float(cfg.get("every_seconds", 300.0))
        self.at_eval_after_seconds = float(cfg.get("at_eval_after_seconds", 30.0))
        self.keep = int(cfg.get("keep", 2))
        self._last = time.monotonic()
        self._written: list[Path] | None = None  # oldest first; found on disk at the first write

    def __call__(self, learner: BaseLearner, position: str = "after_iter") -> None:
        if self.keep <= 0 or learner.ckpt_dir is None or learner.train_iter == 0:
            return
        waited = time.monotonic() - self._last
        if waited < (self.at_eval_after_seconds if position == "after_eval" else self.every_seconds):
            return
        if self._written is None:  # those of the run this one resumes take their turn too
            self._written = sorted(learner.ckpt_dir.glob(f"{RESUME_PREFIX}*{CKPT_SUFFIX}"),
                                   key=lambda p: checkpoint_iteration(p, RESUME_PREFIX) or -1)
        path = learner.save_checkpoint(f"{RESUME_PREFIX}{learner.train_iter}")
        self._last = time.monotonic()
        if path is None:
            return
        if path not in self._written:
            self._written.append(path)
        # pruned after every write, a rewrite too: a run killed between a write and its pruning leaves one too many
        # (resumed from the newest, its first write is that same file again)
        while len(self._written) > self.keep:
            self._written.pop(0).unlink(missing_ok=True)


@LEARNER_HOOK_REGISTRY.register("log_show_after_iter")
class LogHook:
    """Sends the learn scalars to tensorboard (and the text log) every ``freq`` iterations."""

    position = "after_iter"

    def __init__(self, freq: int) -> None:
        self.freq = int(freq)

    def __call__(self, learner: BaseLearner) -> None:
        if self.freq > 0 and learner.train_iter % self.freq == 0:
            learner.log_now()

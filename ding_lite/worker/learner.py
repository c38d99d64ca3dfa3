"""Learner: runs the policy's learn mode, counts iterations, and calls hooks (log, checkpoint, load)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ding_lite.registry import LEARNER_HOOK
from ding_lite.utils.checkpoint import load_checkpoint, save_checkpoint
from ding_lite.utils.learn_log import mean_log, step_logs

POSITIONS = ("before_run", "after_iter", "after_run")


class BaseLearner:
    """Calls ``policy.learn_mode.forward`` on each batch and runs the hooks named in ``cfg.hook``.

    Args:
        cfg: the ``policy.learn.learner`` section.
        policy: the policy (its ``learn_mode`` is used).
        exp_dir: experiment folder; checkpoints go to ``<exp_dir>/ckpt`` (None: no checkpoints).
        logger: an :class:`ExperimentLogger` (None: no logging).
    """

    config: dict[str, Any] = dict(
        hook=dict(
            load_ckpt_before_run="",  # checkpoint to load before training ('' : none)
            log_show_after_iter=100,  # log learn scalars every this many iterations
            save_ckpt_after_iter=10000,  # write ckpt/iteration_N.pth.tar every this many iterations
            save_ckpt_after_run=True,  # write a final checkpoint when the run ends
        ),
    )

    def __init__(self, cfg: Mapping[str, Any], policy: Any, exp_dir: Path | None = None, logger: Any = None,
                 policy_type: str = "") -> None:
        self.cfg = cfg
        self.policy = policy.learn_mode
        self.policy_type = policy_type
        self.exp_dir = Path(exp_dir) if exp_dir is not None else None
        self.logger = logger
        self.train_iter = 0
        self.env_step = 0
        self.best_eval_return = -math.inf  # kept in checkpoints: a resumed run keeps ckpt_best's bar
        self.loaded_from: Path | None = None  # the checkpoint this learner started from, if any
        self.last_log: dict[str, Any] = {}
        self.last_steps = 0  # gradient steps of the last train call
        self._hooks: dict[str, list[Any]] = {p: [] for p in POSITIONS}
        for name, value in (cfg.get("hook") or {}).items():
            hook = LEARNER_HOOK.build(name, value)
            self._hooks[hook.position].append(hook)

    @property
    def ckpt_dir(self) -> Path | None:
        return self.exp_dir / "ckpt" if self.exp_dir is not None else None

    def train(self, batch: dict, env_step: int) -> dict[str, Any]:
        """One call of ``learn_mode.forward``: ``train_iter`` advances by its number of gradient steps; returns their
        log, merged (:func:`mean_log`)."""
        self.env_step = env_step
        logs = step_logs(self.policy.forward(batch))
        self.last_log = mean_log(logs)
        self.last_steps = len(logs)
        self.train_iter += self.last_steps
        self.call_hooks("after_iter")
        return self.last_log

    def passed(self, freq: int) -> bool:
        """True when the last ``train`` call took ``train_iter`` past a multiple of ``freq``."""
        return self.train_iter // freq != (self.train_iter - self.last_steps) // freq

    def call_hooks(self, position: str) -> None:
        for hook in self._hooks[position]:
            hook(self)

    def checkpoint_state(self) -> dict[str, Any]:
        return {"policy": self.policy.state_dict(), "train_iter": self.train_iter, "env_step": self.env_step,
                "best_eval_return": self.best_eval_return, "policy_type": self.policy_type}

    def save_checkpoint(self, name: str) -> Path | None:
        """Write ``<exp_dir>/ckpt/<name>.pth.tar`` atomically (nothing without an experiment folder)."""
        if self.ckpt_dir is None:
            return None
        return save_checkpoint(self.ckpt_dir / f"{name}.pth.tar", self.checkpoint_state())

    def load_checkpoint(self, path: str | Path) -> None:
        """Restore policy state, ``train_iter``, ``env_step`` and the best eval return from a checkpoint."""
        state = load_checkpoint(path)
        self.policy.load_state_dict(state["policy"])
        self.train_iter = int(state.get("train_iter", 0))
        self.env_step = int(state.get("env_step", 0))
        self.best_eval_return = float(state.get("best_eval_return", -math.inf))
        self.loaded_from = Path(path)


@LEARNER_HOOK.register("load_ckpt_before_run")
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


@LEARNER_HOOK.register("save_ckpt_after_iter")
class SaveCkptHook:
    """Writes ``iteration_N.pth.tar`` every ``freq`` iterations."""

    position = "after_iter"

    def __init__(self, freq: int) -> None:
        self.freq = int(freq)

    def __call__(self, learner: BaseLearner) -> None:
        if self.freq > 0 and learner.passed(self.freq):
            learner.save_checkpoint(f"iteration_{learner.train_iter}")


@LEARNER_HOOK.register("save_ckpt_after_run")
class FinalCkptHook:
    """Writes ``iteration_N.pth.tar`` when the run ends."""

    position = "after_run"

    def __init__(self, enabled: bool) -> None:
        self.enabled = bool(enabled)

    def __call__(self, learner: BaseLearner) -> None:
        if self.enabled and learner.train_iter > 0:
            learner.save_checkpoint(f"iteration_{learner.train_iter}")


@LEARNER_HOOK.register("log_show_after_iter")
class LogHook:
    """Sends the learn scalars to tensorboard (and the text log) every ``freq`` iterations."""

    position = "after_iter"

    def __init__(self, freq: int) -> None:
        self.freq = int(freq)

    def __call__(self, learner: BaseLearner) -> None:
        if learner.logger is None or self.freq <= 0 or not learner.passed(self.freq):
            return
        learner.logger.scalars("learn", learner.last_log, learner.train_iter)
        scalars = " ".join(f"{k}={float(v):.4g}" for k, v in learner.last_log.items() if getattr(v, "ndim", 0) == 0)
        learner.logger.text(f"[learn] iter {learner.train_iter} env_step {learner.env_step} {scalars}")

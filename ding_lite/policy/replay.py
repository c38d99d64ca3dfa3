"""The replay schedule of an off-policy policy: when it starts learning from its replay buffer and how many gradient
steps each collect buys. Every off-policy policy has one, read from its config (:class:`ReplaySchedule`); the train
loops hand it each collect's samples."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from ding_lite.data.batch import batch_len
from ding_lite.data.keys import INDEX, PRIORITY
from ding_lite.errors import ConfigError, int_at_least

TrainStep = Callable[[dict, int], list[dict[str, Any]]]  # (batch, env_step) -> one log dict per gradient step


class ReplaySchedule:
    """Push, then learn, once per collect (DI-engine's serial loop)::

        buffer.push(samples)
        if env_step >= learning_starts and len(buffer) >= learn.batch_size:
            for each of the updates due:
                batch = buffer.sample(learn.batch_size)
                logs = train_step(batch, env_step)               # the learner: learn_mode.forward, iteration hooks
                buffer.update_priority(batch['index'], logs[-1]['priority'])   # where the policy reports them

    The updates due per collect are ``learn.update_per_collect`` (DI-engine's meaning: gradient steps after each
    collect, whatever its size), or, when ``learn.replay_ratio`` is set, that many gradient steps per collected
    sample (fractions carried to the next collect: ``replay_ratio=0.25`` with 8 samples per collect is 2 updates).
    No update counts as due before learning starts.

    Args:
        cfg: the compiled ``policy`` section (``learning_starts``, ``learn.batch_size``, ``learn.update_per_collect``,
            ``learn.replay_ratio``).
    """

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        learn = cfg.get("learn") or {}
        policy_type = cfg.get("type")
        for key in ("batch_size", "update_per_collect"):
            if key not in learn:
                raise ConfigError(f"policy '{policy_type}' is off-policy (on_policy=False) but its config has no "
                                  f"learn.{key}: declare it in the policy's config (or subclass OffPolicyPolicy)")
        self.batch_size = int_at_least("policy.learn.batch_size", learn["batch_size"], 1)
        ratio = learn.get("replay_ratio")
        if ratio is not None and (isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0
                                  or math.isinf(ratio)):  # inf: an OverflowError at the first update
            raise ConfigError(f"policy.learn.replay_ratio must be a finite number > 0 (gradient steps per collected "
                              f"sample) or None (use learn.update_per_collect), got {ratio!r}")
        self.replay_ratio = None if ratio is None else float(ratio)
        self.update_per_collect = None if self.replay_ratio is not None else \
            int_at_least("policy.learn.update_per_collect", learn["update_per_collect"], 1)
        self.learning_starts = int_at_least("policy.learning_starts", cfg.get("learning_starts") or 0, 0)
        self._owed = 0.0  # updates owed by the replay ratio, not yet made (a fraction of one)

    def check_budget(self, max_env_step: int | None) -> None:
        """A :class:`ConfigError` if the run's env-step budget ends before learning starts, or before the buffer
        can hold one batch (each env step adds at most one sample): the run would never learn."""
        if max_env_step is None:
            return
        if self.learning_starts and self.learning_starts >= max_env_step:
            raise ConfigError(f"policy.learning_starts={self.learning_starts} is not below the env-step budget "
                              f"{max_env_step} (--max-env-step): the run would end before its first gradient step; "
                              f"lower policy.learning_starts or raise the budget")
        if self.batch_size > max_env_step:
            raise ConfigError(f"policy.learn.batch_size={self.batch_size} is above the env-step budget {max_env_step} "
                              f"(--max-env-step): the replay buffer would never hold one batch and the run would "
                              f"never learn; lower policy.learn.batch_size or raise the budget")

    def updates_due(self, n_new: int, env_step: int, buffer_size: int) -> int:
        """Gradient steps to make after a collect of ``n_new`` samples that brought the run to ``env_step``."""
        if env_step < self.learning_starts or buffer_size < self.batch_size:
            return 0
        if self.replay_ratio is None:
            assert self.update_per_collect is not None
            return self.update_per_collect
        self._owed += self.replay_ratio * n_new
        due = int(self._owed)
        self._owed -= due
        return due

    def state(self, name: str = "") -> dict[str, float]:
        """The checkpoint entry (``learner.save_with_checkpoints`` calls it with the checkpoint's name): the fraction
        of an update owed by the replay ratio, without which a resumed run makes fewer updates."""
        return {"owed": self._owed}

    def continue_from(self, saved: Mapping[str, Any] | None) -> None:
        """Go on from a checkpoint's entry (None: a checkpoint written before it existed, nothing owed)."""
        self._owed = float((saved or {}).get("owed", 0.0))

    def train(self, buffer: Any, samples: dict, env_step: int, train_step: TrainStep,
              one_update: Callable[[int], AbstractContextManager[None]] | None = None) -> None:
        """Push ``samples`` into ``buffer`` and make the updates due, each on a fresh batch. ``one_update(n)`` (the
        learner's) makes them one update, so that no checkpoint is written with some of them made."""
        buffer.push(samples)
        due = self.updates_due(batch_len(samples), env_step, len(buffer))
        with nullcontext() if one_update is None else one_update(due):
            for _ in range(due):
                batch = buffer.sample(self.batch_size)
                out = train_step(batch, env_step)[-1]
                if PRIORITY in out:  # priorities come back as an explicit field of the log
                    buffer.update_priority(batch[INDEX], out[PRIORITY])


def check_replay_budget_early(policy_cfg: Mapping[str, Any], max_env_step: int | None) -> None:
    """:meth:`ReplaySchedule.check_budget` from the config alone, before any part is built (the parallel pipeline
    would otherwise start Ray first). A config without the schedule's keys is left to the policy's build, which
    names what to declare."""
    learn = policy_cfg.get("learn") or {}
    if max_env_step is not None and not policy_cfg.get("on_policy") and \
            all(key in learn for key in ("batch_size", "update_per_collect")):
        ReplaySchedule(policy_cfg).check_budget(max_env_step)

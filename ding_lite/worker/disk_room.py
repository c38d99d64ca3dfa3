"""A warning, early in a run, where the iteration checkpoints its budget still asks for would fill the disk: a 10M-step
run writes hundreds of ``iteration_N.pth.tar`` (all kept unless ``keep_iteration_ckpt``), and a full disk stopped it
hours in. Checked once, at the first checkpoint written after an update (its size then includes the optimizer's
state), from that file's size and the train iterations per env step so far: no per-step cost."""
from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger("ding_lite")

HOOK = "policy.learn.learner.hook"


class DiskRoom:
    """Checks, once, that the disk of the checkpoints holds those the run's budget (``max_env_step``,
    ``max_train_iter``; an unbounded run is not checked) still writes; a ``warning:`` line where it does not."""

    def __init__(self, hook_cfg: Mapping[str, Any], max_env_step: int | None, max_train_iter: int | None) -> None:
        self.freq = int(hook_cfg.get("save_ckpt_after_iter") or 0)
        self.keep = int(hook_cfg.get("keep_iteration_ckpt") or 0)
        self.max_env_step, self.max_train_iter = max_env_step, max_train_iter
        self.checked = False

    def remaining_iters(self, train_iter: int, env_step: int) -> int | None:
        """Train iterations left in the budget: the iteration budget's, or the env-step budget's at the run's
        iterations per env step so far (the smaller where both are given); None if unbounded."""
        left = []
        if self.max_train_iter is not None:
            left.append(self.max_train_iter - train_iter)
        if self.max_env_step is not None and env_step > 0:
            left.append(int((self.max_env_step - env_step) * train_iter / env_step))
        return max(min(left), 0) if left else None

    def check(self, saved: Path, train_iter: int, env_step: int) -> None:
        """After the checkpoint ``saved`` was written at ``train_iter`` and ``env_step``."""
        if self.checked or train_iter == 0:  # before the first update the optimizer holds no state: too small
            return
        self.checked = True
        if self.freq <= 0 or self.keep > 0:  # none written, or a bounded number of them
            return
        left = self.remaining_iters(train_iter, env_step)
        if left is None:
            return
        count = left // self.freq + 1  # the periodic ones and the final one
        size = saved.stat().st_size
        free = shutil.disk_usage(saved.parent).free
        if count * size > free:
            logger.warning("warning: this run's budget still writes about %d iteration_N.pth.tar of %s (%s), more "
                           "than the %s free on the disk of %s: keep only the newest with --set "
                           "%s.keep_iteration_ckpt=3, or write them less often (%s.save_ckpt_after_iter)", count,
                           _size(size), _size(count * size), _size(free), saved.parent, HOOK, HOOK)


def _size(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"

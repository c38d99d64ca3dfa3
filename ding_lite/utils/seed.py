"""Seeding of every random source the framework uses."""
from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np


def set_seed(seed: int) -> None:
    """Seed python's ``random``, numpy's global RNG and torch."""
    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


EVAL_SEED_OFFSET = 1000  # eval envs get other seeds than the collector's (env i of a manager gets its seed + i)


@dataclass(frozen=True)
class SeedPlan:
    """Every seed a run derives from its one ``seed`` (``-s``), in one place: the collector's envs and the process
    (torch, numpy) get ``seed``; the periodic evaluations ``seed + 1000`` (the same every time, so evaluations are
    comparable, and ``-m eval`` of the best checkpoint reproduces its eval return); the final evaluation of the best
    checkpoint ``seed + 2000`` (episodes neither the collector nor the periodic evaluations played); the k-th Ray
    collector actor started ``seed + k * collector_env_num`` (no two actors share an env seed, a replacement actor
    gets fresh ones) while its envs' seeds stay below ``seed + 1000``, the later ones ``seed + 3000`` on (never an
    evaluation's seeds); GSL's specialist k ``seed + 1 + k``.

    A segment that ``--resume`` starts (``resumed_at``: the ``(train_iter, env_step)`` of the checkpoint it continues)
    replaces ``seed`` on the collector's side only (the collector's envs, the process RNGs and the policy's own ones
    seeded from torch, the replay buffer's sampling, the Ray collector actors, a self-play run's training opponents)
    by one drawn from ``numpy.random.SeedSequence([seed, train_iter, env_step])``: without it, every segment would
    replay the first one's exploration and the collector envs' first episodes. Resuming the same checkpoint twice
    gives the same seeds (the same run); the evaluations keep theirs, so they stay comparable across segments."""

    seed: int
    resumed_at: tuple[int, int] | None = None  # (train_iter, env_step) a resumed segment starts at; None: a fresh run

    @classmethod
    def resuming(cls, seed: int, checkpoint: Mapping[str, Any]) -> SeedPlan:
        """The plan of a segment that resumes from ``checkpoint`` (a learner checkpoint's state)."""
        return cls(seed, (int(checkpoint.get("train_iter", 0)), int(checkpoint.get("env_step", 0))))

    @property
    def collector(self) -> int:
        """The collector's env manager, the process RNGs, the replay buffer (a resumed segment's: derived from where
        it resumes)."""
        if self.resumed_at is None:
            return self.seed
        words = np.random.SeedSequence([self.seed, *self.resumed_at]).generate_state(1)
        return int(words[0]) % 2**31  # well inside every generator's range, also after + env index

    @property
    def evaluator(self) -> int:
        """The periodic evaluations' env manager (and the eval videos' env)."""
        return self.seed + EVAL_SEED_OFFSET

    @property
    def final_eval(self) -> int:
        """The evaluation of the best checkpoint after the run (``policy.eval.final_episodes``)."""
        return self.seed + 2 * EVAL_SEED_OFFSET

    @property
    def eval_players(self) -> int:
        """The frozen opponents of a self-play run's evaluation (the training ones get ``collector``)."""
        return self.seed + 1

    def collector_actor(self, k: int, collector_env_num: int) -> int:
        """The ``k``-th Ray collector actor started (replacements included) over ``collector_env_num`` envs: its env
        ``i`` gets ``collector + k * collector_env_num + i`` while that stays below ``collector + 1000``; later actors
        go on from ``collector + 3000``, past the evaluations' env seeds (``seed + 1000 + i``, ``seed + 2000 + i``)."""
        below = max(1, EVAL_SEED_OFFSET // collector_env_num)  # actors whose every env seed is below the evaluator's
        if k < below:
            return self.collector + k * collector_env_num
        # a long run's replacements (or many actors of many envs) would otherwise step the evaluator's episodes
        above = max(3 * EVAL_SEED_OFFSET, below * collector_env_num)
        return self.collector + above + (k - below) * collector_env_num

    def specialist(self, k: int) -> int:
        """GSL's specialist ``k`` (its phase I and II run on ``seed``)."""
        return self.seed + 1 + k

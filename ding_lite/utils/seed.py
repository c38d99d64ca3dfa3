"""Seeding of every random source the framework uses."""
from __future__ import annotations

import random
from dataclasses import dataclass

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
    gets fresh ones); GSL's specialist k ``seed + 1 + k``."""

    seed: int

    @property
    def collector(self) -> int:
        """The collector's env manager, the process RNGs, the replay buffer."""
        return self.seed

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
        """The frozen opponents of a self-play run's evaluation (the training ones get ``seed``)."""
        return self.seed + 1

    def collector_actor(self, k: int, collector_env_num: int) -> int:
        """The ``k``-th Ray collector actor started (replacements included) over ``collector_env_num`` envs."""
        return self.seed + k * collector_env_num

    def specialist(self, k: int) -> int:
        """GSL's specialist ``k`` (its phase I and II run on ``seed``)."""
        return self.seed + 1 + k

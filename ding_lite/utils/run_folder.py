"""The names inside a run's folder (``<exp_name>/``, ``<exp_name>_seed<N>/``, a GSL phase's folder), in one place:
whatever writes or reads a run (training, ``--resume``, ``-m eval``, ``-m plot``, ``-m sweep``, ``-m gsl``) builds
its paths from these. Light on purpose (no torch): the CLI and the plot driver import it."""
from __future__ import annotations

CONFIG_FILE = "total_config.py"  # the run's whole config as Python source (``-m ding_lite <folder>/total_config.py``)
RESULT_FILE = "result.json"  # how the run ended (:mod:`ding_lite.utils.run_result`)
CKPT_DIR = "ckpt"  # the checkpoints: iteration_N, resume_N and ckpt_best (.pth.tar)
CKPT_SUFFIX = ".pth.tar"  # of every checkpoint file (a run's, a league snapshot, a GSL start)
LOG_DIR = "log"  # TensorBoard events and the text log
BEST_CKPT_NAME = "ckpt_best"  # the best-evaluated policy's checkpoint, in CKPT_DIR ...
BEST_CKPT = f"{BEST_CKPT_NAME}{CKPT_SUFFIX}"  # ... and its file name

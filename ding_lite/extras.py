"""Which ``pip install 'ding_lite[EXTRA]'`` brings in an optional package, for the one-line errors of a base install.

Only ``torch``, ``numpy``, ``gymnasium``, ``easydict``, ``tensorboardX``, ``tqdm``, ``numba`` and ``scipy`` come with
``pip install ding_lite``; every other package the code or the dizoo configs import belongs to an extra of
``setup.py`` (tests/utils/test_extras.py checks both ways).
"""
from __future__ import annotations

# top-level module -> the extra of setup.py that installs it
EXTRA_OF_MODULE = {
    "ray": "ray",
    "optuna": "tune",
    "matplotlib": "plot",
    "rliable": "plot",
    "wandb": "wandb",
    "mlflow": "mlflow",
    "imageio_ffmpeg": "video",
    "pettingzoo": "pettingzoo",
    "envpool": "envpool",
    "ale_py": "atari",
    "cv2": "atari",
    "mujoco": "mujoco",
    "minigrid": "minigrid",
    "metaworld": "metaworld",
}


def install_hint(module: str | None) -> str:
    """``pip install 'ding_lite[EXTRA]'`` for a missing ``module`` (dotted names too) that an extra installs, else
    an empty string."""
    extra = EXTRA_OF_MODULE.get((module or "").split(".")[0])
    return f"pip install 'ding_lite[{extra}]'" if extra else ""

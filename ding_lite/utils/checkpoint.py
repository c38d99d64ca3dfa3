"""Checkpoint io: atomic writes, ``weights_only=True`` loads, clear errors."""
from __future__ import annotations

import os
import pickle
import zipfile
from pathlib import Path
from typing import Any

from ding_lite.errors import CheckpointError
from ding_lite.utils.atomic import atomic_write

CKPT_SUFFIX = ".pth.tar"


def save_checkpoint(path: str | os.PathLike, state: dict[str, Any]) -> Path:
    """Write ``state`` to ``path`` atomically: a temp file in the same folder, fsync, then rename over the target.

    A run killed mid-write leaves the previous checkpoint intact, never a truncated file.
    """
    import torch

    return atomic_write(path, lambda f: torch.save(state, f))


def load_checkpoint(path: str | os.PathLike, map_location: Any = "cpu") -> dict[str, Any]:
    """Load a checkpoint with ``weights_only=True``; a missing or unreadable file raises :class:`CheckpointError`."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except (RuntimeError, pickle.UnpicklingError, zipfile.BadZipFile, EOFError, ValueError, OSError) as exc:
        raise CheckpointError(f"cannot read checkpoint {path}: {_load_failure(exc)} (is it a complete ding_lite "
                              f"checkpoint?)") from exc
    if not isinstance(state, dict) or "policy" not in state:
        raise CheckpointError(f"checkpoint {path} is not a ding_lite checkpoint (no 'policy' entry)")
    return state


def _load_failure(exc: BaseException) -> str:
    """The reason of a failed ``torch.load`` in one short line.

    torch's weights-only refusal is a paragraph that suggests ``weights_only=False``; ding_lite never loads that
    way (a checkpoint could run code), so only the unpickler's own reason is kept.
    """
    text = str(exc).strip()
    marker = "WeightsUnpickler error:"
    if marker in text:
        reason = text.split(marker, 1)[1].strip().splitlines()[0].split(". ")[0].rstrip(".")
        return f"refused by torch.load(weights_only=True): {reason}"
    first = text.splitlines()[0].split(". ")[0].rstrip(".") if text else ""
    return first or type(exc).__name__


RESUME_PREFIXES = ("iteration_", "resume_")  # periodic / final checkpoints, and the rotating resume checkpoints


def checkpoint_iteration(path: Path, prefix: str) -> int | None:
    """N of ``<prefix>N.pth.tar`` (None for another name)."""
    name = path.name
    if not (name.startswith(prefix) and name.endswith(CKPT_SUFFIX)):
        return None
    try:
        return int(name[len(prefix):-len(CKPT_SUFFIX)])
    except ValueError:
        return None


def latest_checkpoint(ckpt_dir: str | os.PathLike) -> Path | None:
    """The ``iteration_N.pth.tar`` or ``resume_N.pth.tar`` with the largest N in ``ckpt_dir`` (None if there is
    none; at equal N the ``iteration_`` one)."""
    best: tuple[int, int, Path] | None = None
    for rank, prefix in enumerate(RESUME_PREFIXES):
        for p in Path(ckpt_dir).glob(f"{prefix}*{CKPT_SUFFIX}"):
            n = checkpoint_iteration(p, prefix)
            if n is not None and (best is None or (n, -rank) > (best[0], best[1])):
                best = (n, -rank, p)
    return best[2] if best else None

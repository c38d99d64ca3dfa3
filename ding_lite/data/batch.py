"""Columnar batch helpers: a batch is a (possibly nested) dict of arrays with one leading dimension."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

Batch = dict[str, Any]


def map_batch(fn: Callable[[Any], Any], batch: Mapping[str, Any]) -> Batch:
    """Apply ``fn`` to every leaf array of a nested batch."""
    return {k: map_batch(fn, v) if isinstance(v, Mapping) else fn(v) for k, v in batch.items()}


def batch_len(batch: Mapping[str, Any]) -> int:
    """Leading dimension of a batch (of its first leaf)."""
    for v in batch.values():
        return batch_len(v) if isinstance(v, Mapping) else len(v)
    return 0


def index_batch(batch: Mapping[str, Any], index: Any) -> Batch:
    """Select rows ``index`` (slice, int array or bool mask) of every leaf."""
    return map_batch(lambda a: a[index], batch)


def concat_batches(batches: Sequence[Mapping[str, Any]]) -> Batch:
    """Concatenate batches with the same keys along the leading dimension."""
    if len(batches) == 1:
        return dict(batches[0])
    first = batches[0]
    out: Batch = {}
    for k, v in first.items():
        if isinstance(v, Mapping):
            out[k] = concat_batches([b[k] for b in batches])
        else:
            out[k] = np.concatenate([b[k] for b in batches], axis=0)
    return out


def flatten_time(rollout: Mapping[str, Any]) -> Batch:
    """Reshape every leaf from (T, N, ...) to (T*N, ...)."""
    return map_batch(lambda a: a.reshape((-1,) + a.shape[2:]), rollout)


def to_tensor(batch: Mapping[str, Any], device: Any = "cpu") -> dict[str, Any]:
    """Convert every numpy leaf of a batch to a torch tensor on ``device`` (no copy on CPU where possible)."""
    import torch

    def convert(a: Any) -> Any:
        if isinstance(a, np.ndarray):
            t = torch.from_numpy(a)
            return t.to(device, non_blocking=True) if str(device) != "cpu" else t
        return a

    return map_batch(convert, batch)


def cut_interrupted(truncated: np.ndarray, terminated: np.ndarray, interrupted: np.ndarray | None) -> np.ndarray:
    """Truncation flags of a time-major (T, N) rollout with every interrupted episode cut before its placeholder row.

    An env manager that restarts a failed worker flags that step's row ``interrupted`` (see ``StepResult``): it is
    no transition. The row before it, if it belongs to the same episode (not terminated), becomes the episode's
    truncated last step, so returns bootstrap from its real next observation; the placeholder row is truncated as
    well, so nothing flows across it. Consumers then drop the rows where ``interrupted`` is True.

    Returns ``truncated`` itself when nothing was interrupted, else a new array.
    """
    if interrupted is None or not interrupted.any():
        return truncated
    cut = truncated | interrupted
    cut[:-1] |= interrupted[1:] & ~terminated[:-1]
    return cut


def episode_ends(terminated: np.ndarray, truncated: np.ndarray, interrupted: np.ndarray | None,
                 ignore_done: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(terminated, truncated)`` of a (T, N) rollout as return targets must see them.

    Episodes cut by an env worker failure end, truncated, at their last real step (:func:`cut_interrupted`). With
    ``ignore_done`` a termination counts as a truncation: the target bootstraps through it, but the episode still
    ends there, so no return or advantage flows across into the next episode.
    """
    truncated = cut_interrupted(truncated, terminated, interrupted)
    if ignore_done:
        return np.zeros_like(terminated), truncated | terminated
    return terminated, truncated

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


def non_finite_rows(values: np.ndarray) -> np.ndarray | None:
    """(len(values),) bool: the rows of a float array holding NaN or inf; None where every value is finite (and
    for integer arrays, such as uint8 frames, which cannot hold either)."""
    if values.dtype.kind != "f" or np.isfinite(values).all():
        return None
    return ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)


def non_finite_kind(value: Any) -> str:
    """How a non-finite value is named in messages: 'NaN' if it holds one, else 'inf'."""
    return "NaN" if np.isnan(value).any() else "inf"


def writable(batch: Mapping[str, Any]) -> Batch:
    """``batch`` with every read-only leaf array copied: arrays that arrive from Ray's object store are read-only,
    and a policy may write into its batch (normalise advantages in place) as it does in the serial pipeline."""
    return map_batch(lambda a: a.copy() if isinstance(a, np.ndarray) and not a.flags.writeable else a, batch)


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

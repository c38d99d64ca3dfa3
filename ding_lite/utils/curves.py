"""Learning curves over seeds: put each seed's evaluations on one x grid, then a mean and a band per grid point.

Pure numpy functions; :mod:`ding_lite.entry.plot` reads the runs and draws.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

BANDS = ("se", "ci95")


class Band(NamedTuple):
    """Mean over seeds and its band at each grid point (NaN where no seed has a value; band NaN under 2 seeds)."""

    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_seeds: np.ndarray  # seeds with a value at each grid point


def hold_on_grid(xs: Sequence[float], ys: Sequence[float], grid: np.ndarray, hold_after_end: bool) -> np.ndarray:
    """A seed's curve on ``grid`` as a step function: the last value logged at or before each grid x.

    NaN before the first point; after the last point NaN, or the last value if ``hold_after_end`` (a run that
    stopped because it reached its stop value is held there, so that a fast seed does not leave the mean early).

    Example: xs=[0, 10], ys=[1, 3], grid=[0, 5, 10, 20] gives [1, 1, 3, nan] (or [1, 1, 3, 3] when held).
    """
    x = np.asarray(xs, dtype=float)
    y = np.asarray(ys, dtype=float)
    out = np.full(len(grid), np.nan)
    if len(x) == 0:
        return out
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    idx = np.searchsorted(x, grid, side="right") - 1  # last point at or before each grid x
    inside = idx >= 0
    out[inside] = y[idx[inside]]
    if not hold_after_end:
        out[grid > x[-1]] = np.nan
    return out


def band_over_seeds(values_SG: np.ndarray, kind: str = "se", n_boot: int = 2000, seed: int = 0) -> Band:
    """Mean over seeds (rows) at each grid point (column), ignoring NaN, with a band:

    - ``se``: mean ± standard error, ``std(ddof=1) / sqrt(n)``;
    - ``ci95``: percentile bootstrap 95% interval of the mean, resampling seeds with replacement
      (Efron & Tibshirani 1993, ch. 13; with 2-5 seeds it is narrow and rough: read it as a sketch).
    """
    if kind not in BANDS:
        raise ValueError(f"band must be one of {BANDS}, got {kind!r}")
    values_SG = np.asarray(values_SG, dtype=float)
    valid = ~np.isnan(values_SG)
    count = valid.sum(axis=0)
    total = np.where(valid, values_SG, 0.0).sum(axis=0)
    mean = np.divide(total, count, out=np.full(count.shape, np.nan), where=count > 0)
    low = np.full(mean.shape, np.nan)
    high = np.full(mean.shape, np.nan)
    rng = np.random.default_rng(seed)
    for g in np.flatnonzero(count >= 2):
        column = values_SG[valid[:, g], g]
        if kind == "se":
            half = column.std(ddof=1) / np.sqrt(len(column))
            low[g], high[g] = mean[g] - half, mean[g] + half
        else:
            means = column[rng.integers(0, len(column), size=(n_boot, len(column)))].mean(axis=1)
            low[g], high[g] = np.percentile(means, [2.5, 97.5])
    return Band(mean, low, high, count)


def median_and_range(values: Sequence[float]) -> tuple[float, float, float] | None:
    """``(median, min, max)`` of ``values``; None when there are none."""
    if len(values) == 0:
        return None
    arr = np.asarray(values, dtype=float)
    return float(np.median(arr)), float(arr.min()), float(arr.max())

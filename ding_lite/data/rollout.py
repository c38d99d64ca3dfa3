"""The rollout contract: what a collector hands to a policy's ``_get_train_sample``.

A rollout is a dict of time-major columns, each (T, N, ...): T steps of N env slots. Every collector's rollout has

- ``obs``, ``next_obs``, ``reward``, and the columns the policy's ``_process_transition`` returned (``action``, ...);
- ``valid`` (T, N) bool: the row is a real transition. A row is invalid when nothing really happened there: a
  placeholder left by an env worker's restart, and later an agent that left its match. Its contents are unspecified
  and must never become a sample;
- ``terminated``, ``truncated``, ``done`` (T, N) bool, *settled*: ``done = terminated | truncated``; an invalid row
  is ``terminated=False, truncated=True`` (nothing flows across it), and the last valid row before an invalid one,
  if its episode did not terminate there, is ``truncated=True``: the episode ends at its last real step and
  bootstraps from that step's real ``next_obs``.

So a policy needs no rule about why a row is invalid: it drops rows where ``valid`` is False (or lets
:func:`valid_transitions` do it) and treats ``done`` rows as episode ends. Policies that carry steps over to the next
rollout (n-step windows, sequences) call :func:`settle` again on the stitched columns, since an invalid first row
also ends the episode whose steps they carried.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ding_lite.data.batch import Batch
from ding_lite.data.keys import DONE, TERMINATED, TRUNCATED, VALID


def cut_before_invalid(terminated: np.ndarray, truncated: np.ndarray,
                       valid: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``(terminated, truncated)`` of a time-major (T, N, ...) rollout with every episode cut before its invalid rows.

    An invalid row is no transition: it is truncated and never terminated, so no return flows across it, and the row
    before it, if of the same episode (not terminated), becomes that episode's truncated last step. Returns the
    inputs themselves when every row is valid, else new arrays.
    """
    if valid is None or valid.all():
        return terminated, truncated
    invalid = ~valid
    cut = truncated | invalid
    cut[:-1] |= invalid[1:] & ~terminated[:-1]
    return terminated & valid, cut


def settle(rollout: dict[str, Any]) -> dict[str, Any]:
    """Settle a raw rollout in place (and return it): a ``valid`` column (all True when the rollout has none), episode
    flags cut before invalid rows (:func:`cut_before_invalid`) and ``done``. Idempotent."""
    shape = rollout[TERMINATED].shape
    valid = rollout.get(VALID)
    if valid is None:
        valid = rollout[VALID] = np.ones(shape, dtype=bool)
    rollout[TERMINATED], rollout[TRUNCATED] = cut_before_invalid(rollout[TERMINATED], rollout[TRUNCATED], valid)
    rollout[DONE] = rollout[TERMINATED] | rollout[TRUNCATED]
    return rollout


def valid_transitions(rollout: Mapping[str, np.ndarray], keys: Iterable[str]) -> Batch:
    """The columns ``keys`` of a (T, N, ...) rollout flattened to (M, ...), M the number of valid rows (all rows of a
    rollout without a ``valid`` column), in time-major order."""
    keys = tuple(keys)
    valid = rollout.get(VALID)
    if valid is None or valid.all():
        return {k: rollout[k].reshape((-1,) + rollout[k].shape[2:]) for k in keys}
    return {k: rollout[k][valid] for k in keys}


def episode_ends(terminated: np.ndarray, truncated: np.ndarray, ignore_done: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(terminated, truncated)`` as return targets see them. With ``ignore_done`` a termination counts as a
    truncation: the target bootstraps through it, but the episode still ends there, so no return or advantage flows
    across into the next episode."""
    if ignore_done:
        return np.zeros_like(terminated), truncated | terminated
    return terminated, truncated

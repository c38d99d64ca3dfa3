"""Cutting time-major rollouts into fixed-length, masked sequences of single episodes (for ACER-style replay)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ding_lite.data.batch import Batch
from ding_lite.data.keys import DONE, MASK, NEXT_OBS, OBS, OBS_PLUS_1, TERMINATED, TRUNCATED, VALID


class SequenceCutter:
    """Cuts the step stream of each env, over consecutive (T, N) rollouts of the same envs, into sequences.

    A sequence holds the steps of one env within one episode. It closes when it has ``unroll_len`` steps or when its
    episode ends (terminated or truncated); a shorter sequence is padded with zeros and ``mask`` marks its real
    steps. Steps of a sequence still open at the end of a rollout wait in a per-env tail and are completed by the
    next rollout, so no sequence is cut short by the collector's rollout length and no sequence mixes episodes.
    Invalid rows (``valid`` False, see :mod:`ding_lite.data.rollout`) are skipped, and the open sequence of their env
    ends there as truncated (it may have started in an earlier rollout).

    Output (K closed sequences): every key of ``keys`` as (K, L, ...); ``obs_plus_1`` (K, L + 1, ...): the
    observations of the real steps followed by the next observation of the last real step (the state to bootstrap
    from), zeros after; ``mask`` (K, L) bool.

    Args:
        unroll_len: L, the sequence length.
        keys: the per-step columns to keep besides the observations (e.g. action, reward, terminated).

    Example::

        cut = SequenceCutter(32, ('action', 'reward', 'terminated'))
        samples = cut(rollout)   # rollout: obs/next_obs (T, N, obs_dim), action/reward/terminated/truncated (T, N)
    """

    def __init__(self, unroll_len: int, keys: Iterable[str]) -> None:
        if isinstance(unroll_len, bool) or not isinstance(unroll_len, (int, np.integer)) or unroll_len < 1:
            raise ValueError(f"unroll_len must be an integer >= 1, got {unroll_len=}")
        self.unroll_len = int(unroll_len)
        self.keys = tuple(keys)
        self._open: dict[str, np.ndarray] = {}  # (L, N, ...) steps of each env's open sequence; obs: (L + 1, N, ...)
        self._length = np.zeros(0, dtype=np.int64)  # (N,) steps in each env's open sequence

    def reset(self, env_ids: Any = None) -> None:
        """Drop the open sequences of ``env_ids`` (None: all), e.g. after the envs were reset."""
        if env_ids is None:
            self._length[:] = 0
        else:
            self._length[np.asarray(env_ids, dtype=np.int64)] = 0

    def __call__(self, rollout: Mapping[str, np.ndarray]) -> Batch:
        """The sequences closed by this rollout's steps (possibly none: then every array has a leading 0)."""
        steps, n_env = rollout[TERMINATED].shape
        self._allocate(rollout, n_env)
        done = rollout[DONE] if DONE in rollout else np.logical_or(rollout[TERMINATED], rollout[TRUNCATED])
        valid = rollout.get(VALID)
        envs = np.arange(n_env)
        length = self._length
        closed: list[Batch] = []
        for t in range(steps):  # vectorised over envs; one write per column and step
            live = envs
            if valid is not None and not valid[t].all():
                # an invalid row is no step: the open sequence ends (truncated, bootstrapping from its last real next
                # observation) and the row is skipped
                cut = np.flatnonzero(~valid[t] & (length > 0))
                if len(cut):
                    closed.append(self._close(cut))
                    length[cut] = 0
                live = np.flatnonzero(valid[t])
            rows = length[live]
            for k in self.keys:
                self._open[k][rows, live] = rollout[k][t, live]
            self._open[OBS_PLUS_1][rows, live] = rollout[OBS][t, live]
            # the next observation lands in the following row; the next step overwrites it with the same obs,
            # unless this step closes the sequence, where it stays as the bootstrap state
            self._open[OBS_PLUS_1][rows + 1, live] = rollout[NEXT_OBS][t, live]
            length[live] += 1
            close = live[done[t, live] | (length[live] == self.unroll_len)]
            if len(close):
                closed.append(self._close(close))
                length[close] = 0
        if not closed:
            return {k: np.empty((0,) + v.shape[:1] + v.shape[2:], v.dtype) for k, v in self._open.items()} | {
                MASK: np.empty((0, self.unroll_len), dtype=bool)}
        return {k: np.concatenate([c[k] for c in closed]) for k in closed[0]}

    def _allocate(self, rollout: Mapping[str, np.ndarray], n_env: int) -> None:
        if self._open and len(self._length) == n_env:
            return
        if self._length.any():
            raise ValueError(f"rollout has {n_env} envs but open sequences of {len(self._length)} envs are pending; "
                             "call reset() when the number of envs changes")
        rows = self.unroll_len
        self._open = {k: np.zeros((rows, n_env) + rollout[k].shape[2:], rollout[k].dtype) for k in self.keys}
        self._open[OBS_PLUS_1] = np.zeros((rows + 1, n_env) + rollout[OBS].shape[2:], rollout[OBS].dtype)
        self._length = np.zeros(n_env, dtype=np.int64)

    def _close(self, env_ids: np.ndarray) -> Batch:
        """Copy out the open sequences of ``env_ids`` batch-major, zeroing the rows past each one's real steps."""
        length = self._length[env_ids]  # (K,)
        mask = np.arange(self.unroll_len)[None, :] < length[:, None]  # (K, L)
        out: Batch = {}
        for k, column in self._open.items():
            seq = np.swapaxes(column[:, env_ids], 0, 1)  # the fancy index copied; (K, L(+1), ...)
            real = mask if k != OBS_PLUS_1 else np.arange(self.unroll_len + 1)[None, :] <= length[:, None]
            seq[~real] = 0
            out[k] = seq
        out[MASK] = mask
        return out

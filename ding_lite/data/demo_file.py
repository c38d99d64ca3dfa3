"""Demo files: a :class:`~ding_lite.data.demo.DemoDataset` on disk, written by ``ding_lite -m collect_demo`` (and
``-m gsl``) and read back, checked, by PPO-DAPG and GSL.

File format: one ``.npz`` (a zip of ``.npy`` arrays, read with ``allow_pickle=False``, so a file cannot run code):

- ``obs`` (M, *obs_shape): observations, in the env's dtype;
- ``action`` (M,) int64 for a discrete action space, (M, *action_shape) float32 for a box (the executed, clipped
  action);
- ``reward`` (M,) float32; ``episode_id`` (M,) int64, episode k's steps are contiguous and in time order;
- ``terminated``, ``truncated`` (M,) bool: how each episode ended, as gymnasium's step flags: both False but at an
  episode's last step, where exactly one is True. ``terminated``: a terminal state (its value is 0: no bootstrap);
  ``truncated``: cut without one, by the env's time limit or by ``policy.eval.evaluator.max_episode_steps`` (bootstrap
  from ``final_obs``). An episode that terminated on the step a time limit also fell on is terminated;
- ``final_obs`` (K, *obs_shape): each episode's observation after its last step (what a truncated one bootstraps
  from; of a masked env, its observation part);
- ``action_mask`` (M, n_actions), only where the env's observations carry an action mask (``Dict(observation,
  action_mask)``): the legal actions of each step, in the env's dtype (``obs`` holds the observation part);
- ``final_action_mask`` (K, n_actions), beside ``action_mask`` and ``final_obs``: the legal actions after each
  episode's last step (its final observation's mask: ``DemoDataset.next_action_mask``);
- ``episode_return`` (K,) float64 and ``episode_length`` (K,) int64, one per kept episode;
- ``metadata``: a 0-d unicode array holding JSON (format, version, env, policy, checkpoint, counts, success rule).

Which episodes are kept: :func:`~ding_lite.data.demo.success_rule`.

Older files (written before the episode-end flags) lack ``terminated``, ``truncated`` and ``final_obs``; they read as
they were taken before: every episode terminated at its last step, ``final_obs`` None. Those cut by a time limit
cannot be told apart in them: collect the demos again where that matters. A masked env's files written before the
final action masks have ``final_obs`` but no ``final_action_mask``: they read with ``final_action_mask`` None.

Writes are atomic (temp file in the target folder, fsync, rename): a killed run never leaves a truncated demo file;
``-m collect_demo`` never replaces an earlier file (it writes ``<stem>_1.npz``, ...; ``write_demo(overwrite=False)``).
"""
from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ding_lite.data.batch import non_finite_kind, non_finite_rows
from ding_lite.data.demo import (
    ARRAY_KEYS,
    DEMO_FORMAT,
    DEMO_VERSION,
    FINAL_ACTION_MASK,
    FINAL_OBS,
    PER_EPISODE_KEYS,
    DemoDataset,
    last_steps,
)
from ding_lite.data.keys import ACTION_MASK, EPISODE_ID, TERMINATED, TRUNCATED
from ding_lite.errors import ConfigError, first_line
from ding_lite.utils.atomic import atomic_write


def write_demo(path: str | os.PathLike, dataset: DemoDataset, *, overwrite: bool = True) -> Path:
    """Write ``dataset`` to ``path`` (.npz) atomically; returns the path written. ``overwrite=False``: an existing
    file is kept and the dataset goes to the first free ``<stem>_<k>.npz`` (:func:`~ding_lite.utils.atomic.free_path`).
    A dataset holding NaN or inf is refused (:func:`check_finite`) and nothing is written."""
    check_finite(dataset)
    # allow_pickle=False: an object array (anything but plain numbers and strings) fails here, not on read
    return atomic_write(path, lambda f: np.savez_compressed(
        f, allow_pickle=False, metadata=np.array(json.dumps(dataset.metadata)), **dataset.arrays()),
        overwrite=overwrite)


def read_demo(path: str | os.PathLike) -> DemoDataset:
    """Read and check a demo file; a missing, corrupt or inconsistent file raises a :class:`ConfigError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"demo file not found: {path} (make one with: ding_lite -m collect_demo -c CONFIG "
                          f"--load-ckpt CKPT --demo-path {path})")
    try:
        # our own file handle: np.load(path) leaks its handle when the zip is unreadable
        with open(path, "rb") as fh:
            npz = np.load(fh, allow_pickle=False)
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise ValueError("a single .npy array, not an .npz archive")
            with npz:
                arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        reason = first_line(exc)
        if reason.startswith("This file contains pickled"):  # numpy's guess for a file neither .npz nor .npy, with
            reason = "not an .npz archive"  # advice to load it unsafely: not for a demo file (never a pickle)
        raise ConfigError(f"cannot read demo file {path}: {reason} (is it a complete file written by "
                          f"ding_lite -m collect_demo?)") from exc
    missing = [k for k in (*ARRAY_KEYS, "metadata") if k not in arrays]
    if missing:
        raise ConfigError(f"demo file {path} lacks {missing}: it was not written by ding_lite -m collect_demo")
    try:
        metadata = json.loads(str(arrays.pop("metadata")))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"demo file {path} has unreadable metadata: {exc}") from exc
    if not isinstance(metadata, dict) or metadata.get("format") != DEMO_FORMAT:
        raise ConfigError(f"demo file {path} is not a ding_lite demo file (metadata format "
                          f"{metadata.get('format') if isinstance(metadata, dict) else metadata!r})")
    if metadata.get("version") != DEMO_VERSION:
        raise ConfigError(f"demo file {path} has format version {metadata.get('version')!r}; this ding_lite reads "
                          f"version {DEMO_VERSION}: collect the demos again")
    if (TERMINATED in arrays) != (TRUNCATED in arrays):
        has, lacks = (TERMINATED, TRUNCATED) if TERMINATED in arrays else (TRUNCATED, TERMINATED)
        raise ConfigError(f"demo file {path} has {has} flags but no {lacks} flags: collect the demos again")
    if TERMINATED not in arrays:  # an older file: read as it was taken then, each episode terminated at its end
        arrays[TERMINATED] = last_steps(arrays[EPISODE_ID])
        arrays[TRUNCATED] = np.zeros(len(arrays[EPISODE_ID]), dtype=bool)
    dataset = DemoDataset(**{k: arrays[k] for k in (*ARRAY_KEYS, TERMINATED, TRUNCATED)},
                          final_obs=arrays.get(FINAL_OBS), action_mask=arrays.get(ACTION_MASK),
                          final_action_mask=arrays.get(FINAL_ACTION_MASK), metadata=metadata, path=path)
    _check_consistent(dataset)
    check_finite(dataset)
    return dataset


def check_finite(ds: DemoDataset) -> None:
    """A :class:`ConfigError` naming the first step (or episode) whose float values hold NaN or inf: PPO-DAPG's
    first demo minibatch holding one would make every actor weight NaN."""
    for key in (*ARRAY_KEYS, FINAL_OBS):
        values = getattr(ds, key)
        bad = None if values is None else non_finite_rows(values)
        if bad is None:
            continue
        k = int(np.flatnonzero(bad)[0])
        kind = non_finite_kind(values[k])
        at = f"of episode {k}" if key in PER_EPISODE_KEYS else \
            f"at step {k} (episode {int(ds.episode_id[k])})"
        raise ConfigError(f"{ds.where()} holds {kind} in its {key} {at}: collect the demos again from an env that "
                          f"gives finite values (gymnasium.wrappers.TransformObservation / TransformReward)")


def _check_consistent(ds: DemoDataset) -> None:
    """Every array agrees with the others and with the metadata counts (catches truncated or edited files)."""
    m, k = len(ds.obs), len(ds.episode_return)
    problems = _shape_problems(ds)
    if not problems:
        problems = _episode_problems(ds)
    if ds.metadata.get("n_step") != m or ds.metadata.get("n_episode") != k:
        problems.append(f"{m} steps and {k} episodes where its metadata says {ds.metadata.get('n_step')} and "
                        f"{ds.metadata.get('n_episode')}")
    if problems:
        raise ConfigError(f"{ds.where()} is inconsistent: {'; '.join(problems)}. Collect the demos again")


def _shape_problems(ds: DemoDataset) -> list[str]:
    """Arrays whose lengths (or shapes) disagree: M steps, K episodes."""
    m, k = len(ds.obs), len(ds.episode_return)
    problems = []
    if m == 0 or k == 0:
        problems.append("no steps or no episodes")
    if ds.obs.ndim < 1 or ds.action.ndim < 1:
        problems.append("scalar obs or action arrays")
    if any(len(a) != m for a in (ds.action, ds.reward, ds.episode_id)):
        problems.append(f"step arrays of different lengths (obs {m}, action {len(ds.action)}, reward "
                        f"{len(ds.reward)}, episode_id {len(ds.episode_id)})")
    if any(flag.dtype != bool or flag.shape != (m,) for flag in (ds.terminated, ds.truncated)):
        problems.append(f"terminated / truncated flags of {ds.terminated.dtype}{ds.terminated.shape} / "
                        f"{ds.truncated.dtype}{ds.truncated.shape} for {m} steps (bool (M,) each)")
    if ds.action_mask is not None and (ds.action_mask.ndim != 2 or len(ds.action_mask) != m):
        problems.append(f"action masks of shape {ds.action_mask.shape} for {m} steps")
    if len(ds.episode_length) != k:
        problems.append(f"{k} episode returns but {len(ds.episode_length)} episode lengths")
    if ds.final_obs is not None and tuple(ds.final_obs.shape) != (k, *ds.obs.shape[1:]):
        problems.append(f"final observations of shape {tuple(ds.final_obs.shape)} for {k} episodes of observations "
                        f"{tuple(ds.obs.shape[1:])}")
    final_mask, mask_shape = ds.final_action_mask, _mask_shape(ds)
    if final_mask is not None and (mask_shape is None or ds.final_obs is None
                                   or tuple(final_mask.shape) != (k, *mask_shape)):
        problems.append(f"final action masks of shape {tuple(final_mask.shape)} for {k} episodes of action masks "
                        f"{mask_shape}" + ("" if ds.final_obs is not None else " without final observations"))
    return problems


def _episode_problems(ds: DemoDataset) -> list[str]:
    """Episodes that do not add up: ids, lengths and end flags (arrays of the right lengths)."""
    ids, k = ds.episode_id, len(ds.episode_return)
    if not np.issubdtype(ids.dtype, np.integer) or ids.min() < 0 or ids.max() >= k or np.any(np.diff(ids) < 0):
        return [f"episode ids not sorted in [0, {k})"]
    if not np.array_equal(np.bincount(ids, minlength=k), ds.episode_length):
        return ["episode lengths that do not match the episode ids"]
    if (ds.terminated & ds.truncated).any() or not np.array_equal(ds.terminated | ds.truncated, last_steps(ids)):
        return ["terminated / truncated flags that are not exactly one True at each episode's last step"]
    return []


def read_demos(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> DemoDataset:
    """Read one demo file or several and concatenate them (episode ids renumbered; metadata lists the sources)."""
    if isinstance(paths, (str, os.PathLike)):
        return read_demo(paths)
    datasets = [read_demo(p) for p in paths]
    if not datasets:
        raise ConfigError("no demo file given (an empty list)")
    if len(datasets) == 1:
        return datasets[0]
    first = datasets[0]
    for ds in datasets[1:]:
        if ds.obs.shape[1:] != first.obs.shape[1:] or ds.action.shape[1:] != first.action.shape[1:] or \
                ds.action.dtype.kind != first.action.dtype.kind or _mask_shape(ds) != _mask_shape(first):
            raise ConfigError(f"demo files {first.path} and {ds.path} do not match: observations "
                              f"{first.obs.shape[1:]} vs {ds.obs.shape[1:]}, actions {first.action.dtype}"
                              f"{first.action.shape[1:]} vs {ds.action.dtype}{ds.action.shape[1:]}, action masks "
                              f"{_mask_shape(first)} vs {_mask_shape(ds)}")
    offsets = np.cumsum([0] + [ds.n_episode for ds in datasets[:-1]])
    return DemoDataset(
        obs=np.concatenate([ds.obs for ds in datasets]),
        action=np.concatenate([ds.action for ds in datasets]),
        reward=np.concatenate([ds.reward for ds in datasets]),
        episode_id=np.concatenate([ds.episode_id + off for ds, off in zip(datasets, offsets, strict=True)]),
        episode_return=np.concatenate([ds.episode_return for ds in datasets]),
        episode_length=np.concatenate([ds.episode_length for ds in datasets]),
        terminated=np.concatenate([ds.terminated for ds in datasets]),
        truncated=np.concatenate([ds.truncated for ds in datasets]),
        # one older file among them: no final observations
        final_obs=None if any(ds.final_obs is None for ds in datasets) else np.concatenate(
            [ds.final_obs for ds in datasets if ds.final_obs is not None]),
        action_mask=None if first.action_mask is None else np.concatenate([ds.action_mask for ds in datasets]),
        final_action_mask=None if any(ds.final_action_mask is None for ds in datasets) else np.concatenate(
            [ds.final_action_mask for ds in datasets if ds.final_action_mask is not None]),
        metadata={"format": DEMO_FORMAT, "version": DEMO_VERSION, "sources": [ds.metadata for ds in datasets],
                  "n_episode": int(sum(ds.n_episode for ds in datasets)),
                  "n_step": int(sum(len(ds) for ds in datasets))},
        path=None,
    )


def _mask_shape(ds: DemoDataset) -> tuple[int, ...] | None:
    """The shape of one step's action mask (None: the dataset has none)."""
    return None if ds.action_mask is None else tuple(ds.action_mask.shape[1:])

"""Demo datasets: successful episodes of a trained policy, written by ``ding_lite -m collect_demo`` and read back as
batches (PPO-DAPG, GSL).

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
- ``episode_return`` (K,) float64 and ``episode_length`` (K,) int64, one per kept episode;
- ``metadata``: a 0-d unicode array holding JSON (format, version, env, policy, checkpoint, counts, success rule).

Which episodes are kept: :func:`success_rule`.

Older files (written before the episode-end flags) lack ``terminated``, ``truncated`` and ``final_obs``; they read as
they were taken before: every episode terminated at its last step, ``final_obs`` None. Those cut by a time limit
cannot be told apart in them: collect the demos again where that matters.

Writes are atomic (temp file in the target folder, fsync, rename): a killed run never leaves a truncated demo file;
``-m collect_demo`` never replaces an earlier file (it writes ``<stem>_1.npz``, ...; ``write_demo(overwrite=False)``).
"""
from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch

from ding_lite.data.keys import ACTION, ACTION_MASK, EPISODE_ID, OBS, REWARD, TERMINATED, TRUNCATED
from ding_lite.errors import ConfigError, first_line
from ding_lite.registry import CONFIG_SECTION_REGISTRY
from ding_lite.utils.atomic import atomic_write

if TYPE_CHECKING:
    from ding_lite.envs.env_manager import EpisodeEnd

DEMO_FORMAT = "ding_lite.demo"
DEMO_VERSION = 1
ARRAY_KEYS = (OBS, ACTION, REWARD, EPISODE_ID, "episode_return", "episode_length")  # in every demo file
FINAL_OBS = "final_obs"  # (K, *obs_shape) each episode's observation after its last step
PER_EPISODE_KEYS = ("episode_return", "episode_length", FINAL_OBS)  # (K, ...) arrays; the others are (M, ...)

# The ``demo`` config section: settings of ``ding_lite -m collect_demo`` (registered: merged into every compiled
# config).
DEMO_SECTION_DEFAULTS: dict[str, Any] = dict(
    policy_mode="eval",  # act with the policy's 'eval' mode (greedy / mean action) or its 'collect' mode (sampling)
    n_episode=20,  # episodes rolled out, spread evenly over the collector envs; only successful ones are kept
    return_threshold=None,  # an episode succeeds if its return ≥ this (None: env.stop_value)
    success_key="success",  # final-step info key that, when the env reports it, decides success instead ('': off)
    demo_path=None,  # output file (None: <exp_name>/demo.npz); an existing one is kept: <stem>_1.npz, ... instead
)
CONFIG_SECTION_REGISTRY.register("demo")(DEMO_SECTION_DEFAULTS)


@dataclass
class DemoDataset:
    """Steps of K successful episodes, columnar over M steps (see the module docstring for the arrays)."""

    obs: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    episode_id: np.ndarray
    episode_return: np.ndarray
    episode_length: np.ndarray
    terminated: np.ndarray  # (M,) bool: True at the last step of an episode that reached a terminal state
    truncated: np.ndarray  # (M,) bool: True at the last step of an episode cut without one (time limit, step cap)
    final_obs: np.ndarray | None = None  # (K, *obs_shape) observation after each episode's last step (None: an
    # older file)
    action_mask: np.ndarray | None = None  # (M, n_actions) legal actions of each step (None: the env has no mask)
    metadata: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None  # the file it was read from (None: built in memory)

    def __len__(self) -> int:
        return len(self.obs)

    @property
    def n_episode(self) -> int:
        return len(self.episode_return)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array by its file key."""
        episodes = {"episode_return": self.episode_return, "episode_length": self.episode_length}
        return {**self.batch(), **episodes, **({} if self.final_obs is None else {FINAL_OBS: self.final_obs})}

    def batch(self) -> dict[str, np.ndarray]:
        """The step columns as one batch: ``obs``, ``action``, ``reward``, ``terminated``, ``truncated``,
        ``episode_id`` (and ``action_mask``)."""
        columns = {OBS: self.obs, ACTION: self.action, REWARD: self.reward, TERMINATED: self.terminated,
                   TRUNCATED: self.truncated, EPISODE_ID: self.episode_id}
        return columns if self.action_mask is None else {**columns, ACTION_MASK: self.action_mask}

    def next_obs(self) -> np.ndarray:
        """(M, *obs_shape) the observation after each step: the next step's, and ``final_obs`` at an episode's last
        step. With ``terminated`` and ``truncated`` that is what a TD target needs: ``r + γ·(1 − terminated)·V(next)``
        bootstraps a truncated episode's last step from its final observation. A :class:`ConfigError` for an older
        file, which has no final observations."""
        if self.final_obs is None:
            raise ConfigError(f"{self._where()} has no final observations (it was written before ding_lite recorded "
                              f"them): collect the demos again with ding_lite -m collect_demo")
        out = np.empty_like(self.obs)
        out[:-1] = self.obs[1:]
        out[last_steps(self.episode_id)] = self.final_obs
        return out

    def iter_batches(self, batch_size: int, seed: int = 0) -> Iterator[dict[str, np.ndarray]]:
        """Endless shuffled batches of ``batch_size`` steps (see :class:`DemoSampler`)."""
        sampler = DemoSampler(len(self), batch_size, seed)
        columns = self.batch()
        for idx in sampler:
            rows = idx.numpy()
            yield {k: v[rows] for k, v in columns.items()}

    def check_fits(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Raise a :class:`ConfigError` naming the file if the observations or actions do not fit the env's spaces."""
        where = self._where()
        obs_shape = tuple(observation_space.shape or ())
        if tuple(self.obs.shape[1:]) != obs_shape:
            raise ConfigError(f"{where} has observations of shape {tuple(self.obs.shape[1:])}, but the env's are "
                              f"{obs_shape}: collect demos in this env (ding_lite -m collect_demo with its config)")
        if isinstance(action_space, gym.spaces.Discrete):
            n = int(action_space.n)
            if not np.issubdtype(self.action.dtype, np.integer) or self.action.ndim != 1:
                raise ConfigError(f"{where} has {self.action.dtype} actions of shape {self.action.shape[1:]}, but the "
                                  f"env's action space is discrete ({n} actions): collect demos in this env")
            if len(self.action) and (self.action.min() < 0 or self.action.max() >= n):
                raise ConfigError(f"{where} has actions in [{self.action.min()}, {self.action.max()}], outside the "
                                  f"env's {n} discrete actions [0, {n - 1}]: collect demos in this env")
        elif isinstance(action_space, gym.spaces.Box):
            shape = tuple(action_space.shape)
            if not np.issubdtype(self.action.dtype, np.floating) or tuple(self.action.shape[1:]) != shape:
                raise ConfigError(f"{where} has {self.action.dtype} actions of shape {tuple(self.action.shape[1:])}, "
                                  f"but the env's action space is a box of shape {shape}: collect demos in this env")
        else:
            raise ConfigError(f"{where}: demos support Discrete and Box action spaces, not {action_space}")

    def _where(self) -> str:
        return f"demo file {self.path}" if self.path is not None else "demo dataset"


def model_spaces(model_cfg: Mapping[str, Any]) -> tuple[gym.Space, gym.Space]:
    """Observation and action spaces implied by a model section (``obs_shape``, ``action_shape``, ``action_space``);
    bounds are unknown there, so the box spaces are unbounded (only shapes and dtypes are compared)."""
    def shape(value: Any) -> tuple[int, ...]:
        return (int(value),) if isinstance(value, int) else tuple(int(v) for v in value)

    obs_space = gym.spaces.Box(-np.inf, np.inf, shape(model_cfg["obs_shape"]), dtype=np.float32)
    if model_cfg.get("action_space", "discrete") == "continuous":
        return obs_space, gym.spaces.Box(-np.inf, np.inf, shape(model_cfg["action_shape"]), dtype=np.float32)
    return obs_space, gym.spaces.Discrete(int(np.prod(shape(model_cfg["action_shape"]))))


def episodes_to_dataset(episodes: Sequence[Mapping[str, np.ndarray]], returns: Sequence[float],
                        metadata: Mapping[str, Any], final_obs: Sequence[Any] | None = None) -> DemoDataset:
    """Concatenate per-episode ``obs`` / ``action`` / ``reward`` / ``terminated`` / ``truncated`` (and
    ``action_mask``) arrays (each (T_k, ...), as :meth:`~ding_lite.worker.episodes.Episodes.steps` gives them) into
    a dataset; ``final_obs``: each episode's observation after its last step (None: not known). An episode without
    the flags ends terminated at its last step."""
    if not episodes:
        raise ValueError("a demo dataset needs at least one episode")
    masked = [ACTION_MASK in e for e in episodes]
    if any(masked) and not all(masked):
        raise ValueError("either every episode of a demo dataset has action masks or none has")
    if final_obs is not None and (len(final_obs) != len(episodes) or any(f is None for f in final_obs)):
        raise ValueError(f"{len(episodes)} episodes need as many final observations, got {list(final_obs)!r:.80}")
    lengths = np.array([len(e[OBS]) for e in episodes], dtype=np.int64)
    action = np.concatenate([e[ACTION] for e in episodes])
    action = action.astype(np.int64) if np.issubdtype(action.dtype, np.integer) else action.astype(np.float32)
    return DemoDataset(
        obs=np.concatenate([e[OBS] for e in episodes]),
        action=action,
        reward=np.concatenate([e[REWARD] for e in episodes]).astype(np.float32),
        episode_id=np.repeat(np.arange(len(episodes), dtype=np.int64), lengths),
        episode_return=np.asarray(returns, dtype=np.float64),
        episode_length=lengths,
        terminated=np.concatenate([e.get(TERMINATED, np.arange(len(e[OBS])) == len(e[OBS]) - 1)
                                   for e in episodes]).astype(bool),
        truncated=np.concatenate([e.get(TRUNCATED, np.zeros(len(e[OBS]), dtype=bool)) for e in episodes]).astype(bool),
        final_obs=None if final_obs is None else np.stack([np.asarray(f) for f in final_obs]),
        action_mask=np.concatenate([e[ACTION_MASK] for e in episodes]) if all(masked) else None,
        metadata={**metadata, "format": DEMO_FORMAT, "version": DEMO_VERSION, "n_episode": len(episodes),
                  "n_step": int(lengths.sum())},
    )


# ---- file io ---------------------------------------------------------------------------------------------------
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
        raise ConfigError(f"cannot read demo file {path}: {first_line(exc)} (is it a complete file written by "
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
                          final_obs=arrays.get(FINAL_OBS), action_mask=arrays.get(ACTION_MASK), metadata=metadata,
                          path=path)
    _check_consistent(dataset)
    check_finite(dataset)
    return dataset


def last_steps(episode_id: np.ndarray) -> np.ndarray:
    """(M,) bool: True at each episode's last step, for (M,) episode ids whose episodes are contiguous."""
    ids = np.asarray(episode_id)
    return np.append(ids[1:] != ids[:-1], True) if len(ids) else np.zeros(0, dtype=bool)


def check_finite(ds: DemoDataset) -> None:
    """A :class:`ConfigError` naming the first step (or episode) whose float values hold NaN or inf: PPO-DAPG's
    first demo minibatch holding one would make every actor weight NaN."""
    for key in (*ARRAY_KEYS, FINAL_OBS):
        values = getattr(ds, key)
        if values is None or values.dtype.kind != "f" or np.isfinite(values).all():
            continue
        k = int(np.flatnonzero(~np.isfinite(values.reshape(len(values), -1)).all(axis=1))[0])
        kind = "NaN" if np.isnan(values[k]).any() else "inf"
        at = f"of episode {k}" if key in PER_EPISODE_KEYS else \
            f"at step {k} (episode {int(ds.episode_id[k])})"
        raise ConfigError(f"{ds._where()} holds {kind} in its {key} {at}: collect the demos again from an env that "
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
        raise ConfigError(f"{ds._where()} is inconsistent: {'; '.join(problems)}. Collect the demos again")


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
        metadata={"format": DEMO_FORMAT, "version": DEMO_VERSION, "sources": [ds.metadata for ds in datasets],
                  "n_episode": int(sum(ds.n_episode for ds in datasets)),
                  "n_step": int(sum(len(ds) for ds in datasets))},
        path=None,
    )


def _mask_shape(ds: DemoDataset) -> tuple[int, ...] | None:
    """The shape of one step's action mask (None: the dataset has none)."""
    return None if ds.action_mask is None else tuple(ds.action_mask.shape[1:])


# ---- batches ---------------------------------------------------------------------------------------------------
class DemoSampler:
    """Endless iterator of index batches over ``n`` rows: each pass visits every row once in a fresh random order,
    and a batch that crosses the end of a pass is completed from the next pass (so with ``n < batch_size`` a batch
    repeats rows). Its own torch generator keeps it reproducible and checkpointable (``state_dict``).

    Example::

        sampler = DemoSampler(len(dataset), 64, seed=0)
        idx = next(sampler)  # (64,) int64 tensor of row indices
    """

    def __init__(self, n: int, batch_size: int, seed: int = 0) -> None:
        if n < 1:
            raise ValueError(f"DemoSampler needs at least one row, got {n=}")
        if batch_size < 1:
            raise ConfigError(f"demo batch size must be at least 1, got {batch_size}")
        self.n = int(n)
        self.batch_size = int(batch_size)
        self._generator = torch.Generator().manual_seed(int(seed))
        self._perm = torch.randperm(self.n, generator=self._generator)
        self._pos = 0

    def __iter__(self) -> DemoSampler:
        return self

    def __next__(self) -> torch.Tensor:
        parts, need = [], self.batch_size
        while need > 0:
            if self._pos == self.n:  # a pass is done: reshuffle for the next one
                self._perm = torch.randperm(self.n, generator=self._generator)
                self._pos = 0
            take = min(need, self.n - self._pos)
            parts.append(self._perm[self._pos:self._pos + take])
            self._pos += take
            need -= take
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def state_dict(self) -> dict[str, Any]:
        return {"n": self.n, "generator": self._generator.get_state(), "perm": self._perm.clone(), "pos": self._pos}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if int(state["n"]) != self.n:
            raise ValueError(f"demo sampler state is for {state['n']} rows, this dataset has {self.n}")
        self._generator.set_state(state["generator"])
        self._perm = state["perm"].clone()
        self._pos = int(state["pos"])


def success_rule(return_threshold: float | None, stop_value: float | None,
                 success_key: str | None) -> tuple[Callable[[EpisodeEnd], bool], str]:
    """The success test of an episode and its description: ``info[success_key]`` where the env reports it, else
    return ≥ threshold (``return_threshold``, or ``stop_value`` when that is None)."""
    threshold = return_threshold if return_threshold is not None else stop_value
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))):
        raise ConfigError(f"demo.return_threshold must be a number, got {threshold!r}")
    if success_key is not None and not isinstance(success_key, str):
        raise ConfigError(f"demo.success_key must be a string ('' to ignore the env's info), got {success_key!r}")
    if threshold is None and not success_key:
        raise ConfigError("no success rule for demos: set demo.return_threshold (or env.stop_value), or "
                          "demo.success_key to an info key the env reports")

    def is_success(end: EpisodeEnd) -> bool:
        if success_key and isinstance(end.info, Mapping) and success_key in end.info:
            return bool(end.info[success_key])
        return threshold is not None and end.episode_return >= threshold

    parts = ([f"info['{success_key}']"] if success_key else []) + \
        ([f"return >= {threshold}"] if threshold is not None else [])
    return is_success, " else ".join(parts)

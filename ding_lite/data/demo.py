"""Demo datasets: successful episodes of a trained policy (``ding_lite -m collect_demo``, GSL's demos) in memory,
as columns over their steps (:class:`DemoDataset`), built from recorded episodes (:func:`episodes_to_dataset`) and
drawn in shuffled batches (:class:`DemoSampler`: PPO-DAPG's demo minibatches). Which episodes are kept:
:func:`success_rule`, by the ``demo`` config section's settings.

The arrays, their file format and reading and writing files: :mod:`ding_lite.data.demo_file`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import torch

from ding_lite.data.keys import ACTION, ACTION_MASK, EPISODE_ID, OBS, REWARD, TERMINATED, TRUNCATED
from ding_lite.errors import ConfigError
from ding_lite.registry import CONFIG_SECTION_REGISTRY

if TYPE_CHECKING:
    from ding_lite.envs.env_manager import EpisodeEnd

DEMO_FORMAT = "ding_lite.demo"
DEMO_VERSION = 1
ARRAY_KEYS = (OBS, ACTION, REWARD, EPISODE_ID, "episode_return", "episode_length")  # in every demo file
FINAL_OBS = "final_obs"  # (K, *obs_shape) each episode's observation after its last step
FINAL_ACTION_MASK = "final_action_mask"  # (K, n_actions) of a masked env: the legal actions after its last step
PER_EPISODE_KEYS = ("episode_return", "episode_length", FINAL_OBS, FINAL_ACTION_MASK)  # (K, ...); others (M, ...)

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
    """Steps of K successful episodes, columnar over M steps (the arrays: :mod:`ding_lite.data.demo_file`)."""

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
    final_action_mask: np.ndarray | None = None  # (K, n_actions) legal actions after each episode's last step, beside
    # final_obs (None: no masks, or a file written before they were kept)
    metadata: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None  # the file it was read from (None: built in memory)

    def __len__(self) -> int:
        return len(self.obs)

    @property
    def n_episode(self) -> int:
        return len(self.episode_return)

    def arrays(self) -> dict[str, np.ndarray]:
        """Every array by its file key."""
        episodes = {"episode_return": self.episode_return, "episode_length": self.episode_length,
                    FINAL_OBS: self.final_obs, FINAL_ACTION_MASK: self.final_action_mask}
        return {**self.batch(), **{k: v for k, v in episodes.items() if v is not None}}

    def batch(self) -> dict[str, np.ndarray]:
        """The step columns as one batch: ``obs``, ``action``, ``reward``, ``terminated``, ``truncated``,
        ``episode_id`` (and ``action_mask``)."""
        columns = {OBS: self.obs, ACTION: self.action, REWARD: self.reward, TERMINATED: self.terminated,
                   TRUNCATED: self.truncated, EPISODE_ID: self.episode_id}
        return columns if self.action_mask is None else {**columns, ACTION_MASK: self.action_mask}

    def next_obs(self) -> np.ndarray:
        """(M, *obs_shape) the observation after each step: the next step's, and ``final_obs`` at an episode's last
        step. With ``terminated`` and ``truncated`` that is what a TD target needs: ``r + γ·(1 − terminated)·V(next)``
        bootstraps a truncated episode's last step from its final observation (of a masked env, its observation
        part: :meth:`next_action_mask` gives the legal actions there). A :class:`ConfigError` for an older file,
        which has no final observations."""
        if self.final_obs is None:
            raise ConfigError(f"{self.where()} has no final observations (it was written before ding_lite recorded "
                              f"them): collect the demos again with ding_lite -m collect_demo")
        return _next_rows(self.obs, self.final_obs, self.episode_id)

    def next_action_mask(self) -> np.ndarray:
        """(M, n_actions) of a masked env: the legal actions after each step, beside :meth:`next_obs` (what a TD
        target's max over the next actions ranges over): the next step's mask, and ``final_action_mask`` at an
        episode's last step. A :class:`ConfigError` for a dataset without masks, or a file written before ding_lite
        kept the final masks."""
        if self.action_mask is None:
            raise ConfigError(f"{self.where()} has no action masks (its env's observations carry none)")
        if self.final_action_mask is None:
            raise ConfigError(f"{self.where()} has no final action masks (it was written before ding_lite recorded "
                              f"them): collect the demos again with ding_lite -m collect_demo")
        return _next_rows(self.action_mask, self.final_action_mask, self.episode_id)

    def iter_batches(self, batch_size: int, seed: int = 0) -> Iterator[dict[str, np.ndarray]]:
        """Endless shuffled batches of ``batch_size`` steps (see :class:`DemoSampler`)."""
        sampler = DemoSampler(len(self), batch_size, seed)
        columns = self.batch()
        for idx in sampler:
            rows = idx.numpy()
            yield {k: v[rows] for k, v in columns.items()}

    def check_fits(self, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Raise a :class:`ConfigError` naming the file if the observations or actions do not fit the env's spaces."""
        where = self.where()
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

    def where(self) -> str:
        """How errors name the dataset: its file, else ``demo dataset``."""
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
                        metadata: Mapping[str, Any], final_obs: Sequence[Any] | None = None,
                        final_action_mask: Sequence[Any] | None = None) -> DemoDataset:
    """Concatenate per-episode ``obs`` / ``action`` / ``reward`` / ``terminated`` / ``truncated`` (and
    ``action_mask``) arrays (each (T_k, ...), as :meth:`~ding_lite.worker.episodes.Episodes.steps` gives them) into
    a dataset; ``final_obs``: each episode's observation after its last step (None: not known). An episode without
    the flags ends terminated at its last step. ``final_action_mask``: the (A,) legal actions after each episode's
    last step (:class:`~ding_lite.worker.episodes.Episode`'s), needed by masked episodes with final observations,
    None (or Nones) for others."""
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
        final_action_mask=_final_masks(len(episodes), all(masked) and final_obs is not None, final_action_mask),
        metadata={**metadata, "format": DEMO_FORMAT, "version": DEMO_VERSION, "n_episode": len(episodes),
                  "n_step": int(lengths.sum())},
    )


def _final_masks(n_episode: int, needed: bool, masks: Sequence[Any] | None) -> np.ndarray | None:
    """The (K, A) final action masks: ``needed`` for masked episodes with final observations, else none given."""
    given = [] if masks is None else [m for m in masks if m is not None]
    if not needed:
        if given:
            raise ValueError("final action masks need episodes with action masks and final observations")
        return None
    if len(given) != n_episode or len(given) != len(masks or ()):
        raise ValueError(f"{n_episode} masked episodes with final observations need as many final action masks, got "
                         f"{masks!r:.80}")
    return np.stack([np.asarray(m) for m in given])


def _next_rows(steps: np.ndarray, finals: np.ndarray, episode_id: np.ndarray) -> np.ndarray:
    """(M, ...) each step's successor: the next step's row, and its episode's final row at its last step."""
    out = np.empty_like(steps)
    out[:-1] = steps[1:]
    out[last_steps(episode_id)] = finals
    return out


def last_steps(episode_id: np.ndarray) -> np.ndarray:
    """(M,) bool: True at each episode's last step, for (M,) episode ids whose episodes are contiguous."""
    ids = np.asarray(episode_id)
    return np.append(ids[1:] != ids[:-1], True) if len(ids) else np.zeros(0, dtype=bool)


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

"""Observation spaces as the models see them: every observation becomes one numeric array.

``Box`` observations keep their shape (the model's encoder decides how to read them: a conv net for frames, an MLP
for vectors) and become float32 unless they are float32 or uint8 already: the models compute in float32, and a
float64, integer or bool observation (common in hand-written envs) would otherwise reach the replay buffer and the
networks as it is; uint8 stays uint8, a quarter of the bytes (Atari frames); a scalar Box (shape ()) becomes a
vector of one. The other common spaces are turned into a float32 vector by the env, as Stable-Baselines3 and
DI-engine users expect: ``Discrete(n)`` one-hot (n,), ``MultiDiscrete(nvec)`` the concatenated one-hots
(sum(nvec),), ``MultiBinary`` flattened to 0/1 floats, and ``Tuple`` / ``Dict`` of those the concatenation of their
parts (gymnasium's ``flatten_space``). A space that no array can hold (``Text``, ``Graph``, ``Sequence``) is a
:class:`~ding_lite.errors.ConfigError` when the env is built, before anything is written, and so is PettingZoo's
masked observation ``Dict(observation=..., action_mask=...)`` in a single-agent env: the env managers stack arrays,
and only the self-play adapters (:mod:`ding_lite.envs.multi_agent`) take the mask apart for the policies.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.errors import ConfigError

_FLAT = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
_KEPT_DTYPES = (np.float32, np.uint8)  # Box observations in these dtypes pass unchanged


def _kept_box(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Box) and space.dtype in _KEPT_DTYPES and space.shape != ()


def _encodable(space: gym.Space) -> bool:
    if isinstance(space, gym.spaces.Box):
        return np.issubdtype(space.dtype, np.number) or np.issubdtype(space.dtype, np.bool_)
    if isinstance(space, _FLAT):
        return True
    if isinstance(space, gym.spaces.Tuple):
        return all(_encodable(s) for s in space.spaces)
    if isinstance(space, gym.spaces.Dict):
        return all(_encodable(s) for s in space.spaces.values())
    return False


def is_masked(space: gym.Space) -> bool:
    """A ``Dict`` with an ``action_mask`` (PettingZoo's ``Dict(observation=..., action_mask=...)``): an observation
    with its legal actions."""
    return isinstance(space, gym.spaces.Dict) and "action_mask" in space.spaces


def needs_encoding(space: gym.Space, where: str = "env") -> bool:
    """Whether observations of ``space`` must be turned into a float32 array (anything but a float32 or uint8
    ``Box``); a space that cannot be encoded (or PettingZoo's masked observation, which the self-play adapters
    split before they ask) raises a :class:`ConfigError` naming ``where``."""
    if is_masked(space):
        raise ConfigError(f"{where} observes {space}, an observation with an action mask: masks reach the policies "
                          f"from self-play games only (env type 'pettingzoo', docs/selfplay.md), a single-agent env "
                          f"must observe an array; wrap it to observe obs['observation'] (e.g. gymnasium.wrappers."
                          f"TransformObservation) and let the env refuse or ignore illegal actions")
    if not _encodable(space):
        raise ConfigError(f"{where} observes {space}, which no array can hold: ding_lite's models take Box, "
                          f"Discrete, MultiDiscrete, MultiBinary observations and Tuple / Dict of them; wrap the env "
                          f"so that it observes one of those")
    return not _kept_box(space)


def encoded_space(space: gym.Space) -> gym.spaces.Box:
    """The ``Box`` that :func:`encode` maps observations of ``space`` into: ``space`` itself for a float32 or uint8
    Box, else float32 (a Box keeps its shape and bounds)."""
    if isinstance(space, gym.spaces.Box):
        if _kept_box(space):
            return space
        shape = space.shape or (1,)  # a scalar Box: one number per observation
        return gym.spaces.Box(space.low.astype(np.float32).reshape(shape), space.high.astype(np.float32).reshape(shape),
                              shape, np.float32)
    flat = gym.spaces.flatten_space(space)
    assert isinstance(flat, gym.spaces.Box), flat  # _encodable let only spaces that flatten to a Box through
    return gym.spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32), flat.shape, np.float32)


def encode(space: gym.Space, obs: Any) -> np.ndarray:
    """One observation of ``space`` as an array of :func:`encoded_space` (one-hot for discrete parts)."""
    if _kept_box(space):
        return np.asarray(obs)
    if isinstance(space, gym.spaces.Box):
        return np.asarray(obs, dtype=np.float32).reshape(space.shape or (1,))
    return np.asarray(gym.spaces.flatten(space, obs), dtype=np.float32)


class EncodedObservation(gym.ObservationWrapper):
    """An env whose non-``Box`` observations come out encoded (see the module docstring)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._raw_space = env.observation_space
        self.observation_space = encoded_space(env.observation_space)

    def observation(self, observation: Any) -> np.ndarray:
        return encode(self._raw_space, observation)


def with_encoded_observations(env: gym.Env, where: str) -> gym.Env:
    """``env`` itself if it observes a float32 or uint8 ``Box`` (as PettingZoo's packed seats do), else wrapped in
    :class:`EncodedObservation`; an observation space that cannot be encoded is a :class:`ConfigError`."""
    return EncodedObservation(env) if needs_encoding(env.observation_space, where) else env

"""Observation spaces as the models see them: every observation becomes one numeric array.

``Box`` observations keep their shape (the model's encoder decides how to read them: a conv net for frames, an MLP
for vectors) and become float32 unless they are float32 or uint8 already: the models compute in float32, and a
float64, integer or bool observation (common in hand-written envs) would otherwise reach the replay buffer and the
networks as it is; uint8 stays uint8, a quarter of the bytes (Atari frames); a scalar Box (shape ()) becomes a
vector of one. The other common spaces are turned into a float32 vector by the env, as Stable-Baselines3 and
DI-engine users expect: ``Discrete(n)`` one-hot (n,), ``MultiDiscrete(nvec)`` the concatenated one-hots
(sum(nvec),), ``MultiBinary`` flattened to 0/1 floats, and ``Tuple`` / ``Dict`` of those the concatenation of their
parts (gymnasium's ``flatten_space``). A space that no array can hold (``Text``, ``Graph``, ``Sequence``, or a
``Tuple`` / ``Dict`` with such a part, named by its path) is a :class:`~ding_lite.errors.ConfigError` when the env
is built, before anything is written.

Action masks (what Stable-Baselines3-contrib's MaskablePPO and RLlib users expect): an env with a ``Discrete(A)``
action space that observes PettingZoo's ``Dict(observation=<any of the above>, action_mask=MultiBinary(A) or Box(0,
1, (A,)))`` keeps the dict: its ``observation`` is encoded as above and its ``action_mask`` becomes a bool (A,)
array (True: legal). The env managers stack such observations into ``{'observation': (N, ...), 'action_mask': (N,
A) bool}``, the batch the self-play arena hands over too, and the policies that declare ``supports_action_mask``
(DQN, PPO) act and learn among the legal actions only.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeGuard

import gymnasium as gym
import numpy as np

from ding_lite.data.keys import ACTION_MASK, OBSERVATION
from ding_lite.errors import ConfigError, EnvError

_FLAT = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
_KEPT_DTYPES = (np.float32, np.uint8)  # Box observations in these dtypes pass unchanged


def _kept_box(space: gym.Space) -> bool:
    return isinstance(space, gym.spaces.Box) and space.dtype in _KEPT_DTYPES and space.shape != ()


def _unencodable_part(space: gym.Space, path: str = "") -> tuple[str, gym.Space] | None:
    """The first part of ``space`` that no array can hold, as ``(its path in the space, e.g. "['mission']", the
    part)`` (path "" for ``space`` itself); None where every part can be encoded."""
    if isinstance(space, gym.spaces.Box):
        numeric = np.issubdtype(space.dtype, np.number) or np.issubdtype(space.dtype, np.bool_)
        return None if numeric else (path, space)
    if isinstance(space, _FLAT):
        return None
    if isinstance(space, (gym.spaces.Tuple, gym.spaces.Dict)):
        items = space.spaces.items() if isinstance(space, gym.spaces.Dict) else enumerate(space.spaces)
        for key, part in items:
            if (found := _unencodable_part(part, f"{path}[{key!r}]")) is not None:
                return found
        return None
    return path, space


def is_masked(space: gym.Space) -> TypeGuard[gym.spaces.Dict]:
    """A ``Dict`` with an ``action_mask`` (PettingZoo's ``Dict(observation=..., action_mask=...)``): an observation
    with its legal actions."""
    return isinstance(space, gym.spaces.Dict) and ACTION_MASK in space.spaces


def observation_part(space: gym.Space) -> gym.Space:
    """The space a model reads: a masked observation's ``observation`` part, any other space itself."""
    return space[OBSERVATION] if is_masked(space) else space


def mask_size(space: gym.spaces.Dict) -> int:
    """A, the number of actions the ``action_mask`` of a masked observation space marks."""
    return int((space[ACTION_MASK].shape or (0,))[0])


def _check_masked(space: gym.spaces.Dict, action_space: gym.Space | None, where: str) -> None:
    """A :class:`ConfigError` naming ``where`` unless ``space`` is ``Dict(observation=..., action_mask=...)`` with a
    mask of A entries and ``action_space`` (None: not checked) is ``Discrete(A)``."""
    extra = sorted(set(space.spaces) - {OBSERVATION, ACTION_MASK})
    if OBSERVATION not in space.spaces or extra:
        raise ConfigError(f"{where} observes {space}: an observation with an action mask is Dict(observation=..., "
                          f"action_mask=...) and nothing else; put {extra or 'the observation'} under 'observation' "
                          f"(a Dict of its own if need be)")
    mask = space[ACTION_MASK]
    flat = isinstance(mask, (gym.spaces.MultiBinary, gym.spaces.Box)) and len(mask.shape) == 1
    if not flat or not (mask.dtype == np.bool_ or np.issubdtype(mask.dtype, np.integer)):
        raise ConfigError(f"{where} observes the action mask space {mask}: it must be MultiBinary(A) or Box(0, 1, "
                          f"(A,)) of bool or int8, A the number of actions (True / 1: legal)")
    n = mask_size(space)
    if action_space is not None and not (isinstance(action_space, gym.spaces.Discrete) and action_space.n == n):
        raise ConfigError(f"{where} observes an action mask of {n} actions, but its action space is {action_space}: "
                          f"a mask needs the Discrete({n}) action space whose actions it marks legal")


def needs_encoding(space: gym.Space, where: str = "env", action_space: gym.Space | None = None) -> bool:
    """Whether observations of ``space`` must be encoded (anything but a float32 or uint8 ``Box``: turned into a
    float32 array; a masked observation: its part encoded, its mask made bool); a space that cannot be encoded, or
    a mask that does not fit ``action_space`` (None: not checked), raises a :class:`ConfigError` naming ``where``."""
    if is_masked(space):
        _check_masked(space, action_space, where)
        needs_encoding(space[OBSERVATION], where)
        return True
    if (found := _unencodable_part(space)) is not None:
        path, part = found  # a Dict's repr can run long (MiniGrid's names a function): name the culprit alone
        what = f"{part}" if not path else f"a {type(space).__name__} whose part obs{path} is {part}"
        raise ConfigError(f"{where} observes {what}, which no array can hold: ding_lite's models take Box, "
                          f"Discrete, MultiDiscrete, MultiBinary observations and Tuple / Dict of them; wrap the env "
                          f"so that it observes one of those{' (without that part)' if path else ''}")
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
    assert isinstance(flat, gym.spaces.Box), flat  # needs_encoding let only spaces that flatten to a Box through
    return gym.spaces.Box(flat.low.astype(np.float32), flat.high.astype(np.float32), flat.shape, np.float32)


def encode(space: gym.Space, obs: Any) -> np.ndarray:
    """One observation of ``space`` as an array of :func:`encoded_space` (one-hot for discrete parts)."""
    if _kept_box(space):
        return np.asarray(obs)
    if isinstance(space, gym.spaces.Box):
        return np.asarray(obs, dtype=np.float32).reshape(space.shape or (1,))
    return np.asarray(gym.spaces.flatten(space, obs), dtype=np.float32)


def masked_space(space: gym.spaces.Dict) -> gym.spaces.Dict:
    """What :func:`encode_masked` maps a masked observation space into: ``Dict(observation=<encoded_space of its
    part>, action_mask=Box(0, 1, (A,), bool))``."""
    n = mask_size(space)
    return gym.spaces.Dict({OBSERVATION: encoded_space(space[OBSERVATION]),
                            ACTION_MASK: gym.spaces.Box(0, 1, (n,), np.bool_)})


def encode_masked(space: gym.spaces.Dict, obs: Any) -> dict[str, np.ndarray]:
    """One masked observation as ``{'observation': encoded array, 'action_mask': (A,) bool}``; a mask of another
    length is an :class:`EnvError`."""
    n = mask_size(space)
    mask = np.asarray(obs[ACTION_MASK])
    if mask.shape != (n,):
        raise EnvError(f"an env gave an action_mask of shape {mask.shape}, but its observation space says ({n},): "
                       f"give one bool (or 0/1) per action")
    return {OBSERVATION: encode(space[OBSERVATION], obs[OBSERVATION]), ACTION_MASK: mask.astype(bool, copy=False)}


class EncodedObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """An env whose non-``Box`` observations come out encoded, masked ones as a dict (see the module docstring).
    Its arguments are recorded so that ``env.spec.make()`` rebuilds it (gymnasium's env checker does)."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        super().__init__(env)
        raw = env.observation_space
        self.observation_space = masked_space(raw) if is_masked(raw) else encoded_space(raw)
        self._encode: Callable[[Any], Any] = partial(encode_masked, raw) if is_masked(raw) else partial(encode, raw)

    def observation(self, observation: Any) -> Any:
        return self._encode(observation)


def with_encoded_observations(env: gym.Env, where: str) -> gym.Env:
    """``env`` itself if it observes a float32 or uint8 ``Box`` (as PettingZoo's packed seats do), else wrapped in
    :class:`EncodedObservation`; an observation space that cannot be encoded (or an action mask that does not fit
    the action space) is a :class:`ConfigError`."""
    return EncodedObservation(env) if needs_encoding(env.observation_space, where, env.action_space) else env

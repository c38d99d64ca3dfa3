"""What an env's ``reset`` and ``step`` must give (gymnasium's API), checked where the env managers take it in:
an :class:`~ding_lite.errors.EnvError` names the env and what it gave instead of a traceback from deep inside (or a
silently wrong batch). Loose but unambiguous types are taken as what they mean: a 1-element array reward or flag as
its value, observations of the space's shape in any dtype as the space's dtype. NaN and inf are found once per
collect (:func:`~ding_lite.data.batch.non_finite_rows`, used by the collectors) and once per episode (the managers),
not per step."""
from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.data.batch import index_batch, map_batch
from ding_lite.data.keys import OBSERVATION
from ding_lite.errors import DIVERGED_ADVICE, DingLiteError, DivergedError, EnvError

logger = logging.getLogger("ding_lite")

GYMNASIUM_API = ("gymnasium's API has reset return (observation, info) and step return (observation, reward, "
                 "terminated, truncated, info): update the env, or wrap an old gym env in a compatibility wrapper "
                 "(shimmy's GymV21CompatibilityV0 / GymV26CompatibilityV0)")


def _described(value: Any) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    name = type(value).__name__
    return ("an " if name[0] in "aeiou" else "a ") + name


def raised(what: str, exc: BaseException) -> str:
    """``"<what> raised <type>: <message> (at <file>:<line>, in <function>)"``: what an env call (``what``: 'step',
    'reset', ...) raised, and where it raised it (the innermost frame), for one-line errors that name the culprit;
    ding_lite's own errors (the checks of this module) say enough without the place."""
    frames = [] if isinstance(exc, DingLiteError) else traceback.extract_tb(exc.__traceback__)
    where = f" (at {frames[-1].filename}:{frames[-1].lineno}, in {frames[-1].name})" if frames else ""
    return f"{what} raised {type(exc).__name__}: {exc}{where}"


def close_env(env: gym.Env, name: str) -> None:
    """Close ``env`` (``name``: 'env 3', "env 'my_env'"); an exception of its ``close`` is logged as a warning naming
    the env, not raised: closing is clean-up after the work is done, and the envs after it must close too."""
    try:
        env.close()
    except Exception as exc:  # noqa: BLE001 (whatever a user's close raises)
        logger.warning("warning: %s's %s; ignored, the env is dropped", name, raised("close", exc))


def checked_reset(result: Any, i: int) -> Any:
    """The observation of env ``i``'s ``reset()`` result, an :class:`EnvError` unless it is ``(observation, info)``."""
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
        raise EnvError(f"env {i}'s reset returned {_described(result)}, not (observation, info): {GYMNASIUM_API}")
    return result[0]


def checked_step(result: Any, i: int) -> tuple:
    """Env ``i``'s ``step()`` result, an :class:`EnvError` unless it is a 5-tuple."""
    if not (isinstance(result, tuple) and len(result) == 5):
        raise EnvError(f"env {i}'s step returned {_described(result)}, not (observation, reward, terminated, "
                       f"truncated, info): {GYMNASIUM_API}")
    return result


def check_obs_shape(obs: Any, shape: tuple[int, ...] | None, i: int, what: str) -> None:
    """An :class:`EnvError` if env ``i``'s observation (from its ``what``: 'reset' or 'step') does not have the
    shape of its observation space (``shape``; None: not checked)."""
    if shape is not None and np.shape(obs) != shape:
        raise EnvError(f"env {i}'s {what} gave an observation of shape {np.shape(obs)}, but its observation space "
                       f"says {shape}: make the env's observations fit its observation_space")


def stacked_obs(observations: Sequence[Any], space: gym.Space, what: str) -> Any:
    """(N, *shape) array of N envs' observations in the observation space's dtype (an env that says float32 and gives
    float64 arrays or lists is common); an :class:`EnvError` names the first env whose observation does not have the
    space's shape. A ``Dict`` space (an observation with an action mask, envs/spaces.py): a dict of such arrays, one
    per key. Other spaces: stacked as they come, unchecked."""
    if isinstance(space, gym.spaces.Dict):
        return {key: stacked_obs([o[key] for o in observations], part, what) for key, part in space.spaces.items()}
    shape = space.shape if isinstance(space, gym.spaces.Box) else None
    try:
        batch = np.array(observations, dtype=space.dtype if shape is not None else None)
        if shape is None or batch.shape[1:] == shape:
            if batch.dtype.kind in "biu" and any(np.asarray(o).dtype != batch.dtype for o in observations):
                check_lossless_cast(observations, batch, what)
            return batch
    except ValueError:  # ragged: the envs' observations differ in shape
        pass
    for i, obs in enumerate(observations):
        check_obs_shape(obs, shape, i, what)
    raise EnvError(f"the envs' {what} observations cannot be stacked into one array (shapes "
                   f"{sorted({np.shape(o) for o in observations})})")


def check_lossless_cast(observations: Sequence[Any], batch: np.ndarray, what: str, first: int = 0) -> None:
    """An :class:`EnvError` naming the first env whose observation (from its ``what``) changed when ``batch`` cast
    it to the space's integer or bool dtype: floats in [0, 1] for a uint8 space would become zeros in silence
    (``first``: the env of ``observations[0]``).
    Called only where some dtype differs, so envs that give their space's dtype pay a dtype read each."""
    for i, obs in enumerate(observations):
        given = np.asarray(obs)
        if not np.array_equal(given, batch[i]):
            value = given.flat[int(np.argmax(given != batch[i]))].item()
            raise EnvError(f"env {first + i}'s {what} gave an observation of dtype {given.dtype} whose values change "
                           f"when cast to its observation space's {batch.dtype} (e.g. {value!r}): give observations "
                           f"of the space's dtype, or declare the space with the dtype the env gives")


def copied_obs(batch: Any) -> Any:
    """A copy of a batch of observations: an (N, ...) array, or a masked observation's dict of them."""
    return map_batch(np.copy, batch) if isinstance(batch, dict) else batch.copy()


def put_obs(batch: Any, i: int, obs: Any, what: str = "reset") -> None:
    """Write one env's observation ``obs`` (from its ``what``: 'reset' or 'step') into row ``i`` of ``batch`` (an
    array, or a dict of arrays)."""
    if isinstance(batch, dict):
        for key, value in batch.items():
            value[i] = obs[key]
    else:
        batch[i] = obs
        if batch.dtype.kind in "biu" and np.asarray(obs).dtype != batch.dtype:  # a reset, or a worker's step
            check_lossless_cast([obs], batch[i:i + 1], what, first=i)


def obs_row(batch: Any, i: int) -> Any:
    """Row ``i`` of a batch of observations (an array, or a dict of arrays)."""
    return index_batch(batch, i) if isinstance(batch, dict) else batch[i]


def observation_array(batch: Any) -> np.ndarray:
    """The array a model reads of a batch of observations: a masked observation's ``observation`` part."""
    return batch[OBSERVATION] if isinstance(batch, dict) else batch


NON_FINITE_ADVICE = ("a learner cannot use it (one NaN in a batch spreads to every weight). Fix the env, or wrap it "
                     "to replace or clip such values (gymnasium.wrappers.TransformObservation / TransformReward)")


def diverged_action(env: int, kind: str, at: str) -> DivergedError:
    """The error for a policy whose action for ``env`` holds ``kind`` (NaN or inf) ``at`` (where in the run) on a
    finite observation: its network diverged, and the reward the env makes of that action is not the env's fault."""
    return DivergedError(f"the policy's action for env {env} holds {kind} {at}, on a finite observation: its "
                         f"network's outputs are not finite; {DIVERGED_ADVICE}")


def one_reward(value: Any) -> Any:
    """An env's reward as one number: a float, or a 1-element array (some envs return ``np.array([r])``); anything
    else is a ValueError that says so."""
    if isinstance(value, (float, int)):
        return value
    array = np.asarray(value)
    if array.size != 1 or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise ValueError(f"a reward must be one number (gymnasium's step returns a float), got {value!r}")
    return array.reshape(())


def flag_column(flags: Sequence[Any], what: str) -> np.ndarray:
    """(N,) bool ``terminated`` or ``truncated`` (``what``) flags of N envs' steps (:func:`one_flag` each); an
    :class:`EnvError` names the env whose flag is not one bool (None or a string too: numpy would call None False and
    the string 'False' True)."""
    try:
        column = np.array(flags)
        if column.shape == (len(flags),) and column.dtype.kind in "biu":
            return column.astype(bool, copy=False)
    except (TypeError, ValueError):  # ragged: some flags are arrays
        pass
    values = []
    for i, flag in enumerate(flags):
        try:
            values.append(one_flag(flag, what))
        except ValueError as exc:
            raise EnvError(f"env {i}: {exc}") from None
    return np.array(values, dtype=bool)


def one_flag(value: Any, what: str) -> bool:
    """An env's ``terminated`` or ``truncated`` (``what``) as one bool (a 1-element bool or integer array counts as
    its value); anything else (None, a string, a float, several values) is a ValueError that says so."""
    if isinstance(value, bool):
        return value
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "biu":
        raise ValueError(f"its step gave {what}={value!r}: it must be one bool (gymnasium's API)")
    return bool(array.reshape(()))


def reward_column(rewards: Sequence[Any]) -> np.ndarray:
    """(N,) float32 rewards of N envs' steps (:func:`one_reward` each); an :class:`EnvError` names the env whose
    reward is not one number (None or a string too: numpy would turn them into NaN or parse them)."""
    try:
        column = np.array(rewards)
        if column.shape == (len(rewards),) and column.dtype.kind in "biuf":
            return column.astype(np.float32, copy=False)
    except (TypeError, ValueError):
        pass
    numbers = []
    for i, value in enumerate(rewards):
        try:
            numbers.append(one_reward(value))
        except ValueError as exc:
            raise EnvError(f"env {i}: {exc}") from None
    return np.array(numbers, dtype=np.float32)

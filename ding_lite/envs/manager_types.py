"""What an env manager gives its readers (collectors, evaluators, the arena): the types of a batched step and of
an ended episode, the protocol a manager meets, and each env's share of an evaluation's episodes."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np


class EpisodeEnd(NamedTuple):
    """An episode that finished during a step (one per finished episode, not per step)."""

    env_id: int
    episode_return: float
    episode_length: int
    terminated: bool
    info: dict  # the env's info dict of the final step


class StepResult(NamedTuple):
    """Batched result of one step of all envs.

    ``obs`` is what to act on next: for an env whose episode just ended it is already the reset observation, and the
    episode's final observation is in ``next_obs`` (needed to bootstrap a truncated episode).

    ``interrupted`` is None unless an env's worker failed during this step (see ``subprocess``): then it is an (N,)
    bool array and each interrupted env's row is a placeholder, not a transition: ``next_obs`` is the last real
    observation (the one the action was chosen on), reward 0, ``terminated`` False, ``truncated`` True, and ``obs``
    the first observation of the env's next episode. The cut episode is not in ``episodes``. Consumers drop the row
    and treat the env's previous step as the (truncated) end of its episode; see docs/env_managers.md.

    An env that observes an action mask (:mod:`ding_lite.envs.spaces`) gives ``obs`` and ``next_obs`` as dicts
    ``{'observation': (N, *obs_shape), 'action_mask': (N, A) bool}``, as the self-play arena does.
    """

    obs: np.ndarray  # (N, *obs_shape) next observation to act on (reset obs where an episode ended)
    next_obs: np.ndarray  # (N, *obs_shape) observation after the step (final obs where an episode ended)
    reward: np.ndarray  # (N,) float32
    terminated: np.ndarray  # (N,) bool
    truncated: np.ndarray  # (N,) bool
    episodes: list[EpisodeEnd]  # episodes that ended in this step
    interrupted: np.ndarray | None = None  # (N,) bool where a worker failed in this step, else None


def episode_quota(n_episode: int, n_env: int) -> np.ndarray:
    """(n_env,) episodes each env runs so that ``n_episode`` are spread evenly: ``n_episode // n_env`` each, one more
    for the first ``n_episode % n_env`` envs (an env's later episodes are not counted, so that short episodes do not
    crowd out long ones)."""
    return np.array([n_episode // n_env + (i < n_episode % n_env) for i in range(n_env)], dtype=np.int64)


@runtime_checkable
class EnvManagerLike(Protocol):
    """What collectors and evaluators step: N envs as one batch. :class:`EnvManager` and every registered manager
    implement it, and so does the self-play arena (:class:`~ding_lite.league.arena.SelfPlayEnvManager`), so the same
    collector drives both."""

    env_num: int
    observation_space: gym.Space
    action_space: gym.Space

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        ...

    @property
    def obs(self) -> Any:
        """The current batched observation (reset first if needed)."""
        ...

    @property
    def restart_count(self) -> int:
        """Env restarts after worker failures so far (0 for managers that cannot restart)."""
        ...

    @property
    def groups(self) -> list[slice]:
        """Rows of envs that step apart from the others (one group: all rows)."""
        ...

    def seed(self, seed: int) -> None: ...

    def reset(self) -> Any: ...

    def step(self, actions: np.ndarray) -> StepResult: ...

    def truncate(self, envs: Sequence[int]) -> tuple[Any, list[EpisodeEnd]]: ...

    def send(self, group: int, actions: np.ndarray) -> None: ...

    def recv(self, group: int) -> StepResult: ...

    def close(self) -> None: ...

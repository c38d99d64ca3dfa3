"""The episode runner every evaluator and ``-m collect_demo`` share: exactly ``n_episode`` episodes spread evenly
over an env manager's envs, stepped as one batch, with the results in columns."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ding_lite.data.batch import non_finite_kind, non_finite_rows
from ding_lite.data.keys import ACTION, ACTION_MASK, OBS, OBSERVATION, REWARD, TERMINATED, TRUNCATED
from ding_lite.envs.actions import env_actions
from ding_lite.envs.env_manager import EpisodeEnd, episode_quota
from ding_lite.envs.env_outputs import (
    NON_FINITE_ADVICE,
    diverged_action,
    obs_row,
    observation_array,
)
from ding_lite.errors import EnvError

logger = logging.getLogger("ding_lite")
LONG_EPISODE = 100_000  # steps of one episode after which a run without a step cap says it may never end


class Episode(NamedTuple):
    """One finished episode with its step columns (a demo rollout's)."""

    steps: dict[str, np.ndarray]  # obs (T, *obs_shape), action (T, ...), reward (T,), terminated, truncated (T,)
    # (and action_mask (T, A))
    end: EpisodeEnd
    final_obs: np.ndarray | None = None  # (*obs_shape) the observation after its last step (to bootstrap a cut one;
    # of a masked env, its observation part)
    final_action_mask: np.ndarray | None = None  # (A,) of a masked env: the legal actions after its last step


class Episodes(NamedTuple):
    """The counted episodes of one :func:`run_episodes`, in the order they ended (those cut at the step cap after
    the step's ended ones)."""

    returns: np.ndarray  # (n,) episode returns
    lengths: np.ndarray  # (n,) episode lengths
    ends: list[EpisodeEnd]  # how each ended (its final info; cut at the step cap: truncated, an info of the manager's)
    cut: np.ndarray  # (n,) bool: the episode was cut at max_episode_steps, counted with its return so far
    env_steps: int  # env steps taken, all envs together (those of episodes not counted too)
    spans: list[tuple[int, int, int]]  # (env, first step, end step) of each episode in ``columns``
    columns: dict[str, np.ndarray] | None  # with ``record``: obs, action (as executed), reward (and action_mask),
    # each (T, N, ...)
    finals: list[Any] | None = None  # with ``record``: each episode's observation after its last step (a masked
    # env's: its dict of observation and action_mask)

    @property
    def capped(self) -> int:
        """How many of the counted episodes were cut at max_episode_steps."""
        return int(self.cut.sum())

    def steps(self, k: int) -> dict[str, np.ndarray]:
        """The step columns of episode ``k`` (needs ``record``): obs (T, *obs_shape), action (T, ...), reward (T,),
        and its end as gymnasium's step flags, terminated and truncated (T,) bool: False but at the last step, where
        exactly one is True (an episode that ended terminated, even if a time limit fell on the same step, is
        terminated; one cut by a time limit or the step cap is truncated)."""
        if self.columns is None:
            raise ValueError("run_episodes(..., record=True) keeps the steps; this run did not")
        env, t0, t1 = self.spans[k]
        steps = {key: value[t0:t1, env] for key, value in self.columns.items()}
        steps[TERMINATED] = np.zeros(t1 - t0, dtype=bool)
        steps[TRUNCATED] = np.zeros(t1 - t0, dtype=bool)
        (steps[TERMINATED] if self.ends[k].terminated else steps[TRUNCATED])[-1] = True
        return steps

    def episodes(self) -> list[Episode]:
        """Every counted episode with its steps and final observation (needs ``record``); one cut at the step cap
        ends truncated. A masked env's final observation is split as its steps are: its observation part and its
        action mask."""
        return [Episode(self.steps(k), end, *_split_masked(None if self.finals is None else self.finals[k]))
                for k, end in enumerate(self.ends)]


def check_step_finite(values: Any, what: str, step: np.ndarray, episode: np.ndarray) -> None:
    """Where a step's ``values`` (``what``: the ``'observation'`` acted on, the ``'action'`` taken on it or the
    ``'reward'`` that followed) hold NaN or inf, an error naming the first env: an :class:`EnvError` for what the
    env gave, a :class:`DivergedError` for an action (checked after the finite observation it was taken on: its NaN
    would make the reward NaN, and the env is not to blame). ``step`` and ``episode``: each env's step within its
    episode and episode number. An evaluation has no rollout whose columns could be checked once, as the
    collector's are, and a greedy policy acts on NaN in silence: the argmax of NaN logits is action 0."""
    values = np.asarray(observation_array(values) if what == "observation" else values)
    bad = non_finite_rows(values)
    if bad is None:
        return
    i = int(np.flatnonzero(bad)[0])
    at = f"at step {int(step[i])} of its episode {int(episode[i])} (evaluation or demo collection)"
    if what == "action":
        raise diverged_action(i, non_finite_kind(values[i]), at)
    raise EnvError(f"env {i}'s {what} holds {non_finite_kind(values[i])} {at}: {NON_FINITE_ADVICE}")


def run_episodes(env_manager: Any, act: Callable[[Any], Any], n_episode: int, *,
                 max_episode_steps: int | None = None, counts: Callable[[EpisodeEnd], bool] | None = None,
                 record: bool = False) -> Episodes:
    """Reset ``env_manager`` and step all its envs together with ``act(obs) -> actions`` until each env has ended
    its share of ``n_episode`` episodes (:func:`~ding_lite.envs.env_manager.episode_quota`: env i's first episodes,
    not the first ``n_episode`` to end overall, so that short episodes do not crowd out long ones).

    Args:
        env_manager: any env manager (``env_num``, ``reset``, ``step``, ``truncate``, ``action_space``); the caller
            seeds it.
        act: batched actions for the (N, ...) observations.
        n_episode: episodes to count.
        max_episode_steps: an episode that reaches this many steps is cut there as a time limit would cut it
            (``env_manager.truncate``: truncated, its env starts its next episode) and counted with its return so
            far (None: no cap); ``Episodes.cut`` says which. Every env still plays its whole share, so the stopping
            rule does not depend on outcomes (were a capped env to stop, long episodes would weigh less).
        counts: whether an ended episode counts (None: all do), e.g. a game cut by a worker failure does not;
            episodes cut at the cap always count.
        record: keep the obs / action / reward columns (``Episodes.steps``), Box actions as executed (clipped), and
            each counted episode's final observation (``Episodes.finals``).
    """
    n_env = env_manager.env_num
    tally = _Tally(episode_quota(n_episode, n_env))
    columns: dict[str, list[np.ndarray]] = {OBS: [], ACTION: [], REWARD: []}
    warned = False
    obs = env_manager.reset()
    while tally.quota.any():
        step_no = tally.t - tally.start
        check_step_finite(obs, "observation", step_no, tally.episode_no)  # before the policy: it may fail on NaN
        action = act(obs)
        check_step_finite(action, "action", step_no, tally.episode_no)
        result = env_manager.step(action)
        check_step_finite(result.reward, "reward", step_no, tally.episode_no)
        if record:
            _record(columns, obs, action, result.reward, env_manager.action_space)
        tally.step()
        for end in result.episodes:  # (next_obs: an ended episode's final observation)
            tally.ended(end, counted=counts is None or counts(end), final=_final_obs(result.next_obs, end, record))
        if result.interrupted is not None:  # a worker restart cut these envs' episodes (not ended, not counted):
            for i in np.flatnonzero(result.interrupted):  # their next episode starts at the next step, from nothing
                tally.restart(int(i))
        obs = result.obs
        if max_episode_steps is not None and len(over := tally.reached(max_episode_steps)):
            last = obs  # the observation a cut episode ends on (truncate resets into a copy)
            obs, cut = env_manager.truncate(over)
            for end in cut:  # (every learner row of a self-play game ends with it)
                tally.ended(end, counted=True, capped=True, final=_final_obs(last, end, record))
        if max_episode_steps is None and not warned and tally.t % 1000 == 0:
            warned = _warn_long_episode(tally.t, tally.start, tally.quota)
    stacked = {k: np.stack(v) for k, v in columns.items()} if record and tally.t else None
    return Episodes(np.array([e.episode_return for e in tally.ends], dtype=np.float64),
                    np.array([e.episode_length for e in tally.ends], dtype=np.int64), tally.ends,
                    np.array(tally.cut, dtype=bool), tally.t * n_env, tally.spans, stacked,
                    tally.finals if record else None)


class _Tally:
    """:func:`run_episodes`' bookkeeping: each env's quota left and running episode, and the counted episodes."""

    def __init__(self, quota: np.ndarray) -> None:
        self.quota = quota  # (N,) episodes each env still has to count
        self.t = 0  # steps taken
        self.start = np.zeros(len(quota), dtype=np.int64)  # step at which each env's running episode began
        self.episode_no = np.zeros(len(quota), dtype=np.int64)  # its number, counted from 0
        self.ends: list[EpisodeEnd] = []
        self.cut: list[bool] = []
        self.spans: list[tuple[int, int, int]] = []
        self.finals: list[Any] = []  # each counted episode's final observation (None: not recorded)

    def step(self) -> None:
        self.t += 1

    def reached(self, cap: int) -> list[int]:
        """Envs whose running episode, one that still counts, has ``cap`` steps."""
        return np.flatnonzero((self.t - self.start >= cap) & (self.quota > 0)).tolist()

    def ended(self, end: EpisodeEnd, counted: bool, capped: bool = False, final: Any = None) -> None:
        """Count ``end`` (``final``: its final observation) if ``counted`` and its env's quota is not met; its env's
        next episode starts now."""
        i = end.env_id
        if counted and self.quota[i] > 0:
            self.quota[i] -= 1
            self.ends.append(end)
            self.cut.append(capped)
            self.spans.append((i, int(self.start[i]), self.t))
            self.finals.append(final)
        self.restart(i)

    def restart(self, i: int) -> None:
        """Env ``i``'s next episode starts at the next step."""
        self.start[i] = self.t
        self.episode_no[i] += 1


def _final_obs(batch: Any, end: EpisodeEnd, record: bool) -> Any:
    """With ``record``, a copy of ``end``'s row of ``batch`` (a manager may reuse its buffers): an array, or a masked
    observation's dict of its observation and action mask; else None."""
    if not record:
        return None
    row = obs_row(batch, end.env_id)
    return {k: np.array(v, copy=True) for k, v in row.items()} if isinstance(row, dict) else np.array(row, copy=True)


def _split_masked(final: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A final observation as its observation part and its action mask (None: the env has none), as
    :func:`_record` splits each step's."""
    return (final[OBSERVATION], final[ACTION_MASK]) if isinstance(final, dict) else (final, None)


def _record(columns: dict[str, list[np.ndarray]], obs: Any, action: Any, reward: np.ndarray, space: Any) -> None:
    """Append one step's obs (and action mask), action as executed and reward to ``columns``."""
    seen = observation_array(obs)  # an action mask (envs/spaces.py) is a column of its own
    columns[OBS].append(np.array(seen, copy=True))  # a manager may reuse its buffers
    if seen is not obs:
        columns.setdefault(ACTION_MASK, []).append(np.array(obs[ACTION_MASK], copy=True))
    columns[ACTION].append(env_actions(np.asarray(action), space))
    columns[REWARD].append(reward)


def _warn_long_episode(t: int, start: np.ndarray, quota: np.ndarray) -> bool:
    """Warn (once: returns True) if an env whose episode still counts has run :data:`LONG_EPISODE` steps."""
    long_running = np.flatnonzero((t - start >= LONG_EPISODE) & (quota > 0))
    if not len(long_running):
        return False
    i = int(long_running[0])  # an env without a time limit (and a policy that never ends it) waits forever
    logger.warning(f"warning: env {i}'s episode has run {t - int(start[i]):,} steps without ending, and this "
                   f"evaluation (or demo collection) waits for it: if the env has no time limit, set "
                   f"env.max_episode_steps or policy.eval.evaluator.max_episode_steps")
    return True

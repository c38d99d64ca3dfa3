"""The episode runner every evaluator and ``-m collect_demo`` share: exactly ``n_episode`` episodes spread evenly
over an env manager's envs, stepped as one batch, with the results in columns."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ding_lite.data.keys import ACTION, ACTION_MASK, OBS, REWARD
from ding_lite.envs.env_manager import EpisodeEnd, env_actions, episode_quota
from ding_lite.envs.env_outputs import NON_FINITE_ADVICE, non_finite_rows, observation_array
from ding_lite.errors import EnvError

logger = logging.getLogger("ding_lite")
LONG_EPISODE = 100_000  # steps of one episode after which a run without a step cap says it may never end


class Episode(NamedTuple):
    """One finished episode with its step columns (a demo rollout's)."""

    steps: dict[str, np.ndarray]  # obs (T, *obs_shape), action (T, ...), reward (T,)
    end: EpisodeEnd


class Episodes(NamedTuple):
    """The counted episodes of one :func:`run_episodes`, in the order they ended (capped ones after the step's
    ended ones)."""

    returns: np.ndarray  # (n,) episode returns
    lengths: np.ndarray  # (n,) episode lengths
    ends: list[EpisodeEnd | None]  # how each ended (its final info); None: stopped at max_episode_steps
    capped: int  # episodes stopped at max_episode_steps
    env_steps: int  # env steps taken, all envs together (those of episodes not counted too)
    spans: list[tuple[int, int, int]]  # (env, first step, end step) of each episode in ``columns``
    columns: dict[str, np.ndarray] | None  # with ``record``: obs, action (as executed), reward (and action_mask),
    # each (T, N, ...)

    def steps(self, k: int) -> dict[str, np.ndarray]:
        """The step columns of episode ``k`` (needs ``record``): obs (T, *obs_shape), action (T, ...), reward (T,)."""
        if self.columns is None:
            raise ValueError("run_episodes(..., record=True) keeps the steps; this run did not")
        env, t0, t1 = self.spans[k]
        return {key: value[t0:t1, env] for key, value in self.columns.items()}

    def episodes(self) -> list[Episode]:
        """The episodes that ended (not those stopped at the step cap), each with its steps (needs ``record``)."""
        return [Episode(self.steps(k), end) for k, end in enumerate(self.ends) if end is not None]


def check_step_finite(obs: Any, reward: np.ndarray, step: np.ndarray, episode: np.ndarray) -> None:
    """An :class:`EnvError` naming the first env whose observation to act on, or reward, holds NaN or inf; ``step``
    and ``episode``: each env's step within its episode and episode number (an evaluation has no rollout whose
    columns could be checked once, as the collector's are, and a greedy policy acts on NaN in silence: the argmax of
    NaN logits is action 0)."""
    for values, what in ((reward, "reward"), (observation_array(obs), "observation")):
        bad = non_finite_rows(np.asarray(values))
        if bad is not None:
            i = int(np.flatnonzero(bad)[0])
            kind = "NaN" if np.isnan(values[i]).any() else "inf"
            raise EnvError(f"env {i}'s {what} holds {kind} at step {int(step[i])} of its episode {int(episode[i])} "
                           f"(evaluation or demo collection): {NON_FINITE_ADVICE}")


def run_episodes(env_manager: Any, act: Callable[[Any], Any], n_episode: int, *,
                 max_episode_steps: int | None = None, counts: Callable[[EpisodeEnd], bool] | None = None,
                 record: bool = False) -> Episodes:
    """Reset ``env_manager`` and step all its envs together with ``act(obs) -> actions`` until each env has ended
    its share of ``n_episode`` episodes (:func:`~ding_lite.envs.env_manager.episode_quota`: env i's first episodes,
    not the first ``n_episode`` to end overall, so that short episodes do not crowd out long ones).

    Args:
        env_manager: any env manager (``env_num``, ``reset``, ``step``, ``action_space``); the caller seeds it.
        act: batched actions for the (N, ...) observations.
        n_episode: episodes to count.
        max_episode_steps: an episode that reaches this many steps is counted with its return so far and its env
            plays no more (None: no cap); ``Episodes.capped`` says how many.
        counts: whether an ended episode counts (None: all do), e.g. a game cut by a worker failure does not.
        record: keep the obs / action / reward columns (``Episodes.steps``); Box actions as executed (clipped).
    """
    n_env = env_manager.env_num
    quota = episode_quota(n_episode, n_env)
    returns: list[float] = []
    lengths: list[int] = []
    ends: list[EpisodeEnd | None] = []
    spans: list[tuple[int, int, int]] = []
    columns: dict[str, list[np.ndarray]] = {OBS: [], ACTION: [], REWARD: []}
    running, steps = np.zeros(n_env), np.zeros(n_env, dtype=np.int64)  # each env's running episode: return, steps
    start = np.zeros(n_env, dtype=np.int64)  # step at which each env's running episode began
    episode_no = np.zeros(n_env, dtype=np.int64)  # each env's running episode, counted from 0
    capped = t = 0
    warned = False
    obs = env_manager.reset()
    while quota.any():
        action = act(obs)
        result = env_manager.step(action)
        if record:
            seen = observation_array(obs)  # an action mask (envs/spaces.py) is a column of its own
            columns[OBS].append(np.array(seen, copy=True))  # a manager may reuse its buffers
            if seen is not obs:
                columns.setdefault(ACTION_MASK, []).append(np.array(obs[ACTION_MASK], copy=True))
            columns[ACTION].append(env_actions(np.asarray(action), env_manager.action_space))
            columns[REWARD].append(result.reward)
        t += 1
        if max_episode_steps is not None:
            running += result.reward
            steps += 1
        for end in result.episodes:
            i = end.env_id
            if quota[i] > 0 and (counts is None or counts(end)):
                quota[i] -= 1
                returns.append(end.episode_return)
                lengths.append(end.episode_length)
                ends.append(end)
                spans.append((i, int(start[i]), t))
            running[i], steps[i], start[i] = 0.0, 0, t
            episode_no[i] += 1
        if result.interrupted is not None:  # a worker restart cut these envs' episodes (not ended, not counted):
            cut = np.flatnonzero(result.interrupted)  # their next episode starts at the next step, from nothing
            running[cut], steps[cut], start[cut] = 0.0, 0, t
            episode_no[cut] += 1
        check_step_finite(result.obs, result.reward, t - start, episode_no)
        if max_episode_steps is None and not warned and t % 1000 == 0:
            long_running = np.flatnonzero((t - start >= LONG_EPISODE) & (quota > 0))
            if len(long_running):  # an env without a time limit (and a policy that never ends it) waits forever
                warned, i = True, int(long_running[0])
                logger.warning(f"warning: env {i}'s episode has run {t - int(start[i]):,} steps without ending, and "
                               f"this evaluation (or demo collection) waits for it: if the env has no time limit, set "
                               f"env.max_episode_steps or policy.eval.evaluator.max_episode_steps")
        if max_episode_steps is not None:
            for i in np.flatnonzero((steps >= max_episode_steps) & (quota > 0)):
                returns.append(float(running[i]))
                lengths.append(int(steps[i]))
                ends.append(None)
                spans.append((int(i), int(start[i]), t))
                quota[i], capped = 0, capped + 1
        obs = result.obs
    stacked = {k: np.stack(v) for k, v in columns.items()} if record and t else None
    return Episodes(np.asarray(returns, dtype=np.float64), np.asarray(lengths, dtype=np.int64), ends, capped,
                    t * n_env, spans, stacked)

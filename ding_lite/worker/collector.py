"""Collectors: step the env manager with the policy's collect mode and turn rollouts into train samples."""
from __future__ import annotations

import math
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

import numpy as np

from ding_lite.data.batch import Batch, concat_batches, non_finite_kind, non_finite_rows
from ding_lite.data.keys import (
    ACTION,
    ACTION_MASK,
    NEXT_ACTION_MASK,
    NEXT_OBS,
    OBS,
    OBSERVATION,
    REWARD,
    TERMINATED,
    TRUNCATED,
    VALID,
)
from ding_lite.data.rollout import settle
from ding_lite.envs.env_manager import EnvManagerLike, EpisodeEnd
from ding_lite.envs.env_outputs import (
    NON_FINITE_ADVICE,
    diverged_action,
    observation_array,
)
from ding_lite.errors import EnvError, naming_envs
from ding_lite.registry import COLLECTOR_REGISTRY


class _RolloutWriter:
    """Preallocated time-major (T, N, ...) columns filled one step (or one group of envs' step) at a time."""

    def __init__(self, t_len: int, n_env: int) -> None:
        self.t_len, self.n_env = t_len, n_env
        self.columns: dict[str, np.ndarray] = {}

    def write(self, t: int, name: str, value: Any, rows: slice | None = None) -> None:
        if isinstance(value, Mapping):  # an observation with an action mask: two plain columns (data/keys.py)
            self.write(t, name, value[OBSERVATION], rows)
            self.write(t, NEXT_ACTION_MASK if name == NEXT_OBS else ACTION_MASK, value[ACTION_MASK], rows)
            return
        column = self.columns.get(name)
        if column is None:
            value = np.asarray(value)
            column = self.columns[name] = np.empty((self.t_len, self.n_env) + value.shape[1:], dtype=value.dtype)
        if rows is None:  # the whole row: the common case, without a tuple index
            column[t] = value
        else:
            column[t, rows] = value

    def invalidate(self, t: int, invalid: np.ndarray, rows: slice | None = None) -> None:
        """Mark step ``t``'s rows ``invalid`` (e.g. ``StepResult.interrupted``) in the ``valid`` column, made on the
        first invalid row, so that the hot loop of a rollout without faults writes none."""
        column = self.columns.get(VALID)
        if column is None:
            column = self.columns[VALID] = np.ones((self.t_len, self.n_env), dtype=bool)
        column[t, slice(None) if rows is None else rows] &= ~invalid


# what each column is, and its place in step t's order: the observation acted on, the action, then what the env gave
_CHECKED = {OBS: ("observation", 0), ACTION: ("action", 1), REWARD: ("reward", 2), NEXT_OBS: ("observation", 2)}


def check_finite(columns: Mapping[str, np.ndarray], env_step: int, n_env: int) -> None:
    """Where a rollout's observations, actions or rewards hold NaN or inf (rows marked invalid aside), an error about
    the first: an :class:`EnvError` naming the env and step for what the env gave, a :class:`DivergedError` for the
    policy's action on finite observations (a NaN action makes the env's next reward NaN: the env is not to blame).
    ``env_step``: the run's env steps before the rollout. Once per collect, one pass over each column: the env
    managers would pay a call per step."""
    valid = columns.get(VALID)
    first: tuple[int, int, int, str] | None = None  # (t, place in the step, env, key)
    for key, (_, place) in _CHECKED.items():
        column = columns.get(key)
        if column is None:
            continue
        bad = non_finite_rows(column.reshape((-1,) + column.shape[2:]))  # rows: (t, env) flattened
        if bad is not None and valid is not None:
            bad &= valid.reshape(-1)
        if bad is None or not bad.any():
            continue
        t, i = divmod(int(np.flatnonzero(bad)[0]), n_env)
        first = min(first or (t, place, i, key), (t, place, i, key))
    if first is None:
        return
    t, _, i, key = first
    value = columns[key][t, i]
    kind = non_finite_kind(value)
    if key == ACTION:
        raise diverged_action(i, kind, f"at the run's env step {env_step + t * n_env:,}")
    shown = f" ({float(value):g})" if np.ndim(value) == 0 else ""
    step = env_step + (t + (key != OBS)) * n_env  # the run's env steps once this value was given
    raise EnvError(f"env {i}'s {_CHECKED[key][0]} holds {kind}{shown} at the run's env step {step:,}: "
                   f"{NON_FINITE_ADVICE}")


def check_acted_on(obs: Any, rows: slice | None, env_step: int, cause: Exception) -> None:
    """Where the policy's forward pass raised ``cause`` on ``obs`` (the envs ``rows``, None: all), an
    :class:`EnvError` naming the first env whose observation holds NaN or inf, the real culprit (PPO's sampling fails
    on NaN logits, inside torch); nothing if ``obs`` is finite."""
    array = observation_array(obs)
    bad = non_finite_rows(np.asarray(array))
    if bad is None:
        return
    j = int(np.flatnonzero(bad)[0])
    i = j + ((rows.start or 0) if rows is not None else 0)
    kind = non_finite_kind(array[j])
    raise EnvError(f"env {i}'s observation holds {kind} at the run's env step {env_step:,}: {NON_FINITE_ADVICE}") \
        from cause


def _write_result(writer: _RolloutWriter, t: int, result: Any, rows: slice | None) -> None:
    """A step's outcome (of the envs ``rows``) into row ``t``."""
    writer.write(t, NEXT_OBS, result.next_obs, rows)
    writer.write(t, REWARD, result.reward, rows)
    writer.write(t, TERMINATED, result.terminated, rows)
    writer.write(t, TRUNCATED, result.truncated, rows)
    if result.interrupted is not None:  # an env worker failed and was restarted (subprocess manager)
        writer.invalidate(t, result.interrupted, rows)


@COLLECTOR_REGISTRY.register("sample")
class SampleCollector:
    """Collects a fixed number of env steps per call across all envs (episodes run on across calls).

    Args:
        cfg: the ``policy.collect.collector`` section.
        env_manager: a built env manager (any registered one, or the self-play arena).
        policy: the policy's ``collect_mode``.

    ``collect(n_sample)`` returns ``(samples, episodes)``: the policy's train samples of ``ceil(n_sample / N) * N``
    steps, and the episodes that ended meanwhile.

    ``get_train_sample`` gets a settled rollout (:mod:`ding_lite.data.rollout`): ``valid`` (T, N) is False on the
    placeholder rows of an env worker's restart, and the episode flags (``terminated``, ``truncated``, ``done``) end
    each cut episode, truncated, at its last real step.
    """

    config: dict[str, Any] = dict(type="sample")

    def __init__(self, cfg: Mapping[str, Any], env_manager: EnvManagerLike, policy: Any) -> None:
        self.cfg = cfg
        self.env = env_manager
        self.policy = policy
        self.env_step = 0  # total env steps so far (all envs)
        self.episode_count = 0

    def continue_from(self, env_step: int) -> None:
        """Count env steps on from ``env_step`` (a resumed run's, or the run's global count that a collector actor
        is told before each collect): exploration schedules follow the whole run."""
        self.env_step = int(env_step)

    def collect(self, n_sample: int, train_iter: int = 0) -> tuple[Batch, list[EpisodeEnd]]:
        """Step the envs ``ceil(n_sample / env_num)`` times; returns ``(samples, finished episodes)``."""
        with naming_envs("collector"):
            rollout, episodes = self.rollout(math.ceil(n_sample / self.env.env_num))
        return self.policy.get_train_sample(settle(rollout)), episodes

    def rollout(self, t_len: int) -> tuple[dict[str, np.ndarray], list[EpisodeEnd]]:
        """Raw time-major rollout of ``t_len`` steps of every env (the hot loop of collection): not yet settled, and
        with a ``valid`` column only when some row is invalid.

        The envs step group by group (``env.groups``; one group for most managers): each group's actions are
        computed and sent, and its step is received once the other groups' actions are out, so with several groups
        (envpool's ``pipeline_groups``) one group's env stepping overlaps the next group's forward pass. Every env
        makes one step per row with the same policy; the forward pass sees one group's rows at a time."""
        forward, process = self.policy.forward, self.policy.process_transition
        groups: list[Any] = self.env.groups
        send, recv = self.env.send, self.env.recv
        # one group writes whole rows (plain indexing); several write their slice of each row
        rows_of = [None] if len(groups) == 1 else groups
        writer = _RolloutWriter(t_len, self.env.env_num)
        write = writer.write
        full = self.env.obs
        obs = [full] if len(groups) == 1 else [full[rows] for rows in groups]
        episodes: list[EpisodeEnd] = []
        with getattr(self.policy, "rollout_weights", nullcontext)():  # the weights are fixed during a rollout
            for t in range(t_len + 1):
                for k, rows in enumerate(rows_of):
                    if t > 0:  # finish the group's step of row t - 1 (it ran while the other groups were computed)
                        result = recv(k)
                        _write_result(writer, t - 1, result, rows)
                        if result.episodes:
                            episodes.extend(result.episodes)
                        obs[k] = result.obs
                    if t < t_len:
                        try:
                            output = forward(obs[k], env_step=self.env_step)
                        except Exception as exc:  # a NaN observation can fail the policy before check_finite
                            check_acted_on(obs[k], rows, self.env_step, exc)
                            raise
                        send(k, output[ACTION])
                        write(t, OBS, obs[k], rows)
                        for name, value in process(output).items():
                            write(t, name, value, rows)
                if t < t_len:
                    self.env_step += self.env.env_num
        self.episode_count += len(episodes)
        check_finite(writer.columns, self.env_step - t_len * self.env.env_num, self.env.env_num)
        return writer.columns, episodes

    def reset(self) -> None:
        """Reset the envs and the policy's per-env collect state."""
        with naming_envs("collector"):
            self.env.reset()
        self.policy.reset()

    def close(self) -> None:
        self.env.close()


@COLLECTOR_REGISTRY.register("episode")
class EpisodeCollector(SampleCollector):
    """Collects whole episodes: ``collect(n_episode=k)`` returns the train samples of the next ``k`` episodes to end,
    in the order they ended (each episode's steps go through ``get_train_sample`` as a (T, 1) rollout).

    Envs are stepped in chunks; unfinished episodes carry over, and episodes that ended beyond the ``k`` asked for
    are kept for the next call, so no env's experience is thrown away (taking the first ``k`` by env id instead
    would favour env 0 and waste the other envs' steps). An episode with an invalid row (cut by an env worker
    failure) never ended: it is dropped whole, so each episode handed over is settled and valid throughout."""

    config: dict[str, Any] = dict(
        type="episode",
        n_episode=1,  # episodes per collect when the caller gives no number (the serial pipeline does not)
    )

    chunk = 64  # steps per rollout call; episodes are cut out of the chunks

    def __init__(self, cfg: Mapping[str, Any], env_manager: Any, policy: Any) -> None:
        super().__init__(cfg, env_manager, policy)
        self._open: list[list[dict[str, np.ndarray]]] = [[] for _ in range(env_manager.env_num)]
        self._ready: list[tuple[dict[str, np.ndarray], EpisodeEnd]] = []  # ended episodes not yet returned

    def collect(self, n_sample: int | None = None, train_iter: int = 0,  # type: ignore[override]
                n_episode: int | None = None) -> tuple[Batch, list[EpisodeEnd]]:
        """Run until ``n_episode`` episodes ended (default: the config's ``n_episode``; ``n_sample`` is ignored);
        returns their samples (concatenated) and their stats."""
        if n_episode is None:
            n_episode = int(self.cfg.get("n_episode", self.config["n_episode"]))
        with naming_envs("collector"):
            while len(self._ready) < n_episode:
                self._cut_episodes(*self.rollout(self.chunk))
        taken, self._ready = self._ready[:n_episode], self._ready[n_episode:]
        samples = [self.policy.get_train_sample(settle(episode)) for episode, _ in taken]
        return (concat_batches(samples) if samples else {}), [end for _, end in taken]

    def _cut_episodes(self, rollout: dict[str, np.ndarray], ended: list[EpisodeEnd]) -> None:
        """Move the episodes that ended in ``rollout`` to ``_ready`` (by end step, then env id); keep the rest open."""
        stats: list[list[EpisodeEnd]] = [[] for _ in range(self.env.env_num)]
        for end in ended:  # per env in the order they ended
            stats[end.env_id].append(end)
        start = np.zeros(self.env.env_num, dtype=np.int64)
        valid = rollout.pop(VALID, None)
        ends = rollout[TERMINATED] | rollout[TRUNCATED] if valid is None else \
            rollout[TERMINATED] | rollout[TRUNCATED] | ~valid
        for t, i in zip(*np.nonzero(ends), strict=True):
            if valid is not None and not valid[t, i]:  # a cut episode's placeholder row: drop the episode
                self._open[i] = []
                start[i] = t + 1
                continue
            self._open[i].append({k: v[start[i]:t + 1, i] for k, v in rollout.items()})
            episode = {k: np.concatenate([p[k] for p in self._open[i]])[:, None] for k in rollout}
            end = stats[i].pop(0) if stats[i] else EpisodeEnd(  # a manager may flag an end it did not report
                int(i), float(episode[REWARD].sum()), len(episode[REWARD]), bool(rollout[TERMINATED][t, i]), {})
            self._ready.append((episode, end))
            self._open[i] = []
            start[i] = t + 1
        for i in range(self.env.env_num):
            if start[i] < len(rollout[REWARD]):
                self._open[i].append({k: v[start[i]:, i] for k, v in rollout.items()})

    def reset(self) -> None:
        """Reset the envs and the policy, and forget open and unreturned episodes."""
        super().reset()
        self._open = [[] for _ in range(self.env.env_num)]
        self._ready = []

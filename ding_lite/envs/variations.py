"""Env variations: one env family, many variations (levels, tasks), each picked by an integer id.

``env.variations`` (a count ``n``, meaning ids ``0..n-1``, or a list of ids) turns it on. Every env of a manager is
then wrapped in :class:`VariationEnv`, which chooses the variation of each episode and passes it to the env's
``reset(options={'variation': id})``; the id is also written into every ``info`` of the episode, so the collector's
and evaluator's finished episodes (``EpisodeEnd.info['variation']``) say which variation they were.

Schedule: env ``i`` of ``N`` plays ids ``ids[(i + k·N) mod len(ids)]`` for its episodes ``k = 0, 1, ...``, restarted
by every seeded reset. So the variations are spread over envs and episodes, and an evaluator that runs a multiple of
``len(ids)`` episodes (env ``i`` running the ``i``-th share, as it does) plays each variation equally often.

An env type that supports variations reads ``options['variation']`` in ``reset`` (or rebuilds itself there) and
may declare ``num_variations(cfg) -> int`` (a classmethod) so that ids out of range are config errors.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.envs.hooks import HasVariations
from ding_lite.errors import ConfigError
from ding_lite.registry import ENV_REGISTRY

VARIATION = "variation"  # info / reset-option key of the variation id
SUCCESS = "success"  # info key of an episode's success flag


def variation_ids(env_cfg: Mapping[str, Any]) -> list[int] | None:
    """The variation ids of an ``env`` section (None when ``env.variations`` is unset), checked against the env
    type's ``num_variations`` where it declares one. Raises a :class:`ConfigError` naming ``env.variations``."""
    spec = env_cfg.get("variations")
    if spec is None:
        return None
    if isinstance(spec, bool) or not isinstance(spec, (int, Sequence)) or isinstance(spec, str):
        raise ConfigError(f"env.variations must be a count or a list of ids, got {spec!r}")
    if isinstance(spec, int):
        if spec < 1:
            raise ConfigError(f"env.variations must be at least 1 (a count), got {spec}")
        ids = list(range(spec))
    else:
        ids = list(spec)
        if not ids or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in ids):
            raise ConfigError(f"env.variations must be a count or a non-empty list of int ids, got {spec!r}")
        ids = [int(v) for v in ids]
        if len(set(ids)) != len(ids):
            raise ConfigError(f"env.variations lists an id twice: {spec!r}")
    count = variation_count(env_cfg)
    bad = [v for v in ids if v < 0 or (count is not None and v >= count)]
    if bad:
        upper = f"{count - 1}" if count is not None else "..."
        raise ConfigError(f"env.variations: id {bad[0]} is out of range for env type '{env_cfg.get('type')}' "
                          f"(ids 0..{upper}): use ids in that range")
    return ids


def variation_count(env_cfg: Mapping[str, Any]) -> int | None:
    """How many variations the env type offers (its ``num_variations(cfg)``), or None if it does not say."""
    env_type = ENV_REGISTRY.get(env_cfg["type"])
    return int(env_type.num_variations(env_cfg)) if isinstance(env_type, HasVariations) else None


def scheduled_variation(ids: Sequence[int], slot: int, n_slots: int, episode: int) -> int:
    """The variation of env ``slot`` of ``n_slots``'s ``episode``-th episode since its last seeded reset."""
    return ids[(slot + episode * n_slots) % len(ids)]


class VariationSchedule:
    """Where each env of a manager is in its variation schedule, seen from the manager (VariationEnv's episode count:
    0 after a seeded reset or in a fresh env), so that an episode cut by the manager, which gets no final info from
    its env, still says which variation it was. Without ids (no ``env.variations``) it tags nothing."""

    def __init__(self, env_num: int) -> None:
        self.ids: list[int] | None = None
        self._episode = np.full(env_num, -1, dtype=np.int64)  # -1: before the first reset

    def follow(self, ids: Sequence[int]) -> None:
        self.ids = list(ids)

    def reset_all(self, seeded: bool) -> None:
        """Every env starts an episode: its schedule's first after a seeded reset, else its next."""
        self._episode[:] = 0 if seeded else self._episode + 1

    def next_episode(self, envs: Sequence[int]) -> None:
        """``envs`` ended (or had cut) their episodes and start their next ones."""
        for i in envs:
            self._episode[i] += 1

    def fresh(self, envs: Sequence[int]) -> None:
        """``envs`` are new envs (a restarted worker's): their schedules start again."""
        for i in envs:
            self._episode[i] = 0

    def tags(self, i: int) -> dict[str, Any]:
        """Env ``i``'s running episode's variation as its final info would hold it (empty without variations)."""
        if not self.ids:
            return {}
        return {VARIATION: scheduled_variation(self.ids, i, len(self._episode), max(int(self._episode[i]), 0))}


class VariationEnv(gym.Wrapper):
    """Plays env slot ``slot`` of ``n_slots``'s share of ``ids`` (see the module docstring) and tags every info.

    Args:
        env: an env whose ``reset`` takes ``options={'variation': id}``.
        ids: the variation ids to play.
        slot / n_slots: this env's index in its manager and the manager's env count.
    """

    def __init__(self, env: gym.Env, ids: Sequence[int], slot: int = 0, n_slots: int = 1) -> None:
        super().__init__(env)
        self.ids = list(ids)
        self.slot, self.n_slots = slot, n_slots
        self.episode = 0  # episodes started since the last seeded reset
        self.variation = scheduled_variation(self.ids, slot, n_slots, 0)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        if seed is not None:  # a seeded reset restarts the schedule, so evaluations are repeatable
            self.episode = 0
        self.variation = scheduled_variation(self.ids, self.slot, self.n_slots, self.episode)
        self.episode += 1
        obs, info = self.env.reset(seed=seed, options={**(options or {}), VARIATION: self.variation})
        return obs, {**info, VARIATION: self.variation}

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, VARIATION: self.variation}


def _build_variation_env(env_cfg: dict[str, Any], ids: list[int], slot: int, n_slots: int) -> gym.Env:
    from ding_lite.envs.gym_env import build_env

    return VariationEnv(build_env(env_cfg), ids, slot, n_slots)


def variation_env_fns(env_cfg: Mapping[str, Any], env_num: int) -> list[Callable[[], gym.Env]] | None:
    """Picklable env builders for a manager of ``env_num`` envs when the section has variations, else None."""
    ids = variation_ids(env_cfg)
    if ids is None:
        return None
    return [partial(_build_variation_env, dict(env_cfg), ids, i, env_num) for i in range(env_num)]


def per_variation_table(variations: Sequence[Any], returns: Sequence[float] | np.ndarray,
                        successes: Sequence[Any] | None = None) -> dict[str, dict[str, Any]]:
    """Mean return, success rate (None where no episode reported ``success``) and episode count per variation id.

    Episodes without a variation id (None) are left out. Keys are ids as strings (JSON keys), in id order."""
    rows: dict[int, list[tuple[float, Any]]] = {}
    flags = list(successes) if successes is not None else [None] * len(returns)
    for v, r, s in zip(variations, returns, flags, strict=True):
        if v is not None:
            rows.setdefault(int(v), []).append((float(r), s))
    table: dict[str, dict[str, Any]] = {}
    for v in sorted(rows):
        rets = [r for r, _ in rows[v]]
        succ = [bool(s) for _, s in rows[v] if s is not None]
        table[str(v)] = {"return_mean": float(np.mean(rets)), "success_rate": float(np.mean(succ)) if succ else None,
                         "episodes": len(rets)}
    return table


def log_per_variation(logger: Any, table: Mapping[str, Mapping[str, Any]], step: int, prefix: str = "eval") -> None:
    """Scalars ``<prefix>/variation_<id>/return_mean`` (and ``success_rate`` where known) of a table."""
    for v, row in table.items():
        logger.scalar(f"{prefix}/variation_{v}/return_mean", row["return_mean"], step)
        if row.get("success_rate") is not None:
            logger.scalar(f"{prefix}/variation_{v}/success_rate", row["success_rate"], step)

"""The optional hooks of env types and env managers, named as Protocols (checked with ``isinstance`` on the registered
class): what an env type or manager may offer beyond building envs, and what the pipelines then do with it."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ChecksConfig(Protocol):
    """An env type that checks its ``env`` section before anything is built or written (e.g. an unknown env id):
    ``check_config(cfg)`` raises a :class:`~ding_lite.errors.ConfigError` naming the culprit. A classmethod."""

    def check_config(self, cfg: Mapping[str, Any]) -> None: ...


@runtime_checkable
class HasVariations(Protocol):
    """An env type that is a family of variations (``env.variations``): ``num_variations(cfg)`` says how many it
    offers, so that ids out of range are config errors. A classmethod."""

    def num_variations(self, cfg: Mapping[str, Any]) -> int: ...


@runtime_checkable
class BuildsOwnEnvs(Protocol):
    """An env manager that makes its envs itself from the ``env`` section (envpool) instead of taking one callable
    per env: ``from_env_config(env_cfg, env_num, manager_cfg)`` returns the built manager. A classmethod."""

    def from_env_config(self, env_cfg: Mapping[str, Any], env_num: int, manager_cfg: Mapping[str, Any]) -> Any: ...


@runtime_checkable
class SeatedGames(Protocol):
    """An env type whose envs are packed multi-agent games (:mod:`ding_lite.envs.multi_agent`): what makes a run
    self-play. ``seat_layout(cfg)`` builds one game, closes it and returns its
    :class:`~ding_lite.envs.multi_agent.SeatLayout`. A classmethod."""

    def seat_layout(self, cfg: Mapping[str, Any]) -> Any: ...


@runtime_checkable
class EvalConfig(Protocol):
    """An env type whose evaluation plays another ``env`` section than training: ``eval_config(cfg)`` returns it
    (Atari: whole games and unclipped rewards, so that an evaluation reports the game's score whatever the
    training-only settings, ``episodic_life`` and reward clipping). A classmethod."""

    def eval_config(self, cfg: Mapping[str, Any]) -> Mapping[str, Any]: ...

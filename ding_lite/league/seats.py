"""Who sits where in a self-play game: whether a config plays a multi-agent game, the game's seats, the checks of
``league.seats`` against them, and a finished game's result for the learner (a win, draw or loss against its
opponents' best score). Read before anything is built (the config checks), by the arena while games are played and by
single-agent wrappers of a game (``dizoo``'s snake against scripted snakes)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ding_lite.envs.hooks import SeatedGames
from ding_lite.envs.multi_agent import SeatLayout
from ding_lite.errors import ConfigError
from ding_lite.league.payoff import DRAW, LOSS, WIN
from ding_lite.registry import ENV_REGISTRY, import_modules

LEARNER = "learner"  # league.seats' name of the learner's seats


def is_selfplay_config(cfg: Mapping[str, Any]) -> bool:
    """Whether a run of ``cfg`` is self-play: its env type plays multi-agent games (``env.type='pettingzoo'``, or
    another type with :class:`~ding_lite.envs.hooks.SeatedGames`' ``seat_layout``). Builds nothing."""
    env_cfg = cfg["env"]
    import_modules(env_cfg.get("import_names"), "env")  # a custom env type registers itself when imported
    return isinstance(ENV_REGISTRY.get(env_cfg["type"]), SeatedGames)


def check_single_agent(cfg: Mapping[str, Any]) -> None:
    """Refuse a multi-agent game where a pipeline trains one agent on a plain env (serial, gsl, a sweep's trials):
    a game would fail there on its packed action space, with no word of -m selfplay."""
    if is_selfplay_config(cfg):
        raise ConfigError(f"env type '{cfg['env']['type']}' plays a multi-agent game, and this pipeline trains one "
                          f"agent on a single-agent env: train a game with -m selfplay (or -m parallel, which runs "
                          f"self-play on Ray)")


def game_layout(env_cfg: Mapping[str, Any]) -> SeatLayout:
    """The seat layout of the section's multi-agent game (one game built and closed); a :class:`ConfigError` where
    the env type plays none."""
    import_modules(env_cfg.get("import_names"), "env")
    env_type = ENV_REGISTRY.get(env_cfg["type"])
    if not isinstance(env_type, SeatedGames):
        raise ConfigError(f"env type '{env_cfg['type']}' is not a multi-agent game: -m selfplay needs "
                          f"env.type='pettingzoo' (or another env with seats)")
    return env_type.seat_layout(env_cfg)


def game_score(scores: Sequence[float], learner_seat: int, opponent_seats: Sequence[int]) -> float:
    """The learner's result from a finished game's per-seat scores: a win if its score beats every opponent's, a
    draw if it ties the best one, a loss otherwise."""
    best = max(scores[s] for s in opponent_seats)
    mine = scores[learner_seat]
    return WIN if mine > best else DRAW if mine == best else LOSS


def check_seat_count(seats: Sequence[str], layout: SeatLayout) -> None:
    """``league.seats`` must give every seat of the game one player; a game of one agent has no seat to play
    against (MPE's ``simple_v3``)."""
    if layout.n_seats == 1:
        raise ConfigError(f"the game has one agent ({layout.agents[0]}) and self-play needs an opponent seat: train a "
                          f"one-agent game as a single-agent gymnasium env with -m serial")
    if len(seats) != layout.n_seats:
        raise ConfigError(f"league.seats assigns {len(seats)} players ({list(seats)}) but the game has "
                          f"{layout.n_seats} seats ({', '.join(layout.agents)}): give one entry per seat")


def check_learner_seat(seats: Sequence[str], layout: SeatLayout) -> None:
    """``league.seats`` must give the learner a seat and leave one to an opponent (a game's result is the learner's
    score against its opponents'). In a turn-based game it plays one seat: each learner row is one of its own turns,
    and a second learner seat's row would be a move that did nothing while the first one moved."""
    n_learner = sum(s == LEARNER for s in seats)
    if n_learner == 0:
        raise ConfigError(f"league.seats={list(seats)} has no 'learner' seat")
    if n_learner == len(seats):
        raise ConfigError(f"league.seats={list(seats)} has no opponent seat: give at least one seat to 'pool' (its "
                          f"snapshots) or a scripted opponent")
    if n_learner > 1 and layout.turn_based:
        raise ConfigError(f"league.seats={list(seats)} gives the learner {n_learner} seats of a turn-based game "
                          f"({', '.join(layout.agents)}), where it can train on one: give it one seat, and "
                          f"league.swap_seats=True to play every seat in turn")

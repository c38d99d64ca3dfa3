"""The self-play league across Ray actors: what the self-play game (:class:`~ding_lite.runtime.selfplay.SelfPlayGame`)
gives a Ray collection (:class:`~ding_lite.distributed.collection.RayCollection`).

The driver holds the opponent pool (snapshot files, payoff table, Elo); each collector actor plays its own games
against its own frozen opponents. A new snapshot goes into Ray's object store once (``ray.put`` of its state dict) and
every actor that draws it loads it from there; with each collect an actor is told the pool's snapshot names, their
sampling probabilities and the refs of their weights (:class:`LeagueLink`'s message, taken by :class:`ActorLeague`).
Game results come back with the collected episodes and are booked in the driver's pool.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from ding_lite.build import build
from ding_lite.envs.env_manager import EpisodeEnd
from ding_lite.league.arena import SelfPlayEnvManager
from ding_lite.league.opponents import PlayerSet
from ding_lite.league.seats import game_layout


class LeagueView(NamedTuple):
    """What a collector actor needs of the pool for its next games."""

    names: list[str]  # snapshots, oldest first, then the pool's baselines
    probs: list[float]  # their sampling probabilities
    refs: dict[str, Any]  # name -> object ref of its model state dict


class ActorLeague:
    """A collector actor's side of the league (pickled to each actor, empty until :meth:`wrap`): its games wrapped in
    :class:`~ding_lite.league.arena.SelfPlayEnvManager`, its own frozen opponents (weights from the object store, by
    snapshot name), drawn from the pool as the driver last described it."""

    def __init__(self) -> None:
        self.view = LeagueView([], [], {})
        self.env: Any = None

    def wrap(self, cfg: Any, seed: int, inner: Any) -> SelfPlayEnvManager:
        """The arena over the actor's env manager ``inner`` (its envs seeded from ``seed``)."""
        layout = game_layout(cfg.env)
        league = cfg.league
        self._rng = np.random.default_rng(seed)
        players = PlayerSet(lambda mode: build(cfg, "policy", enable_field=[mode]), self._snapshot, seed,
                            layout.has_mask, str(league.snapshot_act))
        self.env = SelfPlayEnvManager(inner, layout, league.seats, players, self._draw, None, bool(league.swap_seats),
                                      seed, int(league.opening_plies))
        return self.env

    def update(self, view: LeagueView) -> None:
        """The pool as the driver sees it now (names, probabilities, weight refs); applies to games that start
        from now on. A game drawn earlier may still be playing a snapshot the pool has evicted since, and load it
        only when its seat first moves: the refs of the snapshots this actor's games still play stay."""
        playing = {str(r) for r in self.env.roles.ravel() if r is not None}
        kept = {n: ref for n, ref in self.view.refs.items() if n in playing and n not in view.refs}
        self.view = LeagueView(view.names, view.probs, {**kept, **view.refs})

    def _draw(self) -> str:
        return str(self._rng.choice(self.view.names, p=np.asarray(self.view.probs) / sum(self.view.probs)))

    def _snapshot(self, name: str) -> tuple[dict, str]:
        import ray

        return ray.get(self.view.refs[name]), f"object store snapshot '{name}'"


class LeagueLink:
    """The driver's side of the league on Ray: the message for each collect (the pool, each snapshot's weights put
    in the object store once) and the game results of each batch, booked by ``record_game``."""

    def __init__(self, ray: Any, pool: Any, record_game: Callable[[Mapping[str, float]], None]) -> None:
        self.ray, self.pool, self.record_game = ray, pool, record_game
        self.refs: dict[str, Any] = {}  # snapshot name -> object ref of its model state dict

    def message(self) -> LeagueView:
        """The pool for the actors."""
        for name in self.pool.snapshots:
            if name not in self.refs:
                self.refs[name] = self.ray.put(self.pool.load_weights(name))
        for name in [n for n in self.refs if n not in self.pool.snapshots]:
            del self.refs[name]  # evicted: the object store frees it once no actor holds it
        names, probs = self.pool.candidates()  # baselines have no weights: actors build them by name
        return LeagueView(names, [float(p) for p in probs], {n: self.refs[n] for n in self.pool.snapshots})

    def received(self, episodes: list[EpisodeEnd]) -> None:
        """Book the results of the games that ended in a batch."""
        for end in episodes:
            if "results" in end.info:
                self.record_game(end.info["results"])

"""Self-play on Ray (``-m parallel`` with a config that has a multi-agent game and ``league.seats``).

The driver holds the learner, the buffer, the opponent pool (snapshot files, payoff table, Elo) and the evaluation;
each collector actor holds its own games and its own frozen opponents. A new snapshot goes into Ray's object store
once (``ray.put`` of its state dict) and every actor that draws it loads it from there; with each collect an actor is
told the pool's snapshot names, their sampling probabilities and the refs of their weights. Game results come back
with the collected episodes and are recorded in the driver's payoff table.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from ding_lite.build import ConfigLike, build
from ding_lite.distributed.actors import CollectorShell, CollectOutput
from ding_lite.distributed.collection import RayCollection
from ding_lite.distributed.config import check_parallel_config
from ding_lite.distributed.remote import ActorFactory, RemoteCollectors, Weights
from ding_lite.distributed.session import import_ray, ray_session
from ding_lite.entry.selfplay import SelfPlayParts, probe_layout
from ding_lite.league.arena import SelfPlayEnvManager, game_layout
from ding_lite.league.opponents import PlayerSet
from ding_lite.runtime.train_loop import RunOptions, run_training, start_run
from ding_lite.utils.log import setup_console_logging


def parallel_selfplay_pipeline(config: ConfigLike, seed: int = 0, max_env_step: int | None = None,
                               max_train_iter: int | None = None, *, address: str | None = None,
                               exp_dir: str | Path | None = None, resume: bool = False,
                               load_ckpt: str | Path | None = None, strict: bool = False,
                               overrides: tuple[str, ...] = (), progress: bool = True) -> dict[str, Any]:
    """:func:`~ding_lite.entry.selfplay.selfplay_pipeline` with the collectors as Ray actors; arguments as for
    :func:`~ding_lite.entry.parallel.parallel_pipeline`."""
    ray = import_ray()
    with start_run(config, RunOptions(seed, max_env_step, max_train_iter, exp_dir, resume, load_ckpt, strict,
                                             overrides, progress)) as run:
        cfg = run.cfg
        check_parallel_config(cfg.parallel)
        probe_layout(cfg)  # fills the model shapes and env.end_when_out before the config travels to the actors
        setup_console_logging()
        with ray_session(ray, address, cfg.parallel.num_cpus), \
                SelfPlayParts(cfg, seed, run.exp_dir, run.resume_from,
                              collection=partial(ray_league_collection, ray, seed),
                              best_return=run.best_return) as parts:
            return run_training(run, parts)


def ray_league_collection(ray: Any, seed: int, parts: SelfPlayParts) -> RayCollection:
    """The collection of a self-play run on Ray actors (``parts``' ``collection``): each actor plays its own games,
    told the league of ``parts`` before each collect; game results come back to ``parts.record_game``."""
    collection = RayCollection(ray, parts.cfg, seed, parts.policy, shell=SelfPlayCollectorShell,
                               collectors=partial(_SelfPlayRemoteCollectors, league=parts))
    try:
        collection.wait_ready()
    except BaseException:
        collection.close()
        raise
    return collection


class LeagueView(NamedTuple):
    """What a collector actor needs of the pool for its next games."""

    names: list[str]  # snapshots, oldest first, then the pool's baselines
    probs: list[float]  # their sampling probabilities
    refs: dict[str, Any]  # name -> object ref of its model state dict


class SelfPlayCollectorShell(CollectorShell):
    """A collector actor of a self-play run: its own games wrapped in :class:`SelfPlayEnvManager`, its own frozen
    opponents (weights from the object store, by snapshot name), the configured collector over the wrapper."""

    def _games(self, inner: Any) -> SelfPlayEnvManager:
        layout = game_layout(self.cfg.env)
        self.view = LeagueView([], [], {})
        self._rng = np.random.default_rng(self.seed)
        players = PlayerSet(lambda mode: build(self.cfg, "policy", enable_field=[mode]), self._snapshot, self.seed,
                            layout.has_mask, str(self.cfg.league.snapshot_act))
        league = self.cfg.league
        return SelfPlayEnvManager(inner, layout, league.seats, players, self._draw, None, bool(league.swap_seats),
                                  self.seed, int(league.opening_plies))

    def set_league(self, view: LeagueView) -> None:
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


class _SelfPlayRemoteCollectors(RemoteCollectors):
    """The remote collectors, each told the league view before each collect; game results go to ``league``'s
    ``record_game``. Each snapshot's weights go into the object store once."""

    def __init__(self, ray: Any, cfg: Any, factory: ActorFactory, weights: Weights, league: SelfPlayParts) -> None:
        super().__init__(ray, cfg, factory, weights)
        self.league = league
        self.refs: dict[str, Any] = {}  # snapshot name -> object ref of its model state dict

    def view(self) -> LeagueView:
        """The pool for the actors; each snapshot's weights are put in the object store once."""
        pool = self.league.pool
        for name in pool.snapshots:
            if name not in self.refs:
                self.refs[name] = self.ray.put(pool.load_weights(name))
        for name in [n for n in self.refs if n not in pool.snapshots]:
            del self.refs[name]  # evicted: the object store frees it once no actor holds it
        names, probs = pool.candidates()  # baselines have no weights: actors build them by name
        return LeagueView(names, [float(p) for p in probs], {n: self.refs[n] for n in pool.snapshots})

    def _submit(self, slot: int, ref: Any, version: int, n_sample: int, train_iter: int) -> None:
        self.actors[slot].set_league.remote(self.view())  # an actor runs its calls in order
        super()._submit(slot, ref, version, n_sample, train_iter)

    def _account(self, slot: int, out: CollectOutput, train_iter: int) -> None:
        super()._account(slot, out, train_iter)
        for end in out.episodes:
            if "results" in end.info:
                self.league.record_game(end.info["results"])

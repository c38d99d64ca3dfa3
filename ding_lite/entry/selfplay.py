"""Self-play pipeline: the serial training loop over a multi-agent game whose other seats are played by frozen
snapshots of the learner (an opponent pool in ``<exp>/league/``) and scripted baselines."""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from ding_lite.build import ConfigLike, build, build_env_manager, check_env_config, fill_model_shapes
from ding_lite.errors import CheckpointError, ConfigError
from ding_lite.league.arena import LEARNER, SelfPlayEnvManager, check_learner_seat, check_seat_count, game_layout
from ding_lite.league.evaluator import SelfPlayEvaluator
from ding_lite.league.opponents import SNAPSHOT_ACTS, PlayerSet
from ding_lite.league.payoff import PayoffTable
from ding_lite.league.pool import LEARNER as ELO_LEARNER
from ding_lite.league.pool import OpponentPool
from ding_lite.registry import OPPONENT_REGISTRY
from ding_lite.runtime.collection import LocalCollection
from ding_lite.runtime.train_loop import RunOptions, run_training, start_run
from ding_lite.utils.checkpoint import load_checkpoint, load_policy_weights
from ding_lite.utils.seed import SeedPlan

LEAGUE_KEY = "league"  # the league's entry in a learner checkpoint of a self-play run


def selfplay_pipeline(config: ConfigLike, seed: int = 0, max_env_step: int | None = None,
                      max_train_iter: int | None = None, *, exp_dir: str | Path | None = None, resume: bool = False,
                      load_ckpt: str | Path | None = None, strict: bool = False, overrides: tuple[str, ...] = (),
                      progress: bool = True) -> dict[str, Any]:
    """Train the learner against its own snapshots and baselines; arguments as for
    :func:`~ding_lite.entry.serial.serial_pipeline`. ``result.json`` gains ``league`` (snapshots, payoff table, Elo
    ratings) and ``eval_table`` (win / draw / loss per eval opponent).

    Example::

        from ding_lite.entry.selfplay import selfplay_pipeline
        selfplay_pipeline('dizoo/board_games/snake/config/snake_arena_dqn_config.py', seed=0, max_env_step=20000)
    """
    with start_run(config, RunOptions(seed, max_env_step, max_train_iter, exp_dir, resume, load_ckpt, strict,
                                      overrides, progress)) as run, \
            SelfPlayParts(run.cfg, seed, run.exp_dir, run.resume_from, best_return=run.best_return) as parts:
        return run_training(run, parts)


def league_state(checkpoint: Path) -> Mapping[str, Any]:
    """The league state saved in a learner checkpoint of a self-play run (for ``--resume``)."""
    state = load_checkpoint(checkpoint).get(LEAGUE_KEY)
    if not isinstance(state, Mapping):
        raise CheckpointError(f"--resume: {checkpoint} holds no league state (not written by a self-play run of "
                              f"this version): start a new run, or --load-ckpt it to train on from its weights "
                              f"with a new pool")
    return state


def check_league(league: Mapping[str, Any], layout: Any) -> None:
    """The ``league`` section must fit the game (before anything is built or written): ``league.seats`` gives every
    seat a player with a known name, snapshots are taken every ``snapshot_freq >= 1`` env steps and act in a known
    way."""
    freq = league["snapshot_freq"]
    if isinstance(freq, bool) or not isinstance(freq, (int, float)) or freq < 1 or int(freq) != freq:
        raise ConfigError(f"league.snapshot_freq must be a whole number of env steps, at least 1, got {freq!r}")
    plies = league["opening_plies"]
    if isinstance(plies, bool) or not isinstance(plies, int) or plies < 0:
        raise ConfigError(f"league.opening_plies must be a whole number of plies, 0 or more, got {plies!r}")
    if league["snapshot_act"] not in SNAPSHOT_ACTS:
        raise ConfigError(f"league.snapshot_act must be one of {', '.join(SNAPSHOT_ACTS)}, got "
                          f"{league['snapshot_act']!r}")
    seats = list(league["seats"])
    check_seat_count(seats, layout)
    for name in seats + list(league["eval_opponents"]):
        if name not in (LEARNER, "pool") and name not in OPPONENT_REGISTRY:
            raise ConfigError(f"league: unknown player '{name}' (use 'learner', 'pool' or a registered opponent: "
                              f"{', '.join(OPPONENT_REGISTRY.names())})")
    for name in league.get("baselines", []):
        if name not in OPPONENT_REGISTRY:
            raise ConfigError(f"league.baselines: unknown scripted opponent '{name}' (registered: "
                              f"{', '.join(OPPONENT_REGISTRY.names())})")
    check_learner_seat(seats)


def probe_layout(cfg: Any) -> Any:
    """Set the game up from one probe env: its seat layout (fills the model shapes, and ``env.end_when_out`` with
    the learner's seats where that is unset and seats are not swapped)."""
    check_env_config(cfg.env)
    league = cfg.league
    layout = game_layout(cfg.env)
    check_league(league, layout)
    if "end_when_out" in cfg.env and not cfg.env.end_when_out and not league.swap_seats:
        cfg.env.end_when_out = [k for k, s in enumerate(league.seats) if s == LEARNER]
    fill_model_shapes(cfg, gym.spaces.Box(-1, 1, layout.obs_shape), gym.spaces.Discrete(layout.n_actions))
    return layout


class SelfPlayParts:
    """Every part of a self-play run (the serial pipeline's parts, see ``run_training``), built before anything is
    written: the learner's policy, the opponent pool with the frozen players, the evaluator over its own games, the
    buffer, and the collection: here by default (:class:`~ding_lite.runtime.collection.LocalCollection` over the games
    wrapped in :class:`SelfPlayEnvManager`), or what ``collection`` builds from these parts (the parallel pipeline's
    collector actors, which play their own games)."""

    def __init__(self, cfg: Any, seed: int, exp_dir: Path, resume_from: Path | None = None,
                 collection: Callable[[SelfPlayParts], Any] | None = None, *,
                 best_return: float = -math.inf) -> None:
        self.cfg, self.league = cfg, cfg.league
        seeds = SeedPlan(seed)
        self.layout = probe_layout(cfg)
        self.pool = OpponentPool(exp_dir / "league", self.league, seed)
        self.resumed = resume_from is not None
        if resume_from is not None:  # the league as it was when that learner checkpoint was written
            self.pool.load_state_dict(league_state(resume_from), str(resume_from))
        self.baselines = PayoffTable()  # training games against scripted seats
        self.policy = build(cfg, "policy")
        masked = self.layout.has_mask
        act = str(self.league.snapshot_act)
        self.players = PlayerSet(self._frozen_policy, self._snapshot, seed, masked, act)
        self.eval_players = PlayerSet(self._frozen_policy, self._snapshot, seeds.eval_players, masked, act)
        for name in self.pool.snapshots:  # a resumed pool whose snapshots do not fit the network fails here
            self.eval_players.get(name)
        self.eval_players.keep_only(set())
        self.collector_env: Any = None  # the local collection's arena (None where actors collect)
        self.evaluator_env = build_env_manager(cfg.env, cfg.env.evaluator_env_num, seeds.evaluator)
        try:
            if collection is None:
                inner = build_env_manager(cfg.env, cfg.env.collector_env_num, seed)
                self.collector_env = SelfPlayEnvManager(inner, self.layout, self.league.seats, self.players,
                                                        self.pool.sample, self.record_game, self.league.swap_seats,
                                                        seed, int(self.league.opening_plies))
            self.logger: Any = None
            section = cfg.policy.eval.evaluator
            self.evaluator = SelfPlayEvaluator(self.evaluator_env, self.layout, self.league.seats, self.eval_players,
                                               self.league.swap_seats, self.policy.eval_mode, self._eval_opponents,
                                               cfg.env.n_evaluator_episode, int(section.eval_freq),
                                               cfg.env.stop_value, seeds.evaluator, best_return=best_return,
                                               on_table=self.log_eval)
            self.collection = LocalCollection(cfg, self.collector_env, self.policy) if collection is None \
                else collection(self)
        except BaseException:
            self.evaluator_env.close()
            if self.collector_env is not None:
                self.collector_env.close()
            raise
        self.collector = _SnapshotCollector(self.collection.collector, self)
        self.buffer = None if cfg.policy.on_policy else build(cfg, "policy.other.replay_buffer", seed=seed)
        self.learner: Any = None

    def _frozen_policy(self, mode: str) -> Any:
        return build(self.cfg, "policy", enable_field=(mode,))

    def _snapshot(self, name: str) -> tuple[dict, str]:
        return self.pool.load_weights(name), str(self.pool.path(name))

    def record_game(self, results: Mapping[str, float]) -> None:
        """A finished training game of one learner seat: ``{opponent: the learner's score against that opponent's
        best seat}``, each booked against its own opponent (a game against a snapshot evicted meanwhile is not
        counted)."""
        for name, score in results.items():
            if name in OPPONENT_REGISTRY:
                self.baselines.record(name, score)
            else:  # a snapshot
                self.pool.record(name, score)

    def _eval_opponents(self) -> list[str]:
        newest = self.pool.snapshots[-int(self.league.eval_latest):] if int(self.league.eval_latest) > 0 else []
        return list(self.league.eval_opponents) + newest[::-1]

    def attach(self, learner: Any, logger: Any) -> None:
        """The initial snapshot (unless a resumed pool has snapshots) once the experiment folder exists; the pool's
        state goes into every learner checkpoint from now on."""
        self.learner, self.logger = learner, logger
        self.collection.log_to(logger)
        learner.save_with_checkpoints(LEAGUE_KEY, self.pool.checkpoint_state)
        if self.resumed:
            strays = self.pool.remove_strays()
            if strays and logger is not None:
                logger.info(f"[league] resumed: removed {len(strays)} snapshot(s) written after the checkpoint "
                            f"({', '.join(sorted(strays))})")
        if not self.pool.snapshots:
            self.pool.add(self.policy.learn_mode.state_dict()["model"], learner.env_step)

    def snapshot_due(self, env_step: int) -> None:
        """Add a snapshot every ``league.snapshot_freq`` env steps; log the league's state."""
        if env_step - self.pool.last_added < int(self.league.snapshot_freq):
            return
        name = self.pool.add(self.policy.learn_mode.state_dict()["model"], env_step)
        if self.logger is not None:
            self.logger.scalar("selfplay/elo_learner", self.pool.elo.rating(ELO_LEARNER), env_step)
            self.logger.scalar("selfplay/pool_size", len(self.pool.snapshots), env_step)
            for snap, prob in zip(*self.pool.candidates(), strict=True):
                self.logger.scalar(f"selfplay/sample_prob/{snap}", float(prob), env_step)
            for snap in self.pool.snapshots:
                self.logger.scalar(f"selfplay/win_rate/{snap}", self.pool.payoff.win_rate(snap), env_step)
                self.logger.scalar(f"selfplay/elo/{snap}", self.pool.elo.rating(snap), env_step)
            self.logger.info(f"[league] {name} added; learner Elo {self.pool.elo.rating(ELO_LEARNER):.0f}, "
                             f"{len(self.pool.snapshots)} snapshots")

    def log_eval(self, table: dict[str, dict[str, float]], env_step: int) -> None:
        """Win rates of an evaluation in tensorboard and the text log."""
        if self.logger is None:
            return
        for opponent, row in table.items():
            self.logger.scalar(f"selfplay/eval_win_rate/{opponent}", row["win_rate"], env_step)
        self.logger.info("[selfplay eval] " + ", ".join(
            f"{o}: W {r['win']:.2f} D {r['draw']:.2f} L {r['loss']:.2f}" for o, r in table.items()))

    def stats(self) -> dict[str, Any]:
        return {"league": {**self.pool.summary(), "elo_learner": round(self.pool.elo.rating(ELO_LEARNER), 2),
                           "baselines": self.baselines.summary()},
                "eval_table": self.evaluator.table, **self.collection.stats()}

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> Any:
        """The learner's eval mode with ``ckpt``'s weights (None: the current ones) over ``n_episode`` games per
        eval opponent on fresh seeds; the run has ended, so loading into the shared model disturbs nothing."""
        if ckpt is not None:
            load_policy_weights(self.policy.eval_mode, ckpt)
        return SelfPlayEvaluator(self.evaluator_env, self.layout, self.league.seats, self.eval_players,
                                 self.league.swap_seats, self.policy.eval_mode, self._eval_opponents, n_episode, 1,
                                 None, seed).eval()

    def env_restarts(self) -> dict[str, int]:
        return {**self.collection.env_restarts(), "evaluator": self.evaluator_env.restart_count}

    def close(self) -> None:
        self.collection.close()
        self.evaluator_env.close()

    def __enter__(self) -> SelfPlayParts:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _SnapshotCollector:
    """The run's collector (local, or the driver-side stand-in of the actors), plus the pool's snapshot schedule
    after each collect."""

    def __init__(self, collector: Any, parts: SelfPlayParts) -> None:
        self.inner, self._parts = collector, parts

    @property
    def env_step(self) -> int:
        return int(self.inner.env_step)

    def continue_from(self, env_step: int) -> None:
        self.inner.continue_from(env_step)

    def collect(self, n_sample: int, train_iter: int = 0) -> Any:
        out = self.inner.collect(n_sample, train_iter)
        self._parts.snapshot_due(self.env_step)
        return out

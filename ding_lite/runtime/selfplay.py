"""What is played in a self-play run, one of the two game choices of a run's parts (:mod:`ding_lite.runtime.parts`;
the other is the config's plain env): the learner against frozen snapshots of itself (an opponent pool in
``<exp>/league/``) and scripted baselines, in the self-play arena over a multi-agent game; evaluated in games of its
own against the ``league.eval_opponents``."""
from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from ding_lite.build import build, build_env_manager, check_env_config, check_model_shapes, fill_model_shapes
from ding_lite.errors import CheckpointError, ConfigError
from ding_lite.league.arena import SelfPlayEnvManager
from ding_lite.league.evaluator import SelfPlayEvaluator
from ding_lite.league.opponents import SNAPSHOT_ACTS, PlayerSet
from ding_lite.league.payoff import PayoffTable
from ding_lite.league.pool import LEARNER as ELO_LEARNER
from ding_lite.league.pool import OpponentPool
from ding_lite.league.seats import LEARNER, check_learner_seat, check_seat_count, game_layout
from ding_lite.registry import OPPONENT_REGISTRY, did_you_mean
from ding_lite.runtime.parts import StartCheckpoint
from ding_lite.runtime.train_loop import number_text
from ding_lite.utils.checkpoint import load_checkpoint, load_policy_weights
from ding_lite.utils.seed import SeedPlan
from ding_lite.worker.evaluator import EvalResult, eval_step_cap

LEAGUE_KEY = "league"  # the league's entry in a learner checkpoint of a self-play run
BASELINES_KEY = "baselines"  # the baselines' payoff table in the league's entry (beside the pool's state)


def league_state(checkpoint: Path, contents: Mapping[str, Any]) -> Mapping[str, Any]:
    """The league state saved in a learner checkpoint of a self-play run (for ``--resume``): ``contents``, the
    checkpoint ``checkpoint`` as already read (the run reads it once)."""
    state = contents.get(LEAGUE_KEY)
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
    if not league["eval_opponents"]:  # before: every evaluation's return was NaN and no best checkpoint was kept
        raise ConfigError("league.eval_opponents is empty: the eval return is the win rate against the first of "
                          "them; name one or more scripted opponents, e.g. --set \"league.eval_opponents=['random']\"")
    seats = list(league["seats"])
    check_seat_count(seats, layout)
    for name in seats + list(league["eval_opponents"]):
        if name not in (LEARNER, "pool") and name not in OPPONENT_REGISTRY:
            raise ConfigError(f"league: unknown player '{name}'{_did_you_mean(name, [LEARNER, 'pool'])} (use "
                              f"'learner', 'pool' or a registered opponent: {', '.join(OPPONENT_REGISTRY.names())})")
    for name in league.get("baselines", []):
        if name not in OPPONENT_REGISTRY:
            raise ConfigError(f"league.baselines: unknown scripted opponent '{name}'{_did_you_mean(name)} "
                              f"(registered: {', '.join(OPPONENT_REGISTRY.names())})")
    check_learner_seat(seats, layout)


def _did_you_mean(name: str, also: list[str] | None = None) -> str:
    return did_you_mean(name, list(OPPONENT_REGISTRY.names()) + (also or []))


def resolve_selfplay_config(cfg: Any) -> None:
    """The config's part of a self-play run's resolution (before anything is built or written): the env and the
    ``league`` section checked against the game's seat layout (from one probe game), the model shapes filled, and
    ``env.end_when_out`` set to the learner's seats where that is unset and seats are not swapped; model shapes that
    the config gives checked against the game's."""
    check_env_config(cfg.env)
    league = cfg.league
    layout = game_layout(cfg.env)
    check_league(league, layout)
    if "end_when_out" in cfg.env and not cfg.env.end_when_out and not league.swap_seats:
        cfg.env.end_when_out = [k for k, s in enumerate(league.seats) if s == LEARNER]
    observation_space, action_space = gym.spaces.Box(-1, 1, layout.obs_shape), gym.spaces.Discrete(layout.n_actions)
    fill_model_shapes(cfg, observation_space, action_space)
    check_model_shapes(cfg, observation_space, action_space)  # shapes the config gives must fit the game's


class SelfPlayGame:
    """The self-play arena as a run's game (a :class:`~ding_lite.runtime.parts.Game`): the opponent pool with the
    frozen players, the payoff of the training games against the scripted baselines, the pool's snapshot schedule,
    and an evaluation over games of its own (whatever the collection).

    Args:
        cfg: the resolved config (:func:`resolve_selfplay_config`).
        seeds: the segment's seeds (the training opponents and the pool's draws: ``seeds.collector``; the eval
            games and their opponents: the run's evaluation seeds).
        policy: the learner's policy.
        exp_dir: the experiment folder; the pool's snapshots go to ``<exp_dir>/league``.
        resume_from: the learner checkpoint a resumed run continues, with its contents as the run read them: the
            league as it was when that checkpoint was written (None: a new pool).
    """

    def __init__(self, cfg: Any, seeds: SeedPlan, policy: Any, exp_dir: Path | None = None,
                 resume_from: StartCheckpoint | None = None) -> None:
        if exp_dir is None:
            raise ValueError("a self-play game keeps its opponent pool in the experiment folder: give exp_dir")
        self.cfg, self.league, self.seeds, self.policy = cfg, cfg.league, seeds, policy
        seed = seeds.collector
        self.layout = game_layout(cfg.env)
        self.pool = OpponentPool(exp_dir / "league", self.league, seed)
        self.resumed = resume_from is not None
        # training games against scripted seats, their win rates as the snapshots' (same prior and decay)
        self.baselines = PayoffTable(float(self.league.prior_games), float(self.league.prior_rate),
                                     float(self.league.payoff_decay))
        if resume_from is not None:
            state = league_state(*resume_from)
            self.pool.load_state_dict(state, str(resume_from.path))
            if BASELINES_KEY in state:  # (a checkpoint of an earlier version has none: the table starts anew)
                self.baselines.load_state_dict(dict(state[BASELINES_KEY]))
        masked, act = self.layout.has_mask, str(self.league.snapshot_act)
        self.players = PlayerSet(self._frozen_policy, self._snapshot, seed, masked, act)
        self.eval_players = PlayerSet(self._frozen_policy, self._snapshot, seeds.eval_players, masked, act)
        for name in self.pool.snapshots:  # a resumed pool whose snapshots do not fit the network fails here
            self.eval_players.get(name)
        self.eval_players.keep_only(set())
        self.learner: Any = None
        self.logger: Any = None

    def _frozen_policy(self, mode: str) -> Any:
        return build(self.cfg, "policy", enable_field=(mode,))

    def _snapshot(self, name: str) -> tuple[dict, str]:
        return self.pool.load_weights(name), str(self.pool.path(name))

    def collector_env(self, env_num: int, seed: int) -> SelfPlayEnvManager:
        """The arena over ``env_num`` games of the config's env manager: the learner's seats step by the
        collector's actions, every other seat by a player drawn from the pool."""
        inner = build_env_manager(self.cfg.env, env_num, seed)
        try:
            return SelfPlayEnvManager(inner, self.layout, self.league.seats, self.players, self.pool.sample,
                                      self.record_game, self.league.swap_seats, seed, int(self.league.opening_plies))
        except BaseException:
            inner.close()
            raise

    def actor_games(self, ray: Any) -> tuple[Any, Any]:
        """Each collector actor plays its own arena (:class:`~ding_lite.distributed.league.ActorLeague`), told the
        pool before each collect; the results come back to :meth:`record_game`."""
        from ding_lite.distributed.league import ActorLeague, LeagueLink

        return ActorLeague(), LeagueLink(ray, self.pool, self.record_game)

    def evaluation(self, collection: Any, best_return: float = -math.inf) -> SelfPlayEvaluation:
        """Games of its own in this process, whatever the collection."""
        return SelfPlayEvaluation(self, best_return)

    def record_game(self, results: Mapping[str, float]) -> None:
        """A finished training game of one learner seat: ``{opponent: the learner's score against that opponent's
        best seat}``, each booked against its own opponent (a game against a snapshot evicted meanwhile is not
        counted)."""
        for name, score in results.items():
            if name in OPPONENT_REGISTRY:
                self.baselines.record(name, score)
            else:  # a snapshot
                self.pool.record(name, score)

    def eval_opponents(self) -> list[str]:
        """The players an evaluation plays: ``league.eval_opponents`` and the newest ``league.eval_latest``
        snapshots, newest first."""
        newest = self.pool.snapshots[-int(self.league.eval_latest):] if int(self.league.eval_latest) > 0 else []
        return list(self.league.eval_opponents) + newest[::-1]

    def stop_rules(self) -> list[str]:
        """What ends a self-play run besides its budgets, in words: the mean score (win 1, draw 0.5) against the first
        eval opponent reaching ``env.stop_value``; a stop value above 1 (the board-game configs' "never stops
        early") or None never does."""
        stop = self.cfg.env.stop_value
        if stop is None or stop > 1:
            return []
        every = f"{self.cfg.env.n_evaluator_episode} games per seat every {self.cfg.policy.eval.evaluator.eval_freq} " \
                f"train iters"
        return [f"a mean score >= {number_text(stop)} against {self.eval_opponents()[0]} (win 1, draw 0.5; {every})"]

    def attach(self, learner: Any, logger: Any) -> None:
        """The initial snapshot (unless a resumed pool has snapshots) once the experiment folder exists; the pool's
        state goes into every learner checkpoint from now on."""
        self.learner, self.logger = learner, logger
        learner.save_with_checkpoints(LEAGUE_KEY, self._checkpoint_state)
        if self.resumed:
            strays = self.pool.remove_strays()
            if strays and logger is not None:
                logger.info(f"[league] resumed: removed {len(strays)} snapshot(s) written after the checkpoint "
                            f"({', '.join(sorted(strays))})")
        if not self.pool.snapshots:
            self.pool.add(self.policy.learn_mode.state_dict()["model"], learner.env_step)

    def _checkpoint_state(self, checkpoint_name: str) -> dict[str, Any]:
        """The league's state for the learner checkpoint ``checkpoint_name``: the pool's, and the payoff of the
        training games against the scripted baselines."""
        return {**self.pool.checkpoint_state(checkpoint_name), BASELINES_KEY: self.baselines.state_dict()}

    def after_collect(self, env_step: int) -> None:
        """Add a snapshot every ``league.snapshot_freq`` env steps; log the league's state."""
        if env_step - self.pool.last_added < int(self.league.snapshot_freq):
            return
        name = self.pool.add(self.policy.learn_mode.state_dict()["model"], env_step)
        if self.logger is None:
            return
        elo = self.pool.elo
        self.logger.scalar("selfplay/elo_learner", elo.rating(ELO_LEARNER), env_step)
        self.logger.scalar("selfplay/pool_size", len(self.pool.snapshots), env_step)
        for snap, prob in zip(*self.pool.candidates(), strict=True):
            self.logger.scalar(f"selfplay/sample_prob/{snap}", float(prob), env_step)
        for snap in self.pool.snapshots:
            self.logger.scalar(f"selfplay/win_rate/{snap}", self.pool.payoff.win_rate(snap), env_step)
            self.logger.scalar(f"selfplay/elo/{snap}", elo.rating(snap), env_step)
        self.logger.info(f"[league] {name} added; learner Elo {elo.rating(ELO_LEARNER):.0f}, "
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
                           "baselines": self.baselines.summary()}}


class SelfPlayEvaluation:
    """A self-play run's evaluation (a :class:`~ding_lite.runtime.parts.Evaluation`): the learner's eval mode in games
    of its own (``env.evaluator_env_num`` of them on the evaluation seeds) against each eval opponent, on each
    seat."""

    def __init__(self, game: SelfPlayGame, best_return: float = -math.inf) -> None:
        self.game = game
        cfg, seed = game.cfg, game.seeds.evaluator
        self.env = build_env_manager(cfg.env, cfg.env.evaluator_env_num, seed)
        try:
            self.evaluator = self._evaluator(int(cfg.env.n_evaluator_episode), int(cfg.policy.eval.evaluator.eval_freq),
                                             cfg.env.stop_value, seed, best_return=best_return,
                                             on_table=game.log_eval)
        except BaseException:
            self.env.close()
            raise

    def _evaluator(self, n_episode: int, eval_freq: int, stop_value: float | None, seed: int,
                   **kwargs: Any) -> SelfPlayEvaluator:
        game = self.game
        return SelfPlayEvaluator(self.env, game.layout, game.league.seats, game.eval_players, game.league.swap_seats,
                                 game.policy.eval_mode, game.eval_opponents, n_episode, eval_freq, stop_value, seed,
                                 max_episode_steps=eval_step_cap(game.cfg.policy.eval.evaluator), **kwargs)

    def final_eval(self, n_episode: int, seed: int, ckpt: Path | None) -> EvalResult:
        """The learner's eval mode with ``ckpt``'s weights (None: the current ones) over ``n_episode`` games per
        eval opponent on fresh seeds; the run has ended, so loading into the shared model disturbs nothing."""
        if ckpt is not None:
            load_policy_weights(self.game.policy.eval_mode, ckpt)
        return self._evaluator(n_episode, 1, None, seed).eval()

    def stats(self) -> dict[str, Any]:
        return {"eval_table": self.evaluator.table}

    def env_restarts(self) -> int:
        return int(self.env.restart_count)

    def close(self) -> None:
        self.env.close()


def checkpoint_evaluator(cfg: Any, env: Any, policy: Any, seeds: SeedPlan, n_episode: int) -> SelfPlayEvaluator:
    """The evaluation of a self-play checkpoint outside its run (``-m eval``): ``policy``'s eval mode in ``n_episode``
    games (per learner seat) against each of ``league.eval_opponents``, on ``env`` (``env.evaluator_env_num`` games
    seeded ``seeds.evaluator``) and with the scripted players seeded as the run's evaluations seed them, so the
    return (the win rate against the first opponent) is the run's eval return of the same weights. The pool's
    snapshots are not played: they belong to the run, not to the checkpoint. ``cfg`` has been through
    :func:`resolve_selfplay_config`, which refuses an empty ``league.eval_opponents``.
    """
    league = cfg.league
    opponents = list(league.eval_opponents)
    layout = game_layout(cfg.env)
    players = PlayerSet(lambda mode: build(cfg, "policy", enable_field=(mode,)), _no_snapshot, seeds.eval_players,
                        layout.has_mask, str(league.snapshot_act))
    return SelfPlayEvaluator(env, layout, league.seats, players, league.swap_seats, policy.eval_mode,
                             lambda: opponents, n_episode, 1, None, seeds.evaluator,
                             max_episode_steps=eval_step_cap(cfg.policy.eval.evaluator))


def _no_snapshot(name: str) -> tuple[dict, str]:
    raise AssertionError(f"a checkpoint's evaluation plays scripted opponents only, not the snapshot {name!r}")


def selfplay_parts(cfg: Any, seed: int | SeedPlan, exp_dir: Path, resume_from: Path | None = None) -> Any:
    """The self-play pipeline's parts over a compiled config, for scripts (analysis, benchmarks, tests): ``cfg``
    resolved here (:func:`resolve_selfplay_config`), collection in this process; ``resume_from``: a learner
    checkpoint whose league the pool continues (read here). A context manager, like the pipeline's."""
    from ding_lite.runtime.collection import LocalCollection
    from ding_lite.runtime.parts import RunParts

    resolve_selfplay_config(cfg)
    start = None if resume_from is None else StartCheckpoint(resume_from, load_checkpoint(resume_from))
    return RunParts(cfg, seed, SelfPlayGame, LocalCollection, exp_dir=exp_dir, resume_from=start)

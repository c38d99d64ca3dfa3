"""Opponent pool: snapshots of the learner as checkpoint files in ``<exp>/league/``, sampled by a strategy, with
the payoff table and Elo ratings.

The pool's state (snapshot list, payoff table, Elo ratings, sampling RNG) is saved inside every learner checkpoint
(:meth:`OpponentPool.checkpoint_state`), so that ``--resume`` restores the league as it was when the checkpoint it
resumes from was written, never one from later in the run (whose games and snapshots the resumed run plays again).
Evicted snapshots keep their files until no checkpoint that a resume may pick lists them."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ding_lite.errors import CheckpointError, ConfigError
from ding_lite.league.elo import EloTable
from ding_lite.league.payoff import PayoffTable
from ding_lite.league.pfsp import STRATEGIES, WEIGHTINGS, sampling_probs
from ding_lite.utils.checkpoint import RESUME_PREFIXES, load_checkpoint, save_checkpoint
from ding_lite.utils.run_folder import CKPT_SUFFIX

LEARNER = "learner"  # the learner's name in the Elo table
SNAPSHOT_PREFIX = "snapshot_"

POOL_CONFIG: dict[str, Any] = dict(
    capacity=8,  # snapshots kept; the oldest (but the initial one, see keep_initial) is evicted beyond it
    keep_initial=True,  # never evict the initial snapshot (it anchors the Elo scale)
    strategy="pfsp",  # opponent sampling: 'latest', 'uniform' or 'pfsp'
    pfsp_weighting="squared",  # PFSP f(w): 'squared' (1-w)^p, 'linear' 1-w, 'variance' w(1-w)
    pfsp_p=2.0,  # exponent p of 'squared'
    p_latest=0.2,  # share of games against the latest snapshot, whatever the strategy
    baselines=[],  # scripted opponents ('random', a game's heuristic) that 'pool' seats draw too
    p_baseline=0.0,  # share of 'pool' draws that go to one of `baselines` (uniformly), the rest to snapshots
    prior_games=2.0,  # pseudo-games of a new snapshot in its win rate (and of a baseline in its result.json one)
    prior_rate=0.5,  # win rate of those pseudo-games
    payoff_decay=1.0,  # old results' weight per new game against the same opponent (1: none; DI-engine: 0.99)
    elo_k=32.0,  # Elo K factor
)


class OpponentPool:
    """Snapshots of the learner (oldest first) with a payoff table and Elo ratings.

    Args:
        folder: where snapshot files and the state file live (``<exp>/league``).
        cfg: the ``league`` section (keys of :data:`POOL_CONFIG`).
        seed: seed of the opponent sampling.
    """

    def __init__(self, folder: str | Path, cfg: Mapping[str, Any], seed: int = 0) -> None:
        self.folder = Path(folder)
        self.cfg = {**POOL_CONFIG, **{k: cfg[k] for k in POOL_CONFIG if k in cfg}}
        if self.cfg["strategy"] not in STRATEGIES:
            raise ConfigError(f"unknown league.strategy '{self.cfg['strategy']}': use one of {', '.join(STRATEGIES)}")
        if self.cfg["pfsp_weighting"] not in WEIGHTINGS:  # checked here, not at the first pfsp draw in training
            raise ConfigError(f"unknown league.pfsp_weighting {self.cfg['pfsp_weighting']!r}: use one of "
                              f"{', '.join(WEIGHTINGS)}")
        if int(self.cfg["capacity"]) < 1:
            raise ConfigError(f"league.capacity must be at least 1, got {self.cfg['capacity']}")
        if int(self.cfg["capacity"]) == 1 and self.cfg["keep_initial"]:  # every later snapshot evicted at once
            raise ConfigError("league.capacity=1 with league.keep_initial=True keeps only the initial snapshot, so "
                              "the learner never meets a later one: set league.keep_initial=False (play the latest "
                              "snapshot only) or a capacity of 2 or more")
        self.baselines = [str(b) for b in self.cfg["baselines"]]
        if not 0.0 <= float(self.cfg["p_baseline"]) <= 1.0:
            raise ConfigError(f"league.p_baseline must be in [0, 1], got {self.cfg['p_baseline']}")
        if float(self.cfg["p_baseline"]) > 0 and not self.baselines:
            raise ConfigError(f"league.p_baseline={self.cfg['p_baseline']} but league.baselines is empty: name the "
                              f"scripted opponents to draw (e.g. baselines=['random'])")
        if not 0.0 < float(self.cfg["payoff_decay"]) <= 1.0:
            raise ConfigError(f"league.payoff_decay must be in (0, 1] (1: no decay), got {self.cfg['payoff_decay']}")
        self.snapshots: list[str] = []
        self.payoff = PayoffTable(self.cfg["prior_games"], self.cfg["prior_rate"], float(self.cfg["payoff_decay"]))
        self.elo = EloTable(k=self.cfg["elo_k"])
        self._rng = np.random.default_rng(seed)
        self._initial: str | None = None
        self._evicted: list[str] = []  # out of the pool; files kept while a resumable checkpoint may list them
        self._listed: set[str] = set()  # the snapshots of the last resumable checkpoint's state
        self._listed_name: str | None = None  # ... and that checkpoint's name
        self._fallback: set[str] = set()  # the snapshots of the resumable checkpoint written before that one
        self._last_added: int | None = None  # env step of the newest snapshot added (the snapshot schedule's mark)

    # ---- snapshots ---------------------------------------------------------------------------------------------
    def path(self, name: str) -> Path:
        return self.folder / f"{name}{CKPT_SUFFIX}"

    def add(self, model_state: Mapping[str, Any], env_step: int) -> str:
        """Save the learner's model weights as a new snapshot (rated as the learner is now); evicts beyond capacity.
        Returns the snapshot's name."""
        name = f"{SNAPSHOT_PREFIX}{int(env_step)}"
        save_checkpoint(self.path(name), {"policy": {"model": dict(model_state)}, "env_step": int(env_step)})
        if name in self.snapshots:  # the same env step twice (a resume right after a snapshot): newest weights
            self.snapshots.remove(name)
        if name in self._evicted:
            self._evicted.remove(name)
        self.snapshots.append(name)
        self._last_added = int(env_step)
        if self._initial is None:
            self._initial = name
            self.elo.pin(name)
        self.elo.add(name, self.elo.rating(LEARNER))
        self._evict()
        return name

    def _evict(self) -> None:
        while len(self.snapshots) > int(self.cfg["capacity"]):
            keep_first = self.cfg["keep_initial"] and self.snapshots[0] == self._initial and len(self.snapshots) > 1
            victim = self.snapshots.pop(1 if keep_first else 0)
            self.payoff.forget(victim)
            self.elo.forget(victim)
            self._evicted.append(victim)

    @property
    def last_added(self) -> int:
        """The env step at which the newest snapshot was added (the snapshot schedule counts from it)."""
        if self._last_added is None:
            raise ValueError("the opponent pool is empty: add the initial snapshot first")
        return self._last_added

    @property
    def latest(self) -> str:
        if not self.snapshots:
            raise ValueError("the opponent pool is empty: add the initial snapshot first")
        return self.snapshots[-1]

    def load_weights(self, name: str) -> dict[str, Any]:
        """The model state dict of snapshot ``name`` (loaded with ``weights_only=True``)."""
        state = load_checkpoint(self.path(name))
        model = state["policy"].get("model") if isinstance(state["policy"], Mapping) else None
        if model is None:
            raise CheckpointError(f"snapshot {self.path(name)} has no policy.model weights")
        return model

    # ---- sampling and results ----------------------------------------------------------------------------------
    def probs(self) -> np.ndarray:
        """Sampling probability of each snapshot (same order as :attr:`snapshots`)."""
        rates = [self.payoff.win_rate(name) for name in self.snapshots]
        return sampling_probs(self.cfg["strategy"], rates, float(self.cfg["p_latest"]), self.cfg["pfsp_weighting"],
                              float(self.cfg["pfsp_p"]))

    def candidates(self) -> tuple[list[str], np.ndarray]:
        """Everyone a ``'pool'`` seat may draw, snapshots (oldest first) then baselines, with their probabilities:
        ``(1 - p_baseline) * probs()`` for the snapshots, ``p_baseline / len(baselines)`` for each baseline."""
        p_baseline = float(self.cfg["p_baseline"]) if self.baselines else 0.0
        share = np.full(len(self.baselines), p_baseline / max(len(self.baselines), 1))
        return self.snapshots + self.baselines, np.concatenate([(1.0 - p_baseline) * self.probs(), share])

    def sample(self) -> str:
        """Draw the opponent of the next game (a snapshot, or a baseline with probability ``p_baseline``)."""
        names, probs = self.candidates()
        return names[int(self._rng.choice(len(names), p=probs))]

    def record(self, opponent: str, score: float) -> None:
        """One finished game of the learner against snapshot ``opponent`` with the learner's ``score``; games
        against an opponent evicted meanwhile are not counted."""
        if opponent not in self.snapshots:
            return
        self.payoff.record(opponent, score)
        self.elo.update(LEARNER, opponent, score)

    def summary(self) -> dict[str, Any]:
        """Snapshots, payoff table and Elo ratings (for ``result.json``)."""
        ratings = {LEARNER: self.elo.rating(LEARNER), **self.elo.ratings}  # the learner's too before any pool game
        return {"snapshots": list(self.snapshots), "payoff": self.payoff.summary(),
                "elo": {name: round(r, 2) for name, r in ratings.items()}}

    # ---- persistence -------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The pool's state (plain data: lists, dicts, numbers), as :meth:`load_state_dict` takes it."""
        return {"snapshots": list(self.snapshots), "initial": self._initial, "payoff": self.payoff.state_dict(),
                "elo": self.elo.state_dict(), "rng": self._rng.bit_generator.state,
                "evicted": list(self._evicted), "last_added": self._last_added}

    def checkpoint_state(self, checkpoint_name: str) -> dict[str, Any]:
        """The state to save in the learner checkpoint ``checkpoint_name`` (e.g. ``'resume_120'``).

        ``--resume`` starts from the newest ``iteration_N`` / ``resume_N`` checkpoint. The files a resume may need
        are therefore those that this checkpoint lists and those that the previous resumable one lists (if this one
        is never written, a crash mid-write say, the resume takes that one): every other evicted snapshot file is
        deleted here. A checkpoint written again under its name (a run's end writes ``iteration_N`` where the
        periodic save just did) is not an earlier one: the fallback stays the one before it."""
        state = self.state_dict()
        if checkpoint_name.startswith(RESUME_PREFIXES):
            if checkpoint_name != self._listed_name:
                self._fallback = self._listed
            keep = set(self.snapshots) | self._fallback
            for name in [n for n in self._evicted if n not in keep]:
                self.path(name).unlink(missing_ok=True)
                self._evicted.remove(name)
            self._listed, self._listed_name = set(self.snapshots), checkpoint_name
            state["evicted"] = list(self._evicted)
        return state

    def load_state_dict(self, state: Mapping[str, Any], where: str = "checkpoint") -> None:
        """Restore the pool from :meth:`state_dict`'s data (saved in the learner checkpoint ``where``); every
        snapshot it lists must have its file."""
        missing = [str(self.path(n)) for n in state["snapshots"] if not self.path(n).is_file()]
        if missing:
            raise CheckpointError(f"--resume: the league of {where} lists snapshot file(s) that are missing: "
                                  f"{', '.join(missing)}")
        self.snapshots = [str(n) for n in state["snapshots"]]
        self._initial = state["initial"]
        self.elo.pin(self._initial)
        self.payoff.load_state_dict(state["payoff"])
        self.elo.load_state_dict(state["elo"])
        self._rng.bit_generator.state = state["rng"]
        self._evicted = [str(n) for n in state.get("evicted", []) if self.path(str(n)).is_file()]
        self._listed = set(self.snapshots)
        last = state.get("last_added")
        if last is None and self.snapshots:  # a checkpoint of an earlier version: its newest listed snapshot
            last = max(int(n[len(SNAPSHOT_PREFIX):]) for n in self.snapshots)
        self._last_added = None if last is None else int(last)

    def remove_strays(self) -> list[str]:
        """Delete the snapshot files of the folder that the pool does not know (written after the checkpoint a
        resume started from: that span of the run is played again). Returns their names."""
        known = set(self.snapshots) | set(self._evicted)
        strays = [p for p in self.folder.glob(f"{SNAPSHOT_PREFIX}*{CKPT_SUFFIX}")
                  if p.name.removesuffix(CKPT_SUFFIX) not in known]
        for path in strays:
            path.unlink(missing_ok=True)
        return [p.name for p in strays]

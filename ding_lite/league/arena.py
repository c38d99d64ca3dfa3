"""The self-play wrapper: a vector of multi-agent games seen by the learner as a single-agent env manager.

The learner's seats are folded into the env axis (row ``i * L + k`` is learner seat k of game i); every other seat is
played in this process by a :class:`~ding_lite.league.opponents.PlayerSet` player, one call per distinct player per
step over all (game, seat) pairs it plays. Who plays which seat is drawn when a game starts and fixed until it ends,
so a snapshot's weights never change mid-game. In a turn-based game one wrapper step runs the game until the learner
is to move again (the opponents' turns are sub-steps; the other games pass meanwhile).

With ``opening_plies`` each game starts with a random opening: a number of plies drawn uniformly from
0..opening_plies in which every seat that is to move (the learner's too) plays a uniformly random legal move. The
opening belongs to the game's start, not to the learner: its first transition starts from the position after it. So
the learner meets positions that neither its own play nor its greedy snapshots' ever reach, and the opponents'
replies there (AlphaZero-style engines diversify self-play openings alike). A game that ends before the learner's
first move (within its opening, or at an opponent's move: a poker player who folds first) is replayed, not scored:
the learner had no turn in it, so it has no row to end there.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.data.keys import ACTION_MASK, OBSERVATION
from ding_lite.envs.env_manager import EnvManagerLike, EpisodeEnd, StepResult
from ding_lite.envs.multi_agent import PASS, SeatBatch, SeatLayout
from ding_lite.errors import ConfigError
from ding_lite.league.opponents import PlayerSet
from ding_lite.league.seats import LEARNER, check_learner_seat, check_seat_count, game_score
from ding_lite.rl_utils.masks import random_legal_actions

MAX_SUBSTEPS = 10_000  # a turn-based game where the learner never gets a turn again is a bug in the game


class SelfPlayEnvManager:
    """An env manager (:class:`~ding_lite.envs.env_manager.EnvManagerLike`: ``env_num``, ``obs``, ``reset``,
    ``step``, ``send`` / ``recv``, ``seed``, ``restart_count``, ``close``) over a manager of packed multi-agent games.

    Args:
        inner: an env manager over packed games (see :mod:`ding_lite.envs.multi_agent`).
        layout: the games' seat layout.
        seats: one entry per seat: ``'learner'``, ``'pool'`` (an opponent drawn by ``draw_pool`` per game) or the
            name of a player (a scripted baseline or a snapshot).
        players: who acts for the non-learner seats.
        draw_pool: draws a snapshot name for a ``'pool'`` seat.
        on_result: called with ``{opponent name: learner's score against it}`` per learner seat when a game ends
            normally (see :meth:`_settle_game`).
        swap_seats: shuffle which seat plays which role at every game start (e.g. first and second player).
        seed: seed of the seat shuffling and the openings.
        opening_plies: the most random opening plies of a game (0: none; see the module docstring).
    """

    def __init__(self, inner: EnvManagerLike, layout: SeatLayout, seats: Sequence[str], players: PlayerSet,
                 draw_pool: Callable[[], str] | None = None,
                 on_result: Callable[[dict[str, float]], None] | None = None, swap_seats: bool = False,
                 seed: int = 0, opening_plies: int = 0) -> None:
        check_seat_count(seats, layout)
        check_learner_seat(seats, layout)
        self.n_learner = sum(s == LEARNER for s in seats)
        if "pool" in seats and draw_pool is None:
            raise ConfigError("league.seats names 'pool' but no opponent pool is set up")
        self.inner, self.layout, self.seats, self.players = inner, layout, list(seats), players
        self.draw_pool, self.on_result, self.swap_seats = draw_pool, on_result, swap_seats
        self.n_games = inner.env_num
        self.env_num = self.n_games * self.n_learner
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, layout.obs_shape, np.float32)
        self.action_space = gym.spaces.Discrete(layout.n_actions)
        self._rng = np.random.default_rng(seed)
        if opening_plies < 0:
            raise ConfigError(f"league.opening_plies must be 0 or more, got {opening_plies}")
        self.opening_plies = int(opening_plies)
        self._opening = np.zeros(self.n_games, dtype=np.int64)  # random plies left of each game's opening
        self._unplayed = np.zeros(self.n_games, dtype=bool)  # games whose learner has not moved yet
        self.roles = np.empty((self.n_games, layout.n_seats), dtype=object)  # (N, S) player name per seat
        self._learner_seats = np.zeros((self.n_games, self.n_learner), dtype=np.int64)
        self._ep_return = np.zeros(self.env_num)
        self._ep_length = np.zeros(self.env_num, dtype=np.int64)
        self._out = np.zeros(self.env_num, dtype=bool)  # learner rows whose agent left a game that goes on
        self._out_terminated = np.zeros(self.env_num, dtype=bool)  # ... and it left terminated (not truncated)
        self._seat_obs: SeatBatch | None = None
        self._obs: np.ndarray | None = None  # (N * L, *obs_shape) the learner rows' observations
        self._mask: np.ndarray | None = None  # (N * L, A) their legal actions, where the game has masks
        self._pending: Any = None  # actions sent (send) and not yet stepped (recv)

    # ---- env manager interface ---------------------------------------------------------------------------------
    @property
    def restart_count(self) -> int:
        return self.inner.restart_count

    @property
    def groups(self) -> list[slice]:
        """One group: every game steps together (an opponent's turn is a sub-step of all of them)."""
        return [slice(0, self.env_num)]

    def send(self, group: int, actions: np.ndarray) -> None:
        """Start a step (it runs at :meth:`recv`)."""
        self._pending = actions

    def recv(self, group: int) -> StepResult:
        """The step :meth:`send` started."""
        actions, self._pending = self._pending, None
        return self.step(actions)

    def seed(self, seed: int) -> None:
        self.inner.seed(seed)

    @property
    def obs(self) -> np.ndarray:
        return self.reset() if self._obs is None else self._view(self._obs, self._mask)

    def reset(self) -> np.ndarray:
        """Start every game anew (new seat draws); returns the learner rows' first observations."""
        for i in range(self.n_games):
            self._assign(i)
        self._seat_obs = self.layout.unpack(self.inner.reset())
        self._ep_return[:] = 0.0
        self._ep_length[:] = 0
        self._out[:] = False
        self._advance_to_learner(None)
        return self._view(self._obs, self._mask)  # type: ignore[arg-type]

    def truncate(self, envs: Sequence[int]) -> tuple[Any, list[EpisodeEnd]]:
        """Cut the games of the learner rows ``envs`` now (truncated; not scored, as a game cut by a worker failure
        is not, and every learner row of such a game ends), and start new ones, run to the learner's turn. Returns
        the learner rows' observation to act on next and one :class:`EpisodeEnd` per ended row (the info without a
        ``score``)."""
        games = sorted({int(row) // self.n_learner for row in envs})
        self.inner.truncate(games)
        ends: list[EpisodeEnd] = []
        for i in games:
            rows = slice(i * self.n_learner, (i + 1) * self.n_learner)
            ends += [self._episode_end(row, info, False)
                     for row, info in zip(range(rows.start, rows.stop), self._settle_game(i, None, cut=True),
                                          strict=True)]
            self._ep_return[rows], self._ep_length[rows], self._out[rows] = 0.0, 0, False
            self._assign(i)
        self._seat_obs = self.layout.unpack(self.inner.obs)
        self._advance_to_learner(None)  # the new games' opponent turns and openings; the others wait
        return self._view(self._obs, self._mask), ends  # type: ignore[arg-type]

    def _view(self, obs: np.ndarray, mask: np.ndarray | None) -> Any:
        """What the learner's policy sees: the observations, or with a game that has action masks PettingZoo's
        ``{'observation', 'action_mask'}`` dict."""
        return obs if not self.layout.has_mask else {OBSERVATION: obs, ACTION_MASK: mask}

    def close(self) -> None:
        self.inner.close()

    @property
    def closed(self) -> bool:
        return bool(self.inner.closed)

    def __enter__(self) -> SelfPlayEnvManager:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- seats -------------------------------------------------------------------------------------------------
    def _assign(self, i: int) -> None:
        """Roles of game ``i`` for its next episode (only ever called between episodes)."""
        order = self._rng.permutation(self.layout.n_seats) if self.swap_seats else np.arange(self.layout.n_seats)
        for seat, role_index in enumerate(order):
            role = self.seats[role_index]
            self.roles[i, seat] = self.draw_pool() if role == "pool" and self.draw_pool is not None else role
        self._learner_seats[i] = np.flatnonzero(self.roles[i] == LEARNER)
        self._opening[i] = self._rng.integers(0, self.opening_plies + 1) if self.opening_plies else 0
        # until the learner's first move: a game that ends before it (a random opening, or the opponents' first
        # moves: a poker player folding first) had no learner turn, so no row to end; it is replayed, not scored
        self._unplayed[i] = True
        self.players.keep_only({str(r) for r in self.roles.ravel() if r is not None and r != LEARNER})

    def opponents(self, i: int) -> list[str]:
        """Distinct opponent names of game ``i``."""
        return sorted({str(r) for r in self.roles[i] if r != LEARNER})

    def _learner_rows(self, per_seat: np.ndarray) -> np.ndarray:
        """The learner seats' entries of a per-seat array (N, S, ...) as rows (N * L, ...)."""
        games = np.repeat(np.arange(self.n_games), self.n_learner)
        return per_seat[games, self._learner_seats.reshape(-1)]

    def _opponent_actions(self, actions: np.ndarray, seats: SeatBatch, games: np.ndarray) -> None:
        """Fill ``actions`` (N, S) of the opponent seats that act now in ``games``: one call per player."""
        todo = seats.acting & games[:, None] & (self.roles != LEARNER)
        if not todo.any():
            return
        gi, si = np.nonzero(todo)
        names = self.roles[gi, si]
        for name in dict.fromkeys(names.tolist()):  # distinct, in a stable order
            pick = names == name
            actions[gi[pick], si[pick]] = self.players.act(name, seats.obs[gi[pick], si[pick]],
                                                           seats.action_mask[gi[pick], si[pick]])

    def _opening_moves(self, actions: np.ndarray, seats: SeatBatch, games: np.ndarray) -> None:
        """Random legal moves for every seat to move now in the ``games`` still in their opening (one ply each)."""
        if not games.any():
            return
        gi, si = np.nonzero(seats.acting & games[:, None])
        actions[gi, si] = random_legal_actions(self._rng, seats.action_mask[gi, si])
        self._opening[games] -= 1

    # ---- stepping ----------------------------------------------------------------------------------------------
    def step(self, actions: np.ndarray) -> StepResult:
        """Act for the learner rows (N * L,), let the opponents act, and run each game until the learner is to move
        again (or its episode ended). Returns the learner rows' :class:`StepResult`."""
        if self._obs is None:
            self.reset()
        seats = self._seat_obs
        assert seats is not None
        games = np.arange(self.n_games)[:, None]
        full = np.full((self.n_games, self.layout.n_seats), PASS, dtype=np.int64)
        learner_actions = np.asarray(actions).reshape(self.n_games, self.n_learner)
        acting = seats.acting[games, self._learner_seats]
        full[games, self._learner_seats] = np.where(acting, learner_actions, PASS)
        self._unplayed &= ~acting.any(1)
        self._opponent_actions(full, seats, np.ones(self.n_games, dtype=bool))
        acc = _StepAcc(self._obs, self._mask)  # type: ignore[arg-type]
        # rows whose learner seat left a game that goes on are placeholders until that game ends
        acc.cut(self._out)
        self._absorb(self.inner.step(full), acc)
        self._advance_to_learner(acc)
        assert self._obs is not None and self._mask is not None
        # a row whose episode goes on: the next observation is the one the learner acts on next (after the
        # opponents' turns), the row's obs at the next step
        going_on = ~acc.settled_rows
        acc.next_obs[going_on] = self._obs[going_on]
        acc.next_mask[going_on] = self._mask[going_on]
        self._ep_return += acc.reward
        self._ep_length += ~acc.interrupted
        episodes = [self._episode_end(row, info, terminated) for row, info, terminated in acc.ended]
        for row, _, _ in acc.ended:
            self._ep_return[row], self._ep_length[row] = 0.0, 0
        return StepResult(self._view(self._obs, self._mask), self._view(acc.next_obs, acc.next_mask), acc.reward,
                          acc.terminated, acc.truncated, episodes,
                          acc.interrupted if acc.interrupted.any() else None)  # type: ignore[arg-type]

    def _advance_to_learner(self, acc: _StepAcc | None) -> None:
        """Sub-steps until a learner seat is to move in every game where one is still in: the opponents' turns of
        turn-based games, and the random openings of games that just started."""
        for _ in range(MAX_SUBSTEPS):
            seats = self._seat_obs
            assert seats is not None
            games = np.arange(self.n_games)[:, None]
            opening = self._opening > 0
            need = np.asarray(seats.alive[games, self._learner_seats].any(1)
                              & ~seats.acting[games, self._learner_seats].any(1)) & ~opening
            if not (need.any() or opening.any()):
                break
            full = np.full((self.n_games, self.layout.n_seats), PASS, dtype=np.int64)
            self._opponent_actions(full, seats, need)
            self._opening_moves(full, seats, opening)
            self._absorb(self.inner.step(full), acc)
        else:
            raise RuntimeError(f"a game did not give the learner a turn within {MAX_SUBSTEPS} opponent moves")
        self._obs = self._learner_rows(self._seat_obs.obs).astype(np.float32)  # type: ignore[union-attr]
        self._mask = self._learner_rows(self._seat_obs.action_mask)  # type: ignore[union-attr]

    def _absorb(self, res: StepResult, acc: _StepAcc | None) -> None:
        """Take one inner step's results into the learner rows; settle games that ended or were cut."""
        after = self.layout.unpack(res.next_obs)
        before = self._seat_obs
        assert before is not None
        ends = {e.env_id: e for e in res.episodes}
        cut = res.interrupted if res.interrupted is not None else np.zeros(self.n_games, dtype=bool)
        if acc is not None:
            open_rows = ~acc.settled_rows
            acc.add_reward(np.where(open_rows, self._learner_rows(after.reward), 0.0).astype(np.float32))
            # a learner seat whose agent left: its transition ends here, truncated where a time limit took it out
            left = self._learner_rows(before.alive) & ~self._learner_rows(after.alive) & open_rows
            by_limit = self._learner_rows(after.truncated)
            acc.settle(left, self._learner_rows(after.obs), self._learner_rows(after.action_mask),
                       left & ~by_limit, left & by_limit)
            self._out |= left
            self._out_terminated[left] = ~by_limit[left]
        for i in np.flatnonzero(res.terminated | res.truncated | cut):
            if self._unplayed[i]:  # it ended before any learner turn (in its opening, ...): replayed, not scored
                self._assign(int(i))
                continue
            rows = slice(i * self.n_learner, (i + 1) * self.n_learner)
            info = self._settle_game(int(i), ends.get(int(i)), bool(cut[i]))
            if acc is not None:
                fresh = np.zeros(self.env_num, dtype=bool)
                fresh[rows] = ~acc.settled_rows[rows]
                if cut[i]:
                    acc.cut(fresh)
                else:  # a learner seat still in the game at its end: the game's own flags
                    acc.settle(fresh, self._learner_rows(after.obs), self._learner_rows(after.action_mask),
                               fresh & bool(res.terminated[i]), fresh & bool(res.truncated[i]))
                # the episode's end: where the learner's agent left earlier, as it left
                ended = np.where(self._out, self._out_terminated, acc.terminated)
                acc.ended.extend((r, info[r - rows.start], bool(ended[r])) for r in range(rows.start, rows.stop)
                                 if not cut[i])
            self._out[rows] = False
            self._assign(int(i))
        self._seat_obs = self.layout.unpack(res.obs)

    def _settle_game(self, i: int, end: EpisodeEnd | None, cut: bool) -> list[dict]:
        """Score a finished game per learner seat and report it (a game cut by a worker failure is not scored).

        ``info['score']`` is the learner seat's result against every opponent together (its score against the best
        opponent seat); ``info['results']`` is its result against each distinct opponent, against that opponent's
        best seat, so that a snapshot is booked for its own play: in a 1-vs-3 game a learner that outlived both seats
        of snapshot B but not snapshot A won against B and lost against A."""
        roles = self.roles[i]
        by_opponent = {name: np.flatnonzero(roles == name).tolist() for name in self.opponents(i)}
        opponent_seats = [s for seats in by_opponent.values() for s in seats]
        infos = []
        scores = (end.info or {}).get("scores") if end is not None else None
        for seat in self._learner_seats[i]:
            info: dict[str, Any] = {"opponents": self.opponents(i), "seat": int(seat)}
            if not cut and scores is not None:
                info["score"] = game_score(scores, int(seat), opponent_seats)
                info["scores"] = [float(x) for x in scores]  # every seat's (the evaluator spots shared rewards)
                info["results"] = {name: game_score(scores, int(seat), seats) for name, seats in by_opponent.items()}
                if self.on_result is not None:
                    self.on_result(info["results"])
            infos.append(info)
        return infos

    def _episode_end(self, row: int, info: dict, terminated: bool) -> EpisodeEnd:
        return EpisodeEnd(row, float(self._ep_return[row]), int(self._ep_length[row]), terminated, info)


class _StepAcc:
    """The learner rows' results being gathered over one wrapper step's sub-steps."""

    def __init__(self, obs: np.ndarray, mask: np.ndarray) -> None:
        n = len(obs)
        self.next_obs = obs.copy()
        self.next_mask = mask.copy()
        self.reward = np.zeros(n, dtype=np.float32)
        self.terminated = np.zeros(n, dtype=bool)
        self.truncated = np.zeros(n, dtype=bool)
        self.interrupted = np.zeros(n, dtype=bool)
        self.settled_rows = np.zeros(n, dtype=bool)  # the row's transition is complete (its episode ended or cut)
        self.ended: list[tuple[int, dict, bool]] = []  # (row, info, terminated) of the episodes that ended

    def cut(self, rows: np.ndarray) -> None:
        """``rows`` (bool (N * L,)) are placeholders in this step: interrupted, their transitions complete."""
        self.interrupted |= rows
        self.settled_rows |= rows

    def add_reward(self, reward: np.ndarray) -> None:
        """Add a sub-step's learner-row rewards (N * L,)."""
        self.reward += reward

    def settle(self, rows: np.ndarray, obs: np.ndarray, mask: np.ndarray, terminated: np.ndarray,
               truncated: np.ndarray) -> None:
        """End the transitions of ``rows`` (bool (N * L,)) with these final observations and flags."""
        self.next_obs[rows] = obs[rows]
        self.next_mask[rows] = mask[rows]
        self.terminated |= terminated & rows
        self.truncated |= truncated & rows
        self.settled_rows |= rows

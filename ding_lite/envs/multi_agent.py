"""Multi-agent envs (PettingZoo's ``ParallelEnv`` and turn-based ``AECEnv``) as one gymnasium env with a seat axis.

Every env manager (``base``, ``subprocess``) batches fixed-shape arrays with one scalar reward per env. A game with
S seats therefore comes out *packed*: the observation of an env is one float32 array (S, W) whose row s holds seat
s's flattened observation (encoded as :mod:`ding_lite.envs.spaces` says: a ``Discrete`` observation one-hot, ...),
its action mask, whether its agent is still in the game (``alive``), whether it is to act now (``acting``), whether
it left the game by truncation (``truncated``: a time limit, not an end of its own), and the reward it got in the
step that led here. The action is one int per seat (MultiDiscrete); seats that are not acting are ignored, and
:data:`PASS` for every acting seat leaves that env as it is (a step of nothing, used by the self-play wrapper while
other envs take sub-steps: an opponent's turn, a random opening). :class:`SeatLayout` unpacks a batch (N, S, W) into
per-seat arrays (N, S, ...).

The game is over when no agent is left, or when every seat listed in ``end_when_out`` has left (a learner that is
out cannot change its result). A game that a time limit ended (an agent truncated in its last step) is truncated,
even where the limit ends it for everyone, otherwise terminated. ``max_moves`` is such a limit of ding_lite's own
(``env.max_episode_steps``), for games that have none: at that many moves every agent still in the game leaves by
truncation. A game without one that runs :data:`LONG_GAME` moves is warned about once per game and process (two
greedy players can repeat a cycle of moves forever, e.g. in Go, and an evaluation would never end). The final info
holds ``scores``: per seat, the agent's last ``info['score']`` if the game reports one, else its summed reward; a
game's result is decided by these scores.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.envs.seat_spaces import check_action_spaces, check_observation_spaces
from ding_lite.envs.spaces import encode, encoded_space
from ding_lite.errors import ConfigError, DingLiteError, EnvError, first_line, optional_count
from ding_lite.extras import install_hint
from ding_lite.registry import ENV_REGISTRY, import_object

PASS = -1  # action of an acting seat of a turn-based game that should not move in this step
# the per-seat columns after the observation and the action mask
_ALIVE, _ACTING, _TRUNCATED, _REWARD = range(4)
_FLAGS = 4
LONG_GAME = 10_000  # moves of one game without a move cap after which a warning says how to set one
logger = logging.getLogger(__name__)
_WARNED_LONG: set[str] = set()  # games warned about (once per game and process, not per env)


@dataclass(frozen=True)
class SeatLayout:
    """Where each per-seat quantity sits in a packed row, and how to unpack a batch."""

    n_seats: int
    obs_shape: tuple[int, ...]
    n_actions: int
    agents: tuple[str, ...]
    # the game gives action masks: PettingZoo's {'observation', 'action_mask'} spaces, or info['action_mask'] (seen
    # by the layout once a game has been reset)
    has_mask: bool = False
    turn_based: bool = False  # an AECEnv: one agent acts at a time

    @property
    def obs_size(self) -> int:
        return int(np.prod(self.obs_shape)) if self.obs_shape else 1

    @property
    def width(self) -> int:
        return self.obs_size + self.n_actions + _FLAGS

    def unpack(self, packed: np.ndarray) -> SeatBatch:
        """Per-seat views of a packed batch (N, S, W) (or of one env's (S, W))."""
        d, a = self.obs_size, self.n_actions
        lead = packed.shape[:-1]
        return SeatBatch(obs=packed[..., :d].reshape(lead + self.obs_shape),
                         action_mask=packed[..., d:d + a] > 0.5,
                         alive=packed[..., d + a + _ALIVE] > 0.5,
                         acting=packed[..., d + a + _ACTING] > 0.5,
                         truncated=packed[..., d + a + _TRUNCATED] > 0.5,
                         reward=packed[..., d + a + _REWARD])


@dataclass
class SeatBatch:
    """Per-seat arrays of N envs: obs (N, S, *obs_shape), action_mask (N, S, A), alive / acting / truncated (N, S)
    bool (truncated: the seat's agent left by truncation), reward (N, S) of the step that led to this observation."""

    obs: np.ndarray
    action_mask: np.ndarray
    alive: np.ndarray
    acting: np.ndarray
    truncated: np.ndarray
    reward: np.ndarray


def _split_observation(raw: Any, info: Mapping[str, Any] | None, n_actions: int) -> tuple[Any, np.ndarray]:
    """An agent's observation and action mask: PettingZoo's ``{'observation', 'action_mask'}`` dicts, a mask in the
    info, or no mask (every action legal)."""
    if isinstance(raw, Mapping) and "action_mask" in raw:
        return raw["observation"], np.asarray(raw["action_mask"], dtype=bool)
    mask = (info or {}).get("action_mask")
    return raw, (np.ones(n_actions, dtype=bool) if mask is None else np.asarray(mask, dtype=bool))


def _inner_space(space: gym.Space) -> gym.Space:
    if isinstance(space, gym.spaces.Dict) and "action_mask" in space.spaces and "observation" in space.spaces:
        return space.spaces["observation"]
    return space


def seat_indices(end_when_out: Sequence[Any], n_seats: int) -> list[int]:
    """``env.end_when_out`` as seat indices: whole numbers in ``0..n_seats - 1`` (an integral float is taken as the
    int); anything else (None, a bool, a word, 1.5, a seat the game lacks) is a :class:`ConfigError`."""
    seats = []
    for seat in end_when_out:
        whole = (isinstance(seat, int) and not isinstance(seat, bool)) or (isinstance(seat, float)
                                                                           and seat.is_integer())
        if not whole or not 0 <= seat < n_seats:
            raise ConfigError(f"env.end_when_out={list(end_when_out)!r} must list seat indices of the game, whole "
                              f"numbers in 0..{n_seats - 1} ({seat!r} is not one)")
        seats.append(int(seat))
    return seats


class _SeatedBase(gym.Env):
    """What the parallel and the turn-based adapters share: seat order, spaces, packing, scores."""

    metadata: dict[str, Any] = {"render_modes": []}
    turn_based = False  # one agent acts at a time (the AEC adapter)

    def __init__(self, game: Any, end_when_out: Sequence[int] = (), name: str = "game",
                 max_moves: int | None = None) -> None:
        self.game, self.name, self.max_moves = game, name, max_moves
        self._moves = 0
        agents = tuple(game.possible_agents)
        obs_spaces = [_inner_space(game.observation_space(a)) for a in agents]
        self._encode = check_observation_spaces(name, agents, obs_spaces)
        actions = check_action_spaces(name, agents, [game.action_space(a) for a in agents])
        self._obs_spaces = obs_spaces  # as the game gives them; each seat packed as encoded_space says
        self._action_start = int(actions.start)  # the game's first action (gymnasium's Discrete(n, start=...))
        shape = tuple(encoded_space(obs_spaces[0]).shape or ())
        raw = game.observation_space(agents[0])
        has_mask = isinstance(raw, gym.spaces.Dict) and "action_mask" in raw.spaces
        self.layout = SeatLayout(len(agents), shape, int(actions.n), agents, has_mask, self.turn_based)
        self.end_when_out = seat_indices(end_when_out, len(agents))
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (len(agents), self.layout.width), np.float32)
        self.action_space = gym.spaces.MultiDiscrete([self.layout.n_actions] * len(agents))
        self._packed = np.zeros((len(agents), self.layout.width), dtype=np.float32)
        self._scores = np.zeros(len(agents))
        self._has_score = np.zeros(len(agents), dtype=bool)

    def _pack(self, observations: Mapping[str, Any], infos: Mapping[str, Any], alive: Sequence[bool],
              acting: Sequence[bool], truncated: Sequence[bool], rewards: Mapping[str, float]) -> np.ndarray:
        lay = self.layout
        d, a = lay.obs_size, lay.n_actions
        flags = d + a
        packed = self._packed.copy()
        for s, agent in enumerate(lay.agents):
            if agent in observations:
                obs, mask = _split_observation(observations[agent], infos.get(agent), a)
                if not lay.has_mask and "action_mask" in (infos.get(agent) or {}):  # masks come in the infos
                    self.layout = lay = replace(lay, has_mask=True)
                packed[s, :d] = (encode(self._obs_spaces[s], obs) if self._encode[s] else np.asarray(obs)).reshape(-1)
                packed[s, d:d + a] = mask
            packed[s, flags + _ALIVE] = alive[s]
            packed[s, flags + _ACTING] = acting[s]
            packed[s, flags + _TRUNCATED] = truncated[s]
            packed[s, flags + _REWARD] = float(rewards.get(agent, 0.0))
        self._packed = packed
        return packed

    def _track_scores(self, rewards: Mapping[str, float], infos: Mapping[str, Any]) -> None:
        for s, agent in enumerate(self.layout.agents):
            score = (infos.get(agent) or {}).get("score")
            if score is not None:
                self._scores[s], self._has_score[s] = float(score), True
            elif not self._has_score[s]:
                self._scores[s] += float(rewards.get(agent, 0.0))

    def _start(self) -> None:
        self._moves = 0
        self._scores[:] = 0.0
        self._has_score[:] = False
        self._packed[:] = 0.0

    def _over(self, alive: Sequence[bool]) -> bool:
        if not any(alive):
            return True
        return bool(self.end_when_out) and not any(alive[s] for s in self.end_when_out)

    def _outcome(self, packed: np.ndarray, cut: Sequence[bool]) -> tuple[np.ndarray, float, bool, bool, dict]:
        """The gymnasium step tuple of a packed observation after a move: reward of seat 0; the game over when
        :meth:`_over` says so or at ``max_moves`` (every seat still in it truncated), truncated if an agent was
        truncated in this step (a time limit), else terminated."""
        flags = self.layout.obs_size + self.layout.n_actions
        alive = packed[:, flags + _ALIVE] > 0.5
        over = self._over(list(alive))
        self._moves += 1
        if not over and self.max_moves is not None and self._moves >= self.max_moves:
            packed[alive, flags + _TRUNCATED] = 1.0  # the move cap: everyone still in leaves by truncation
            packed[:, flags + _ALIVE] = packed[:, flags + _ACTING] = 0.0
            cut, over = [bool(c or a) for c, a in zip(cut, alive, strict=True)], True
        elif not over and self._moves == LONG_GAME and self.max_moves is None and self.name not in _WARNED_LONG:
            _WARNED_LONG.add(self.name)
            logger.warning(f"warning: env '{self.name}': a game has run {LONG_GAME:,} moves without ending (players "
                           f"that repeat a cycle of moves may never end it, and an evaluation would wait for it); set "
                           f"env.max_episode_steps to cut games at that many moves (truncated, the result decided "
                           f"by the scores so far: a draw where rewards come only at the end)")
        truncated = over and any(cut)
        info = {"scores": self._scores.tolist()} if over else {}
        return packed, float(packed[0, flags + _REWARD]), over and not truncated, truncated, info

    def _wait(self) -> tuple[np.ndarray, float, bool, bool, dict]:
        """A step of nothing (every acting seat passed): the same observation, no reward."""
        packed = self._packed.copy()
        packed[:, self.layout.obs_size + self.layout.n_actions + _REWARD] = 0.0
        self._packed = packed
        return packed, 0.0, False, False, {}

    def close(self) -> None:
        self.game.close()


def _cut(terminations: Mapping[str, Any], truncations: Mapping[str, Any], agents: Sequence[str]) -> list[bool]:
    """Per seat: its agent was truncated (and not terminated) in this step."""
    return [bool(truncations.get(a, False)) and not bool(terminations.get(a, False)) for a in agents]


class SeatedParallelEnv(_SeatedBase):
    """A PettingZoo ``ParallelEnv`` with its seats packed (simultaneous moves: every agent in the game acts)."""

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._start()
        observations, infos = self.game.reset(seed=seed, options=options)
        alive = [a in self.game.agents for a in self.layout.agents]
        return self._pack(observations, infos, alive, alive, [False] * len(alive), {}), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = np.asarray(action).reshape(-1)
        moves = {agent: int(action[s]) for s, agent in enumerate(self.layout.agents) if agent in self.game.agents}
        if all(m == PASS for m in moves.values()):  # this env waits while others take sub-steps
            return self._wait()
        # the seats act by index 0..n-1, the game in its own numbers (a Discrete(n, start=k) from k)
        moves = {agent: m + self._action_start for agent, m in moves.items()}
        observations, rewards, terminations, truncations, infos = self.game.step(moves)
        self._track_scores(rewards, infos)
        agents = self.layout.agents
        alive = [a in self.game.agents and not (terminations.get(a) or truncations.get(a)) for a in agents]
        cut = _cut(terminations, truncations, agents)
        return self._outcome(self._pack(observations, infos, alive, alive, cut, rewards), cut)


class SeatedAECEnv(_SeatedBase):
    """A turn-based PettingZoo ``AECEnv`` (classic board games) with its seats packed: only the agent to move is
    ``acting``; a step applies its action (or nothing, for :data:`PASS`)."""

    turn_based = True

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._start()
        self.game.reset(seed=seed, options=options)
        return self._observe({}), {}

    def _observe(self, rewards: Mapping[str, float]) -> np.ndarray:
        """Pack the game after a step: the agents that left in it with their final observations, infos and flags;
        then, while the game goes on, their dead steps taken (:meth:`_step_out_the_dead`), so that the agent to
        act is one still in the game."""
        game = self.game
        agents = self.layout.agents
        done = {a: game.terminations.get(a, False) or game.truncations.get(a, False) for a in game.agents}
        alive = [a in game.agents and not done[a] for a in agents]
        observations = {a: game.observe(a) for a in game.agents}
        infos, cut = dict(game.infos), _cut(game.terminations, game.truncations, agents)
        if any(alive):
            self._step_out_the_dead()
        acting = [alive[s] and a == game.agent_selection for s, a in enumerate(agents)]
        return self._pack(observations, infos, alive, acting, cut, rewards)

    def _step_out_the_dead(self) -> None:
        """PettingZoo's AEC protocol: an agent that left stays selected until it is stepped with ``None`` (its dead
        step removes it). No seat acts for it (it is not alive), so the adapter takes those steps."""
        game = self.game
        for _ in range(len(self.layout.agents)):
            agent = game.agent_selection
            if agent not in game.agents or not (game.terminations.get(agent) or game.truncations.get(agent)):
                return
            game.step(None)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        action = np.asarray(action).reshape(-1)
        game = self.game
        seat = self.layout.agents.index(game.agent_selection)
        if int(action[seat]) == PASS:
            return self._wait()
        game.step(int(action[seat]) + self._action_start)
        rewards = {a: float(game.rewards.get(a, 0.0)) for a in self.layout.agents}
        self._track_scores(rewards, game.infos)
        return self._outcome(self._observe(rewards), _cut(game.terminations, game.truncations, self.layout.agents))


def seat_game(game: Any, end_when_out: Sequence[int] = (), name: str = "game",
              max_moves: int | None = None) -> _SeatedBase:
    """Pack a PettingZoo ParallelEnv or AECEnv (see the module docstring); ``max_moves``: cut the game (every
    agent still in it truncated) after that many moves, None: the game's own end."""
    try:
        from pettingzoo.utils.env import AECEnv, ParallelEnv
    except ImportError as exc:
        raise ConfigError(f"env type 'pettingzoo' needs PettingZoo: {install_hint('pettingzoo')}") from exc
    if isinstance(game, ParallelEnv):
        return SeatedParallelEnv(game, end_when_out, name, max_moves)
    if isinstance(game, AECEnv):
        return SeatedAECEnv(game, end_when_out, name, max_moves)
    raise ConfigError(f"env '{name}' built a {type(game).__name__}, not a PettingZoo ParallelEnv or AECEnv")


def _first_legal_actions(layout: SeatLayout, packed: np.ndarray) -> np.ndarray:
    """Each seat's first legal action in a packed observation (S, W) (action 0 where a seat has none)."""
    mask = layout.unpack(packed).action_mask  # (S, n_actions)
    return np.where(mask.any(axis=1), np.argmax(mask, axis=1), 0).astype(np.int64)


@ENV_REGISTRY.register("pettingzoo")
class PettingZooEnv:
    """Factory for any PettingZoo game: ``env=dict(type='pettingzoo', import_path='pettingzoo.classic.
    connect_four_v3:env')`` builds ``connect_four_v3.env(**kwargs)`` and packs its seats."""

    config: dict[str, Any] = dict(
        import_path=None,  # 'package.module:callable' returning a ParallelEnv or AECEnv
        kwargs={},  # keyword arguments of that callable
        end_when_out=[],  # seats whose leaving (all of them) ends the game; self-play sets the learner's seats
        # a game that can repeat moves forever (e.g. Go between greedy players) needs this cap: every agent still in
        # the game is truncated at that move (turns, or joint moves of a simultaneous game), the scores decide it
        max_episode_steps=None,  # cut every game at this many moves, the agents truncated (None: the game's end)
    )

    def __new__(cls, cfg: Mapping[str, Any]) -> gym.Env:  # type: ignore[misc]
        path = cfg.get("import_path")
        if not path:
            raise ConfigError("env.import_path is required for env type 'pettingzoo' (e.g. "
                              "'pettingzoo.classic.connect_four_v3:env')")
        cap = optional_count("env.max_episode_steps", cfg.get("max_episode_steps"), "the game's own end")
        make = import_object(str(path))
        kwargs = dict(cfg.get("kwargs") or {})
        try:
            game = make(**kwargs)
        except Exception as exc:  # the game's own check of its arguments (or its failure): one line naming both
            raise EnvError(f"env.import_path '{path}' could not build its game from env.kwargs={kwargs}: "
                           f"{type(exc).__name__}: {first_line(exc)}") from exc
        return seat_game(game, cfg.get("end_when_out") or (), str(path), cap)

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Build one game, reset it, play one move of legal actions and close it: a bad import path, unequal seat
        spaces, or game arguments that fail only once the game is played (PettingZoo's ``rps_v2`` takes
        ``max_cycles=None`` and fails at its first move) fail before anything is written. PettingZoo's
        ``max_cycles`` (the moves after which a game is cut) must be a whole number: at ``inf`` a game that never
        ends by itself (rock-paper-scissors) would hang its first evaluation."""
        cycles = (cfg.get("kwargs") or {}).get("max_cycles")
        if cycles is not None and (isinstance(cycles, bool) or not isinstance(cycles, int) or cycles < 1):
            raise ConfigError(f"env.kwargs.max_cycles must be a positive int (the moves after which PettingZoo cuts "
                              f"the game; leave it out for the game's default), got {cycles!r}")
        game: Any = cls(cfg)
        try:
            obs, _ = game.reset(seed=0)
            game.step(_first_legal_actions(game.layout, obs))
        except DingLiteError:
            raise
        except Exception as exc:
            raise EnvError(f"env.import_path '{cfg.get('import_path')}' with env.kwargs={dict(cfg.get('kwargs') or {})}"
                           f": the game's first move failed: {type(exc).__name__}: {first_line(exc)}") from exc
        finally:
            game.close()

    @classmethod
    def seat_layout(cls, cfg: Mapping[str, Any]) -> SeatLayout:
        """The seat layout of the section's game, from one game built, reset (a game may give its action masks in
        the infos) and closed."""
        game: Any = cls(cfg)  # a packed game (seat_game's adapter)
        try:
            try:
                game.reset(seed=0)
            except Exception as exc:
                raise EnvError(f"env.import_path '{cfg.get('import_path')}': the game's reset failed: "
                               f"{type(exc).__name__}: {first_line(exc)}") from exc
            return game.layout
        finally:
            game.close()

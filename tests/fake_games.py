"""A tiny PettingZoo ParallelEnv for the self-play tests: every transition says whose it is.

Seat s observes ``[s, t, 1]`` (its seat, the step count, 1 while in the game) and gets reward ``s + 1`` per step, so
a learner row that carries another seat's data shows at once. Agents listed in ``leave_at`` terminate at that step
while the game goes on; the game ends (all terminate) at ``episode_len``, or by a time limit at ``truncate_at``
(every agent still in truncated, as PettingZoo's ``max_cycles``); ``winner`` gets score 1, the others 0, unless
``scores`` gives every seat's score. An action for an agent that is not in the game, or one outside its action
space, raises. ``crash_at`` (with ``token_dir``) raises once, at the instance's ``crash_at``-th step over all its
episodes. ``obs_sizes`` gives seats unequal observation sizes; the seats in ``discrete_obs`` observe
``Discrete(obs_size)`` (the step count modulo it) instead of a Box; ``action_start`` numbers the two actions from
it (gymnasium's ``Discrete(2, start=action_start)``).

``TurnGame`` is the turn-based (AEC) counterpart, written to PettingZoo's AEC protocol: the agents move in turn, the
mover gets reward ``s + 1`` and observes ``[s, turn, 1]``; an agent in ``leave_at`` terminates after the turn of that
number while the others play on, and stays selected until it is stepped with ``None`` (its dead step). With
``info_mask`` the action masks come in the infos (action 1 illegal on odd turns), and an illegal action raises, as
does one outside the action space (``Discrete(2, start=action_start)``). ``episode_len`` may be a list: the
length of each game in turn (cycled), e.g. ``[2, 1]``: every other game ends at the first player's first turn.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import AECEnv, ParallelEnv


class TagGame(ParallelEnv):
    metadata = {"name": "tag_game_v0", "render_modes": []}

    def __init__(self, n_seats: int = 2, episode_len: int = 5, leave_at: dict | None = None, winner: int = 0,
                 crash_at: int | None = None, token_dir: str | None = None, obs_sizes: list | None = None,
                 truncate_at: int | None = None, scores: list | None = None, discrete_obs: list | None = None,
                 action_start: int = 0, cut_seats: list | None = None) -> None:
        self.possible_agents = [f"p{s}" for s in range(n_seats)]
        self.agents: list[str] = []
        self.episode_len, self.winner = episode_len, winner
        self.truncate_at = truncate_at
        self.cut_seats = cut_seats  # the seats the time limit takes out (None: all, which ends the game)
        self.scores = [float(x) for x in scores] if scores is not None else \
            [float(s == winner) for s in range(n_seats)]
        self.leave_at = {int(k): int(v) for k, v in (leave_at or {}).items()}
        self.crash_at, self.token_dir = crash_at, token_dir
        self.obs_sizes = obs_sizes or [3] * n_seats
        self.discrete_obs, self.action_start = set(discrete_obs or ()), action_start
        self.life_steps = 0
        self.t = 0

    def observation_space(self, agent: str) -> spaces.Space:
        s = self.possible_agents.index(agent)
        if s in self.discrete_obs:
            return spaces.Discrete(self.obs_sizes[s])
        return spaces.Box(-np.inf, np.inf, (self.obs_sizes[s],), np.float32)

    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(2, start=self.action_start)

    def _obs(self, agent: str, alive: bool = True) -> Any:
        s = self.possible_agents.index(agent)
        if s in self.discrete_obs:
            return self.t % self.obs_sizes[s]
        out = np.zeros(self.obs_sizes[s], dtype=np.float32)
        out[:3] = (s, self.t, float(alive))
        return out

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.agents = list(self.possible_agents)
        self.t = 0
        return {a: self._obs(a) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]) -> tuple[dict, dict, dict, dict, dict]:
        stray = set(actions) - set(self.agents)
        if stray:
            raise RuntimeError(f"tag game: actions for agents not in the game: {stray}")
        illegal = {a: m for a, m in actions.items() if not self.action_space(a).contains(m)}
        if illegal:
            raise RuntimeError(f"tag game: actions outside the action space: {illegal}")
        self.life_steps += 1
        if self.crash_at is not None and self.life_steps == self.crash_at and self._claim():
            raise RuntimeError("tag game: crash on purpose")
        self.t += 1
        over = self.t >= self.episode_len
        limit = not over and self.truncate_at is not None and self.t >= self.truncate_at
        leaving = {a for a in self.agents if self.leave_at.get(self.possible_agents.index(a)) == self.t}
        rewards = {a: float(self.possible_agents.index(a) + 1) for a in self.agents}
        terminations = {a: over or a in leaving for a in self.agents}
        truncations = {a: limit and a not in leaving
                       and (self.cut_seats is None or self.possible_agents.index(a) in self.cut_seats)
                       for a in self.agents}
        infos = {a: {"score": self.scores[self.possible_agents.index(a)]} for a in self.agents}
        observations = {a: self._obs(a, not (terminations[a] or truncations[a])) for a in self.agents}
        gone = leaving | {a for a in self.agents if truncations[a]}
        self.agents = [] if over or (limit and self.cut_seats is None) else [a for a in self.agents if a not in gone]
        return observations, rewards, terminations, truncations, infos

    def _claim(self) -> bool:
        if self.token_dir is None:
            return True
        try:
            os.close(os.open(os.path.join(self.token_dir, "crash"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False


def tag_game(**kwargs: Any) -> TagGame:
    return TagGame(**kwargs)


class TurnGame(AECEnv):
    metadata = {"name": "turn_game_v0", "render_modes": []}

    def __init__(self, n_seats: int = 3, episode_len: int | list = 9, leave_at: dict | None = None,
                 info_mask: bool = False, action_start: int = 0, shared_reward: bool = False) -> None:
        super().__init__()
        self.shared_reward = shared_reward  # every seat gets the mover's reward (not only the mover)
        self.possible_agents = [f"p{s}" for s in range(n_seats)]
        self.lengths = list(episode_len) if isinstance(episode_len, list | tuple) else [episode_len]
        self.games = 0
        self.episode_len, self.info_mask = self.lengths[0], info_mask
        self.leave_at = {f"p{k}": int(v) for k, v in (leave_at or {}).items()}
        self.turn = 0
        self._obs_space, self._act_space = spaces.Box(-np.inf, np.inf, (3,), np.float32), \
            spaces.Discrete(2, start=action_start)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_space

    def observe(self, agent: str) -> np.ndarray:
        done = self.terminations[agent] or self.truncations[agent]
        return np.array([self.possible_agents.index(agent), self.turn, float(not done)], dtype=np.float32)

    def _info(self) -> dict:
        return {"action_mask": np.array([1, self.turn % 2 == 0], dtype=np.int8)} if self.info_mask else {}

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.agents = list(self.possible_agents)
        self.turn = 0
        self.episode_len = self.lengths[self.games % len(self.lengths)]
        self.games += 1
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: self._info() for a in self.agents}
        self.agent_selection = self.agents[0]

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        illegal = self.info_mask and action == 1 + self._act_space.start and self.turn % 2 == 1
        if action is None or illegal or not self._act_space.contains(action):
            raise RuntimeError(f"turn game: illegal action {action} of {agent} at turn {self.turn}")
        self._cumulative_rewards[agent] = 0.0
        self.turn += 1
        mover = self.possible_agents.index(agent) + 1
        self.rewards = {a: float(self.shared_reward or a == agent) * mover for a in self.agents}
        over = self.turn >= self.episode_len
        for a in self.agents:
            self.terminations[a] = over or self.terminations[a] or self.leave_at.get(a) == self.turn
            self.infos[a] = self._info()
        live = [a for a in self.agents if not self.terminations[a]]
        if live:  # the next live agent after the mover, in seat order
            order = self.agents[self.agents.index(agent) + 1:] + self.agents[:self.agents.index(agent) + 1]
            self.agent_selection = next(a for a in order if a in live)
        self._accumulate_rewards()
        self._deads_step_first()


def turn_game(**kwargs: Any) -> TurnGame:
    return TurnGame(**kwargs)


def negated_samples(samples: dict) -> dict:
    """A test augmentation for DQN's ``policy.collect.augment``: observations negated, actions 0 <-> 1."""
    return {**samples, "obs": -samples["obs"], "next_obs_n": -samples["next_obs_n"], "action": 1 - samples["action"]}


ILLEGAL_MOVES: list[tuple[str, Any]] = []  # (agent, action) of every masked-out move a MaskCounter was given


class MaskCounter(AECEnv):
    """A PettingZoo AEC game (``import_path``, built with ``kwargs``) that books in :data:`ILLEGAL_MOVES` every move
    its action mask forbids (the mask of the observation dict, or of the info), then plays it on."""

    def __init__(self, import_path: str, **kwargs: Any) -> None:
        from ding_lite.registry import import_object
        super().__init__()
        self.env = import_object(import_path)(**kwargs)
        self.possible_agents, self.metadata = self.env.possible_agents, self.env.metadata

    def __getattr__(self, name: str) -> Any:  # the game's state: agents, rewards, terminations, ...
        if "env" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.__dict__["env"], name)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.env.observation_space(agent)

    def action_space(self, agent: str) -> spaces.Space:
        return self.env.action_space(agent)

    def observe(self, agent: str) -> Any:
        return self.env.observe(agent)

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> None:
        agent = self.env.agent_selection
        if action is not None:
            obs = self.env.observe(agent)
            mask = obs["action_mask"] if isinstance(obs, dict) else (self.env.infos.get(agent) or {}).get("action_mask")
            if mask is not None and not mask[action]:
                ILLEGAL_MOVES.append((agent, action))
        self.env.step(action)

    def close(self) -> None:
        self.env.close()


def mask_counter(**kwargs: Any) -> MaskCounter:
    return MaskCounter(**kwargs)

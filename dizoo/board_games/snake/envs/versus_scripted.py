"""The snake arena as a single-agent gymnasium env: the agent plays seat 0, scripted snakes (``snake_careful`` by
default) the others. Any single-agent learner, ding_lite's serial pipeline or another library's, can train on it;
``benchmarks/snake_peers.py`` uses it to run a peer library's learners on the self-play arena's measurement.

The agent's episode ends when its snake dies (terminated, the arena's -1) or the game ends (the last snake alive:
terminated; the time limit: truncated, as the arena says). The game is then played out without it, so the last
step's ``info['win']`` is the agent's result as the self-play arena books it: 1.0 when its score (steps survived,
length / 100 as the tie-break) beats every other snake's, else 0.0; ``info['draw']`` when it ties the best.

    import dizoo.board_games.snake.envs.versus_scripted  # registers the id
    env = gymnasium.make("SnakeVsCareful-v0")  # or SnakeVersusScripted(opponent="snake_heuristic", **arena kwargs)
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from ding_lite.league.payoff import DRAW, WIN
from ding_lite.league.seats import game_score
from ding_lite.registry import OPPONENT_REGISTRY
from dizoo.board_games.snake.envs import heuristic  # noqa: F401  (registers the scripted snakes)
from dizoo.board_games.snake.envs.snake_arena import SnakeArenaEnv

# the arena of snake_arena_dqn_config.py (tests/dizoo_envs/test_snake_versus_scripted.py holds them equal)
ARENA_KWARGS: dict[str, Any] = dict(n_snakes=4, size=11, n_food=3, max_steps=100, food_reward=0.3)


class SnakeVersusScripted(gym.Env):
    """Seat 0 of a :class:`SnakeArenaEnv` against ``opponent`` (a registered scripted snake) in every other seat."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, opponent: str = "snake_careful", **arena_kwargs: Any) -> None:
        self.game = SnakeArenaEnv(**{**ARENA_KWARGS, **arena_kwargs})
        self.agent = self.game.possible_agents[0]
        self.observation_space = self.game.observation_space(self.agent)
        self.action_space = self.game.action_space(self.agent)
        self._opponent_type = OPPONENT_REGISTRY.get(opponent)
        self._opponent = self._opponent_type(seed=0)
        self._obs: dict[str, np.ndarray] = {}
        self._scores: dict[str, float] = {}  # each snake's last score: a dead snake's stays as it died

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        if seed is not None:  # the scripted snakes break ties with their own generator: seed it too
            self._opponent = self._opponent_type(seed=seed)
        self._obs, _ = self.game.reset(seed=int(self.np_random.integers(2 ** 31)))
        self._scores = {}
        return self._obs[self.agent], {}

    def _opponent_actions(self) -> dict[str, int]:
        others = [a for a in self.game.agents if a != self.agent]
        if not others:
            return {}
        actions = self._opponent.act(np.stack([self._obs[a] for a in others]), np.ones((len(others), 3), bool))
        return {a: int(x) for a, x in zip(others, actions, strict=True)}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        actions = self._opponent_actions()
        actions[self.agent] = int(action)
        self._obs, rewards, terminations, truncations, infos = self.game.step(actions)
        obs = self._obs[self.agent]
        self._scores.update({a: i["score"] for a, i in infos.items()})
        terminated, truncated = bool(terminations[self.agent]), bool(truncations[self.agent])
        info: dict[str, Any] = {}
        if terminated or truncated:
            while self.game.agents:  # the others play on: the agent's result needs their scores
                self._obs, _, _, _, later = self.game.step(self._opponent_actions())
                self._scores.update({a: i["score"] for a, i in later.items()})
            seats = [self._scores[a] for a in self.game.possible_agents]  # the agent is seat 0
            result = game_score(seats, 0, range(1, len(seats)))
            info.update(win=float(result == WIN), draw=float(result == DRAW))
        return obs, float(rewards[self.agent]), terminated, truncated, info


gym.register("SnakeVsCareful-v0", entry_point=SnakeVersusScripted)

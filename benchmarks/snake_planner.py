"""What the snake arena's bar asks for: the win rate against three ``snake_careful`` snakes of a player that knows
the rules and the careful snakes' own policy, and plans with them.

The planner (seat ``snake_0``) tries each of its three moves in ``--rollouts`` copies of the game, plays on for
``--depth`` steps with every snake (itself too) moving as ``snake_careful`` does, and takes the move with the best
mean return (the env's rewards: -1 on death, +1 to the winner, food; plus 0.05 per unit of length lead where the
rollout ends with it alive). It is given what no learner has: a copy of the env to simulate, and the opponents'
exact policy (only their tie-breaking noise differs). A ``snake_careful`` snake in the same seat, on the same games,
is the reference (an equal player wins about 0.25 less the draws). Prints both win rates with their standard errors,
how often each was alive at ``max_steps`` and how many of its wins the time limit decided.

``--model random_safe`` takes the opponents' policy away: in the rollouts the other snakes move uniformly at random
among the moves that hit no wall and no body (the planner itself still as ``snake_careful``), to see how much of the
planner's strength is its model of these particular opponents.

    python benchmarks/snake_planner.py [--games 100] [--rollouts 4] [--depth 20] [--model careful|random_safe]
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's dizoo

import numpy as np  # noqa: E402

from ding_lite.config import read_config  # noqa: E402
from dizoo.board_games.snake.envs.heuristic import SnakeCareful  # noqa: E402
from dizoo.board_games.snake.envs.snake_arena import DANGER_SELF, REACH, SnakeArenaEnv  # noqa: E402

ME = "snake_0"
# the arena that the learners train and are measured in: the shipped config's env
CONFIG = Path(__file__).resolve().parents[1] / "dizoo/board_games/snake/config/snake_arena_dqn_config.py"
ARENA: dict[str, Any] = dict(read_config(CONFIG)[0]["env"]["kwargs"])
GAME_SEED = 500_000  # games the training runs never saw
WIN = 0.99  # a step reward this high holds the +1 of the winner


def careful_moves(player: SnakeCareful, obs: dict, agents: list[str]) -> dict[str, int]:
    if not agents:
        return {}
    batch = np.stack([obs[a] for a in agents])
    moves = player.act(batch, np.ones((len(agents), 3), dtype=bool))  # every move is legal in the arena
    return dict(zip(agents, moves.tolist(), strict=True))


def random_safe_moves(rng: np.random.Generator, obs: dict, agents: list[str]) -> dict[str, int]:
    """Each snake's move uniformly at random among those that hit no wall and no body (any move if none is)."""
    moves = {}
    for a in agents:
        safe = (obs[a][DANGER_SELF] < 0.5) & (obs[a][REACH] > 0.0)
        moves[a] = int((rng.random(3) + safe).argmax())
    return moves


def rollout(env: SnakeArenaEnv, obs: dict, first: int, depth: int, player: SnakeCareful,
            model_rng: np.random.Generator | None = None) -> float:
    """The planner's return over ``depth`` steps of ``env`` (a copy) after it plays ``first``, all moving as the
    careful snake does (``model_rng`` given: the other snakes move as :func:`random_safe_moves`)."""
    ret = 0.0
    for d in range(depth):
        if ME not in env.agents:
            return ret
        if model_rng is None:
            acts = careful_moves(player, obs, list(env.agents))
        else:
            acts = random_safe_moves(model_rng, obs, [a for a in env.agents if a != ME])
            acts.update(careful_moves(player, obs, [ME]))
        if d == 0:
            acts[ME] = first
        obs, rewards, term, trunc, _ = env.step(acts)
        ret += rewards.get(ME, 0.0)
        if term.get(ME) or trunc.get(ME):
            return ret
    lead = len(env.bodies[ME]) - max((len(b) for a, b in env.bodies.items() if a != ME), default=0)
    return ret + 0.05 * lead


def play(game: int, planner: bool, rollouts: int, depth: int, model: str = "careful") -> tuple[bool, bool]:
    """One game of ``snake_0`` (the planner, or a careful snake) against three careful snakes: did it win, and was
    it alive at the time limit. ``model``: how the planner's rollouts move the other snakes."""
    model_rng = np.random.default_rng(GAME_SEED + game) if model == "random_safe" else None
    env = SnakeArenaEnv(**ARENA)
    obs, _ = env.reset(seed=GAME_SEED + game)
    opponents, mine, sim = SnakeCareful(game), SnakeCareful(game + 1), SnakeCareful(game + 2)
    won = at_limit = False
    while env.agents:
        acts = careful_moves(opponents, obs, [a for a in env.agents if a != ME])
        if ME in env.agents:
            if planner:
                values = []
                for move in range(3):
                    total = 0.0
                    for k in range(rollouts):
                        copy_env = copy.deepcopy(env)
                        copy_env._rng = np.random.default_rng([game, move, k])  # the food the copy will spawn
                        total += rollout(copy_env, obs, move, depth, sim, model_rng)
                    values.append(total / rollouts)
                acts[ME] = int(np.argmax(values))
            else:
                acts.update(careful_moves(mine, obs, [ME]))
        obs, rewards, _, truncated, _ = env.step(acts)
        won = won or rewards.get(ME, 0.0) >= WIN
        at_limit = at_limit or bool(truncated.get(ME))
    return won, at_limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--model", choices=["careful", "random_safe"], default="careful",
                        help="how the planner's rollouts move the other snakes")
    args = parser.parse_args()
    start = time.perf_counter()
    row = {}
    for name, planner in (("careful", False), ("planner", True)):
        games = np.array([play(g, planner, args.rollouts, args.depth, args.model) for g in range(args.games)],
                         dtype=float)
        wins, at_limit = games[:, 0], games[:, 1]
        row[name] = {"win": round(float(wins.mean()), 3),
                     "se": round(float(wins.std(ddof=1) / np.sqrt(len(wins))), 3),
                     # how the games went: alive at max_steps, and the wins that the time limit decided
                     "alive_at_limit": round(float(at_limit.mean()), 3),
                     "win_at_limit": round(float((wins * at_limit).mean()), 3)}
        print(name, row[name], f"{time.perf_counter() - start:.0f} s", flush=True)
    print(json.dumps({"games": args.games, "rollouts": args.rollouts, "depth": args.depth, "model": args.model,
                      **row}))


if __name__ == "__main__":
    main()

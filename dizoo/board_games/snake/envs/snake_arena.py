"""Multi-snake arena in numpy as a PettingZoo ``ParallelEnv``: several snakes on one grid, food, simultaneous moves.

A snake dies when its head leaves the grid, enters a body (its own or another's, after this step's tails moved) or
meets another head. The last snake alive wins; after ``max_steps`` the longest-lived, then the longest, wins.
Each agent's ``info['score']`` (steps survived, plus length / 100 as the tie-break) decides the game.

Actions are relative to the heading: 0 straight, 1 turn left, 2 turn right. The observation of a snake is 21
egocentric features (see :meth:`SnakeArenaEnv.features`); the scripted snakes of ``heuristic.py`` act on them. With
``local_view=k`` the features are followed by a ``(2k+1) x (2k+1)`` window of the grid around the head, turned so
that its top row lies ahead (see :meth:`SnakeArenaEnv.view`): where the other snakes are, which the 21 features only
tell for the three cells next to the head.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv

_MOVES = np.array([(-1, 0), (0, 1), (1, 0), (0, -1)])  # up, right, down, left (heading = index)
N_FEATURES = 21
# feature index ranges
DANGER_SELF = slice(0, 3)  # straight / left / right cell is a wall or the snake's own body
DANGER_OTHER = slice(3, 6)  # ... is another snake's body or next to another snake's head
FREE_RUN = slice(6, 9)  # free cells in a straight line that way / grid size
FOOD_VECTOR = slice(9, 11)  # nearest food: (ahead, right) distance / grid size
FOOD_SIDE = slice(11, 14)  # nearest food is ahead / left / right
LENGTH, OTHERS = 14, 15  # own length / 20, snakes still in the game besides this one / (n - 1)
REACH = slice(16, 19)  # free cells reachable from the straight / left / right cell (flood fill) / grid cells
# own length minus the longest other snake's / 20 (clipped to [-1, 1]), and steps left / max_steps: at max_steps the
# longest survivor wins, so a snake needs both to see whether the time limit will make it the winner
LENGTH_LEAD, STEPS_LEFT = 19, 20
# the local view's planes, in this order after the features: cells a snake dies entering (off the grid, or a body
# cell that stays next step: every body but the tails), the other snakes' heads, food
VIEW_CHANNELS = 3


def _start_spots(size: int) -> list[tuple[list[tuple[int, int]], int]]:
    """Four starting bodies (head first) in the middle band of each edge, heading inwards on lanes that do not
    meet head-on."""
    a, b = size // 4 + 1, size - size // 4 - 2
    return [
        ([(2, a), (1, a), (0, a)], 2),  # top, heading down
        ([(size - 3, b), (size - 2, b), (size - 1, b)], 0),  # bottom, heading up
        ([(b, 2), (b, 1), (b, 0)], 1),  # left, heading right
        ([(a, size - 3), (a, size - 2), (a, size - 1)], 3),  # right, heading left
    ]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_arguments(n_snakes: Any, size: Any, n_food: Any, max_steps: Any, food_reward: Any, local_view: Any) -> None:
    """A ValueError naming the first argument the arena cannot use (the env's factory reports it as a config error,
    before a run writes anything): counts are ints (no bools), the food reward a finite number."""
    if not _is_int(n_snakes) or not 2 <= n_snakes <= 4:
        raise ValueError(f"snake arena: n_snakes must be 2, 3 or 4, got {n_snakes!r}")
    for name, value, low, meaning in (("size", size, 7, "the grid's side"), ("n_food", n_food, 0, "pieces of food"),
                                      ("max_steps", max_steps, 1, "a game's length"),
                                      ("local_view", local_view, 0, "the window's half side")):
        if not _is_int(value) or value < low:
            raise ValueError(f"snake arena: {name} must be an int of at least {low} ({meaning}), got {value!r}")
    if isinstance(food_reward, bool) or not isinstance(food_reward, (int, float)) or not math.isfinite(food_reward):
        raise ValueError(f"snake arena: food_reward must be a finite number, got {food_reward!r}")


class SnakeArenaEnv(ParallelEnv):
    """``n_snakes`` (2 to 4) snakes on a ``size`` x ``size`` grid with ``n_food`` pieces of food.

    Rewards: ``food_reward`` per food eaten, -1 on death, +1 to the winner: the last snake alive, or at
    ``max_steps`` the longest survivor (none on a tie), so the reward says who won the game."""

    metadata = {"name": "snake_arena_v0", "render_modes": []}
    render_mode: str | None = None  # no rendering; PettingZoo's wrappers (parallel_to_aec) read the attribute

    def __init__(self, n_snakes: int = 4, size: int = 11, n_food: int = 3, max_steps: int = 100,
                 food_reward: float = 0.1, shuffle_starts: bool = True, local_view: int = 0) -> None:
        _check_arguments(n_snakes, size, n_food, max_steps, food_reward, local_view)
        self.local_view = local_view
        self.n_obs = N_FEATURES + (VIEW_CHANNELS * (2 * local_view + 1) ** 2 if local_view else 0)
        self.n_snakes, self.size, self.n_food, self.max_steps = n_snakes, size, n_food, max_steps
        self.food_reward, self.shuffle_starts = food_reward, shuffle_starts
        self.possible_agents = [f"snake_{k}" for k in range(n_snakes)]
        self.agents: list[str] = []
        self._obs_space = spaces.Box(-1.0, 1.0, (self.n_obs,), np.float32)
        self._act_space = spaces.Discrete(3)
        self._rng = np.random.default_rng()

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_space

    # ---- dynamics ----------------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        spots = _start_spots(self.size)
        order = self._rng.permutation(4)[:self.n_snakes] if self.shuffle_starts else np.arange(self.n_snakes)
        if not self.shuffle_starts and self.n_snakes == 2:
            order = np.array([0, 1])
        self.bodies = {a: list(spots[k][0]) for a, k in zip(self.possible_agents, order, strict=True)}
        self.heading = {a: spots[k][1] for a, k in zip(self.possible_agents, order, strict=True)}
        self.agents = list(self.possible_agents)
        self.t = 0
        self.death_step: dict[str, int | None] = {a: None for a in self.possible_agents}
        self.food: list[tuple[int, int]] = []
        self._spawn_food()
        regions, grids = self._regions(), self._view_grids()
        return {a: self.features(a, regions, grids) for a in self.agents}, {a: {} for a in self.agents}

    def _spawn_food(self) -> None:
        taken = {c for body in self.bodies.values() for c in body} | set(self.food)
        free = [(r, c) for r in range(self.size) for c in range(self.size) if (r, c) not in taken]
        while len(self.food) < self.n_food and free:
            self.food.append(free.pop(int(self._rng.integers(len(free)))))

    def step(self, actions: dict[str, int]) -> tuple[dict, dict, dict, dict, dict]:
        self.t += 1
        rewards = {a: 0.0 for a in self.agents}
        heads: dict[str, tuple[int, int]] = {}
        for a in self.agents:
            turn = int(actions.get(a, 0))
            self.heading[a] = (self.heading[a] + (3 if turn == 1 else 1 if turn == 2 else 0)) % 4
            dr, dc = _MOVES[self.heading[a]]
            heads[a] = (self.bodies[a][0][0] + int(dr), self.bodies[a][0][1] + int(dc))
        for a in self.agents:
            ate = heads[a] in self.food
            self.bodies[a] = [heads[a]] + (self.bodies[a] if ate else self.bodies[a][:-1])
            if ate:
                self.food.remove(heads[a])
                rewards[a] += self.food_reward
        dead = self._collisions(heads)
        for a in dead:
            rewards[a] -= 1.0
            self.death_step[a] = self.t
        survivors = [a for a in self.agents if a not in dead]
        over = len(survivors) <= 1
        if len(survivors) == 1:
            rewards[survivors[0]] += 1.0  # the last snake alive wins
        truncated = not over and self.t >= self.max_steps
        if truncated:  # the time limit decides the game: the winner gets its win reward as the last alive does
            best = self._limit_winner(survivors)
            if best is not None:
                rewards[best] += 1.0
        terminations = {a: a in dead or over for a in self.agents}
        truncations = {a: truncated and a not in dead for a in self.agents}
        for a in dead:
            del self.bodies[a]
        self._spawn_food()
        infos = {a: {"score": self._score(a)} for a in self.agents}
        regions, grids = self._regions(), self._view_grids()
        observations = {a: self.features(a, regions, grids) if a in self.bodies else np.zeros(self.n_obs, np.float32)
                        for a in self.agents}
        self.agents = [] if over or truncated else survivors
        return observations, rewards, terminations, truncations, infos

    def _collisions(self, heads: dict[str, tuple[int, int]]) -> set[str]:
        size = self.size
        cells: dict[tuple[int, int], int] = {}
        for body in self.bodies.values():
            for cell in body[1:]:
                cells[cell] = cells.get(cell, 0) + 1
        head_count: dict[tuple[int, int], int] = {}
        for h in heads.values():
            head_count[h] = head_count.get(h, 0) + 1
        return {a for a, (r, c) in heads.items()
                if not (0 <= r < size and 0 <= c < size) or (r, c) in cells or head_count[(r, c)] > 1}

    def _limit_winner(self, survivors: list[str]) -> str | None:
        """The one survivor that is longer than every other at the time limit (they all lived as long), or None on
        a tie."""
        lengths = sorted((len(self.bodies[a]), a) for a in survivors)
        if len(lengths) > 1 and lengths[-1][0] == lengths[-2][0]:
            return None
        return lengths[-1][1]

    def _score(self, agent: str) -> float:
        died = self.death_step[agent]
        survived = died - 1 if died is not None else self.t
        length = len(self.bodies.get(agent, ()))
        return float(survived) + length / 100.0

    # ---- observation -------------------------------------------------------------------------------------------
    def _regions(self) -> tuple[np.ndarray, np.ndarray]:
        """Connected regions of the free cells (4-neighbour flood fill): (size, size) region ids (-1: a body cell)
        and each region's cell count. Tails count as free: they move on in the next step (unless their snake eats)."""
        size = self.size
        label = np.full((size, size), -1, dtype=np.int64)
        blocked = np.zeros((size, size), dtype=bool)
        for body in self.bodies.values():
            for r, c in body[:-1]:
                blocked[r, c] = True
        counts: list[int] = []
        for start in zip(*np.nonzero(~blocked), strict=True):
            if label[start] >= 0:
                continue
            region, stack, n = len(counts), [start], 0
            label[start] = region
            while stack:
                r, c = stack.pop()
                n += 1
                for dr, dc in _MOVES:
                    nr, nc = r + int(dr), c + int(dc)
                    if 0 <= nr < size and 0 <= nc < size and not blocked[nr, nc] and label[nr, nc] < 0:
                        label[nr, nc] = region
                        stack.append((nr, nc))
            counts.append(n)
        return label, np.asarray(counts, dtype=np.int64)

    def features(self, agent: str, regions: tuple[np.ndarray, np.ndarray] | None = None,
                 grids: np.ndarray | None = None) -> np.ndarray:
        """21 egocentric features of ``agent`` (see the index constants of this module); ``regions`` as
        :meth:`_regions` gives them (computed here if not given: one flood fill serves every snake of a step)."""
        label, counts = regions if regions is not None else self._regions()
        size, body, heading = self.size, self.bodies[agent], self.heading[agent]
        own = set(body[:-1])
        others = {c for a, b in self.bodies.items() if a != agent for c in b}
        near_heads = {(b[0][0] + int(dr), b[0][1] + int(dc)) for a, b in self.bodies.items() if a != agent
                      for dr, dc in _MOVES}
        out = np.zeros(N_FEATURES, dtype=np.float32)
        head = body[0]
        for k, turn in enumerate((0, 3, 1)):  # straight, left, right
            dr, dc = _MOVES[(heading + turn) % 4]
            cell = (head[0] + int(dr), head[1] + int(dc))
            out[DANGER_SELF][k] = not (0 <= cell[0] < size and 0 <= cell[1] < size) or cell in own
            out[DANGER_OTHER][k] = cell in others or cell in near_heads
            inside = 0 <= cell[0] < size and 0 <= cell[1] < size
            region = label[cell] if inside else -1
            out[REACH][k] = counts[region] / (size * size) if region >= 0 and cell not in own else 0.0
            run = 0
            while 0 <= cell[0] < size and 0 <= cell[1] < size and cell not in own and cell not in others:
                run += 1
                cell = (cell[0] + int(dr), cell[1] + int(dc))
            out[FREE_RUN][k] = run / size
        if self.food:
            dists = [abs(f[0] - head[0]) + abs(f[1] - head[1]) for f in self.food]
            fr, fc = self.food[int(np.argmin(dists))]
            fwd, right = _MOVES[heading], _MOVES[(heading + 1) % 4]
            ahead = (fr - head[0]) * fwd[0] + (fc - head[1]) * fwd[1]
            side = (fr - head[0]) * right[0] + (fc - head[1]) * right[1]
            out[FOOD_VECTOR] = (ahead / size, side / size)
            out[FOOD_SIDE] = (ahead > 0, side < 0, side > 0)
        out[LENGTH] = min(len(body) / 20.0, 1.0)
        out[OTHERS] = (len(self.bodies) - 1) / max(self.n_snakes - 1, 1)
        longest_other = max((len(b) for a, b in self.bodies.items() if a != agent), default=0)
        out[LENGTH_LEAD] = np.clip((len(body) - longest_other) / 20.0, -1.0, 1.0)
        out[STEPS_LEFT] = max(self.max_steps - self.t, 0) / self.max_steps
        if self.local_view:
            return np.concatenate([out, self.view(agent, grids).ravel()])
        return out

    def _view_grids(self) -> np.ndarray | None:
        """``(3, size, size)`` planes of the whole grid for :meth:`view` (deadly cells, every head, food), built once
        per step for all snakes; None without a local view."""
        if not self.local_view:
            return None
        grids = np.zeros((VIEW_CHANNELS, self.size, self.size), dtype=np.float32)
        for body in self.bodies.values():
            for r, c in body[:-1]:
                grids[0, r, c] = 1.0
            grids[1][body[0]] = 1.0
        for cell in self.food:
            grids[2][cell] = 1.0
        return grids

    def view(self, agent: str, grids: np.ndarray | None = None) -> np.ndarray:
        """``(3, 2k+1, 2k+1)`` float32 window of the grid around ``agent``'s head (``k = local_view``), turned to its
        heading: row 0 lies ``k`` cells ahead, the centre row through the head, column 0 ``k`` cells to the left.
        Planes: deadly cells (off the grid, or a body cell other than a tail), the other snakes' heads, food.
        ``grids`` as :meth:`_view_grids` gives them (built here if not given)."""
        k, size = self.local_view, self.size
        planes = self._view_grids() if grids is None else grids
        assert planes is not None, "view() needs local_view > 0"
        head, heading = self.bodies[agent][0], self.heading[agent]
        fwd, right = _MOVES[heading], _MOVES[(heading + 1) % 4]
        ahead = np.arange(k, -k - 1, -1).reshape(-1, 1)  # rows: k ahead .. k behind
        side = np.arange(-k, k + 1).reshape(1, -1)  # columns: k left .. k right
        rows = head[0] + ahead * fwd[0] + side * right[0]
        cols = head[1] + ahead * fwd[1] + side * right[1]
        inside = (rows >= 0) & (rows < size) & (cols >= 0) & (cols < size)
        r, c = np.clip(rows, 0, size - 1), np.clip(cols, 0, size - 1)
        window = np.where(inside, planes[:, r, c], 0.0)
        window[0][~inside] = 1.0  # off the grid is deadly
        window[1][k, k] = 0.0  # the window's centre is the snake's own head: plane 1 holds the other snakes' heads
        return window.astype(np.float32)


def snake_arena(**kwargs: Any) -> SnakeArenaEnv:
    """The arena as ``env.import_path='dizoo.board_games.snake.envs.snake_arena:snake_arena'`` builds it."""
    return SnakeArenaEnv(**kwargs)

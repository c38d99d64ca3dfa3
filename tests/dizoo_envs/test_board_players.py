"""dizoo's scripted board-game players and helpers: the perfect tic-tac-toe player, its board symmetries, the
one-ply connect-four player, the snake arena's flood-fill features and its careful snake, by hand-built cases."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.data.keys import ACTION, NEXT_ACTION_MASK, NEXT_OBS_N, OBS, RETURN_N
from dizoo.board_games.connect_four.envs.heuristic import ConnectFourOnePly, ConnectFourWinOrRandom
from dizoo.board_games.snake.envs.heuristic import SnakeCareful
from dizoo.board_games.snake.envs.snake_arena import DANGER_OTHER, DANGER_SELF, FOOD_SIDE, REACH, SnakeArenaEnv
from dizoo.board_games.tictactoe.envs.minimax import (
    TicTacToeMinimax,
    blunders,
    board_bits,
    game_value,
    move_values,
)
from dizoo.board_games.tictactoe.envs.symmetry import d4

pytestmark = pytest.mark.unittest


def _board(mine: list[int], theirs: list[int]) -> np.ndarray:
    obs = np.zeros((3, 3, 2), dtype=np.float32)
    for cell in mine:
        obs[cell // 3, cell % 3, 0] = 1.0
    for cell in theirs:
        obs[cell // 3, cell % 3, 1] = 1.0
    return obs


def test_tictactoe_values_by_hand():
    assert game_value(0, 0) == 0  # tic-tac-toe is a draw
    # X (to move) has 0 and 1: 2 wins; O threatens nothing
    values = move_values(*board_bits(_board([0, 1], [4, 8])))
    assert values[2] == 1 and max(values.values()) == 1
    # O (to move) must block X's 0-1-2: every other move loses
    values = move_values(*board_bits(_board([4], [0, 1])))
    assert values[2] == 0 and all(v == -1 for c, v in values.items() if c != 2)
    player = TicTacToeMinimax(seed=0)
    # against a corner opening the only moves that do not lose are the centre (4)
    assert {int(player.act(_board([], [0])[None], np.ones((1, 9), bool))[0]) for _ in range(20)} == {4}


def test_minimax_never_loses_and_draws_itself_in_the_real_game():
    pytest.importorskip("pettingzoo.classic")
    from pettingzoo.classic import tictactoe_v3

    players = {"player_1": TicTacToeMinimax(seed=1), "player_2": TicTacToeMinimax(seed=2)}
    rng = np.random.default_rng(0)
    # 10 games against a random player, 10 against itself: the real game's layout and rewards (that it never loses
    # to anyone, every position checked, is test_blunders_finds_the_one_losing_move_of_a_player's)
    for game in range(20):
        env = tictactoe_v3.raw_env()
        env.reset(seed=game)
        random_seat = "player_2" if game % 2 == 0 else "player_1"
        while env.agents:
            agent = env.agent_selection
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                break
            mask = observation["action_mask"].astype(bool)
            if game < 10 and agent == random_seat:  # half the games against a random player
                action = int(rng.choice(np.flatnonzero(mask)))
            else:
                action = int(players[agent].act(observation["observation"][None], mask[None])[0])
            assert mask[action]
            env.step(action)
        rewards = env.rewards
        if game < 10:
            assert rewards["player_1" if random_seat == "player_2" else "player_2"] >= 0
        else:
            assert rewards == {"player_1": 0, "player_2": 0}


def test_blunders_finds_the_one_losing_move_of_a_player():
    perfect = TicTacToeMinimax(seed=0)
    assert all(r["blunders"] == 0 and r["losing"] == 0 and r["positions"] > 0 for r in blunders(perfect.act).values())

    def flawed(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Perfect, except that as O after X 0, O 4, X 8 it takes corner 2 (X then forks with 6: it must take an
        edge); the same trap in its other orientations (X 2 and 6, ...) it plays right."""
        moves = perfect.act(obs, mask)
        trap = [i for i, o in enumerate(obs) if board_bits(o) == (1 << 4, 1 << 0 | 1 << 8)]
        moves[trap] = 2
        return moves

    report = blunders(flawed)
    assert report["first"]["blunders"] == 0
    assert report["second"]["blunders"] == report["second"]["losing"] == 1
    assert report["second"]["examples"] == [([4], [0, 8], 2, [1, 3, 5, 7])]


def test_d4_images_move_boards_and_actions_together():
    obs = _board([1], [0])[None]
    nxt = _board([1, 5], [0])[None]
    samples = {OBS: obs, NEXT_OBS_N: nxt, ACTION: np.array([5]), NEXT_ACTION_MASK: np.ones((1, 9), bool),
               RETURN_N: np.array([0.5], np.float32)}
    out = d4(samples)
    assert len(out[ACTION]) == 7 and (out[RETURN_N] == 0.5).all()
    for k in range(7):  # the action's cell holds the new mark in each image
        new = out[NEXT_OBS_N][k, ..., 0] - out[OBS][k, ..., 0]
        assert np.argwhere(new).tolist() == [[out[ACTION][k] // 3, out[ACTION][k] % 3]]
    boards = {tuple(b.reshape(-1)) for b in np.concatenate([obs, out[OBS]])}
    assert len(boards) == 8  # an edge and the corner next to it: no symmetry keeps them, 8 distinct images


def _c4(mine: list[tuple[int, int]], theirs: list[tuple[int, int]]) -> np.ndarray:
    obs = np.zeros((6, 7, 2), dtype=np.float32)
    for r, c in mine:
        obs[r, c, 0] = 1.0
    for r, c in theirs:
        obs[r, c, 1] = 1.0
    return obs


def _legal(obs: np.ndarray) -> np.ndarray:
    return ~(obs[0, :, 0] + obs[0, :, 1]).astype(bool)


def test_one_ply_connect_four_wins_blocks_and_hands_over_nothing():
    player = ConnectFourOnePly(seed=0)

    def moves(obs):
        return {int(player.act(obs[None], _legal(obs)[None])[0]) for _ in range(30)}

    assert moves(_c4([(5, 0), (5, 1), (5, 2)], [(4, 0), (4, 1), (4, 2)])) == {3}  # win beats block
    assert moves(_c4([(5, 6)], [(5, 0), (5, 1), (5, 2)])) == {3}  # block
    # a piece in column 3 lands on (5, 3) and lets the opponent complete row 4 at (4, 3): never played
    handing_over = _c4([(5, 0), (5, 1), (5, 6)], [(4, 0), (4, 1), (4, 2), (5, 2)])
    assert moves(handing_over) == {0, 1, 2, 4, 5, 6}


def test_win_or_random_connect_four_takes_a_win_else_plays_any_column():
    player = ConnectFourWinOrRandom(seed=0)

    def moves(obs):
        return {int(player.act(obs[None], _legal(obs)[None])[0]) for _ in range(60)}

    assert moves(_c4([(5, 0), (5, 1), (5, 2)], [(4, 0), (4, 1), (4, 2)])) == {3}  # its win
    assert moves(_c4([(5, 6)], [(5, 0), (5, 1), (5, 2)])) == set(range(7))  # no block: every column
    full = _c4([(r, 0) for r in (1, 3, 5)] + [(5, 6)], [(r, 0) for r in (0, 2, 4)])
    assert moves(full) == set(range(1, 7))  # never the full column


def test_flood_fill_reach_and_the_careful_snake():
    env = SnakeArenaEnv(n_snakes=2, size=7, n_food=1)
    env.reset(seed=0)
    # snake_0 heads up at (3, 1); snake_1's body is a wall down column 2, closing the left strip (columns 0-1)
    # (its tail (6, 3) moves on: a free cell, but on the right side)
    env.bodies = {"snake_0": [(3, 1), (4, 1), (5, 1)],
                  "snake_1": [(0, 2), (1, 2), (2, 2), (3, 2), (4, 2), (5, 2), (6, 2), (6, 3)]}
    env.heading = {"snake_0": 0, "snake_1": 2}
    env.food = [(0, 6)]
    features = env.features("snake_0")
    # straight (2, 1) and left (3, 0) lie in the left strip: 14 cells less the 2 body cells before the tail = 12
    # (the tail (5, 1) moves on); right (3, 2) is snake_1's body
    assert features[REACH].tolist() == pytest.approx([12 / 49, 12 / 49, 0.0])
    assert features[DANGER_OTHER][2] == 1.0 and features[DANGER_SELF].tolist() == [0, 0, 0]
    careful = SnakeCareful(seed=0)
    row = np.zeros((1, len(features)), dtype=np.float32)
    row[0, REACH] = [0.05, 0.4, 0.4]  # straight into a pocket, left and right into open space
    row[0, DANGER_OTHER] = [0, 1, 0]  # left is next to another head
    row[0, FOOD_SIDE] = [1, 1, 0]  # the food lies ahead and left
    assert careful.act(row, np.ones((1, 3), bool)).tolist() == [2]  # open space, away from the head
    row[0, REACH] = [0.4, 0.4, 0.0]  # right is a body now (no open space)
    row[0, DANGER_OTHER] = [0, 0, 1]
    row[0, FOOD_SIDE] = [1, 0, 0]
    assert careful.act(row, np.ones((1, 3), bool)).tolist() == [0]  # towards the food between equal spaces

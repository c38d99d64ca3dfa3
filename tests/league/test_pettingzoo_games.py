"""Self-play over games the learner may not get to play: a turn-based game that the opponents end before the
learner's first move (PettingZoo's poker: the first player folds) is replayed, not scored and not an episode of the
learner's; real PettingZoo games (skipped where their extra is missing) keep the one-episode-end-per-ending-row
contract and never see an illegal move."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.build import build_env_manager
from ding_lite.envs.gym_env import build_env
from ding_lite.league.arena import SelfPlayEnvManager
from ding_lite.league.opponents import PlayerSet
from ding_lite.rl_utils.masks import random_legal_actions

pytestmark = pytest.mark.unittest
pytest.importorskip("pettingzoo")


def _arena(env: dict, seats: list[str], n_env: int = 2, on_result=None, swap_seats: bool = False):
    section = {"import_names": [], "kwargs": {}, **env, "manager": dict(type="base")}
    probe = build_env(section)
    layout = probe.layout
    probe.close()
    players = PlayerSet(lambda mode: None, lambda name: ({}, ""), seed=0)
    return SelfPlayEnvManager(build_env_manager(section, n_env, 0), layout, seats, players, on_result=on_result,
                              swap_seats=swap_seats, seed=0)


def _play(arena: SelfPlayEnvManager, steps: int, seed: int = 0):
    """Random legal learner moves; returns per step the results."""
    rng = np.random.default_rng(seed)
    obs = arena.reset()
    results = []
    for _ in range(steps):
        mask = obs["action_mask"] if isinstance(obs, dict) else np.ones((arena.env_num, arena.layout.n_actions), bool)
        res = arena.step(random_legal_actions(rng, mask))
        results.append(res)
        obs = res.obs
    return results


def test_a_game_that_ends_before_the_learners_first_move_is_replayed_not_scored():
    # p0 moves, then the learner (p1); every other game ends at p0's first move, before the learner's
    booked: list[dict] = []
    env = dict(type="pettingzoo", import_path="fake_games:turn_game", end_when_out=[1],
               kwargs=dict(n_seats=2, episode_len=[2, 1]))
    with _arena(env, ["random", "learner"], on_result=booked.append) as arena:
        results = _play(arena, 6)
    for res in results:  # each learner move ends its game: one episode end per row, of that move's game
        assert res.terminated.all() and sorted(e.env_id for e in res.episodes) == [0, 1]
        assert [(e.episode_return, e.episode_length) for e in res.episodes] == [(2.0, 1)] * 2
        assert (res.reward == 2.0).all()
    assert len(booked) == 12  # the games the learner played, not the 12 that ended before its move


# PettingZoo games as a user would name them (the wrapped ``env``), each a few steps: (import path, kwargs, move cap,
# seats, the package its extra needs)
GAMES = {
    "tictactoe": ("pettingzoo.classic.tictactoe_v3:env", {}, None, 2, None),
    "connect_four": ("pettingzoo.classic.connect_four_v3:env", {}, None, 2, None),
    "leduc_holdem": ("pettingzoo.classic.leduc_holdem_v4:env", {}, None, 2, "rlcard"),
    "texas_holdem_4": ("pettingzoo.classic.texas_holdem_v4:env", {"num_players": 4}, None, 4, "rlcard"),
    "go_5x5": ("pettingzoo.classic.go_v5:env", {"board_size": 5}, 30, 2, None),
    "chess": ("pettingzoo.classic.chess_v6:env", {}, 12, 2, "chess"),
}


@pytest.mark.parametrize("game", list(GAMES))
def test_real_games_end_one_row_per_episode_and_see_no_illegal_move(game: str):
    import fake_games
    path, kwargs, cap, n_seats, needs = GAMES[game]
    if needs:
        pytest.importorskip(needs)
    pytest.importorskip(path.split(":")[0])
    fake_games.ILLEGAL_MOVES.clear()
    booked: list[dict] = []
    env = dict(type="pettingzoo", import_path="fake_games:mask_counter", max_episode_steps=cap, end_when_out=[0],
               kwargs=dict(import_path=path, **kwargs))
    with _arena(env, ["learner"] + ["random"] * (n_seats - 1), on_result=booked.append, swap_seats=True) as arena:
        results = _play(arena, 30)
    ends = sum(len(res.episodes) for res in results)
    assert ends == sum(int((res.terminated | res.truncated).sum()) for res in results) == len(booked) > 0
    for res in results:  # an episode end per ending row, with its flag
        assert sorted(e.env_id for e in res.episodes) == np.flatnonzero(res.terminated | res.truncated).tolist()
        assert all(e.terminated == bool(res.terminated[e.env_id]) for e in res.episodes)
        # the learner's rows carry its seat's rewards, the other seats' turns included
        assert all(e.episode_return == pytest.approx(e.info["scores"][e.info["seat"]]) for e in res.episodes)
    assert fake_games.ILLEGAL_MOVES == []


@pytest.mark.parametrize("game", ["tictactoe", "leduc_holdem", "texas_holdem_4", "go_5x5"])
def test_each_seat_gets_the_rewards_pettingzoos_own_loop_gives_its_agent(game: str):
    from ding_lite.envs.multi_agent import PettingZooEnv
    from ding_lite.registry import import_object
    path, kwargs, cap, _, needs = GAMES[game]
    if needs:
        pytest.importorskip(needs)
    rng = np.random.default_rng(0)
    packed_game = PettingZooEnv(dict(import_path=path, kwargs=kwargs, max_episode_steps=cap))
    layout = packed_game.layout
    for seed in range(4):
        packed, _ = packed_game.reset(seed=seed)
        moves, total, over = [], np.zeros(layout.n_seats), False
        while not over:
            seats = layout.unpack(packed)
            mover = int(np.flatnonzero(seats.acting)[0])
            action = np.zeros(layout.n_seats, dtype=np.int64)
            action[mover] = rng.choice(np.flatnonzero(seats.action_mask[mover]))
            moves.append(int(action[mover]))
            packed, _, terminated, truncated, info = packed_game.step(action)
            total += layout.unpack(packed).reward
            over = terminated or truncated
        reference = import_object(path)(**kwargs)  # the same moves in PettingZoo's agent_iter loop
        reference.reset(seed=seed)
        expected = dict.fromkeys(reference.possible_agents, 0.0)
        for agent in reference.agent_iter():
            _, reward, term, trunc, _ = reference.last()
            expected[agent] += reward
            if not (term or trunc or moves):  # the move cap cut the game here (Go: no reward before its end)
                break
            reference.step(None if term or trunc else moves.pop(0))
        assert total.tolist() == pytest.approx([expected[a] for a in layout.agents]) == info["scores"]

"""dizoo connect four: the left-right mirror of samples (the DQN config's ``policy.collect.augment``) and the
landing-plane observation."""
from __future__ import annotations

import numpy as np
import pytest

from ding_lite.data.keys import ACTION, DISCOUNT_N, NEXT_ACTION_MASK, NEXT_OBS_N, OBS, RETURN_N
from dizoo.board_games.connect_four.envs.planes import landing_plane, raw_env
from dizoo.board_games.connect_four.envs.symmetry import mirror

pytestmark = pytest.mark.unittest


def test_mirror_flips_boards_masks_and_columns() -> None:
    obs = np.zeros((2, 6, 7, 2), dtype=np.float32)
    obs[0, 5, 0, 0] = 1.0  # sample 0: own piece bottom left
    obs[1, 5, 2, 1] = 1.0  # sample 1: opponent's piece bottom, column 2
    nxt = obs.copy()
    nxt[0, 4, 0, 1] = 1.0
    mask = np.array([[False, True, True, True, True, True, True], [True] * 7])
    samples = {OBS: obs, NEXT_OBS_N: nxt, ACTION: np.array([0, 5]), NEXT_ACTION_MASK: mask,
               RETURN_N: np.array([1.0, -1.0], dtype=np.float32), DISCOUNT_N: np.array([0.0, 0.9], np.float32)}
    out = mirror(samples)
    assert out[OBS][0, 5, 6, 0] == 1.0 and out[OBS][0].sum() == 1.0  # column 0 -> 6
    assert out[OBS][1, 5, 4, 1] == 1.0 and out[OBS][1].sum() == 1.0  # column 2 -> 4
    assert out[NEXT_OBS_N][0, 4, 6, 1] == 1.0
    np.testing.assert_array_equal(out[ACTION], [6, 1])
    np.testing.assert_array_equal(out[NEXT_ACTION_MASK][0], [True, True, True, True, True, True, False])
    np.testing.assert_array_equal(out[RETURN_N], samples[RETURN_N])
    np.testing.assert_array_equal(out[DISCOUNT_N], samples[DISCOUNT_N])
    np.testing.assert_array_equal(mirror(out)[OBS], obs)  # a mirror twice is the identity
    assert samples[ACTION].tolist() == [0, 5]  # the input is left as it was


def test_landing_plane_marks_the_lowest_empty_cell_of_each_open_column() -> None:
    board = np.zeros((6, 7, 2), dtype=np.int8)
    board[5, 0, 0] = 1  # column 0: one piece, lands on row 4
    board[:, 3, 1] = [0, 1, 1, 1, 1, 1]  # column 3: five pieces, lands on row 0
    board[:, 6, 0] = 1  # column 6: full, no landing cell
    expected = np.zeros((6, 7), dtype=np.int8)
    expected[5, [1, 2, 4, 5]] = 1
    expected[4, 0] = 1
    expected[0, 3] = 1
    np.testing.assert_array_equal(landing_plane(board), expected)


def test_landing_planes_env_keeps_pettingzoos_planes_and_adds_the_landing_cells() -> None:
    """A random game through the wrapper and through the plain raw env, move for move: planes 0 and 1 and the mask
    are PettingZoo's, plane 2 is where each legal column's piece lands, for the agent to move and after the end."""
    from pettingzoo.classic import connect_four_v3
    planes, plain = raw_env(), connect_four_v3.raw_env()
    assert planes.observation_space("player_0")["observation"].shape == (6, 7, 3)
    rng = np.random.default_rng(0)
    for game in range(3):
        planes.reset(seed=game)
        plain.reset(seed=game)
        for agent in planes.agent_iter():
            assert agent == plain.agent_selection
            obs, reward, term, trunc, _ = planes.last()
            ref, ref_reward, *_ = plain.last()
            np.testing.assert_array_equal(obs["observation"][..., :2], ref["observation"])
            np.testing.assert_array_equal(obs["action_mask"], ref["action_mask"])
            board = obs["observation"]
            lands = board[..., 2]
            for col in range(7):  # one landing cell per legal column, directly above the column's top piece
                if obs["action_mask"][col]:
                    row = int(np.flatnonzero(lands[:, col])[0])
                    assert not board[row, col, :2].any() and (row == 5 or board[row + 1, col, :2].any())
                else:
                    assert not lands[:, col].any()
            assert reward == ref_reward
            action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
            planes.step(action)
            plain.step(action)


def test_afterstates_drop_each_columns_piece_and_mark_the_opponents_landing_cells() -> None:
    """By hand: the mover has a piece at the bottom of column 0, the opponent one in column 1, column 6 is full."""
    import torch

    from dizoo.board_games.connect_four.model import afterstates
    board = torch.zeros(1, 6, 7, 2)
    board[0, 5, 0, 0] = 1
    board[0, 5, 1, 1] = 1
    board[0, :, 6, 0] = 1
    after = afterstates(board)[0]  # (7 columns, 6, 7, 3)
    assert after.shape == (7, 6, 7, 3)
    mine0 = torch.zeros(6, 7)
    mine0[4:, 0] = 1  # column 0's piece lands on top of the mover's
    mine0[:, 6] = 1
    assert torch.equal(after[0, ..., 0], mine0)
    assert torch.equal(after[0, ..., 1], board[0, ..., 1])  # the opponent's pieces as they were
    landing0 = torch.zeros(6, 7)
    landing0[3, 0] = 1  # column 0 now lands one row higher, column 1 above the opponent's piece, full column 6 none
    landing0[4, 1] = 1
    landing0[5, 2:6] = 1
    assert torch.equal(after[0, ..., 2], landing0)
    assert after[3, 5, 3, 0] == 1 and after[3, ..., 0].sum() == board[0, ..., 0].sum() + 1
    assert torch.equal(after[6, ..., 0], board[0, ..., 0])  # a full column: the board unchanged (masked anyway)


def test_afterstate_q_values_each_column_by_its_afterstate_and_refuses_other_boards() -> None:
    """Q(empty board, column 3) is V of the board built by hand: the mover's piece at the bottom of column 3, the
    opponent's next piece landing on row 5 everywhere but column 3 (row 4)."""
    import torch

    from ding_lite.errors import ConfigError
    from dizoo.board_games.connect_four.model import AfterstateQ
    torch.manual_seed(0)
    model = AfterstateQ(dict(AfterstateQ.config, obs_shape=[6, 7, 2], action_shape=7))
    q = model(torch.zeros(1, 6, 7, 2))["q_value"]
    assert q.shape == (1, 7)
    by_hand = torch.zeros(7, 6, 7, 3)  # one afterstate per column
    for col in range(7):
        by_hand[col, 5, col, 0] = 1
        by_hand[col, 5, :, 2] = 1
        by_hand[col, 5, col, 2], by_hand[col, 4, col, 2] = 0, 1
    torch.testing.assert_close(q[0], model.value(model.encoder(by_hand))[:, 0])
    assert len(set(q[0].tolist())) == 7  # seven different afterstates, seven values
    for bad in (dict(obs_shape=[3, 3, 2], action_shape=9), dict(obs_shape=[6, 7, 2], action_shape=3)):
        with pytest.raises(ConfigError, match="connect_four_afterstate_q"):
            AfterstateQ(dict(AfterstateQ.config, **bad))

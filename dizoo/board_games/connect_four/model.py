"""A Q-network for connect four that values afterstates: ``Q(s, c) = V(the board after the mover drops a piece in
column c)``, with one learned value network ``V`` shared by the seven columns.

Why: a move's immediate consequences are known from the rules, so the network need not learn them. Valued on the
board that results, a winning column is a board holding four in a row, and a column that leaves the opponent's win
open is a board where the opponent has three in a line next to a cell it can play; both are local patterns that one
4x4 convolution sees anywhere on the board. A plain Q-network has to learn the same facts per column, from the board
before the move (where the piece lands and what it completes), and with the DQN config's data it did not: after
300,000 env steps it played an immediate win in about half of the positions that had one (docs/selfplay.md).
Values of afterstates are the classic way to learn board games whose moves are deterministic (Sutton and Barto
2018, section 6.8; Tesauro's TD-Gammon valued the positions after each move).

The observation is PettingZoo's ``(6, 7, 2)`` board (plane 0 the mover's pieces, plane 1 the opponent's; a third
plane, if any, is ignored); each afterstate is given to ``V`` as three planes: the mover's pieces with the new one,
the opponent's, and the cells where the opponent's next piece would land. A full column's afterstate is the board
unchanged (the action mask rules it out). Register with ``import_names=['dizoo.board_games.connect_four.model']``
and ``policy.model.type='connect_four_afterstate_q'``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ding_lite.data.keys import LOGIT, Q_VALUE
from ding_lite.errors import ConfigError
from ding_lite.model.common import activation, mlp, ortho_init
from ding_lite.model.encoders import build_encoder
from ding_lite.registry import MODEL_REGISTRY

ROWS, COLS = 6, 7
AFTERSTATE_SHAPE = [ROWS, COLS, 3]  # the mover's pieces, the opponent's, the opponent's landing cells


def landing_cells(occupied: torch.Tensor) -> torch.Tensor:
    """``(..., 6, 7)`` bool: the lowest empty cell of every column that has one (row 0 is the top), of boards whose
    occupied cells are ``occupied`` (``(..., 6, 7)`` bool)."""
    row = (~occupied).sum(dim=-2, keepdim=True) - 1  # (..., 1, 7): the landing row, -1 for a full column
    rows = torch.arange(ROWS, device=occupied.device).view(ROWS, 1)
    return rows == row


def afterstates(obs: torch.Tensor) -> torch.Tensor:
    """``(B, 7, 6, 7, 3)`` float afterstates of ``(B, 6, 7, C)`` boards: per column, the board after the mover's
    piece drops there (see the module docstring for the planes)."""
    mine, theirs = obs[..., 0] > 0.5, obs[..., 1] > 0.5  # (B, 6, 7)
    occupied = mine | theirs
    columns = torch.eye(COLS, dtype=torch.bool, device=obs.device).view(1, COLS, 1, COLS)  # (1, c, 1, col)
    piece = landing_cells(occupied).unsqueeze(1) & columns  # (B, c, 6, 7): the new piece of column c
    after_occupied = occupied.unsqueeze(1) | piece
    planes = (mine.unsqueeze(1) | piece, theirs.unsqueeze(1).expand_as(piece), landing_cells(after_occupied))
    return torch.stack(planes, dim=-1).to(torch.float32)


class WindowPool(nn.Module):
    """``(N, 6, 7, 3)`` boards to features: a 4x4 convolution (each of its 3x4 outputs sees one 4x4 window, and
    every four-in-a-row lies in one), its maximum and its mean over the windows, then an MLP."""

    def __init__(self, channels: int, hidden: list[int], act: str) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 4)
        nn.init.orthogonal_(self.conv.weight, 2 ** 0.5)
        nn.init.zeros_(self.conv.bias)  # type: ignore[arg-type]
        self.act = activation(act)
        self.head = mlp(2 * channels, hidden, act)

    def forward(self, boards: torch.Tensor) -> torch.Tensor:
        x = self.act(self.conv(boards.permute(0, 3, 1, 2))).flatten(2)  # (N, channels, 12)
        return self.head(torch.cat([x.amax(dim=2), x.mean(dim=2)], dim=1))


@MODEL_REGISTRY.register("connect_four_afterstate_q")
class AfterstateQ(nn.Module):
    """``forward(obs) -> {'q_value': (B, 7), 'logit': the same}``, each column's value that of its afterstate."""

    config: dict[str, Any] = dict(
        type="connect_four_afterstate_q",
        obs_shape=None,  # PettingZoo's (6, 7, 2) board; None: from the env
        action_shape=None,  # 7 columns; None: from the env
        encoder_hidden_size_list=[64],  # the value network's MLP widths (after its convs)
        # with value_net='encoder' only: the framework's encoder over the (6, 7, 3) afterstates ('auto' / 'conv': the
        # convs of conv_layers, flattened, then the MLP; 'mlp': the flattened afterstates)
        encoder="auto",
        conv_layers=[[32, 4, 1]],  # one 4x4 layer sees every four-in-a-row window of the board
        image_scale=1.0,  # the planes are 0/1
        activation="relu",  # hidden-layer activation
        # 'pool': one 4x4 conv layer of pool_channels, its max and mean over the board's 12 windows, then the MLP of
        # encoder_hidden_size_list (the same line pattern is worth the same wherever it is); 'encoder': the
        # framework's encoder (encoder, conv_layers) over the whole afterstate
        value_net="pool",
        pool_channels=32,  # filters of the 'pool' network's 4x4 conv
    )

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        if list(cfg["obs_shape"] or [])[:2] != [ROWS, COLS] or int(cfg["action_shape"] or COLS) != COLS:
            raise ConfigError(f"model type 'connect_four_afterstate_q' needs connect four's (6, 7, C) boards and 7 "
                              f"actions, got obs_shape={cfg['obs_shape']!r}, action_shape={cfg['action_shape']!r}")
        hidden = list(cfg["encoder_hidden_size_list"])
        if cfg["value_net"] == "pool":
            self.encoder: nn.Module = WindowPool(int(cfg["pool_channels"]), hidden, cfg["activation"])
            size = hidden[-1] if hidden else 2 * int(cfg["pool_channels"])
        elif cfg["value_net"] == "encoder":
            self.encoder, size = build_encoder(dict(cfg, obs_shape=AFTERSTATE_SHAPE), hidden, cfg["activation"])
        else:
            raise ConfigError(f"policy.model.value_net must be 'pool' or 'encoder', got {cfg['value_net']!r}")
        self.value = ortho_init(nn.Linear(size, 1), 1.0)

    def forward(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        boards = afterstates(obs)  # (B, 7, 6, 7, 3)
        q = self.value(self.encoder(boards.flatten(0, 1))).view(len(obs), COLS)
        return {Q_VALUE: q, LOGIT: q}

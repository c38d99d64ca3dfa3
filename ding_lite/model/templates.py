"""Model templates: Q-network (DQN) and value actor-critic (PPO), registered in MODEL."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ding_lite.data.keys import LOGIT, Q_VALUE, VALUE
from ding_lite.errors import ConfigError
from ding_lite.model.common import (
    actor_output,
    actor_settings,
    add_log_std,
    flat_size,
    head_trunk,
    last_size,
    mlp,
    ortho_init,
)
from ding_lite.registry import MODEL


@MODEL.register("dqn")
class QNet(nn.Module):
    """MLP Q-network with an optional dueling head (Wang et al. 2016): ``forward(obs) -> {'q_value': Q (B, A)}``, the
    same tensor under ``'logit'`` too (DI-engine's name for it)."""

    config: dict[str, Any] = dict(
        type="dqn",
        obs_shape=None,  # int or list; None: taken from the env's observation space
        action_shape=None,  # number of discrete actions; None: taken from the env's action space
        encoder_hidden_size_list=[128, 128, 64],  # MLP encoder widths
        dueling=True,  # dueling head: Q = V + A - mean(A)
        activation="relu",  # hidden-layer activation: relu, tanh, elu, gelu or silu
        head_hidden_size=None,  # width of the head's hidden layers (None: the encoder's last width, as DI-engine)
        head_layer_num=1,  # hidden layers in each head branch before its output layer (0: none)
    )

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        obs_size = flat_size(cfg["obs_shape"])
        n_action = flat_size(cfg["action_shape"], "model.action_shape")
        hidden = list(cfg["encoder_hidden_size_list"])
        self.dueling = bool(cfg["dueling"])
        self.encoder = mlp(obs_size, hidden, cfg["activation"])
        size = last_size(obs_size, hidden)
        # DI-engine's DQN head (DiscreteHead / DuelingHead): head_layer_num Linear+activation layers per branch, as
        # wide as the encoder's output unless head_hidden_size says otherwise
        layer_num = int(cfg["head_layer_num"])
        if layer_num < 0:
            raise ConfigError(f"model.head_layer_num must be 0 or more, got {layer_num}")
        width = cfg["head_hidden_size"] or last_size(obs_size, hidden)
        head = (width if layer_num else None, layer_num, cfg["activation"], "")
        self.advantage_trunk, head_size = head_trunk(size, *head)
        self.advantage = ortho_init(nn.Linear(head_size, n_action), 1.0)
        self.value_trunk = head_trunk(size, *head)[0] if self.dueling else None
        self.value = ortho_init(nn.Linear(head_size, 1), 1.0) if self.dueling else None

    def forward(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        x = self.encoder(obs)
        q = self.advantage(self.advantage_trunk(x))
        if self.value is not None and self.value_trunk is not None:
            q = self.value(self.value_trunk(x)) + q - q.mean(dim=-1, keepdim=True)
        return {Q_VALUE: q, LOGIT: q}


@MODEL.register("vac")
class VAC(nn.Module):
    """Value actor-critic for PPO: a categorical actor (discrete) or a diagonal Gaussian actor (continuous).

    ``compute_actor(obs)`` returns ``{'logit'}`` (discrete) or ``{'mu', 'sigma'}`` (continuous);
    ``compute_critic(obs)`` returns ``{'value'}``; ``compute_actor_critic`` both.
    """

    config: dict[str, Any] = dict(
        type="vac",
        obs_shape=None,  # int or list; None: from the env
        action_shape=None,  # number of actions (discrete) or action dim (continuous); None: from the env
        action_space=None,  # 'discrete' or 'continuous'; None: from the env
        encoder_hidden_size_list=[64, 64],  # widths of the actor's and the critic's MLPs
        share_encoder=False,  # one encoder for actor and critic
        actor_head_hidden_size=None,  # DI-engine's actor head: hidden layers of this width (None: none)
        actor_head_layer_num=1,  # number of those actor head layers
        critic_head_hidden_size=None,  # DI-engine's critic head: hidden layers of this width (None: none)
        critic_head_layer_num=1,  # number of those critic head layers
        activation="tanh",  # hidden-layer activation: relu, tanh, elu, gelu or silu
        sigma_type="fixed",  # continuous: 'fixed' (state-independent log-std parameter) or 'conditioned'
        init_log_std=0.0,  # continuous: initial log standard deviation
    )

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        obs_size = flat_size(cfg["obs_shape"])
        act_size = flat_size(cfg["action_shape"], "model.action_shape")
        hidden = list(cfg["encoder_hidden_size_list"])
        self.continuous, self.fixed_sigma = actor_settings(cfg)
        self.action_space = cfg["action_space"]
        size = last_size(obs_size, hidden)
        self.actor_encoder = mlp(obs_size, hidden, cfg["activation"])
        self.critic_encoder = self.actor_encoder if cfg["share_encoder"] else mlp(obs_size, hidden, cfg["activation"])
        self.actor_trunk, actor_size = head_trunk(size, cfg["actor_head_hidden_size"], cfg["actor_head_layer_num"],
                                                  cfg["activation"], "actor")
        self.critic_trunk, critic_size = head_trunk(size, cfg["critic_head_hidden_size"],
                                                    cfg["critic_head_layer_num"], cfg["activation"], "critic")
        self.actor_head = ortho_init(nn.Linear(actor_size, act_size), 0.01)
        self.critic_head = ortho_init(nn.Linear(critic_size, 1), 1.0)
        add_log_std(self, actor_size, act_size, cfg)

    def compute_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return actor_output(self, self.actor_trunk(self.actor_encoder(obs)), self.continuous, self.fixed_sigma)

    def compute_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {VALUE: self.critic_head(self.critic_trunk(self.critic_encoder(obs))).squeeze(-1)}

    def compute_actor_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        out = self.compute_actor(obs)
        out.update(self.compute_critic(obs))
        return out

    def forward(self, obs: torch.Tensor, mode: str = "compute_actor_critic") -> dict[str, torch.Tensor]:
        return getattr(self, mode)(obs)

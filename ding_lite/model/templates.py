"""Model templates: Q-network (DQN) and value actor-critic (PPO), registered in MODEL_REGISTRY."""
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
    ortho_init,
    template_settings,
)
from ding_lite.model.encoders import build_encoder
from ding_lite.model.normalizer import RunningObsNorm
from ding_lite.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("dqn")
class QNet(nn.Module):
    """MLP Q-network with an optional dueling head (Wang et al. 2016): ``forward(obs) -> {'q_value': Q (B, A)}``, the
    same tensor under ``'logit'`` too (DI-engine's name for it)."""

    config: dict[str, Any] = dict(
        type="dqn",
        obs_shape=None,  # int or list; None: taken from the env's observation space
        action_shape=None,  # number of discrete actions; None: taken from the env's action space
        encoder_hidden_size_list=[128, 128, 64],  # MLP encoder widths (after the convs for image observations)
        encoder="auto",  # 'auto' (conv for image observations, MLP for vectors), 'conv' or 'mlp'
        image_scale=None,  # images are multiplied by this in the model; None: from the env (pixels: 1/255, else 1)
        conv_layers=None,  # the conv stack, [[out_channels, kernel, stride(, padding)], ...]; None: from the frame size
        dueling=True,  # dueling head: Q = V + A - mean(A)
        activation="relu",  # hidden-layer activation: relu, tanh, elu, gelu or silu
        head_hidden_size=None,  # width of the head's hidden layers (None: the encoder's last width, as DI-engine)
        head_layer_num=1,  # hidden layers in each head branch before its output layer (0: none)
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None, **settings: Any) -> None:
        super().__init__()
        cfg = template_settings(type(self), cfg, settings)  # DI-engine's Model(**cfg.policy.model) too
        n_action = flat_size(cfg["action_shape"], "model.action_shape")
        hidden = list(cfg["encoder_hidden_size_list"])
        self.dueling = bool(cfg["dueling"])
        self.encoder, size = build_encoder(cfg, hidden, cfg["activation"])
        # DI-engine's DQN head (DiscreteHead / DuelingHead): head_layer_num Linear+activation layers per branch, as
        # wide as the encoder's output unless head_hidden_size says otherwise
        layer_num = int(cfg["head_layer_num"])
        if layer_num < 0:
            raise ConfigError(f"model.head_layer_num must be 0 or more, got {layer_num}")
        head = ((cfg["head_hidden_size"] or size) if layer_num else None, layer_num, cfg["activation"], "")
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


@MODEL_REGISTRY.register("vac")
class VAC(nn.Module):
    """Value actor-critic for PPO: a categorical actor (discrete) or a diagonal Gaussian actor (continuous).

    ``compute_actor(obs)`` returns ``{'logit'}`` (discrete) or ``{'mu', 'sigma'}`` (continuous);
    ``compute_critic(obs)`` returns ``{'value'}``; ``compute_actor_critic`` both.
    """

    # built from keywords outside a pipeline (no env to fill in the action space): DI-engine's default
    standalone_defaults: dict[str, Any] = dict(action_space="discrete")

    config: dict[str, Any] = dict(
        type="vac",
        obs_shape=None,  # int or list; None: from the env
        action_shape=None,  # number of actions (discrete) or action dim (continuous); None: from the env
        action_space=None,  # 'discrete' or 'continuous'; None: from the env
        encoder_hidden_size_list=[64, 64],  # widths of the actor's and the critic's MLPs (after convs for images)
        encoder="auto",  # 'auto' (conv for image observations, MLP for vectors), 'conv' or 'mlp'
        image_scale=None,  # images are multiplied by this in the model; None: from the env (pixels: 1/255, else 1)
        conv_layers=None,  # the conv stack, [[out_channels, kernel, stride(, padding)], ...]; None: from the frame size
        share_encoder=False,  # one encoder for actor and critic
        actor_head_hidden_size=None,  # DI-engine's actor head: hidden layers of this width (None: none)
        actor_head_layer_num=1,  # number of those actor head layers
        critic_head_hidden_size=None,  # DI-engine's critic head: hidden layers of this width (None: none)
        critic_head_layer_num=1,  # number of those critic head layers
        activation="tanh",  # hidden-layer activation: relu, tanh, elu, gelu or silu
        sigma_type="fixed",  # continuous: 'fixed' (learned log-std; DI-engine: 'independent') or 'conditioned'
        init_log_std=0.0,  # continuous: initial log standard deviation
        bound_type=None,  # continuous: 'tanh' bounds the Gaussian's mean to [-1, 1] (envs acting in [-1, 1]); None: not
        obs_norm=False,  # normalise observations by running statistics kept in the model (MuJoCo; not images)
        obs_norm_clip=10.0,  # bound of the normalised observations
        ortho_init=True,  # orthogonal init (sqrt 2 hidden, 0.01 actor head, 1 critic head); False: PyTorch's default
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None, **settings: Any) -> None:
        super().__init__()
        cfg = template_settings(type(self), cfg, settings)  # DI-engine's Model(**cfg.policy.model) too
        act_size = flat_size(cfg["action_shape"], "model.action_shape")
        hidden = list(cfg["encoder_hidden_size_list"])
        self.continuous, self.fixed_sigma = actor_settings(cfg)
        self.action_space = cfg["action_space"]
        self.actor_encoder, size = build_encoder(cfg, hidden, cfg["activation"])
        self.critic_encoder = self.actor_encoder if cfg["share_encoder"] else \
            build_encoder(cfg, hidden, cfg["activation"])[0]
        self.actor_trunk, actor_size = head_trunk(size, cfg["actor_head_hidden_size"], cfg["actor_head_layer_num"],
                                                  cfg["activation"], "actor")
        self.critic_trunk, critic_size = head_trunk(size, cfg["critic_head_hidden_size"],
                                                    cfg["critic_head_layer_num"], cfg["activation"], "critic")
        self.actor_head: nn.Module = ortho_init(nn.Linear(actor_size, act_size), 0.01)
        bound = cfg.get("bound_type")
        if bound not in (None, "tanh"):
            raise ConfigError(f"model.bound_type must be None or 'tanh', got {bound!r}")
        if bound == "tanh" and self.continuous:  # the mean through tanh, as DI-engine's bounded Gaussian head
            self.actor_head = nn.Sequential(self.actor_head, nn.Tanh())
        self.critic_head = ortho_init(nn.Linear(critic_size, 1), 1.0)
        add_log_std(self, actor_size, act_size, cfg)
        # the collect mode updates the statistics as observations arrive; they travel with the weights as buffers
        self.obs_norm = RunningObsNorm(cfg["obs_shape"], cfg.get("obs_norm_clip", 10.0)) if cfg.get("obs_norm") \
            else nn.Identity()
        if not cfg.get("ortho_init", True):  # hyperparameters tuned without it (rl-zoo's MuJoCo PPO sets)
            for layer in self.modules():
                if isinstance(layer, (nn.Linear, nn.Conv2d)):
                    layer.reset_parameters()

    def compute_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return self._actor(self.actor_encoder(self.obs_norm(obs)))

    def compute_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {VALUE: self._value(self.critic_encoder(self.obs_norm(obs)))}

    def compute_actor_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        x = self.obs_norm(obs)  # once for both
        features = self.actor_encoder(x)
        out = self._actor(features)
        # a shared encoder (a conv net on frames) runs once
        out[VALUE] = self._value(features if self.actor_encoder is self.critic_encoder else self.critic_encoder(x))
        return out

    def _actor(self, features: torch.Tensor) -> dict[str, torch.Tensor]:
        return actor_output(self, self.actor_trunk(features), self.continuous, self.fixed_sigma)

    def _value(self, features: torch.Tensor) -> torch.Tensor:
        return self.critic_head(self.critic_trunk(features)).squeeze(-1)

    def forward(self, obs: torch.Tensor, mode: str = "compute_actor_critic") -> dict[str, torch.Tensor]:
        return getattr(self, mode)(obs)

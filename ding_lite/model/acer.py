"""ACER's model template: a categorical actor and a Q critic (one value per action), separate networks."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ding_lite.data.keys import LOGIT, Q_VALUE
from ding_lite.errors import ConfigError
from ding_lite.model.common import flat_size, mlp, template_settings
from ding_lite.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("acer")
class ACERNet(nn.Module):
    """Actor ``compute_actor(obs) -> {'logit': (B, A)}`` and critic ``compute_critic(obs) -> {'q_value': (B, A)}``.

    The two are separate MLPs (``self.actor``, ``self.critic``) so that ACER can give each its own optimiser and keep
    an average copy of the actor alone. Discrete actions only.
    """

    # built from keywords outside a pipeline (no env to fill in the action space): DI-engine's default
    standalone_defaults: dict[str, Any] = dict(action_space="discrete")

    config: dict[str, Any] = dict(
        type="acer",
        obs_shape=None,  # int or list; None: from the env
        action_shape=None,  # number of discrete actions; None: from the env
        action_space=None,  # must be 'discrete' (None: from the env)
        encoder_hidden_size_list=[64, 64],  # hidden widths of the actor's and of the critic's MLP
        activation="relu",  # hidden-layer activation: relu, tanh, elu, gelu or silu
        actor_head_hidden_size=None,  # DI-engine's actor head: hidden layers of this width (None: none)
        actor_head_layer_num=1,  # number of those actor head layers
        critic_head_hidden_size=None,  # DI-engine's critic head: hidden layers of this width (None: none)
        critic_head_layer_num=1,  # number of those critic head layers
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None, **settings: Any) -> None:
        super().__init__()
        cfg = template_settings(type(self), cfg, settings)  # DI-engine's Model(**cfg.policy.model) too
        if cfg.get("action_space") not in (None, "discrete"):
            raise ConfigError(f"model 'acer' needs a discrete action space, got action_space={cfg['action_space']!r}; "
                              "use a policy for continuous actions (e.g. ppo)")
        obs_size = flat_size(cfg["obs_shape"])
        n_action = flat_size(cfg["action_shape"], "model.action_shape")
        hidden = list(cfg["encoder_hidden_size_list"])
        # small actor output gain: a near-uniform initial policy (Andrychowicz et al. 2021, "What matters in on-policy
        # RL", §3.2); the critic's output starts at unit scale
        self.actor = mlp(obs_size, hidden + _head(cfg, "actor"), cfg["activation"], out_size=n_action, out_gain=0.01)
        self.critic = mlp(obs_size, hidden + _head(cfg, "critic"), cfg["activation"], out_size=n_action, out_gain=1.0)

    def compute_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {LOGIT: self.actor(obs)}

    def compute_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {Q_VALUE: self.critic(obs)}

    def forward(self, obs: torch.Tensor, mode: str = "compute_actor") -> dict[str, torch.Tensor]:
        if mode not in ("compute_actor", "compute_critic"):
            raise ValueError(f"ACERNet mode must be 'compute_actor' or 'compute_critic', got {mode!r}")
        return getattr(self, mode)(obs)


def _head(cfg: Mapping[str, Any], name: str) -> list[int]:
    """Widths of a DI-engine head's hidden layers (``<name>_head_hidden_size`` x ``<name>_head_layer_num``)."""
    size, num = cfg[f"{name}_head_hidden_size"], cfg[f"{name}_head_layer_num"]
    if size is None:
        return []
    if int(size) < 1 or int(num) < 1:
        raise ConfigError(f"model.{name}_head_hidden_size and model.{name}_head_layer_num must be at least 1, got "
                          f"{size!r} and {num!r}")
    return [int(size)] * int(num)

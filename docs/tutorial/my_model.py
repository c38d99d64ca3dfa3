"""A custom actor-critic for PPO: the model of docs/tutorial_custom_model.md.

Written as DI-engine writes models: the constructor takes the settings of ``policy.model`` as keyword arguments, and
the class registers itself in ``MODEL_REGISTRY`` under the name that ``policy.model.type`` uses.
"""
from __future__ import annotations

import torch
from torch import nn

from ding_lite.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register("my_ac")
class MyActorCritic(nn.Module):
    """One shared trunk, a policy head (logits of the discrete actions) and a value head."""

    def __init__(self, obs_shape: int, action_shape: int, hidden_size: int = 64) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(obs_shape, hidden_size), nn.Tanh(),
                                   nn.Linear(hidden_size, hidden_size), nn.Tanh())
        self.policy_head = nn.Linear(hidden_size, action_shape)
        self.value_head = nn.Linear(hidden_size, 1)

    def compute_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logit": self.policy_head(self.trunk(obs))}  # (B, A)

    def compute_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"value": self.value_head(self.trunk(obs)).squeeze(-1)}  # (B,)

    def compute_actor_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        x = self.trunk(obs)
        return {"logit": self.policy_head(x), "value": self.value_head(x).squeeze(-1)}

    def forward(self, obs: torch.Tensor, mode: str = "compute_actor_critic") -> dict[str, torch.Tensor]:
        return getattr(self, mode)(obs)

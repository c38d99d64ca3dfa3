"""Ensemble actor-critic for EPPO: K member actors with separate networks and one shared critic."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ding_lite.data.keys import VALUE
from ding_lite.errors import int_at_least
from ding_lite.model.common import actor_output, actor_settings, add_log_std, flat_size, ortho_init, template_settings
from ding_lite.model.encoders import build_encoder
from ding_lite.registry import MODEL_REGISTRY

# Parameter-name prefixes of VAC's actor and critic; members and critic below use the same names, so a PPO (VAC)
# state dict filtered by prefix loads into a member or into the critic as it is.
ACTOR_PREFIXES = ("actor_encoder.", "actor_head.", "log_std")
CRITIC_PREFIXES = ("critic_encoder.", "critic_head.")


class MemberActor(nn.Module):
    """One member policy: its own encoder (MLP, or a conv net for images) and head (no layer shared with other members
    or the critic).

    ``forward(obs)`` returns ``{'logit'}`` (discrete) or ``{'mu', 'sigma'}`` (diagonal Gaussian), like VAC's actor.
    """

    def __init__(self, act_size: int, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        self.continuous, self.fixed_sigma = actor_settings(cfg)
        self.actor_encoder, size = build_encoder(cfg, list(cfg["encoder_hidden_size_list"]), cfg["activation"])
        self.actor_head = ortho_init(nn.Linear(size, act_size), 0.01)
        add_log_std(self, size, act_size, cfg)

    def forward(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return actor_output(self, self.actor_encoder(obs), self.continuous, self.fixed_sigma)


class Critic(nn.Module):
    """The shared state-value network, ``forward(obs) -> (B,) V(s)``."""

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        self.critic_encoder, size = build_encoder(cfg, list(cfg["encoder_hidden_size_list"]), cfg["activation"])
        self.critic_head = ortho_init(nn.Linear(size, 1), 1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.critic_head(self.critic_encoder(obs)).squeeze(-1)


@MODEL_REGISTRY.register("ensemble_vac")
class EnsembleVAC(nn.Module):
    """K member actors and one shared critic (EPPO, Yang et al. 2022).

    ``compute_actor(obs)`` returns the members' outputs stacked on a leading member axis: ``{'logit': (K, B, A)}``
    or ``{'mu': (K, B, D), 'sigma': (K, B, D)}``; ``compute_critic(obs)`` returns ``{'value': (B,)}``.
    The buffer ``member_value`` (K,) holds the running member values that ``ensemble_action='value_weighted'``
    collection weighs members by; as a buffer it travels with the weights (checkpoints, remote collectors).
    """

    # built from keywords outside a pipeline (no env to fill in the action space): DI-engine's default
    standalone_defaults: dict[str, Any] = dict(action_space="discrete")

    config: dict[str, Any] = dict(
        type="ensemble_vac",
        obs_shape=None,  # int or list; None: from the env
        action_shape=None,  # number of actions (discrete) or action dim (continuous); None: from the env
        action_space=None,  # 'discrete' or 'continuous'; None: from the env
        ensemble_size=4,  # K, number of member actors
        encoder_hidden_size_list=[64, 64],  # widths of each member's MLP and of the critic's (after convs for images)
        encoder="auto",  # 'auto' (conv for image observations, MLP for vectors), 'conv' or 'mlp'
        image_scale=None,  # images are multiplied by this in the model; None: from the env (pixels: 1/255, else 1)
        conv_layers=None,  # the conv stack, [[out_channels, kernel, stride(, padding)], ...]; None: from the frame size
        activation="tanh",  # hidden-layer activation: relu, tanh, elu, gelu or silu
        sigma_type="fixed",  # continuous: 'fixed' (learned log-std; DI-engine: 'independent') or 'conditioned'
        init_log_std=0.0,  # continuous: initial log standard deviation
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None, **settings: Any) -> None:
        super().__init__()
        cfg = template_settings(type(self), cfg, settings)  # DI-engine's Model(**cfg.policy.model) too
        act_size = flat_size(cfg["action_shape"], "model.action_shape")
        actor_settings(cfg)  # checked once here, before K members are built
        k = int_at_least("model.ensemble_size", cfg["ensemble_size"], 1)
        self.action_space = cfg["action_space"]
        self.ensemble_size = k
        self.members = nn.ModuleList(MemberActor(act_size, cfg) for _ in range(k))
        self.critic = Critic(cfg)
        self.register_buffer("member_value", torch.zeros(k))

    def compute_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        outs = [member(obs) for member in self.members]
        return {key: torch.stack([o[key] for o in outs]) for key in outs[0]}

    def compute_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {VALUE: self.critic(obs)}

    def compute_actor_critic(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        out = self.compute_actor(obs)
        out.update(self.compute_critic(obs))
        return out

    def forward(self, obs: torch.Tensor, mode: str = "compute_actor_critic") -> dict[str, torch.Tensor]:
        return getattr(self, mode)(obs)

    # ---- building an ensemble from single actor-critics (VAC) --------------------------------------------------
    def load_member_from_vac(self, k: int, vac_state: Mapping[str, torch.Tensor]) -> None:
        """Copy the actor of a VAC state dict (e.g. a trained PPO model) into member ``k``."""
        self.members[k].load_state_dict(_with_prefixes(vac_state, ACTOR_PREFIXES))

    def load_critic_from_vac(self, vac_state: Mapping[str, torch.Tensor]) -> None:
        """Copy the critic of a VAC state dict into the shared critic."""
        self.critic.load_state_dict(_with_prefixes(vac_state, CRITIC_PREFIXES))


def _with_prefixes(state: Mapping[str, torch.Tensor], prefixes: tuple[str, ...]) -> dict[str, torch.Tensor]:
    return {name: value for name, value in state.items() if name.startswith(prefixes)}

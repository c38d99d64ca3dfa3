"""Q actor-critic for continuous actions (SAC, TD3): an actor and one or two Q-networks Q(s, a), registered as ``qac``
with DI-engine's keys (its ``ContinuousQAC``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from ding_lite.data.keys import ACTION, LOG_STD, MU
from ding_lite.errors import ConfigError
from ding_lite.model.common import MLP, activation, flat_size
from ding_lite.registry import MODEL

ACTION_SPACES = ("reparameterization", "regression")  # DI-engine's names: SAC's Gaussian actor, TD3's deterministic one
LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # the clamp of SAC's log standard deviation (Haarnoja et al.'s code, SB3)


class ActionBounds(nn.Module):
    """The env's Box bounds as buffers (they travel with the weights): ``low``, ``high``, ``scale`` = (high - low) / 2
    and ``bias`` = (high + low) / 2, each (A,)."""

    def __init__(self, low: np.ndarray, high: np.ndarray) -> None:
        super().__init__()
        for name, value in (("low", low), ("high", high), ("scale", (high - low) / 2.0), ("bias", (high + low) / 2.0)):
            self.register_buffer(name, torch.as_tensor(value, dtype=torch.float32))

    low: torch.Tensor
    high: torch.Tensor
    scale: torch.Tensor
    bias: torch.Tensor


class TanhActor(nn.Module):
    """TD3's / DDPG's deterministic actor: ``tanh(mlp(obs)) * scale + bias``, (B, A) in the env's bounds."""

    def __init__(self, net: MLP, bounds: ActionBounds) -> None:
        super().__init__()
        self.net, self.bounds = net, bounds

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.net(obs)) * self.bounds.scale + self.bounds.bias


class GaussianActor(nn.Module):
    """SAC's actor: ``(mu, log_std)``, each (B, A), of the Gaussian before the tanh squash (log-std clamped to
    [-20, 2]); one output layer gives both."""

    def __init__(self, net: MLP, bounds: ActionBounds, act_size: int) -> None:
        super().__init__()
        self.net, self.bounds, self.act_size = net, bounds, act_size

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_std = self.net(obs).split(self.act_size, dim=-1)
        return mu, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)


class Critics(nn.Module):
    """K Q-networks on the same input: ``forward(obs, action) -> (K, B)``, actions in the env's units."""

    def __init__(self, nets: list[MLP]) -> None:
        super().__init__()
        self.nets = nn.ModuleList(nets)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, action], dim=-1)
        return torch.stack([net(x).squeeze(-1) for net in self.nets])

    def first(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q_1(s, a) alone, (B,) (TD3's actor loss)."""
        return self.nets[0](torch.cat([obs, action], dim=-1)).squeeze(-1)


@MODEL.register("qac")
class QAC(nn.Module):
    """An actor and ``1 + twin_critic`` critics, each an MLP with PyTorch's default init (as SB3 and CleanRL).

    - ``actor``: a :class:`GaussianActor` (``action_space='reparameterization'``, SAC) or a :class:`TanhActor`
      (``'regression'``, TD3); ``compute_actor(obs)`` returns ``{'mu', 'log_std'}`` or ``{'action'}``.
    - ``critic``: :class:`Critics`; ``compute_critic(obs, action) -> (K, B)``.
    - ``bounds``: the actor's :class:`ActionBounds`, from ``action_low`` / ``action_high`` (filled in from the env's
      ``Box``).
    """

    config: dict[str, Any] = dict(
        type="qac",
        obs_shape=None,  # int (vector observations); None: from the env
        action_shape=None,  # action dimensions; None: from the env
        action_space="reparameterization",  # 'reparameterization' (SAC) or 'regression' (TD3); set by the policy
        action_low=None,  # lower bounds, one per dimension; None: the env's Box bounds
        action_high=None,  # upper bounds, one per dimension; None: the env's Box bounds
        twin_critic=True,  # two critics (clipped double Q), else one
        actor_head_hidden_size=64,  # DI-engine's layout: 1 + actor_head_layer_num hidden layers of this width
        actor_head_layer_num=1,  # hidden layers of the actor after its first one
        critic_head_hidden_size=64,  # DI-engine's layout: 1 + critic_head_layer_num hidden layers of this width
        critic_head_layer_num=1,  # hidden layers of each critic after its first one
        hidden_size_list=None,  # if set, the hidden widths of the actor and of every critic (e.g. [400, 300])
        activation="relu",  # hidden-layer activation: relu, tanh, elu, gelu or silu
    )

    def __init__(self, cfg: Mapping[str, Any]) -> None:
        super().__init__()
        if cfg["action_space"] not in ACTION_SPACES:
            raise ConfigError(f"model.action_space must be one of {ACTION_SPACES} for model type 'qac', got "
                              f"{cfg['action_space']!r}")
        obs_size = _vector_size(cfg["obs_shape"])
        act_size = flat_size(cfg["action_shape"], "model.action_shape")
        bounds = ActionBounds(*action_bounds(cfg, act_size))
        act = str(cfg["activation"])
        self.actor: GaussianActor | TanhActor
        if cfg["action_space"] == "reparameterization":
            self.actor = GaussianActor(_mlp(obs_size, _widths(cfg, "actor"), 2 * act_size, act), bounds, act_size)
        else:
            self.actor = TanhActor(_mlp(obs_size, _widths(cfg, "actor"), act_size, act), bounds)
        self.critic = Critics([_mlp(obs_size + act_size, _widths(cfg, "critic"), 1, act)
                               for _ in range(2 if cfg["twin_critic"] else 1)])

    @property
    def bounds(self) -> ActionBounds:
        """The env's action bounds (kept by the actor)."""
        return self.actor.bounds

    def compute_actor(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        if isinstance(self.actor, TanhActor):
            return {ACTION: self.actor(obs)}
        mu, log_std = self.actor(obs)
        return {MU: mu, LOG_STD: log_std}

    def compute_critic(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.critic(obs, action)

    def forward(self, obs: torch.Tensor, mode: str = "compute_actor") -> dict[str, torch.Tensor]:
        return self.compute_actor(obs)


def action_bounds(cfg: Mapping[str, Any], act_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)`` of a model section, checked: ``act_size`` finite numbers each, low < high."""
    bounds = []
    for key in ("action_low", "action_high"):
        value = cfg.get(key)
        if value is None:
            raise ConfigError(f"model.{key} is not set and could not be taken from the env: SAC and TD3 rescale "
                              f"their actions to the bounds of a Box action space")
        array = np.broadcast_to(np.asarray(value, dtype=np.float64), (act_size,)).copy() \
            if np.ndim(value) == 0 else np.asarray(value, dtype=np.float64).reshape(-1)
        if array.shape != (act_size,) or not np.isfinite(array).all():
            raise ConfigError(f"model.{key} must be {act_size} finite numbers, got {value!r}")
        bounds.append(array)
    low, high = bounds
    if not (low < high).all():
        raise ConfigError(f"model.action_low {low.tolist()} must be below model.action_high {high.tolist()} in "
                          f"every dimension")
    return low, high


def _vector_size(obs_shape: Any) -> int:
    shape = [obs_shape] if isinstance(obs_shape, int) or obs_shape is None else list(obs_shape)
    if len(shape) != 1:
        raise ConfigError(f"model type 'qac' takes vector observations (obs_shape an int), got obs_shape={obs_shape!r}")
    return flat_size(shape[0])


def _widths(cfg: Mapping[str, Any], part: str) -> list[int]:
    """The hidden widths of the actor or a critic: ``hidden_size_list``, else DI-engine's 1 + head_layer_num layers
    of head_hidden_size."""
    if cfg.get("hidden_size_list") is not None:
        widths: Sequence[Any] = list(cfg["hidden_size_list"])
        key = "model.hidden_size_list"
    else:
        widths = [cfg[f"{part}_head_hidden_size"]] * (1 + int(cfg[f"{part}_head_layer_num"]))
        key = f"model.{part}_head_hidden_size / {part}_head_layer_num"
    if not widths or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in widths):
        raise ConfigError(f"{key} must give at least one hidden layer of positive int width, got {widths!r}")
    return [int(w) for w in widths]


def _mlp(in_size: int, widths: Sequence[int], out_size: int, act: str) -> MLP:
    layers: list[nn.Module] = []
    size = in_size
    for width in widths:
        layers += [nn.Linear(size, width), activation(act, inplace=True)]  # in place after a Linear: no extra pass
        size = width
    layers.append(nn.Linear(size, out_size))
    return MLP(*layers)


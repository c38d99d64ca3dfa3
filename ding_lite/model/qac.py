"""Q actor-critic for continuous actions (SAC, TD3): an actor and one or two Q-networks Q(s, a), registered as ``qac``
with DI-engine's keys (its ``ContinuousQAC``)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

import ding_lite.model.relu_backward as rb
from ding_lite.data.keys import ACTION, LOG_STD, MU
from ding_lite.errors import ConfigError
from ding_lite.model.common import MLP, activation, flat_size, template_settings
from ding_lite.registry import MODEL_REGISTRY

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

    def forward_for_backward(self, obs: torch.Tensor) -> tuple[torch.Tensor, Any] | None:
        """``(action, saved)``: the action without autograd and what :meth:`backward_from` needs (as
        :meth:`GaussianActor.forward_for_backward`; None where the backward is not written out)."""
        if (kept := rb.net_forward_keeping_inputs(self.net, obs)) is None:
            return None
        layers, out, inputs = kept
        with torch.no_grad():
            squashed = torch.tanh(out)
            return squashed * self.bounds.scale + self.bounds.bias, (layers, inputs, squashed)

    def backward_from(self, saved: Any, grad_action: torch.Tensor) -> None:
        """Set the ``.grad`` of every actor parameter (replacing what was there) to the gradient of a loss whose
        gradient with respect to :meth:`forward_for_backward`'s action is ``grad_action`` (B, A): through the
        squash, d a / d u = scale (1 - tanh(u)^2)."""
        layers, inputs, squashed = saved
        with torch.no_grad():
            rb.set_weight_gradients(layers, inputs, grad_action * self.bounds.scale * (1.0 - squashed * squashed))


class GaussianActor(nn.Module):
    """SAC's actor: ``(mu, log_std)``, each (B, A), of the Gaussian before the tanh squash (log-std clamped to
    [-20, 2]); one output layer gives both."""

    def __init__(self, net: MLP, bounds: ActionBounds, act_size: int) -> None:
        super().__init__()
        self.net, self.bounds, self.act_size = net, bounds, act_size

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, log_std = self.net(obs).split(self.act_size, dim=-1)
        return mu, log_std.clamp(LOG_STD_MIN, LOG_STD_MAX)

    def forward_for_backward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, Any] | None:
        """``(mu, log_std, saved)`` as :meth:`forward` gives them, without autograd, keeping what
        :meth:`backward_from` needs; ``None`` where the backward is not written out (layers other than Linear and
        in-place ReLU, a GPU, a parameter that is frozen or has a gradient hook): then use :meth:`forward`."""
        if (kept := rb.net_forward_keeping_inputs(self.net, obs)) is None:
            return None
        layers, out, inputs = kept
        mu, raw = out.split(self.act_size, dim=-1)
        return mu, raw.clamp(LOG_STD_MIN, LOG_STD_MAX), (layers, inputs, raw)

    def backward_from(self, saved: Any, grad_mu: torch.Tensor, grad_log_std: torch.Tensor) -> None:
        """Set the ``.grad`` of every actor parameter (replacing what was there) to the gradient of a loss whose
        gradients with respect to :meth:`forward_for_backward`'s ``mu`` and ``log_std`` are given (each (B, A));
        the clamp of log_std passes the gradient inside [-20, 2] only, as autograd's clamp."""
        layers, inputs, raw = saved
        with torch.no_grad():
            inside = (raw >= LOG_STD_MIN) & (raw <= LOG_STD_MAX)
            rb.set_weight_gradients(layers, inputs, torch.cat([grad_mu, grad_log_std * inside], dim=-1))


class Critics(nn.Module):
    """K Q-networks on the same input: ``forward(obs, action) -> (K, B)``, actions in the env's units.

    With ``bounds``, each net reads the action rescaled to [-1, 1], ``(a - bias) / scale``, as SB3's critics read
    the [-1, 1] actions it stores: on bounds of very different scales (1e-3 and 100) a net reading env units barely
    sees the narrow dimension (its first layer's weights would need to grow a thousandfold), and SAC's entropy term
    then keeps that dimension random. Action gradients are with respect to the env-unit action all the same."""

    def __init__(self, nets: list[MLP], bounds: ActionBounds | None = None) -> None:
        super().__init__()
        self.nets = nn.ModuleList(nets)
        # not in checkpoints (the actor's bounds are); an identity rescaling (bounds [-1, 1]) is skipped
        self._rescales = bounds is not None and not (bool((bounds.scale == 1).all()) and bool((bounds.bias == 0).all()))
        ones = torch.ones_like(bounds.scale) if bounds is not None else torch.ones(0)
        self.register_buffer("action_scale", bounds.scale.clone() if bounds is not None else ones, persistent=False)
        self.register_buffer("action_bias", bounds.bias.clone() if bounds is not None else ones * 0, persistent=False)

    action_scale: torch.Tensor
    action_bias: torch.Tensor

    def _unit(self, action: torch.Tensor) -> torch.Tensor:
        """The action as the nets read it (in [-1, 1] where the critics have bounds)."""
        return (action - self.action_bias) / self.action_scale if self._rescales else action

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat([obs, self._unit(action)], dim=-1)
        return torch.stack([net(x).squeeze(-1) for net in self.nets])

    def actor_value(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """min_j Q_j(s, a), (B,), for a loss whose gradient trains the actor only (SAC's actor loss): **the
        gradient reaches ``action`` and no critic weight** (the actor stage steps no critic, so their weight
        gradients would be thrown away).

        On the CPU, with critics of Linear and in-place ReLU layers (the default), the backward is written out
        (``relu_backward._ActorValue``): each sample's gradient goes back through the critic that gave its minimum only,
        as the min's gradient does, so the twin critics' backward costs one critic's matrix products, not two, and
        no autograd graph of the critics is built (SAC on Hopper: about 0.8 ms of a 17-24 ms update). Otherwise
        (other layers, a GPU, ``obs`` requiring its gradient) it is autograd's min of the critics, with the same
        value and action gradient."""
        return rb.action_only_min(list(self.nets), obs, self._unit(action))

    def first_actor_value(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q_1(s, a) alone, (B,), for a loss whose gradient trains the actor only (TD3's actor loss): as
        :meth:`actor_value`, the gradient reaches ``action`` and no critic weight (the actor stage steps no critic),
        so the backward pass skips the critic's weight products."""
        return rb.action_only_min(list(self.nets)[:1], obs, self._unit(action))

    def writable_actor_value(self, obs: torch.Tensor) -> bool:
        """Does :meth:`min_value_action_grad` apply (Linear and in-place ReLU critics, on the CPU)?"""
        return rb.relu_linears(list(self.nets)) is not None and obs.device.type == "cpu"

    def min_value_action_grad(self, obs: torch.Tensor, action: torch.Tensor,
                              first_only: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """``(min_j Q_j(s, a) (B,), its gradient with respect to a (B, A))`` without autograd, each sample's gradient
        through the critic that gave its minimum (as the min's gradient); ``first_only``: Q_1 alone (TD3's actor
        loss). Only where :meth:`writable_actor_value` holds (the caller checks first, before it draws anything)."""
        layers = rb.relu_linears(list(self.nets)[:1] if first_only else list(self.nets))
        if layers is None or action.device.type != "cpu":
            raise ValueError("min_value_action_grad needs Linear and in-place ReLU critics on the CPU "
                             "(check writable_actor_value first)")
        with torch.no_grad():
            q, which, hidden = rb.min_forward(layers, torch.cat([obs, self._unit(action)], dim=-1))
            grad = rb.min_action_grad(layers, which, hidden, torch.ones_like(q), obs.shape[-1])
            return q, grad / self.action_scale if self._rescales else grad  # d unit / d a = 1 / scale

    def regression_backward(self, obs: torch.Tensor, action: torch.Tensor, target: torch.Tensor,
                            weight: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The critics' regression to ``target`` (B,) with its gradient written out, no autograd:
        ``loss = 1/2 sum_j mean_b w_b (Q_j(s, a) - y_b)^2`` (``w`` the importance weights, else 1). Sets the
        ``.grad`` of every critic parameter to the loss's gradient (replacing what was there) and returns
        ``(loss, Q)``, Q (K, B) detached; ``None`` (nothing set) where it does not apply: critics not all Linear and
        in-place ReLU layers, a GPU, a critic parameter that is frozen or has a gradient hook. Then take the loss
        through autograd (same value and gradients).

        Why: the twin critics' backward is a few matrix products per layer; autograd's graph, its engine and the
        squared-error ops around them cost more than the products' difference on small nets (SAC and TD3 on Hopper:
        about 0.4 ms of a 10-12 ms update)."""
        layers = rb.relu_linears(list(self.nets))
        if layers is None or not rb.writable(action, list(self.parameters())):
            return None
        with torch.no_grad():
            return rb.regression_backward(layers, torch.cat([obs, self._unit(action)], dim=-1), target, weight)


@MODEL_REGISTRY.register("qac")
class QAC(nn.Module):
    """An actor and ``1 + twin_critic`` critics, each an MLP with PyTorch's default init (as SB3 and CleanRL).

    - ``actor``: a :class:`GaussianActor` (``action_space='reparameterization'``, SAC) or a :class:`TanhActor`
      (``'regression'``, TD3); ``compute_actor(obs)`` returns ``{'mu', 'log_std'}`` or ``{'action'}``.
    - ``critic``: :class:`Critics`; ``compute_critic(obs, action) -> (K, B)``.
    - ``bounds``: the actor's :class:`ActionBounds`, from ``action_low`` / ``action_high`` (filled in from the env's
      ``Box``).
    """

    # built from keywords outside a pipeline (no env to give the bounds): DI-engine's QAC acts in [-1, 1]
    standalone_defaults: dict[str, Any] = dict(action_low=-1.0, action_high=1.0)

    config: dict[str, Any] = dict(
        type="qac",
        obs_shape=None,  # int, or a shape list whose observations are read flattened; None: from the env
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

    def __init__(self, cfg: Mapping[str, Any] | None = None, **settings: Any) -> None:
        super().__init__()
        cfg = template_settings(type(self), cfg, settings)  # DI-engine's Model(**cfg.policy.model) too
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
                               for _ in range(2 if cfg["twin_critic"] else 1)], bounds)

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
        if np.asarray(value).dtype.kind not in "iuf":  # a word, a bool (True is no bound), a None in a list
            raise ConfigError(f"model.{key} must be {act_size} finite numbers, got {value!r}")
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
    """Inputs of the networks: an observation of any shape is read flattened (the SAC / TD3 policies flatten each
    batch), as SB3's MLP policies read one."""
    return flat_size(obs_shape)


def _widths(cfg: Mapping[str, Any], part: str) -> list[int]:
    """The hidden widths of the actor or a critic: ``hidden_size_list``, else DI-engine's 1 + head_layer_num layers
    of head_hidden_size."""
    if cfg.get("hidden_size_list") is not None:
        widths: Sequence[Any] = cfg["hidden_size_list"]
        key = "model.hidden_size_list"
        if not isinstance(widths, (list, tuple)):  # list() of an int fails, of a string gives its letters
            raise ConfigError(f"{key} must be a list of positive int widths, got {widths!r}")
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


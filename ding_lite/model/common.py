"""Network building blocks: MLP encoders and init helpers."""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast

import torch
from torch import nn

from ding_lite.data.keys import LOGIT, MU, SIGMA
from ding_lite.errors import ConfigError, DingLiteError, first_line
from ding_lite.registry import qualified_name

ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "gelu": nn.GELU, "silu": nn.SiLU}
INPLACE_ACTIVATIONS = ("relu", "elu", "silu")


def flat_size(shape: Any, key: str = "model.obs_shape") -> int:
    """Number of elements of an int or a shape list; a missing shape is a config error naming ``key``."""
    if shape is None:
        raise ConfigError(f"{key} is not set and could not be inferred from the env")
    if isinstance(shape, int):
        return shape
    return int(math.prod(shape))


def set_gradients(params: Iterable[torch.Tensor], grads: Iterable[torch.Tensor]) -> None:
    """Give each parameter its gradient (replacing ``.grad``): how a hand-written backward hands its result to the
    optimiser, as ``loss.backward()`` would have left it."""
    for p, grad in zip(params, grads, strict=True):
        p.grad = grad


def activation(name: str, inplace: bool = False) -> nn.Module:
    """The activation module called ``name`` ('relu', 'tanh', 'elu', 'gelu', 'silu'); ``inplace`` where the module
    has an in-place form (relu, elu, silu), for inputs whose autograd node does not keep them (a conv's or a linear
    layer's output)."""
    if name not in ACTIVATIONS:
        raise ConfigError(f"unknown activation '{name}'; known: {', '.join(ACTIVATIONS)}")
    if inplace and name in INPLACE_ACTIVATIONS:
        return ACTIVATIONS[name](inplace=True)
    return ACTIVATIONS[name]()


# the functions MLP.forward calls for these modules (neither has a setting but ReLU's inplace, checked there)
_ACTIVATION_FUNCTIONS: dict[type, Any] = {nn.ReLU: torch.relu, nn.Tanh: torch.tanh}


class MLP(nn.Sequential):
    """A stack of ``Flatten``, ``Linear`` and activation layers (an ``nn.Sequential``: same layers, same state dict)
    whose forward calls the layers' functions directly instead of each module's ``__call__``.

    The networks of RL are small enough that the per-module call costs as much as the arithmetic: a 256-wide Linear
    on 4 rows takes 5.4 µs through its module and 4.6 µs as ``F.linear`` of its weight and bias, a ReLU 3.0 µs
    against 0.7 µs (Hopper's two 256-wide layers on 4 rows: 23 -> 17.5 µs). The price: forward hooks registered on
    the inner layers do not run (hooks on the MLP itself do).

    Inside :func:`rollout_weights` a wide layer multiplies without autograd by the ``(in, out)``-contiguous copy of
    its weight made there.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self._modules.values():
            kind = type(layer)
            if kind is nn.Linear:  # exactly: a subclass (a noisy layer, say) keeps its own forward
                linear = cast(nn.Linear, layer)
                weight_t = linear.__dict__.get(_ROLLOUT_WEIGHT)
                if weight_t is not None and linear.bias is not None and x.dim() == 2 and \
                        not torch.is_grad_enabled():
                    x = torch.addmm(linear.bias, x, weight_t)
                else:
                    x = nn.functional.linear(x, linear.weight, linear.bias)
            elif kind is nn.Flatten:
                if x.dim() != 2:
                    x = layer(x)
                if not x.is_floating_point():  # integer observations (uint8 frames, int8 boards) as numbers
                    x = x.float()
            elif kind in _ACTIVATION_FUNCTIONS and not getattr(layer, "inplace", False):
                x = _ACTIVATION_FUNCTIONS[kind](x)
            elif kind is nn.ReLU:  # in place (after a Linear, whose backward does not keep its output)
                x = torch.relu_(x)
            else:
                x = layer(x)
        return x


_ROLLOUT_WEIGHT = "_rollout_weight_t"  # a Linear's (in, out)-contiguous weight copy inside rollout_weights
_ROLLOUT_MIN_IN = 1024  # narrower layers gain less than the copy costs


def wide_layers(model: nn.Module) -> list[nn.Linear]:
    """The Linear layers of ``model``'s :class:`MLP`\\s with 1,024 inputs or more: those :func:`rollout_weights` gives
    an inference copy. A model's layers do not change, so a caller may find them once and pass them on."""
    return [m for block in model.modules() if isinstance(block, MLP) for m in block.children()
            if type(m) is nn.Linear and m.in_features >= _ROLLOUT_MIN_IN]


@contextmanager
def rollout_weights(model: nn.Module, layers: list[nn.Linear] | None = None) -> Iterator[None]:
    """A block in which ``model``'s weights do not change (a rollout: collection or evaluation, between two weight
    updates): on entry each CPU layer of an :class:`MLP` with 1,024 inputs or more gets an ``(in, out)``-contiguous
    copy of its weight, which its forward passes without autograd multiply by; on exit the copies are dropped.
    ``layers``: those layers as :func:`wide_layers` found them (None: found now; a walk over the model's modules,
    which costs a collect of one env step as much as its forward pass).

    MKL multiplies a few rows by a transposed weight (``F.linear``'s layout) at half the speed of a plain one: Pong's
    3136x512 layer on the 4 frames of a pipeline group takes 0.47 ms as ``F.linear`` and 0.26 ms by the copy (the
    conv encoder's forward pass: 1.14 -> 0.93 ms, run twice per row of env steps). Gradient steps inside the block
    (none should happen) use the weights themselves; nested blocks keep the outermost's copies.
    """
    layers = [m for m in (wide_layers(model) if layers is None else layers)
              if m.weight.device.type == "cpu" and _ROLLOUT_WEIGHT not in m.__dict__]
    with torch.no_grad():
        for layer in layers:
            layer.__dict__[_ROLLOUT_WEIGHT] = layer.weight.t().contiguous()
    try:
        yield
    finally:
        for layer in layers:
            layer.__dict__.pop(_ROLLOUT_WEIGHT, None)


def mlp(in_size: int, hidden_sizes: Sequence[int], act: str = "relu", out_size: int | None = None,
        out_gain: float = 1.0) -> MLP:
    """A flattening MLP: Linear+activation per hidden size, then an optional linear output layer.

    Hidden layers get orthogonal init with gain sqrt(2), the output layer ``out_gain`` (Engstrom et al. 2020 show
    these details matter for PPO).
    """
    layers: list[nn.Module] = [nn.Flatten()]
    size = in_size
    for h in hidden_sizes:
        layers += [ortho_init(nn.Linear(size, h), math.sqrt(2)), activation(act)]
        size = h
    if out_size is not None:
        layers.append(ortho_init(nn.Linear(size, out_size), out_gain))
    return MLP(*layers)


def head_trunk(in_size: int, hidden_size: int | None, layer_num: int, act: str, name: str) -> tuple[nn.Module, int]:
    """DI-engine's head layers: ``layer_num`` Linear+activation layers of ``hidden_size`` between an encoder and its
    output layer (``hidden_size`` None or ``layer_num`` 0: none, an identity, as DI-engine's heads with
    ``layer_num=0``). Returns the module and its output width."""
    prefix = f"model.{name}_" if name else "model."
    if int(layer_num) < 0 or (hidden_size is not None and int(hidden_size) < 1):
        raise ConfigError(f"{prefix}head_hidden_size must be at least 1 and {prefix}head_layer_num at least 0, got "
                          f"{hidden_size!r} and {layer_num!r}")
    if hidden_size is None or int(layer_num) == 0:
        return nn.Identity(), in_size
    layers: list[nn.Module] = []
    size = in_size
    for _ in range(int(layer_num)):
        layers += [ortho_init(nn.Linear(size, int(hidden_size)), math.sqrt(2)), activation(act)]
        size = int(hidden_size)
    return MLP(*layers), size


def ortho_init(layer: nn.Linear, gain: float) -> nn.Linear:
    """Orthogonal weights, zero bias."""
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


# ---- actor heads shared by the actor-critic templates (VAC, the EPPO members) ----------------------------------
def actor_settings(cfg: Mapping[str, Any]) -> tuple[bool, bool]:
    """``(continuous, fixed_sigma)`` of a model section, checked: ``action_space`` is 'discrete' or 'continuous',
    ``sigma_type`` 'fixed' (a learned state-independent log-std; DI-engine calls it 'independent', also accepted) or
    'conditioned' (a log-std head)."""
    if cfg["action_space"] not in ("discrete", "continuous"):
        raise ConfigError(f"model.action_space must be 'discrete' or 'continuous', got {cfg['action_space']!r}")
    if cfg["sigma_type"] not in ("fixed", "independent", "conditioned"):
        raise ConfigError(f"model.sigma_type must be 'fixed' (or DI-engine's name for it, 'independent') or "
                          f"'conditioned', got {cfg['sigma_type']!r}")
    return cfg["action_space"] == "continuous", cfg["sigma_type"] != "conditioned"


def add_log_std(module: nn.Module, size: int, act_size: int, cfg: Mapping[str, Any]) -> None:
    """Give a continuous actor its scale: ``module.log_std`` (fixed) or ``module.log_std_head`` (conditioned)."""
    continuous, fixed = actor_settings(cfg)
    if not continuous:
        return
    if fixed:
        module.log_std = nn.Parameter(torch.full((act_size,), float(cfg["init_log_std"])))
    else:
        module.log_std_head = ortho_init(nn.Linear(size, act_size), 0.01)


def actor_output(module: Any, features: torch.Tensor, continuous: bool,
                 fixed_sigma: bool) -> dict[str, torch.Tensor]:
    """``{'logit'}`` or ``{'mu', 'sigma'}`` from ``module.actor_head`` (and its log-std part) on ``features``."""
    out = module.actor_head(features)
    if not continuous:
        return {LOGIT: out}
    log_std = module.log_std.expand_as(out) if fixed_sigma else module.log_std_head(features).clamp(-20.0, 2.0)
    return {MU: out, SIGMA: log_std.exp()}


def build_model(model_cfg: Mapping[str, Any], default_type: str) -> nn.Module:
    """The model that a ``policy.model`` section names (``type``, else ``default_type``).

    A model class with a ``config`` dict of defaults gets the whole section (ding_lite's templates); one without
    (DI-engine's style, ``def __init__(self, obs_shape, action_shape, ...)``) gets its settings as keyword arguments.
    """
    from ding_lite.registry import MODEL_REGISTRY

    name = model_cfg.get("type") or default_type
    model_cls = MODEL_REGISTRY.get(name)
    with_config = isinstance(getattr(model_cls, "config", None), Mapping)
    kwargs = {k: v for k, v in model_cfg.items() if k not in ("type", "import_names")}
    try:
        return model_cls(model_cfg) if with_config else model_cls(**kwargs)
    except DingLiteError:
        raise  # a template's own check of its settings says what is wrong
    except Exception as exc:
        if isinstance(exc, TypeError) and not with_config:  # most often a setting the constructor does not take
            raise ConfigError(f"model type '{name}' cannot be built from policy.model {sorted(kwargs)}: "
                              f"{exc}") from exc
        # the model's own code failed: named, as a module that fails while imported is
        raise ConfigError(f"model type '{name}' ({qualified_name(model_cls)}) failed while being built from "
                          f"policy.model: {type(exc).__name__}: {first_line(exc)}") from exc


def template_settings(cls: type, cfg: Mapping[str, Any] | None, settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """A template's settings: its ``config`` defaults under ``cfg`` (the ``policy.model`` section: what the pipelines
    pass, complete once compiled) or under keyword ``settings``, DI-engine's way of building a model
    (``DQN(**cfg.policy.model)``, ``VAC(obs_shape=4, action_shape=2)``). A key the template does not have is a
    :class:`ConfigError` naming it (keywords only: a section may carry keys other parts of the config read). What
    the env would fill in comes from the class's ``standalone_defaults`` (DI-engine's: ``action_space='discrete'``)."""
    defaults: Mapping[str, Any] = getattr(cls, "config", {})
    if settings:
        if cfg is not None:
            raise ConfigError(f"{cls.__name__}: give its settings as one mapping or as keyword arguments, not both")
        unknown = sorted(set(settings) - set(defaults) - {"import_names"})
        if unknown:
            known = ", ".join(k for k in defaults if k != "type")
            raise ConfigError(f"{cls.__name__} has no setting {unknown[0]!r} (its settings: {known})")
        cfg = settings
    if cfg is None:
        raise ConfigError(f"{cls.__name__} needs its settings (at least obs_shape and action_shape)")
    if all(key in cfg for key in defaults):
        return cfg  # complete (a compiled section): kept as given
    # built outside a pipeline, no env fills in what the defaults leave to it: DI-engine's defaults do
    return {**defaults, **getattr(cls, "standalone_defaults", {}), **cfg}

"""What a policy reads from its model, checked once when the policy is built.

A policy calls its model's methods (``forward``, ``compute_actor``, ...) and reads keys of the dicts they return. A
custom model that returns another key, or a tensor of another shape (Q-values for 3 actions where the env has 2, a
value of shape ``(B, 1)`` that broadcasts against ``(B,)`` returns), would otherwise fail deep inside a collect or a
loss, or train on the wrong numbers without failing. :class:`ModelProbe` calls each method once on a batch of zero
observations and raises one :class:`~ding_lite.errors.ConfigError` naming the model, the method, the key and the
shape the policy needs. A policy says what it needs in ``Policy._check_model(probe)``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from ding_lite.errors import ConfigError, first_line

PROBE_BATCH = 2  # observations in the probe batch (B)
# Symbols of an expected shape: B the batch, A the number of actions (discrete) or action dimensions (continuous),
# '*' any size.
BATCH, ACTIONS, ANY = "B", "A", "*"

Shape = tuple[str, ...]


class ModelProbe:
    """A model's outputs on ``PROBE_BATCH`` zero observations of ``obs_shape``, each method called at most once (in
    eval mode, without gradients; the modules' train/eval modes are restored).

    Args:
        model: the policy's model.
        policy_type: the policy's registered name, for messages.
        model_name: the model's registered name (or its class name), for messages.
        obs_shape: the shape of one observation (``policy.model.obs_shape``).
        n_actions: the number of actions or action dimensions (``policy.model.action_shape``; None: not checked).
        device: where the model's parameters are.
    """

    def __init__(self, model: nn.Module, policy_type: str, model_name: str, obs_shape: tuple[int, ...],
                 n_actions: int | None, device: torch.device) -> None:
        self.model = model
        self.who = f"model '{model_name}' (policy.model) of policy '{policy_type}'"
        self.policy_type = policy_type
        self.obs = torch.zeros((PROBE_BATCH, *obs_shape), device=device)
        self.n_actions = n_actions
        self._outputs: dict[str, Any] = {}

    def require(self, *attributes: str, hint: str = "") -> None:
        """A :class:`ConfigError` unless the model has every one of ``attributes`` (``hint``: what to do instead)."""
        missing = [name for name in attributes if not hasattr(self.model, name)]
        if missing:
            raise ConfigError(f"{self.who} has no {', '.join(missing)}, which the policy uses"
                              f"{f': {hint}' if hint else ''}")

    def call(self, method: str) -> Mapping[str, Any]:
        """What ``model.<method>(obs)`` returns on the probe batch; a missing method, a failing call or a result
        that is not a dict is a :class:`ConfigError`."""
        if method in self._outputs:
            return self._outputs[method]
        fn = getattr(self.model, method, None)
        if not callable(fn):
            raise ConfigError(f"{self.who} has no method {method}(obs), which the policy calls: see "
                              f"docs/tutorial_custom_model.md for what each policy calls")
        modes = {module: module.training for module in self.model.modules()}
        self.model.eval()  # no batch-norm statistics or dropout draws from the probe
        try:
            with torch.no_grad():
                out = fn(self.obs)
        except Exception as exc:  # a user's model: whatever it raises, one line naming it
            raise ConfigError(f"{self.who} fails in {method}(obs) on a batch of observations of shape "
                              f"{list(self.obs.shape)}: {type(exc).__name__}: {first_line(exc)}") from exc
        finally:
            for module, training in modes.items():  # parents first: each child then gets its own mode back
                module.train(training)
        if not isinstance(out, Mapping):
            raise ConfigError(f"{self.who}: {method}(obs) must return a dict of tensors, got {_describe(out)}")
        self._outputs[method] = out
        return out

    def expect(self, method: str, *choices: Mapping[str, Shape]) -> Mapping[str, Any]:
        """Check that ``model.<method>(obs)`` returns the keys of one of ``choices`` (e.g. ``{'logit': (B, A)}`` or
        ``{'mu': (B, A), 'sigma': (B, A)}``) as floating-point tensors of those shapes; returns the output."""
        out = self.call(method)
        chosen = next((c for c in choices if all(k in out for k in c)), None)
        if chosen is None:
            wanted = " or ".join(", ".join(f"'{k}' {self._spelled(s)}" for k, s in c.items()) for c in choices)
            raise ConfigError(f"{self.who}: {method}(obs) returns the keys {sorted(out)}; the policy reads {wanted}")
        for key, shape in chosen.items():
            self._check_tensor(method, key, out[key], shape)
        return out

    def _check_tensor(self, method: str, key: str, value: Any, shape: Shape) -> None:
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            raise ConfigError(f"{self.who}: {method}(obs)['{key}'] must be a float tensor {self._spelled(shape)}, "
                              f"got {_describe(value)}")
        sizes = {BATCH: PROBE_BATCH, ACTIONS: self.n_actions}
        fits = value.dim() == len(shape) and all(
            sizes.get(s) is None or n == sizes[s] for s, n in zip(shape, value.shape, strict=True))
        if not fits:
            raise ConfigError(f"{self.who}: {method}(obs)['{key}'] has shape {list(value.shape)} for "
                              f"{PROBE_BATCH} observations; the policy needs {self._spelled(shape)}")

    def _spelled(self, shape: Shape) -> str:
        """``(B, A) = [2, 3]``: the symbols and the sizes they stand for here (A: ``policy.model.action_shape``)."""
        sizes = {BATCH: str(PROBE_BATCH), ACTIONS: "A" if self.n_actions is None else str(self.n_actions)}
        symbols = f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(shape)})"
        return f"{symbols} = [{', '.join(sizes.get(s, s) for s in shape)}]"


def probe_obs_shape(model_cfg: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The shape of one observation as ``policy.model.obs_shape`` gives it (an int or a list); None where it does
    not say (a model that takes no ``obs_shape``, an unfilled one), and then no probe runs."""
    shape = model_cfg.get("obs_shape")
    if isinstance(shape, bool):
        return None
    if isinstance(shape, int) and shape > 0:
        return (shape,)
    if isinstance(shape, (list, tuple)) and shape and all(isinstance(n, int) and n > 0 for n in shape):
        return tuple(shape)
    return None


def probe_n_actions(model_cfg: Mapping[str, Any]) -> int | None:
    """The number of actions (or action dimensions) ``policy.model.action_shape`` gives; None if it gives none."""
    shape = model_cfg.get("action_shape")
    if isinstance(shape, bool):
        return None
    if isinstance(shape, int):
        return shape
    if isinstance(shape, (list, tuple)) and all(isinstance(n, int) for n in shape):
        n = 1
        for size in shape:
            n *= size
        return n
    return None


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {list(value.shape)}"
    return f"a {type(value).__name__}"

"""The forward and backward passes of RL's small MLPs (Linear layers with tanh or ReLU between them) in NumPy, on the
parameters' own memory, for the CPU steps where torch's cost per op exceeds the arithmetic.

A PPO minibatch on Hopper's 64x64 nets is some 70 ops on arrays of 64 rows: torch spends 3-6 µs on each (its
dispatcher, and autograd's graph on top), NumPy about 1 µs, and ``torch.tanh`` of a 64x64 array takes 11.5 µs where
``np.tanh`` takes 1.9 µs (measured on the 2-core development machine, one thread). The matrix products cost the same
on both sides. :class:`NumpyMLP` reads the weights through NumPy views of the parameters (no copy: an optimiser's
in-place step is seen at once) and writes gradients into NumPy views of the parameters' ``.grad`` tensors, where a
torch optimiser finds them.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import torch
from torch import nn

from ding_lite.model.common import MLP

ACTIVATIONS = {nn.Tanh: "tanh", nn.ReLU: "relu"}  # the activations with a written-out derivative


class NumpyMLP:
    """A chain of ``Linear`` layers (with biases) with tanh or ReLU after every layer but the last, seen as NumPy
    arrays. Build it with :meth:`of`, which says None where the modules are anything else.

    ``forward(x)`` and ``forward_keep(x)`` take float32 rows ``(B, in)``; :meth:`backward` takes what
    ``forward_keep`` kept and dL/d(output) ``(B, out)``, and writes every layer's weight and bias gradient into the
    arrays ``grads`` (in :attr:`params` order: NumPy views of the ``.grad`` tensors), replacing what was there.
    """

    def __init__(self, linears: list[nn.Linear], activations: list[str]) -> None:
        self.linears = linears
        self.activations = activations  # one per hidden layer
        self.params: list[torch.Tensor] = [t for lin in linears for t in (lin.weight, cast(torch.Tensor, lin.bias))]
        arrays = [p.detach().numpy() for p in self.params]  # views: the optimiser's in-place steps show at once
        self.weights = list(zip(arrays[0::2], arrays[1::2], strict=True))

    @classmethod
    def of(cls, modules: Sequence[nn.Module]) -> NumpyMLP | None:
        """The chain of ``modules`` (e.g. an encoder, a trunk and a head; ``Flatten`` and ``Identity`` pass through,
        nested ``Sequential``\\s are walked), or None where it is not Linear, activation, ..., Linear with tanh or ReLU
        activations and float32 CPU parameters that train."""
        layers: list[nn.Module] = []
        for module in modules:
            layers += _leaves(module)
        layers = [m for m in layers if type(m) not in (nn.Flatten, nn.Identity)]
        linears = layers[0::2]
        acts = layers[1::2]
        if not layers or len(layers) % 2 != 1 or \
                not all(type(m) is nn.Linear and m.bias is not None for m in linears) or \
                not all(type(m) in ACTIVATIONS for m in acts):
            return None
        params = [t for m in linears for t in m.parameters()]
        if not all(p.device.type == "cpu" and p.dtype == torch.float32 and p.requires_grad and not p._backward_hooks
                   for p in params):
            return None
        return cls([m for m in linears if isinstance(m, nn.Linear)], [ACTIVATIONS[type(m)] for m in acts])

    def forward(self, x: np.ndarray) -> np.ndarray:
        return self.forward_keep(x)[0]

    def forward_keep(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """``(output (B, out), each layer's input)``: ``x``, then the hidden activations (what :meth:`backward`
        needs)."""
        inputs = [x]
        h = x
        last = len(self.weights) - 1
        for k, (w, b) in enumerate(self.weights):
            h = h @ w.T
            h += b
            if k < last:
                if self.activations[k] == "tanh":
                    np.tanh(h, out=h)
                else:
                    np.maximum(h, 0.0, out=h)
                inputs.append(h)
        return h, inputs

    def backward(self, inputs: list[np.ndarray], g: np.ndarray, grads: list[np.ndarray]) -> None:
        """From ``g`` = dL/d(output) ``(B, out)``: each layer's weight gradient ``g^T input`` and bias gradient
        ``sum_b g`` into ``grads``; ``g`` goes back through the weight and the activation's derivative (tanh:
        ``1 - h^2`` of its output; ReLU: where its output is positive) down to the first layer (no input gradient).
        """
        for k in range(len(self.weights) - 1, -1, -1):
            w = self.weights[k][0]
            np.matmul(g.T, inputs[k], out=grads[2 * k])
            np.add.reduce(g, 0, out=grads[2 * k + 1])  # g.sum(0) without its Python wrapper (~5 µs)
            if k > 0:
                g = g @ w
                h = inputs[k]
                if self.activations[k - 1] == "tanh":
                    g *= 1.0 - h * h
                else:
                    g *= h > 0.0


def _leaves(module: nn.Module) -> list[nn.Module]:
    """A module's layers in call order: a plain ``nn.Sequential`` or ding_lite's :class:`MLP` is opened (not a
    subclass with a forward of its own), anything else is one layer."""
    if type(module) in (nn.Sequential, MLP):
        return [leaf for child in module.children() for leaf in _leaves(child)]
    return [module]

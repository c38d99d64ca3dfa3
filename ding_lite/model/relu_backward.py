"""The written-out backward of ReLU MLPs (Linear, in-place ReLU, ..., Linear) on the CPU, which the ``qac`` model's
actors and critics use instead of autograd where it applies: each layer's input kept by the forward pass, the weight
and bias gradients and the ReLU derivative written by hand, the same matrix products as autograd's without its graph
and engine (SAC and TD3 on MuJoCo: their updates build no autograd graph). Every function here gives autograd's
values and gradients (tests/model/test_qac.py), except inside :func:`gradient_products`, where the products that only
serve gradients take bfloat16-rounded inputs (tests/model/test_gradient_dtype.py)."""
from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from ding_lite.model.common import MLP, set_gradients

Layers = list[tuple[torch.Tensor, torch.Tensor]]  # one ReLU MLP's (weight, bias) per Linear, input to output

# The dtype of the products that only serve gradients (policy.learn.gradient_dtype), set around an update
_GRADIENT_DTYPE: ContextVar[torch.dtype | None] = ContextVar("gradient_dtype", default=None)
LOW_PRECISION_MIN_WIDTH = 64  # layers narrower than this on either side stay float32 (no gain, more rounding)


@contextmanager
def gradient_products(dtype: torch.dtype | None) -> Iterator[None]:
    """Within it, the matrix products that only serve a gradient run on inputs rounded to ``dtype`` (float32
    accumulation, float32 result): the written-out backward passes and the forward passes marked ``gradient_only``
    (an actor stage's), for layers at least :data:`LOW_PRECISION_MIN_WIDTH` wide on both sides. A value that is
    regressed or used as a target (the critic stage's forward, the target networks) is never among them. None:
    float32 throughout."""
    token = _GRADIENT_DTYPE.set(dtype)
    try:
        yield
    finally:
        _GRADIENT_DTYPE.reset(token)


def _low_dtype(rows: int, cols: int) -> torch.dtype | None:
    """The dtype a gradient product through a (rows, cols) weight runs in here, None for float32."""
    dtype = _GRADIENT_DTYPE.get()
    return dtype if dtype is not None and min(rows, cols) >= LOW_PRECISION_MIN_WIDTH else None


def _product_in(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """``a @ b`` on inputs rounded to ``dtype`` (result back in float32); None: float32."""
    return a.mm(b) if dtype is None else a.to(dtype).mm(b.to(dtype)).float()


def _gradient_product(a: torch.Tensor, b: torch.Tensor, weight_shape: torch.Size) -> torch.Tensor:
    """``a @ b`` for a gradient through a weight of ``weight_shape``: in :func:`gradient_products`'s dtype where it
    applies, else float32."""
    return _product_in(a, b, _low_dtype(*weight_shape))


@functools.cache
def native_bfloat16() -> bool | None:
    """Does this CPU multiply bfloat16 natively (AVX512-BF16 or AMX)? None where it cannot be told (no
    /proc/cpuinfo). Elsewhere bfloat16 products are emulated and slower than float32 ones."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    return "avx512_bf16" in flags or "amx_bf16" in flags


def action_only_min(nets: list[nn.Module], obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """min_j net_j([obs, action]), (B,), differentiable in ``action`` only where :class:`_ActorValue` applies (CPU,
    ReLU MLPs, ``obs`` without gradient, grad mode on), else autograd's min (same value and action gradient)."""
    layers = relu_linears(nets)
    if layers is None or action.device.type != "cpu" or obs.requires_grad or not torch.is_grad_enabled():
        x = torch.cat([obs, action], dim=-1)
        values = [net(x).squeeze(-1) for net in nets]
        return values[0] if len(values) == 1 else torch.stack(values).min(dim=0).values
    return _ActorValue.apply(action, obs, len(layers[0]), *[t for net in layers for lin in net for t in lin])


def writable(x: torch.Tensor, params: list[torch.Tensor]) -> bool:
    """Can a hand-written backward set these parameters' gradients: on the CPU, none frozen, none with a hook?"""
    return x.device.type == "cpu" and all(p.requires_grad and not p._backward_hooks for p in params)


def relu_linears(nets: list[nn.Module]) -> list[Layers] | None:
    """Per net, its layers' (weight, bias), if every net is Linear, in-place ReLU, ..., Linear (exactly those
    types); else None."""
    out = []
    for net in nets:
        mods = list(net.children())
        if len(mods) % 2 != 1 or not all(type(m) is nn.Linear and m.bias is not None for m in mods[0::2]) or \
                not all(type(m) is nn.ReLU and m.inplace for m in mods[1::2]):
            return None
        out.append([(cast(nn.Linear, m).weight, cast(torch.Tensor, cast(nn.Linear, m).bias)) for m in mods[0::2]])
    return out


def net_forward_keeping_inputs(net: MLP, x: torch.Tensor) -> tuple[Layers, torch.Tensor, list[torch.Tensor]] | None:
    """An actor net's ``(layers, output, each layer's input)`` without autograd, for a written-out backward; None
    where that backward does not apply (layers other than Linear and in-place ReLU, a GPU, a parameter that is
    frozen or has a gradient hook)."""
    layers = relu_linears([net])
    if layers is None or not writable(x, list(net.parameters())):
        return None
    with torch.no_grad():
        out, inputs = forward_keeping_inputs(layers[0], x, gradient_only=True)
    return layers[0], out, inputs


def forward_keeping_inputs(net: Layers, x: torch.Tensor,
                           gradient_only: bool = False) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A ReLU MLP's output on ``x`` (B, D) and each layer's input (``x``, then the hidden activations): what its
    written-out backward needs (call under ``no_grad``). ``gradient_only``: the pass serves a gradient alone (an
    actor stage's), so its products may run in :func:`gradient_products`'s dtype."""
    inputs = [x]
    h = x
    for k, (w, b) in enumerate(net):
        low = _low_dtype(*w.shape) if gradient_only else None
        h = torch.addmm(b, h, w.t()) if low is None else _product_in(h, w.t(), low).add_(b)
        if k < len(net) - 1:
            h = h.relu_()
            inputs.append(h)
    return h, inputs


def set_weight_gradients(net: Layers, inputs: list[torch.Tensor], g: torch.Tensor) -> None:
    """Backward of a ReLU MLP from ``g`` = dL/d(output) (B, out), writing every layer's gradient (replacing what was
    there): its weight's g^T (its input), its bias's sum_b g; g goes back through the weight and the ReLU derivative
    (autograd's ``threshold_backward``) down to the first layer (no input gradient)."""
    for k in range(len(net) - 1, -1, -1):
        w, b = net[k]
        set_gradients((w, b), (weight_gradient(g, inputs[k]), g.sum(0)))
        if k > 0:  # back to the output of layer k - 1 (a ReLU)
            g = g * w if w.shape[0] == 1 else _gradient_product(g, w, w.shape)  # (B, 1) x (1, H): a broadcast
            g = torch.ops.aten.threshold_backward(g, inputs[k], 0)


_THIN_INPUT = 24  # inputs narrower than this: the weight gradient as (x^T g)^T (measured below)


def weight_gradient(g: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """A linear layer's weight gradient g^T x, (out, in), for g (B, out) and its input x (B, in). MKL multiplies
    a transposed (out, B) matrix by a thin (B, in) one slowly: for a first layer on an observation (batch 256, 400
    outputs, 11-14 inputs) g^T x takes 95-180 µs, (x^T g)^T made contiguous 48-50 µs; from about 24 inputs up the
    plain product is as fast or faster (one thread, this machine's MKL)."""
    if x.shape[1] < _THIN_INPUT:
        return x.t().mm(g).t().contiguous()
    return _gradient_product(g.t(), x, torch.Size((g.shape[1], x.shape[1])))


def regression_backward(layers: list[Layers], x: torch.Tensor, target: torch.Tensor,
                         weight: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """:meth:`Critics.regression_backward` on inputs ``x`` (B, D) (call under ``no_grad``). Per critic: the forward
    keeps each layer's input; dL/dQ_b = w_b (Q_b - y_b) / B, then :func:`set_weight_gradients`."""
    scale = 1.0 / x.shape[0]
    loss = x.new_zeros(())
    values = []
    for net in layers:
        h, inputs = forward_keeping_inputs(net, x)
        q = h.squeeze(-1)
        error = q - target
        g = error * scale if weight is None else error * (weight * scale)
        loss += 0.5 * torch.dot(error, g)
        values.append(q)
        set_weight_gradients(net, inputs, g.unsqueeze(-1))
    return loss, torch.stack(values)


def min_forward(layers: list[Layers], x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list[list[torch.Tensor]]]:
    """min_j Q_j(x) over K ReLU MLP critics: ``(q (B,), which (B,) the argmin critic, each critic's hidden
    activations)`` (call without autograd). It serves an actor stage's gradient: its products may run in
    :func:`gradient_products`'s dtype."""
    values, hidden = [], []
    for net in layers:
        h, inputs = forward_keeping_inputs(net, x, gradient_only=True)
        values.append(h.squeeze(-1))
        hidden.append(inputs[1:])
    q, which = torch.stack(values).min(dim=0)
    return q, which, hidden


def min_action_grad(layers: list[Layers], which: torch.Tensor, hidden: list[list[torch.Tensor]], grad: torch.Tensor,
                     obs_size: int) -> torch.Tensor:
    """d(sum_b grad_b q_b)/d action (B, A) for the ``q`` of :func:`min_forward`: each sample's gradient goes back
    through its argmin critic alone (rows gathered), as the min's gradient does; no weight gradient."""
    n_nets = len(layers)
    grad_action = grad.new_zeros(grad.shape[0], layers[0][0][0].shape[1] - obs_size)
    for j, net in enumerate(layers):
        rows = None if n_nets == 1 else (which == j).nonzero().squeeze(-1)
        if rows is not None and rows.numel() == 0:
            continue
        g = (grad if rows is None else grad.index_select(0, rows)).unsqueeze(-1)
        for k in range(len(net) - 1, 0, -1):  # back through layer k to the output of layer k - 1 (a ReLU)
            weight = net[k][0]
            g = g * weight if weight.shape[0] == 1 else _gradient_product(g, weight, weight.shape)  # or a broadcast
            h = hidden[j][k - 1]
            g = torch.ops.aten.threshold_backward(g, h if rows is None else h.index_select(0, rows), 0)
        g = g @ net[0][0][:, obs_size:]
        if rows is None:
            grad_action = g
        else:
            grad_action.index_copy_(0, rows, g)
    return grad_action


def _nets_of(params: tuple[torch.Tensor, ...], n_layers: int) -> list[Layers]:
    per_net = 2 * n_layers
    return [[(params[j + 2 * k], params[j + 2 * k + 1]) for k in range(n_layers)]
            for j in range(0, len(params), per_net)]


class _ActorValue(torch.autograd.Function):
    """min_j Q_j(s, a) over K ReLU MLP critics, differentiable in ``a`` only (:func:`min_forward` and
    :func:`min_action_grad`)."""

    @staticmethod
    def forward(ctx: Any, action: torch.Tensor, obs: torch.Tensor, n_layers: int,  # type: ignore[override]
                *params: torch.Tensor) -> torch.Tensor:
        q, which, hidden = min_forward(_nets_of(params, n_layers), torch.cat([obs, action], dim=-1))
        ctx.n_layers, ctx.obs_size = n_layers, obs.shape[-1]
        ctx.save_for_backward(which, *[h for net in hidden for h in net], *params)
        return q

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> Any:  # type: ignore[override]
        n_layers, obs_size = ctx.n_layers, ctx.obs_size
        which, *saved = ctx.saved_tensors
        n_nets = len(saved) // (3 * n_layers - 1)
        flat, params = saved[:n_nets * (n_layers - 1)], tuple(saved[n_nets * (n_layers - 1):])
        hidden = [list(flat[j * (n_layers - 1):(j + 1) * (n_layers - 1)]) for j in range(n_nets)]
        grad_action = min_action_grad(_nets_of(params, n_layers), which, hidden, grad, obs_size)
        return (grad_action, None, None) + (None,) * len(params)

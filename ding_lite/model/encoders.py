"""Observation encoders chosen from the observation shape: an MLP for vectors, a conv net for images.

``model.encoder='auto'`` gives a conv net to 3-dim observations whose sides fit the conv stack (at least
:data:`SMALL_MIN_SIDE` cells) and an MLP over the flattened observation to everything else (vectors, and boards too
small for a conv stack, such as tic-tac-toe's 3x3); ``'mlp'`` flattens any observation; ``'conv'`` insists on frames
that fit. Non-``Box`` observations (``Discrete``, ``MultiBinary``, ...) arrive as vectors (envs/spaces.py).

Image observations stay uint8 everywhere outside the model (rollouts, replay buffers); the conv encoder casts and
scales them as its first step, so a stored Atari transition costs its frames' bytes, not four times as many.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any, cast

import torch
from torch import nn

from ding_lite.errors import ConfigError
from ding_lite.model.common import activation, flat_size, mlp

ENCODERS = ("auto", "mlp", "conv")
NATURE_MIN_SIDE = 36  # the Nature-DQN stack (8/4, 4/2, 3/1) needs at least 36 pixels a side
SMALL_MIN_SIDE = 4  # the small grids' stack (three 2x2 convs, stride 1) needs at least 4 cells a side
UINT8_SCALE = 1.0 / 255.0  # model.image_scale for uint8 frames: pixels 0..255 to [0, 1]


def image_shape(obs_shape: Any) -> tuple[int, int, int] | None:
    """``(C, H, W)`` of an image observation shape (channels first, or last when there are at most 4 of them and
    the first side is larger, as MiniGrid's (7, 7, 3)); None for a vector shape."""
    if isinstance(obs_shape, int) or obs_shape is None or len(obs_shape) != 3:
        return None
    a, b, c = (int(x) for x in obs_shape)
    if c <= 4 < a:
        return c, a, b
    return a, b, c


class ConvEncoder(nn.Module):
    """uint8 (or float) images ``(B, C, H, W)`` (or channels last) to features: ``x * scale``, a conv stack, flatten,
    then an MLP of ``hidden_sizes``. The scale is applied to the first convolution's weights, not to the frames:
    ``conv(x * s, W) = conv(x, s * W)``, and multiplying 8k weights costs nothing next to the frames (Pong PPO,
    256 frames: the scaled cast took 11 ms of a 115 ms learn step, the plain cast 1.4 ms).

    Sides of 36 pixels or more get the Nature-DQN stack (Mnih et al. 2015: 32 8x8/4, 64 4x4/2, 64 3x3/1; with
    ``hidden_sizes=[512]`` it is that paper's network); smaller grids (MiniGrid's 7x7 view) get three 2x2 convs;
    ``layers_spec`` (``model.conv_layers``) replaces either stack with its own ``(out_channels, kernel, stride[,
    padding])`` layers (a board game's 4x4 kernel sees every four-in-a-row of connect four at once).
    Orthogonal init with gain sqrt(2) as in the MLPs (Huang et al. 2022, detail 2).
    """

    def __init__(self, obs_shape: Sequence[int], hidden_sizes: Sequence[int], act: str = "relu",
                 scale: float = UINT8_SCALE, layers_spec: Sequence[Sequence[int]] | None = None) -> None:
        super().__init__()
        shape = image_shape(obs_shape)
        assert shape is not None, obs_shape
        channels, height, width = shape
        self.hwc_input = tuple(int(x) for x in obs_shape) != shape  # (H, W, C) observations, permuted in forward
        self.scale = float(scale)
        nature = layers_spec is None and min(height, width) >= NATURE_MIN_SIDE
        if layers_spec is not None:  # model.conv_layers: (out_channels, kernel, stride[, padding]) per layer
            spec = [(int(s[0]), int(s[1]), int(s[2]), int(s[3]) if len(s) > 3 else 0) for s in layers_spec]
        elif nature:
            spec = [(32, 8, 4, 0), (64, 4, 2, 0), (64, 3, 1, 0)]
        else:
            spec = [(16, 2, 1, 0), (32, 2, 1, 0), (64, 2, 1, 0)]
        layers: list[nn.Module] = []
        for out_channels, kernel, stride, padding in spec:
            conv = nn.Conv2d(channels, out_channels, kernel, stride, padding)
            nn.init.orthogonal_(conv.weight, 2 ** 0.5)
            nn.init.zeros_(conv.bias)  # type: ignore[arg-type]
            # in place: a conv's backward needs its input, not its output (-2 ms of Pong's learn step)
            layers += [conv, activation(act, inplace=True)]
            channels = out_channels
        self.convs = nn.Sequential(*layers, nn.Flatten())
        # The Nature stack runs in the NHWC ("channels_last") memory format: oneDNN's conv backward is about a quarter
        # faster in it on the CPU (256 frames, one thread: 236 -> 177 ms per forward and backward); the arithmetic is
        # the same. The small grids' 2x2 convs gain nothing from it and keep NCHW.
        self.nhwc = nature
        if self.nhwc:
            self.convs.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # missing in torch's stubs
        with torch.no_grad():
            conv_size = int(self.convs(torch.zeros(1, *shape)).shape[1])
        self.head = mlp(conv_size, hidden_sizes, act)
        self.out_size = int(hidden_sizes[-1]) if len(hidden_sizes) else conv_size

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.hwc_input:
            obs = obs.permute(0, 3, 1, 2)  # a view: NCHW shape, NHWC memory
        # one pass over the frames: cast to float32 in the convs' memory format (uint8 frames are cast here, never
        # before storage)
        x = obs.to(torch.float32, memory_format=torch.channels_last if self.nhwc else torch.preserve_format)
        first = cast(nn.Conv2d, self.convs[0])
        weight = first.weight if self.scale == 1.0 else first.weight * self.scale
        x = nn.functional.conv2d(x, weight, first.bias, first.stride, first.padding)
        for layer in islice(self.convs, 1, None):  # the rest of the stack after the first conv
            x = layer(x)
        return self.head(x)


def conv_layout(model: nn.Module, obs: Any) -> Any:
    """``obs`` in the memory layout that ``model``'s conv encoders read without a transposition: (B, C, H, W) frames
    in NHWC memory when an encoder runs the Nature stack in it, anything else unchanged. For a learner that draws
    many minibatches from one batch: one reordering of the batch instead of one per minibatch (Pong PPO, 1,024
    frames, 16 minibatches of 256: 17 ms once against 7 ms per minibatch)."""
    if not isinstance(obs, torch.Tensor) or obs.dim() != 4 or obs.is_contiguous(memory_format=torch.channels_last):
        return obs
    for module in model.modules():
        if isinstance(module, ConvEncoder) and module.nhwc and not module.hwc_input:
            return obs.contiguous(memory_format=torch.channels_last)
    return obs


def conv_fits(obs_shape: Any) -> bool:
    """Whether ``obs_shape`` is a frame (3 dims) whose sides fit the smallest conv stack."""
    image = image_shape(obs_shape)
    return image is not None and min(image[1:]) >= SMALL_MIN_SIDE


def conv_layers(spec: Any, obs_shape: Any) -> list[tuple[int, ...]] | None:
    """``model.conv_layers`` checked: None (the stack chosen from the frame size), or a list of ``[out_channels,
    kernel, stride]`` or ``[out_channels, kernel, stride, padding]`` whose output still has cells left for the
    observation's frames; a config error names the layer otherwise. ``obs_shape`` None (an MLP encoder, which builds
    no conv stack): the list's form only is checked, so that a bad value is refused whatever the encoder."""
    if spec is None:
        return None
    if not isinstance(spec, (list, tuple)) or not spec:
        raise ConfigError(f"policy.model.conv_layers must be None or a non-empty list of [out_channels, kernel, "
                          f"stride(, padding)], got {spec!r}")
    for k, layer in enumerate(spec):
        ok = isinstance(layer, (list, tuple)) and len(layer) in (3, 4) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in layer)
        if not ok or min(layer[:3]) < 1 or (len(layer) == 4 and layer[3] < 0):
            raise ConfigError(f"policy.model.conv_layers[{k}] must be [out_channels, kernel, stride] or [out_channels, "
                              f"kernel, stride, padding] of positive integers (padding 0 or more), got {layer!r}")
    if obs_shape is None:
        return None
    shape = image_shape(obs_shape)
    assert shape is not None, obs_shape
    height, width = shape[1:]
    out: list[tuple[int, ...]] = []
    for k, layer in enumerate(spec):
        _, kernel, stride, *pad = layer
        padding = pad[0] if pad else 0
        height = (height + 2 * padding - kernel) // stride + 1
        width = (width + 2 * padding - kernel) // stride + 1
        if min(height, width) < 1:
            raise ConfigError(f"policy.model.conv_layers[{k}] = {list(layer)} leaves no cell of the {shape[1]}x"
                              f"{shape[2]} frames (obs_shape={obs_shape!r}): use a smaller kernel or stride, or "
                              f"padding")
        out.append(tuple(int(v) for v in layer))
    return out


def build_encoder(cfg: Mapping[str, Any], hidden_sizes: Sequence[int], act: str) -> tuple[nn.Module, int]:
    """The encoder a model section asks for and its output size.

    ``cfg['encoder']`` is 'auto' (a conv net where :func:`conv_fits`, an MLP over the flattened observation
    otherwise), 'conv' (frames that fit only: a config error names the shape otherwise) or 'mlp' (any observation,
    flattened; integer observations are cast to float, not scaled). ``cfg['image_scale']`` multiplies pixels before
    the convs (None, filled from the env: 1/255 for pixels, 1 for other images; :data:`UINT8_SCALE` where no env
    filled it); ``cfg['conv_layers']`` (None: chosen from the frame size) names the conv stack's layers.
    """
    choice = cfg.get("encoder", "auto")
    if choice not in ENCODERS:
        raise ConfigError(f"model.encoder must be one of {', '.join(ENCODERS)}, got {choice!r}")
    obs_shape = cfg["obs_shape"]
    fits = conv_fits(obs_shape)
    if choice == "conv" and not fits:
        raise ConfigError(f"policy.model.encoder='conv' needs frames (C, H, W) or (H, W, C) of at least "
                          f"{SMALL_MIN_SIDE}x{SMALL_MIN_SIDE}, got obs_shape={obs_shape!r}: set "
                          f"policy.model.encoder='auto' or 'mlp'")
    layers_spec = conv_layers(cfg.get("conv_layers"), obs_shape if fits and choice != "mlp" else None)
    if fits and choice != "mlp":
        scale = cfg.get("image_scale")  # None (a model built without an env to fill it): uint8 frames' 1/255
        encoder = ConvEncoder(obs_shape, hidden_sizes, act, UINT8_SCALE if scale is None else float(scale),
                              layers_spec)
        return encoder, encoder.out_size
    size = flat_size(obs_shape)
    return mlp(size, hidden_sizes, act), (int(hidden_sizes[-1]) if len(hidden_sizes) else size)

"""Running observation normalisation inside the model (Huang et al. 2022, "The 37 implementation details of PPO",
continuous-control detail 4): the statistics are buffers of the model, so checkpoints, the weights sent to Ray
actors and the evaluator all carry them with no extra channel.

The statistics take in the observations as they arrive, as gymnasium's ``NormalizeObservation`` (CleanRL) and SB3's
``VecNormalize`` do: a policy's collect mode calls :meth:`RunningObsNorm.update` on each step's batch before acting
on it, so the first collect already acts on normalised observations. The evaluator never updates them."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn


class RunningObsNorm(nn.Module):
    """``clip((obs - mean) / sqrt(var + eps), -clip, clip)`` with the running mean and (population) variance of every
    observation seen, kept as float64 buffers; identity (mean 0, var 1) until the first :meth:`update`."""

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    def __init__(self, shape: int | Sequence[int], clip: float = 10.0, eps: float = 1e-8) -> None:
        super().__init__()
        shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        self.clip, self.eps = float(clip), float(eps)
        self.register_buffer("mean", torch.zeros(shape, dtype=torch.float64))
        self.register_buffer("var", torch.ones(shape, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self._stats_key: tuple = ()
        self._shift = self._scale = torch.zeros(0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        shift, scale = self._float32_stats()
        return ((obs.float() - shift) * scale).clamp_(-self.clip, self.clip)

    def _buffers_key(self) -> tuple:
        return self.mean._version, self.var._version, self.mean.data_ptr(), self.var.data_ptr(), self.mean.device

    def _float32_stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``mean`` and ``1 / sqrt(var + eps)`` in float32, recomputed only when the buffers changed (a loaded state
        dict, a move to another device: their version counters or storage differ; :meth:`update` sets them
        itself). The forward pass then costs three float32 ops instead of five, two of them in float64 (Hopper's
        obs normalisation in a collect forward: 10.4 -> 8.4 µs, run once per env step)."""
        key = self._buffers_key()
        if key != self._stats_key:
            with torch.inference_mode(False), torch.no_grad():  # plain tensors, usable later with grad enabled
                self._shift = self.mean.float()
                self._scale = (self.var + self.eps).rsqrt().float()
            self._stats_key = key
        return self._shift, self._scale

    @torch.no_grad()
    def update(self, obs: torch.Tensor | np.ndarray) -> None:
        """Merge a batch ``(B, *shape)`` of raw observations into the statistics (Chan et al. 1979's parallel update
        of mean and variance, as ``VecNormalize``'s running statistics).

        It runs once per collect step, so it works in numpy on the CPU: a dozen torch ops on an 11-number batch cost
        several times the env step they normalise."""
        x = obs.detach().cpu().numpy() if isinstance(obs, torch.Tensor) else np.asarray(obs)
        x = x.reshape((-1,) + tuple(self.mean.shape))
        n = x.shape[0]
        if n == 0:
            return
        x = x.astype(np.float64, copy=False)
        batch_mean = x.mean(0)
        batch_var = x.var(0) if n > 1 else np.zeros_like(batch_mean)
        on_cpu = self.mean.device.type == "cpu"
        mean, var = (self.mean.numpy(), self.var.numpy()) if on_cpu else (self.mean.cpu().numpy(),
                                                                            self.var.cpu().numpy())
        count = float(self.count)
        total = count + n
        delta = batch_mean - mean
        new_mean = mean + delta * (n / total)
        new_var = (var * count + batch_var * n + delta * delta * (count * n / total)) / total
        shift, scale = new_mean.astype(np.float32), (1.0 / np.sqrt(new_var + self.eps)).astype(np.float32)
        if on_cpu:  # in place through numpy views: no version bump, so the float32 copies are set here
            mean[...], var[...] = new_mean, new_var
            self.count.numpy()[...] = total
        else:
            self.mean.copy_(torch.from_numpy(new_mean))
            self.var.copy_(torch.from_numpy(new_var))
            self.count.fill_(total)
        with torch.inference_mode(False):
            self._shift = torch.from_numpy(shift).to(self.mean.device)
            self._scale = torch.from_numpy(scale).to(self.mean.device)
        self._stats_key = self._buffers_key()


def obs_normalizers(model: nn.Module) -> list[RunningObsNorm]:
    """Every :class:`RunningObsNorm` of ``model`` (a policy lists them once, not per step)."""
    return [module for module in model.modules() if isinstance(module, RunningObsNorm)]


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
        self._shape = shape
        self._stats_key: tuple = ()
        # float32 mean and 1 / sqrt(var + eps) on the buffers' device (None: not made yet from the NumPy twins)
        self._shift: torch.Tensor | None = torch.zeros(0)
        self._scale: torch.Tensor | None = torch.zeros(0)
        self._shift_np = self._scale_np = np.zeros(0, dtype=np.float32)  # their NumPy twins (CPU buffers)
        self._views_ptr = -1
        self._views: tuple[np.ndarray, ...] = ()  # NumPy views of mean, var, count (CPU buffers)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        shift, scale = self._float32_stats()
        return ((obs.float() - shift) * scale).clamp_(-self.clip, self.clip)

    def normalize_numpy(self, obs: np.ndarray) -> np.ndarray:
        """:meth:`forward` on a NumPy batch ``(B, *shape)``, float32 out (statistics on the CPU): for code that
        works in NumPy on small batches (``ding_lite.policy.ppo_numpy``)."""
        self._refresh_stale_stats()
        out = np.subtract(obs, self._shift_np, dtype=np.float32)
        out *= self._scale_np
        np.maximum(out, -self.clip, out=out)  # np.clip's Python wrapper costs more than these two ufuncs
        return np.minimum(out, self.clip, out=out)

    def numpy_stats(self) -> tuple[np.ndarray, np.ndarray, float]:
        """``(shift, scale, clip)``: :meth:`normalize_numpy` is ``clip((obs - shift) * scale, -clip, clip)`` in
        float32, for code that applies it itself (``ding_lite.policy.ppo_jit``; statistics on the CPU)."""
        self._refresh_stale_stats()
        return self._shift_np, self._scale_np, float(self.clip)

    def _buffers_key(self) -> tuple:
        """Changes when the statistics do other than through :meth:`update`: a loaded state dict (in-place copies
        bump the version counters) or a move to another device (new storage). Read through ``_buffers`` (a dict),
        not the module's attribute lookup, which costs microseconds per call."""
        mean, var = self._buffers["mean"], self._buffers["var"]
        return mean._version, var._version, mean.data_ptr()  # type: ignore[union-attr]

    def _refresh_stale_stats(self) -> None:
        """Recompute the float32 statistics (NumPy twins included) if the buffers changed since they were set."""
        key = self._buffers_key()
        if key != self._stats_key:
            with torch.inference_mode(False), torch.no_grad():  # plain tensors, usable later with grad enabled
                shift, scale = self.mean.float(), (self.var + self.eps).rsqrt().float()
            self._shift, self._scale = shift, scale
            if shift.is_cpu:
                self._shift_np, self._scale_np = shift.numpy(), scale.numpy()
            self._stats_key = key

    def _float32_stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``mean`` and ``1 / sqrt(var + eps)`` in float32, recomputed only when the buffers changed (:meth:`update`
        sets them itself). The forward pass then costs three float32 ops instead of five, two of them in float64
        (Hopper's obs normalisation in a collect forward: 10.4 -> 8.4 µs, run once per env step)."""
        self._refresh_stale_stats()
        shift, scale = self._shift, self._scale
        if shift is None or scale is None:  # update() set the NumPy twins only: their tensors when torch asks
            with torch.inference_mode(False):
                shift, scale = torch.from_numpy(self._shift_np), torch.from_numpy(self._scale_np)
            self._shift, self._scale = shift, scale
        return shift, scale

    def update(self, obs: torch.Tensor | np.ndarray) -> None:
        """Merge a batch ``(B, *shape)`` of raw observations into the statistics (Chan et al. 1979's parallel update
        of mean and variance, as ``VecNormalize``'s running statistics).

        It runs once per collect step, so on the CPU it works in place on NumPy views of the buffers, about 15
        small ops: a dozen torch ops (or NumPy ops on fresh arrays) on an 11-number batch cost several times the env
        step they normalise."""
        x = obs.detach().cpu().numpy() if isinstance(obs, torch.Tensor) else np.asarray(obs)
        x = x.reshape((-1,) + self._shape)
        n = x.shape[0]
        if n == 0:
            return
        x = x.astype(np.float64, copy=False)
        batch_mean = np.add.reduce(x, 0) / n  # x.mean(0) without its Python wrapper
        centred = x - batch_mean
        batch_m2 = (centred * centred).sum(0)  # n * the batch's population variance
        buffers = self._buffers  # a dict: cheaper than the module's attribute lookup, once per env step
        on_cpu = buffers["mean"].is_cpu  # type: ignore[union-attr]
        if on_cpu:
            if self._views_ptr != buffers["mean"].data_ptr():  # type: ignore[union-attr]
                self._views = (self.mean.numpy(), self.var.numpy(), self.count.numpy())
                self._views_ptr = self.mean.data_ptr()
            mean, var, count_view = self._views
        else:
            mean, var, count_view = self.mean.cpu().numpy(), self.var.cpu().numpy(), self.count.cpu().numpy()
        count = float(count_view)
        total = count + n
        delta = batch_mean - mean
        # var' = (var count + M2_batch + delta^2 count n / total) / total, then mean' = mean + delta n / total
        var *= count / total
        var += (batch_m2 + delta * delta * (count * n / total)) / total
        mean += delta * (n / total)
        scale = np.sqrt(var + self.eps)
        np.divide(1.0, scale, out=scale)
        if on_cpu:  # in place through NumPy views: no version bump, so the float32 statistics are set here
            count_view[...] = total
            self._shift_np, self._scale_np = mean.astype(np.float32), scale.astype(np.float32)
            self._shift = self._scale = None  # made from the twins if the torch forward asks
        else:
            with torch.no_grad():
                self.mean.copy_(torch.from_numpy(mean))
                self.var.copy_(torch.from_numpy(var))
                self.count.fill_(total)
            with torch.inference_mode(False):
                self._shift = torch.from_numpy(mean.astype(np.float32)).to(self.mean.device)
                self._scale = torch.from_numpy(scale.astype(np.float32)).to(self.mean.device)
        self._stats_key = self._buffers_key()


def obs_normalizers(model: nn.Module) -> list[RunningObsNorm]:
    """Every :class:`RunningObsNorm` of ``model`` (a policy lists them once, not per step)."""
    return [module for module in model.modules() if isinstance(module, RunningObsNorm)]


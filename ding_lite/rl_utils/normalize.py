"""PPO details for continuous control (Huang et al. 2022, "The 37 implementation details of PPO"): reward scaling
(continuous-control detail 5, as gymnasium's ``NormalizeReward``: rewards divided by the running standard deviation
of the discounted return, then clipped; applied to time-major (T, N) rollouts, so each env's discounted return
carries over from one rollout to the next) and learning-rate annealing (detail 4)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from ding_lite.errors import ConfigError, int_at_least


class RewardScaler:
    """``r_t / sqrt(var_t(G) + eps)`` clipped to ±``clip``, where ``G_t = γ G_{t-1} + r_t`` per env (reset after an
    episode's last step) and ``var_t(G)`` is the variance of every G seen up to and including step t (the prior: mean
    0, var 1, count 1e-4), as SB3's ``VecNormalize`` and gymnasium's ``NormalizeReward`` scale each step. A whole
    (T, N) rollout is scaled at once, each row with the statistics of its own step (cumulative sums, no loop over
    the statistics).

    State: the statistics (``mean``, ``var``, ``count``), which a learner merges from several collectors and sends
    back with the weights (:meth:`merge`, :meth:`stats_dict`), and each env's running return ``ret``, which belongs
    to the collector's envs; ``state_dict`` holds both (checkpoints).

    Args:
        gamma: the discount of the return whose spread sets the scale.
        clip: bound of the scaled reward (None: no clip).
    """

    def __init__(self, gamma: float, clip: float | None = 10.0, eps: float = 1e-8) -> None:
        self.gamma, self.clip, self.eps = float(gamma), clip, float(eps)
        self.ret = np.zeros(0)
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def __call__(self, reward_TN: np.ndarray, done_TN: np.ndarray,
                 valid_TN: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(scaled reward, G)``, both (T, N): ``reward_TN`` scaled, and the discounted return of each row, which
        the statistics took in (only the ``valid_TN`` rows, where given). ``done_TN`` marks each episode's last
        step."""
        t_len, n_env = reward_TN.shape
        if self.ret.shape != (n_env,):
            self.ret = np.zeros(n_env)
        returns = np.empty((t_len, n_env))
        for t in range(t_len):
            self.ret = self.ret * self.gamma + reward_TN[t]
            returns[t] = self.ret
            self.ret = np.where(done_TN[t], 0.0, self.ret)
        var_T = self._update_per_row(returns, valid_TN)
        scaled = reward_TN / np.sqrt(var_T + self.eps)[:, None]
        if self.clip is not None:
            scaled = np.clip(scaled, -self.clip, self.clip)
        return scaled.astype(reward_TN.dtype, copy=False), returns.astype(np.float32)

    def _update_per_row(self, returns: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
        """Merge the (T, N) returns into the statistics; returns the variance after each row (T,). Sums are taken
        around the prior mean, so the squares stay of the size of the spread."""
        weight = np.ones_like(returns) if valid is None else valid.astype(np.float64)
        y = (returns - self.mean) * weight
        count = self.count + np.cumsum(weight.sum(1))
        mean_y = np.cumsum(y.sum(1)) / count
        var = (self.count * self.var + np.cumsum((y * y).sum(1))) / count - mean_y ** 2
        var = np.maximum(var, 0.0)
        self.mean, self.var, self.count = float(self.mean + mean_y[-1]), float(var[-1]), float(count[-1])
        return var

    def merge(self, returns: np.ndarray) -> None:
        """Merge returns that another collector's scaler computed (a learner gathering several collectors)."""
        returns = np.asarray(returns, dtype=np.float64).reshape(1, -1)
        if returns.size:
            self._update_per_row(returns, None)

    def stats_dict(self) -> dict[str, float]:
        """The statistics only (what the weights carry to collectors, whose envs keep their own ``ret``)."""
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def state_dict(self) -> dict[str, object]:
        """Statistics and each env's running return (a list: checkpoints load with ``weights_only=True``)."""
        return {"ret": self.ret.tolist(), **self.stats_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Load statistics, and each env's running return where ``state`` has it (a checkpoint, not weights)."""
        if "ret" in state:
            self.ret = np.asarray(state["ret"], dtype=np.float64)
        self.mean, self.var, self.count = float(state["mean"]), float(state["var"]), float(state["count"])


def linear_lr_decay(optimizer: torch.optim.Optimizer, n_iter: int | None) -> torch.optim.lr_scheduler.LambdaLR | None:
    """A schedule that lowers the learning rate linearly from its value to 0 over ``n_iter`` steps (Huang et al.
    2022, detail 4), or None for ``n_iter=None``."""
    if n_iter is None:
        return None
    total = max(int(n_iter), 1)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(1.0 - step / total, 0.0))


def per_collect_lr_decay(optimizer: torch.optim.Optimizer,
                         schedule: Mapping[str, Any] | None) -> torch.optim.lr_scheduler.LambdaLR | None:
    """DI-engine's PPO ``learn.lr_scheduler=dict(epoch_num=E, min_lr_lambda=m)``: stepped once per collect, so that
    after k collects the learning rate is its value times ``max(1 - k (1 - m) / E, m)``; None for ``schedule=None``.
    """
    if schedule is None:
        return None
    if not isinstance(schedule, Mapping) or set(schedule) != {"epoch_num", "min_lr_lambda"}:
        raise ConfigError(f"policy.learn.lr_scheduler must be dict(epoch_num=E, min_lr_lambda=m) (DI-engine's keys), "
                          f"got {schedule!r}")
    epochs, floor = schedule["epoch_num"], schedule["min_lr_lambda"]
    int_at_least("policy.learn.lr_scheduler.epoch_num", epochs, 1, "collects")
    if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 <= floor <= 1:
        raise ConfigError(f"policy.learn.lr_scheduler.min_lr_lambda must be a number from 0 to 1, got {floor!r}")
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda k: max(1.0 - k * (1.0 - float(floor)) / epochs, float(floor)))

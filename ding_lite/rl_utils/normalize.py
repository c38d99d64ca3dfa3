"""PPO details for continuous control (Huang et al. 2022, "The 37 implementation details of PPO"): reward scaling
(continuous-control detail 5, as gymnasium's ``NormalizeReward``: rewards divided by the running standard deviation
of the discounted return, then clipped; applied to time-major (T, N) rollouts, so each env's discounted return
carries over from one rollout to the next) and learning-rate annealing (detail 4)."""
from __future__ import annotations

import numpy as np
import torch


class RewardScaler:
    """``r / sqrt(var(G) + eps)`` clipped to ±``clip``, where ``G_t = γ G_{t-1} + r_t`` per env (reset after an
    episode's last step) and var(G) runs over every G seen.

    Args:
        gamma: the discount of the return whose spread sets the scale.
        clip: bound of the scaled reward (None: no clip).
    """

    def __init__(self, gamma: float, clip: float | None = 10.0, eps: float = 1e-8) -> None:
        self.gamma, self.clip, self.eps = float(gamma), clip, float(eps)
        self.ret = np.zeros(0)
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def __call__(self, reward_TN: np.ndarray, done_TN: np.ndarray) -> np.ndarray:
        """Scaled copy of ``reward_TN``; ``done_TN`` marks each episode's last step."""
        t_len, n_env = reward_TN.shape
        if self.ret.shape != (n_env,):
            self.ret = np.zeros(n_env)
        returns = np.empty((t_len, n_env))
        for t in range(t_len):
            self.ret = self.ret * self.gamma + reward_TN[t]
            returns[t] = self.ret
            self.ret = np.where(done_TN[t], 0.0, self.ret)
        self._update(returns.reshape(-1))
        scaled = reward_TN / np.sqrt(self.var + self.eps)
        if self.clip is not None:
            scaled = np.clip(scaled, -self.clip, self.clip)
        return scaled.astype(reward_TN.dtype, copy=False)

    def _update(self, x: np.ndarray) -> None:
        batch_mean, batch_var, n = float(x.mean()), float(x.var()), len(x)
        delta, total = batch_mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + batch_var * n + delta**2 * self.count * n / total) / total
        self.count = total

    def state_dict(self) -> dict[str, object]:
        return {"ret": self.ret.copy(), "mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.ret = np.asarray(state["ret"], dtype=np.float64)
        self.mean, self.var, self.count = float(state["mean"]), float(state["var"]), float(state["count"])


def linear_lr_decay(optimizer: torch.optim.Optimizer, n_iter: int | None) -> torch.optim.lr_scheduler.LambdaLR | None:
    """A schedule that lowers the learning rate linearly from its value to 0 over ``n_iter`` steps (Huang et al.
    2022, detail 4), or None for ``n_iter=None``."""
    if n_iter is None:
        return None
    total = max(int(n_iter), 1)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: max(1.0 - step / total, 0.0))

"""An env worker started with 'spawn' or 'forkserver' is a fresh process: torch there started with one intra-op
thread per core (a 'fork' worker inherits the main process's one), so 8 workers of an env that runs a torch network
on 2 cores asked for 16 spinning threads. The worker now sets torch up as the main process does
(ding_lite/envs/subprocess_worker.py; DING_LITE_TORCH_THREADS, default 1)."""
from __future__ import annotations

import multiprocessing as mp

import gymnasium as gym
import numpy as np
import pytest

from ding_lite.envs import SubprocessEnvManager

pytestmark = pytest.mark.unittest


class TorchThreadsEnv(gym.Env):
    """Observes the torch intra-op threads of the process it runs in (an env that runs a torch network)."""

    observation_space = gym.spaces.Box(0.0, 1e6, shape=(1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def _obs(self) -> np.ndarray:
        return np.array([self.torch.get_num_threads()], np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        return self._obs(), 0.0, False, False, {}


@pytest.mark.parametrize("method", [m for m in ("fork", "spawn", "forkserver") if m in mp.get_all_start_methods()])
def test_a_worker_runs_torch_on_the_configured_threads(method: str, monkeypatch) -> None:
    monkeypatch.setenv("DING_LITE_TORCH_THREADS", "1")
    with SubprocessEnvManager([TorchThreadsEnv, TorchThreadsEnv], dict(context=method)) as env:
        env.seed(0)
        obs = env.reset()
        assert obs[:, 0].tolist() == [1.0, 1.0]
        assert env.step(np.zeros(2, np.int64)).obs[:, 0].tolist() == [1.0, 1.0]

"""Subprocess env manager speed-up on a CPU-heavy env: each step burns ``--burn-ms`` (2) ms of CPU time.

``base`` steps the 2 envs one after the other in this process; ``subprocess`` steps them in 2 worker processes at
once. Runs alternate in one process; the table shows env steps/s (median of ``--repeats``) and the last line the
speed-up ``subprocess ÷ base``, e.g. ``ratio 1.85`` (2 cores: at most 2).

    python benchmarks/subprocess_scaling.py [--envs 2] [--steps 300] [--repeats 5] [--burn-ms 2]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402

from ding_lite.envs import BaseEnvManager, SubprocessEnvManager  # noqa: E402


class BurnEnv(gym.Env):
    """A 4-float observation, 2 actions, episodes of 200 steps; each step spins on the CPU for ``burn_s``."""

    observation_space = gym.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, burn_s: float) -> None:
        self.burn_s = burn_s
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t = 0
        return self.np_random.uniform(-1, 1, 4).astype(np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        end = time.thread_time() + self.burn_s  # CPU time of this thread, not wall time: a real simulator's work
        while time.thread_time() < end:
            pass
        self._t += 1
        return self.np_random.uniform(-1, 1, 4).astype(np.float32), 1.0, False, self._t >= 200, {}


class MakeBurnEnv:
    """Picklable env factory."""

    def __init__(self, burn_s: float) -> None:
        self.burn_s = burn_s

    def __call__(self) -> gym.Env:
        return BurnEnv(self.burn_s)


def run(manager_cls: type, n_env: int, n_step: int, burn_s: float) -> float:
    """Env steps per second of ``n_step`` batched steps (after the reset)."""
    with manager_cls([MakeBurnEnv(burn_s)] * n_env, {}) as env:
        env.seed(0)
        env.reset()
        actions = np.zeros(n_env, dtype=np.int64)
        start = time.perf_counter()
        for _ in range(n_step):
            env.step(actions)
        return n_env * n_step / (time.perf_counter() - start)


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def free_cores(n: int, seconds: float = 0.3) -> float:
    """How many cores ``n`` CPU-bound processes get right now: n * CPU seconds each / wall seconds (other jobs on a
    shared machine lower it; the speed-up above cannot exceed it)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    start = time.perf_counter()
    procs = [ctx.Process(target=_burn, args=(seconds,)) for _ in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return n * seconds / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--envs", type=int, default=2, help="envs (= worker processes of the subprocess manager)")
    parser.add_argument("--steps", type=int, default=300, help="batched steps per run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--burn-ms", type=float, default=2.0, help="CPU milliseconds burnt by each env step")
    args = parser.parse_args()
    burn_s = args.burn_ms / 1000
    runs: dict[str, list[float]] = {"base": [], "subprocess": []}
    cores: list[float] = []
    for _ in range(args.repeats):  # alternate, so that machine noise hits both alike
        cores.append(free_cores(args.envs))
        runs["base"].append(run(BaseEnvManager, args.envs, args.steps, burn_s))
        runs["subprocess"].append(run(SubprocessEnvManager, args.envs, args.steps, burn_s))
    base = statistics.median(runs["base"])
    print(f"{'manager':<12}{'env steps/s (median)':>22}{'speed-up':>10}   ({args.envs} envs, {args.burn_ms:g} ms CPU "
          f"per step, {args.steps} steps x {args.repeats} runs; ideal {args.envs} on {args.envs} idle cores)")
    for name, values in runs.items():
        median = statistics.median(values)
        print(f"{name:<12}{median:>22,.0f}{median / base:>10.2f}")
    print(f"cores available to {args.envs} busy processes meanwhile (median): {statistics.median(cores):.2f}")
    print(f"ratio {statistics.median(runs['subprocess']) / base:.2f}")


if __name__ == "__main__":
    main()

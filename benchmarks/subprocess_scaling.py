"""Subprocess env manager speed-up on a CPU-heavy env: each step burns ``--burn-ms`` (2) ms of CPU time.

``base`` steps the 2 envs one after the other in this process; ``subprocess`` steps them in 2 worker processes at
once, so on 2 free cores it can be up to 2x faster. The speed-up needs those cores: on a shared machine each repeat
first waits until 2 busy processes get at least ``--min-free-cores`` cores, runs ``base`` then ``subprocess``, and
checks the cores again afterwards; a repeat during which other jobs took the cores is discarded (and counted). The
table shows env steps/s (median over kept repeats) and the last line the speed-up ``subprocess ÷ base``, e.g.
``ratio 1.85``. ``--min-free-cores 0`` measures whatever the machine gives.

    python benchmarks/subprocess_scaling.py [--envs 2] [--steps 200] [--repeats 5] [--burn-ms 2]
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

from ding_lite.envs import BaseEnvManager, SubprocessEnvManager


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
    parser.add_argument("--steps", type=int, default=200, help="batched steps per run")
    parser.add_argument("--repeats", type=int, default=5, help="kept repeats wanted")
    parser.add_argument("--burn-ms", type=float, default=2.0, help="CPU milliseconds burnt by each env step")
    parser.add_argument("--min-free-cores", type=float, default=None, help="cores ENVS busy processes must get "
                        "before and after a repeat for it to count (default 0.9 * ENVS; 0: no check)")
    parser.add_argument("--max-wait", type=float, default=600.0, help="seconds to wait for free cores in all")
    args = parser.parse_args()
    if args.min_free_cores is None:
        args.min_free_cores = 0.9 * args.envs
    burn_s = args.burn_ms / 1000
    runs: dict[str, list[float]] = {"base": [], "subprocess": []}
    discarded, give_up = 0, time.monotonic() + args.max_wait
    while len(runs["base"]) < args.repeats and time.monotonic() < give_up:
        if free_cores(args.envs, 0.2) < args.min_free_cores:
            time.sleep(1.0)  # other jobs hold the cores: wait
            continue
        base = run(BaseEnvManager, args.envs, args.steps, burn_s)
        sub = run(SubprocessEnvManager, args.envs, args.steps, burn_s)
        if free_cores(args.envs, 0.2) < args.min_free_cores:
            discarded += 1  # the cores were taken meanwhile: this pair is not comparable
            continue
        runs["base"].append(base)
        runs["subprocess"].append(sub)
    kept = len(runs["base"])
    if kept == 0:
        print(f"no repeat found {args.min_free_cores:g} free cores within {args.max_wait:g} s "
              f"({discarded} discarded); rerun later or lower --min-free-cores")
        print("ratio nan")
        return
    base_median = statistics.median(runs["base"])
    print(f"{'manager':<12}{'env steps/s (median)':>22}{'speed-up':>10}   ({args.envs} envs, {args.burn_ms:g} ms CPU "
          f"per step, {args.steps} steps; ideal {args.envs} on {args.envs} free cores)")
    for name, values in runs.items():
        median = statistics.median(values)
        print(f"{name:<12}{median:>22,.0f}{median / base_median:>10.2f}")
    pairs = ", ".join(f"{s / b:.2f}" for b, s in zip(runs["base"], runs["subprocess"], strict=True))
    print(f"repeats kept {kept} (speed-ups {pairs}); discarded because other jobs took the cores: {discarded}")
    print(f"ratio {statistics.median(runs['subprocess']) / base_median:.2f}")


if __name__ == "__main__":
    main()

"""Replay buffer throughput and memory: push and sample rates of the ``uniform`` and ``prioritized`` buffers, and
bytes per stored CartPole transition against the raw arrays.

The transitions are real: DQN's train samples (obs, action, n-step return, discount, bootstrap obs) collected on
8 ``CartPole-v1`` envs. Pushes come in chunks of ``--chunk`` (DQN's n_sample); samples are batches of
``--batch`` followed, for the prioritized buffer, by ``update_priority`` (as the serial pipeline does). Runs
alternate in one process; medians of ``--repeats``. The last line is the larger of the two memory ratios
(stored bytes per transition ÷ raw bytes per transition), e.g. ``ratio 1.17``.

    python benchmarks/buffer_throughput.py [--capacity 100000] [--chunk 8] [--batch 64] [--repeats 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import numpy as np  # noqa: E402

from ding_lite.build import build, build_env_managers
from ding_lite.config import compile_config  # noqa: E402
from ding_lite.data.batch import batch_len, concat_batches, index_batch  # noqa: E402
from ding_lite.data.keys import INDEX  # noqa: E402
from ding_lite.registry import BUFFER_REGISTRY  # noqa: E402


def cartpole_transitions(n: int) -> dict[str, np.ndarray]:
    """``n`` DQN train samples from CartPole-v1 (ε-greedy with an untrained net)."""
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1", collector_env_num=8,
                                       evaluator_env_num=1),
                              policy=dict(type="dqn")))
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        policy = build(cfg, "policy", enable_field=["collect"])
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        parts, got = [], 0
        while got < n:
            samples, _ = collector.collect(n_sample=4096)
            parts.append(samples)
            got += batch_len(samples)
    return index_batch(concat_batches(parts), slice(0, n))


def nbytes(obj: Any) -> int:
    """Bytes of every numpy array reachable from ``obj``'s attributes (the buffer's whole state)."""
    seen: set[int] = set()

    def walk(x: Any) -> int:
        if id(x) in seen:
            return 0
        seen.add(id(x))
        if isinstance(x, np.ndarray):
            return x.nbytes
        if isinstance(x, dict):
            return sum(walk(v) for v in x.values())
        if isinstance(x, (list, tuple)):
            return sum(walk(v) for v in x)
        if hasattr(x, "__dict__"):
            return sum(walk(v) for v in vars(x).values())
        return 0

    return walk(obj)


def measure(buffer_type: str, data: dict[str, np.ndarray], capacity: int, chunk: int, batch: int) -> dict[str, float]:
    buf = BUFFER_REGISTRY.build(buffer_type, dict(replay_buffer_size=capacity), seed=0)
    n = batch_len(data)
    chunks = [index_batch(data, slice(i, i + chunk)) for i in range(0, n, chunk)]
    start = time.perf_counter()
    for c in chunks:
        buf.push(c)
    push_rate = n / (time.perf_counter() - start)
    n_batches = 2000
    priorities = np.random.default_rng(0).random((n_batches, batch)) + 1e-3
    start = time.perf_counter()
    for k in range(n_batches):
        b = buf.sample(batch)
        buf.update_priority(b[INDEX], priorities[k])  # a no-op for the uniform buffer
    sample_rate = n_batches / (time.perf_counter() - start)
    return dict(push=push_rate, sample=sample_rate, bytes=nbytes(buf) / capacity)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--capacity", type=int, default=100_000, help="replay_buffer_size (filled once)")
    parser.add_argument("--chunk", type=int, default=8, help="samples per push")
    parser.add_argument("--batch", type=int, default=64, help="samples per sample() call")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    data = cartpole_transitions(args.capacity)
    raw = sum(a.itemsize * int(np.prod(a.shape[1:])) for a in data.values())
    layout = ", ".join(f"{k} {a.dtype}{list(a.shape[1:])}" for k, a in data.items())
    runs: dict[str, list[dict[str, float]]] = {"uniform": [], "prioritized": []}
    for _ in range(args.repeats):  # alternate, so that machine noise hits both alike
        for name in runs:
            runs[name].append(measure(name, data, args.capacity, args.chunk, args.batch))
    print(f"CartPole DQN transition: {layout} = {raw} raw bytes; capacity {args.capacity:,}, pushes of "
          f"{args.chunk}, batches of {args.batch} (+ update_priority), median of {args.repeats}")
    print(f"{'buffer':<13}{'push samples/s':>16}{'sample batches/s':>18}{'bytes/transition':>18}{'x raw':>8}")
    ratios = []
    for name, results in runs.items():
        push, sample, size = (statistics.median(r[k] for r in results) for k in ("push", "sample", "bytes"))
        ratios.append(size / raw)
        print(f"{name:<13}{push:>16,.0f}{sample:>18,.0f}{size:>18.1f}{size / raw:>8.2f}")
    print(f"ratio {max(ratios):.2f}")


if __name__ == "__main__":
    main()

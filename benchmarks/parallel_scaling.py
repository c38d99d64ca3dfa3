"""Parallel scaling: env steps/s of collection with 1 and 2 collector actors against the serial collector, on a CartPole
whose every step burns 2 ms of CPU, and the weight-broadcast time of the CartPole DQN network.

The parallel numbers go through the parallel pipeline's own driver-side collector (``ray.wait`` on the actors,
resubmission with the current weights), without a learner, so they measure collection alone. Settings alternate
within each repeat (BENCHMARKS.md); the table shows medians and the last line the 2-actor / serial ratio.

    python benchmarks/parallel_scaling.py                    # 3 repeats x 3 s per setting, actors 1 and 2
    python benchmarks/parallel_scaling.py --seconds 5 --repeats 5 --actors 1 2 4
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for path in (str(ROOT), str(HERE)):  # this checkout and busy_env, here and in every actor process
    if path not in sys.path:
        sys.path.insert(0, path)
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE)] + [p for p in [os.environ.get("PYTHONPATH")] if p])

from ding_lite.build import build, build_env_managers, fill_model_shapes_from_env, load_config  # noqa: E402
from ding_lite.distributed.remote import ActorFactory, RemoteCollectors, Weights  # noqa: E402
from ding_lite.distributed.session import import_ray, ray_session  # noqa: E402
from ding_lite.utils.seed import SeedPlan  # noqa: E402
from ding_lite.utils.torch_setup import configure_torch  # noqa: E402

CONFIG = ROOT / "dizoo" / "classic_control" / "cartpole" / "config" / "cartpole_dqn_config.py"


def busy_config(burn_ms: float, n_collectors: int = 1):
    """The dizoo CartPole DQN config on the CPU-burning CartPole, ``n_collectors`` actors."""
    cfg = load_config(CONFIG, overrides=["env.type=busy_cartpole", "env.import_names=['busy_env']",
                                         f"env.burn_ms={burn_ms}", f"parallel.n_collectors={n_collectors}"])
    fill_model_shapes_from_env(cfg)
    return cfg


def n_sample(cfg) -> int:
    return int(cfg.policy.collect.n_sample or cfg.env.collector_env_num)


class SerialCollector:
    """The serial pipeline's collector in this process."""

    def __init__(self, cfg) -> None:
        self.cfg = cfg
        self.env, _ = build_env_managers(cfg, 0, evaluate=False)
        self.collector = build(cfg, "policy.collect.collector", self.env,
                               build(cfg, "policy", enable_field=["collect"]).collect_mode)
        self.collector.collect(n_sample(cfg))  # warm up

    def rate(self, seconds: float) -> float:
        start, steps = time.perf_counter(), self.collector.env_step
        while time.perf_counter() - start < seconds:
            self.collector.collect(n_sample(self.cfg))
        return (self.collector.env_step - steps) / (time.perf_counter() - start)

    def close(self) -> None:
        self.env.close()


class ActorCollectors:
    """The parallel pipeline's driver-side collector over ``n`` actors (off-policy path: whichever finishes first)."""

    def __init__(self, ray, cfg) -> None:
        self.ray = ray
        self.cfg = cfg
        self.factory = ActorFactory(ray, cfg, SeedPlan(0))
        self.weights = Weights(ray, build(cfg, "policy", enable_field=["learn"]))
        self.remote = RemoteCollectors(ray, cfg, self.factory, self.weights)
        self.factory.wait_ready()
        self.rate(0.2)  # warm up: first weights loaded, first batches through

    def rate(self, seconds: float) -> float:
        start, steps = time.perf_counter(), self.remote.env_step
        while time.perf_counter() - start < seconds:
            self.remote.collect(n_sample(self.cfg), 0)
        elapsed = time.perf_counter() - start
        rate = (self.remote.env_step - steps) / elapsed
        # let the collects still in flight finish, so that they do not run into the next setting's window
        self.ray.wait(list(self.remote.pending), num_returns=len(self.remote.pending))
        self.remote.idle.extend(self.remote.pending.values())
        self.remote.pending.clear()
        return rate

    def broadcast_ms(self, repeats: int) -> tuple[float, float]:
        """Median ms of (put of new weights, put + every actor has loaded them)."""
        put, total = [], []
        for version in range(1, repeats + 1):
            start = time.perf_counter()
            ref, version = self.weights.latest(version, 1)
            put.append(time.perf_counter() - start)
            self.ray.get([actor.load_weights.remote(ref, version) for actor in self.remote.actors])
            total.append(time.perf_counter() - start)
        self.remote.loaded = [version] * len(self.remote.actors)
        return 1000 * statistics.median(put), 1000 * statistics.median(total)

    def close(self) -> None:
        self.factory.close()


class Burner:
    """A Ray actor that only burns CPU: the control for how many cores busy actor processes get on this machine now."""

    def burn(self, ms: float) -> float:
        end = time.thread_time() + ms / 1000
        while time.thread_time() < end:
            pass
        return ms


class CpuCeiling:
    """``n`` :class:`Burner` actors kept busy with 16 ms tasks (about one collect): cores they obtain together."""

    def __init__(self, ray, n: int) -> None:
        self.ray = ray
        self.actors = [ray.remote(num_cpus=0)(Burner).remote() for _ in range(n)]
        ray.get([a.burn.remote(1) for a in self.actors])

    def cores(self, seconds: float) -> float:
        start, burned = time.perf_counter(), 0.0
        pending = {actor.burn.remote(16): actor for actor in self.actors}
        while time.perf_counter() - start < seconds:
            ready, _ = self.ray.wait(list(pending), num_returns=1)
            actor = pending.pop(ready[0])
            burned += self.ray.get(ready[0])
            pending[actor.burn.remote(16)] = actor
        elapsed = time.perf_counter() - start
        self.ray.wait(list(pending), num_returns=len(pending))
        return burned / 1000 / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="measuring window per setting and repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2], help="collector actor counts to measure")
    parser.add_argument("--burn-ms", type=float, default=2.0, help="CPU time each env step burns")
    parser.add_argument("--broadcasts", type=int, default=50, help="weight broadcasts timed")
    args = parser.parse_args()
    ray = import_ray()
    configure_torch()  # as the serial pipeline does (and every actor)
    serial = SerialCollector(busy_config(args.burn_ms))
    # Ray's CPU count is bookkeeping: every pool holds its actors for the whole run (idle ones cost nothing).
    with ray_session(ray, None, num_cpus=sum(args.actors)):
        pools = {n: ActorCollectors(ray, busy_config(args.burn_ms, n)) for n in args.actors}
        ceiling = CpuCeiling(ray, max(args.actors))
        rates: dict[str, list[float]] = {"serial collector": []} | {f"{n} actor(s)": [] for n in args.actors}
        cores: list[float] = []
        for _ in range(args.repeats):
            rates["serial collector"].append(serial.rate(args.seconds))
            for n, pool in pools.items():
                rates[f"{n} actor(s)"].append(pool.rate(args.seconds))
            cores.append(ceiling.cores(args.seconds))
        biggest = pools[max(args.actors)]
        put_ms, total_ms = biggest.broadcast_ms(args.broadcasts)
        model = biggest.weights.policy.collect_mode.state_dict()["model"]
        kbytes = sum(t.numel() * t.element_size() for t in model.values()) / 1024
        for pool in pools.values():
            pool.close()
    serial.close()
    cfg = busy_config(args.burn_ms)
    print(f"CartPole stepping {args.burn_ms:g} ms CPU per step, {cfg.env.collector_env_num} envs per collector, "
          f"n_sample {n_sample(cfg)}; {os.cpu_count()} CPUs; median of {args.repeats} x {args.seconds:g} s")
    # "x serial": median over repeats of the ratio to the serial rate of the same repeat (measured side by side)
    print(f"{'setting':<18} {'env steps/s':>12} {'x serial':>9}   runs")
    paired = {name: statistics.median(v / s for v, s in zip(values, rates["serial collector"], strict=True))
              for name, values in rates.items()}
    for name, values in rates.items():
        print(f"{name:<18} {statistics.median(values):>12.1f} {paired[name]:>9.2f}   "
              f"{' '.join(f'{v:.0f}' for v in values)}")
    print(f"control: {max(args.actors)} Ray actors that only burn CPU got {statistics.median(cores):.2f} cores "
          f"together (runs {' '.join(f'{c:.2f}' for c in cores)}): the most that many actors can gain here now")
    print(f"weight broadcast, CartPole DQN network ({kbytes:.1f} KiB): put {put_ms:.2f} ms, put + loaded by "
          f"{max(args.actors)} actor(s) {total_ms:.2f} ms (median of {args.broadcasts})")
    key = 2 if 2 in args.actors else max(args.actors)
    print(f"ratio {paired[f'{key} actor(s)']:.2f}")


if __name__ == "__main__":
    main()

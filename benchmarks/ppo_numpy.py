"""PPO's NumPy passes (``policy.numpy_mlp=True``, ``ding_lite/policy/ppo_numpy.py``), compiled by numba (the default,
``ding_lite/policy/ppo_jit.py``: side ``compiled``) and as NumPy ops (side ``numpy``: what runs without numba),
against the torch modules and autograd (``numpy_mlp=False``: side ``torch``), in one process, the three taking
turns: one learn call on one collect of the dizoo config's size (Hopper-v4's CleanRL settings: 2,048 samples, 10
epochs of 32 minibatches of 64, 64x64 tanh nets, obs and reward normalisation) and the collect forward pass on one
pipeline group's 4 observations, one torch thread. Prints milliseconds per learn call and microseconds per collect
forward (minimum and median over rounds), and the ratios of the medians over torch's; the last line ``ratio`` is
the default's (compiled where numba is installed) learn call over torch's.

    python benchmarks/ppo_numpy.py [--config dizoo/mujoco/hopper/config/hopper_ppo_config.py] [--rounds 10]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's ding_lite, not an installed one


def build_policies(config: str) -> tuple[dict, dict, object]:
    """The config's policy three times (compiled passes, NumPy passes, torch; the same initial weights), a collect's
    samples, and a pipeline group's observations."""
    import numpy as np
    import torch

    from ding_lite.build import build, build_env_manager, fill_model_shapes_from_env, load_config
    from ding_lite.policy import ppo_jit
    from ding_lite.worker.collector import SampleCollector

    policies = {}
    sides = {"compiled": ("policy.numba=True",), "numpy": ("policy.numba=False",), "torch": ("policy.numpy_mlp=False",)}
    for name, overrides in sides.items():
        if name == "compiled" and not ppo_jit.AVAILABLE:
            continue
        cfg = load_config(config, seed=0, overrides=list(overrides))
        fill_model_shapes_from_env(cfg)
        torch.manual_seed(0)
        policies[name] = build(cfg, "policy")
    envs = build_env_manager(cfg.env, int(cfg.env.collector_env_num), seed=0)
    collector = SampleCollector(cfg.policy.collect.get("collector", {}), envs, policies["torch"].collect_mode)
    samples, _ = collector.collect(n_sample=int(cfg.policy.collect.n_sample))
    envs.close()
    group_obs = np.asarray(samples["obs"][:4])
    for policy in policies.values():  # the same observation statistics on both sides
        policy.collect_mode.load_state_dict(policies["torch"].collect_mode.state_dict())
    return policies, samples, group_obs


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "dizoo/mujoco/hopper/config/hopper_ppo_config.py"))
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--forwards", type=int, default=2000, help="collect forward passes per round")
    args = parser.parse_args(argv)

    import torch
    torch.set_num_threads(1)
    policies, samples, group_obs = build_policies(args.config)
    learn_ms: dict[str, list[float]] = {k: [] for k in policies}
    forward_us: dict[str, list[float]] = {k: [] for k in policies}
    for k in range(args.rounds + 1):  # round 0 warms up (Adam's state, the allocator) and is not counted
        for name, policy in policies.items():
            start = time.perf_counter()
            policy.learn_mode.forward(samples)  # type: ignore[attr-defined]
            learn = time.perf_counter() - start
            forward = policy.collect_mode.forward  # type: ignore[attr-defined]
            start = time.perf_counter()
            for _ in range(args.forwards):
                forward(group_obs)
            if k:
                learn_ms[name].append(learn * 1e3)
                forward_us[name].append((time.perf_counter() - start) / args.forwards * 1e6)
    print(f"{'side':8s} {'learn call ms (min / median)':>30s} {'collect forward µs (min / median)':>36s}")
    for name in policies:
        print(f"{name:8s} {min(learn_ms[name]):14.1f} / {statistics.median(learn_ms[name]):7.1f} "
              f"{min(forward_us[name]):20.1f} / {statistics.median(forward_us[name]):7.1f}")
    def over_torch(times: dict[str, list[float]], name: str) -> float:
        return statistics.median(times[name]) / statistics.median(times["torch"])

    for name in policies:
        if name != "torch":
            print(f"{name} / torch: learn call {over_torch(learn_ms, name):.2f}, "
                  f"collect forward {over_torch(forward_us, name):.2f}")
    default = next(iter(policies))
    print(f"ratio {over_torch(learn_ms, default):.2f}")


if __name__ == "__main__":
    main()

"""The SAC/TD3 written-out gradients (the critic stage's ``Critics.regression_backward``, the actor stages'
``GaussianActor`` / ``TanhActor.forward_for_backward`` and ``backward_from``) against the same update through
autograd, in one process:
one update (both stages, as ``policy.learn_mode.forward``) on one fixed batch of 256, the variants (both written out,
both autograd, and for SAC the actor stage alone through autograd) taking turns for ``--rounds`` rounds of
``--updates`` updates each, on the dizoo MuJoCo configs' networks (Hopper-v4: 11 observations, 3 actions;
HalfCheetah-v4: 17 and 6), one torch thread. Prints the minimum
and median milliseconds per update of each variant.

    python benchmarks/critic_gradient.py [--algos sac td3] [--envs hopper halfcheetah] [--rounds 15] [--updates 50]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's ding_lite, not an installed one

SHAPES = {"hopper": (11, 3), "halfcheetah": (17, 6)}  # (observation, action) sizes of the gymnasium v4 envs


def policy_and_batch(algo: str, env: str, seed: int = 0) -> tuple[object, dict]:
    import numpy as np

    from ding_lite.build import build, load_config

    obs_size, act_size = SHAPES[env]
    cfg = load_config(str(ROOT / "dizoo" / "mujoco" / env / "config" / f"{env}_{algo}_config.py"), seed=seed,
                      overrides=[f"policy.model.obs_shape={obs_size}", f"policy.model.action_shape={act_size}",
                                 "policy.model.action_low=-1.0", "policy.model.action_high=1.0"])
    policy = build(cfg, "policy")
    rng = np.random.default_rng(seed)
    batch_size = int(cfg.policy.learn.batch_size)
    batch = dict(obs=rng.standard_normal((batch_size, obs_size)).astype(np.float32),
                 action=rng.uniform(-1, 1, (batch_size, act_size)).astype(np.float32),
                 reward=rng.standard_normal(batch_size).astype(np.float32),
                 next_obs=rng.standard_normal((batch_size, obs_size)).astype(np.float32),
                 terminated=rng.random(batch_size) < 0.05)
    return policy, batch


@contextlib.contextmanager
def autograd_only(critic: bool = True, actor: bool = True) -> Iterator[None]:
    """Inside: the written-out gradients of the critic stage (``critic``) and of SAC's and TD3's actor stages
    (``actor``) decline, so those stages go through autograd."""
    from ding_lite.model.qac import Critics, GaussianActor, TanhActor

    originals = (Critics.regression_backward, GaussianActor.forward_for_backward, TanhActor.forward_for_backward)
    declined = lambda *args, **kwargs: None  # noqa: E731
    if critic:
        Critics.regression_backward = declined  # type: ignore[method-assign]
    if actor:
        GaussianActor.forward_for_backward = TanhActor.forward_for_backward = declined  # type: ignore[method-assign]
    try:
        yield
    finally:
        Critics.regression_backward, GaussianActor.forward_for_backward, TanhActor.forward_for_backward = originals


def compare(algo: str, env: str, rounds: int, updates: int) -> None:
    # per variant: which stages go through autograd (critic stage, actor stage)
    variants = {"written out": (False, False), "autograd": (True, True)}
    if algo == "sac":
        variants["actor autograd"] = (False, True)
    policy, batch = policy_and_batch(algo, env)
    forward = policy.learn_mode.forward  # type: ignore[attr-defined]
    times: dict[str, list[float]] = {v: [] for v in variants}
    for k in range(rounds + 1):  # round 0 warms every variant up (Adam's state, allocator) and is not counted
        for variant, (critic, actor) in variants.items():
            with autograd_only(critic=critic, actor=actor):
                start = time.perf_counter()
                for _ in range(updates):
                    forward(batch)
                if k:
                    times[variant].append((time.perf_counter() - start) / updates * 1e3)
    parts = [f"{v} min {min(t):.2f} median {statistics.median(t):.2f}" for v, t in times.items()]
    print(f"{algo} {env}: ms per update, " + "; ".join(parts), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algos", nargs="+", default=["sac", "td3"], choices=["sac", "td3"])
    parser.add_argument("--envs", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--updates", type=int, default=50)
    args = parser.parse_args()
    os.environ["DING_LITE_TORCH_THREADS"] = "1"
    import torch

    from ding_lite.utils.torch_setup import configure_torch

    torch.set_num_threads(1)
    configure_torch()
    print(f"load average {os.getloadavg()[0]:.2f}")
    for algo in args.algos:
        for env in args.envs:
            compare(algo, env, args.rounds, args.updates)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

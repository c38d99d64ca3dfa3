"""Collector overhead: SampleCollector env steps/s divided by a plain hand-written loop doing the same work.

Both sides step the same 8 ``gymnasium.make('CartPole-v1')`` envs with the same MLP (DQN's QNet, one batched forward
per step, epsilon-greedy), auto-reset finished envs, track episode returns and store the same arrays (obs, next_obs,
reward, terminated, truncated, action) in preallocated (T, N) columns. Runs alternate in one process; the table shows
the median of ``--repeats`` runs of each and the last line the key ratio (collector ÷ plain loop), e.g. ``ratio 0.91``.

    python benchmarks/collector_throughput.py [--steps 2000] [--repeats 5] [--manager base]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from ding_lite.build import build, build_env_managers
from ding_lite.config import compile_config  # noqa: E402
from ding_lite.model.templates import QNet  # noqa: E402
from ding_lite.utils.torch_setup import configure_torch  # noqa: E402

N_ENV = 8
EPS = 0.1  # epsilon of both sides (the collector's schedule is set flat at this value)


def plain_loop(model: QNet, t_len: int, seed: int) -> float:
    """Hand-written collection of ``t_len`` steps of 8 envs; returns env steps per second."""
    envs = [gym.make("CartPole-v1", disable_env_checker=True) for _ in range(N_ENV)]
    rng = np.random.default_rng(seed)
    obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
    cols = dict(obs=np.empty((t_len, N_ENV, 4), np.float32), next_obs=np.empty((t_len, N_ENV, 4), np.float32),
                reward=np.empty((t_len, N_ENV), np.float32), terminated=np.empty((t_len, N_ENV), bool),
                truncated=np.empty((t_len, N_ENV), bool), action=np.empty((t_len, N_ENV), np.int64))
    ep_return = np.zeros(N_ENV)
    returns: list[float] = []
    start = time.perf_counter()
    for t in range(t_len):
        with torch.inference_mode():
            action = model(torch.as_tensor(obs))["logit"].argmax(dim=-1).numpy()
        explore = rng.random(N_ENV) < EPS
        action[explore] = rng.integers(0, 2, size=int(explore.sum()))
        results = [env.step(a) for env, a in zip(envs, action.tolist(), strict=True)]
        next_obs = np.stack([r[0] for r in results])
        reward = np.array([r[1] for r in results], np.float32)
        terminated = np.array([r[2] for r in results])
        truncated = np.array([r[3] for r in results])
        cols["obs"][t], cols["next_obs"][t], cols["reward"][t] = obs, next_obs, reward
        cols["terminated"][t], cols["truncated"][t], cols["action"][t] = terminated, truncated, action
        ep_return += reward
        obs = next_obs
        done = terminated | truncated
        if done.any():
            obs = next_obs.copy()
            for i in np.flatnonzero(done):
                returns.append(float(ep_return[i]))
                ep_return[i] = 0.0
                obs[i] = envs[i].reset()[0]
    elapsed = time.perf_counter() - start
    for env in envs:
        env.close()
    return t_len * N_ENV / elapsed


def collector_run(model: QNet, t_len: int, seed: int, manager: str, full: bool) -> float:
    """The same collection through the env manager, DQN's collect mode and SampleCollector; env steps per second.
    ``full``: ``collect()`` (with DQN's train-sample building), else the raw ``rollout()``."""
    cfg = compile_config(dict(
        env=dict(type="gymnasium", env_id="CartPole-v1", collector_env_num=N_ENV, evaluator_env_num=1,
                 manager=dict(type=manager)),
        policy=dict(type="dqn", other=dict(eps=dict(type="linear", start=EPS, end=EPS, decay=1)))))
    collector_env, evaluator_env = build_env_managers(cfg, seed, evaluate=False)
    policy = build(cfg, "policy", enable_field=["collect"])
    policy._model.load_state_dict(model.state_dict())
    collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
    collector_env.reset()
    start = time.perf_counter()
    if full:
        collector.collect(t_len * N_ENV)
    else:
        collector.rollout(t_len)
    elapsed = time.perf_counter() - start
    collector.close()
    return t_len * N_ENV / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=2000, help="steps of each env per run")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--manager", default="base", help="env manager of the collector side")
    args = parser.parse_args()
    configure_torch()
    torch.manual_seed(0)
    model = QNet(QNet.config | dict(obs_shape=4, action_shape=2))
    runs: dict[str, list[float]] = {"plain loop": [], "collector.rollout": [], "collector.collect": []}
    plain_loop(model, 200, 0)  # warm-up (imports, allocator)
    for r in range(args.repeats):  # alternate, so that machine noise hits all sides alike
        runs["plain loop"].append(plain_loop(model, args.steps, r))
        runs["collector.rollout"].append(collector_run(model, args.steps, r, args.manager, full=False))
        runs["collector.collect"].append(collector_run(model, args.steps, r, args.manager, full=True))
    plain = statistics.median(runs["plain loop"])
    print(f"{'path':<22}{'env steps/s (median)':>22}{'ratio':>8}   ({N_ENV} CartPole-v1 envs, manager "
          f"'{args.manager}', {args.steps} steps x {args.repeats} runs)")
    for name, values in runs.items():
        median = statistics.median(values)
        print(f"{name:<22}{median:>22,.0f}{median / plain:>8.2f}")
    print(f"ratio {statistics.median(runs['collector.collect']) / plain:.2f}")


if __name__ == "__main__":
    main()

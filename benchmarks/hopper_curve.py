"""Hopper-v4 PPO return curves, ding_lite against SB3 at the same env-step budget and the same hyperparameters
(rl-zoo's Hopper set, 8 envs x 64 steps; the dizoo config on ding_lite's side, envpool manager; SB3 with
``VecNormalize`` as rl-zoo runs it).

Every ``--eval-every`` env steps each side plays ``--episodes`` deterministic episodes (mean action) on fresh
envs: ding_lite through its evaluator (envpool Hopper-v4), SB3 through ``evaluate_policy`` on gymnasium Hopper-v4
with the training run's observation statistics. Seeds run one after the other. The table lists the mean return
per checkpoint and seed; the last line is the median over seeds of ding_lite's final return divided by SB3's,
e.g. ``ratio 1.05``. The issue's 1M-step budget takes hours per seed on the 2-core development machine; the default
budget is a short one.

    python benchmarks/hopper_curve.py [--steps 50000] [--eval-every 10000] [--seeds 0 1 2] [--episodes 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import torch  # noqa: E402

from benchmarks.throughput_real import CONFIGS, sb3_hopper  # noqa: E402
from ding_lite.entry.common import (  # noqa: E402
    EVAL_SEED_OFFSET,
    build_collector,
    build_env_managers,
    build_evaluator,
    build_policy,
    load_config,
)


def ding_lite_curve(seed: int, steps: int, every: int, episodes: int) -> list[float]:
    """Eval returns of the dizoo Hopper config after every ``every`` env steps."""
    torch.manual_seed(seed)
    cfg = load_config(str(CONFIGS["hopper"]), seed=seed, overrides=[f"env.n_evaluator_episode={episodes}"])
    collector_env, evaluator_env = build_env_managers(cfg, seed=seed)
    returns = []
    with collector_env, evaluator_env:
        policy = build_policy(cfg)
        collector = build_collector(cfg, collector_env, policy)
        evaluator = build_evaluator(cfg, evaluator_env, policy, seed + EVAL_SEED_OFFSET)
        n_sample, next_eval = int(cfg.policy.collect.n_sample), every
        while collector.env_step < steps:
            policy.learn_mode.forward(collector.collect(n_sample)[0])
            if collector.env_step >= next_eval:
                returns.append(evaluator.eval(0, collector.env_step).mean)
                next_eval += every
    return returns


def sb3_curve(seed: int, steps: int, every: int, episodes: int) -> list[float]:
    """Eval returns of SB3 PPO with rl-zoo's Hopper hyperparameters after every ``every`` env steps."""
    import gymnasium as gym
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    model = sb3_hopper()
    model.set_random_seed(seed)
    eval_env = VecNormalize(DummyVecEnv([lambda: gym.make("Hopper-v4")]), training=False, norm_reward=False)
    eval_env.seed(seed + EVAL_SEED_OFFSET)
    returns = []
    while model.num_timesteps < steps:
        model.learn(total_timesteps=every, reset_num_timesteps=False)
        eval_env.obs_rms = model.get_env().obs_rms.copy()
        mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=episodes, deterministic=True)
        returns.append(float(mean))
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50000)
    parser.add_argument("--eval-every", type=int, default=10000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    curves = {}
    for seed in args.seeds:
        curves[("ding_lite", seed)] = ding_lite_curve(seed, args.steps, args.eval_every, args.episodes)
        curves[("sb3", seed)] = sb3_curve(seed, args.steps, args.eval_every, args.episodes)
    n = min(len(c) for c in curves.values())
    marks = [args.eval_every * (k + 1) for k in range(n)]
    print(f"Hopper-v4 PPO, mean return of {args.episodes} deterministic episodes after N env steps")
    print(f"{'side':<11}{'seed':>5}" + "".join(f"{m:>10,}" for m in marks))
    for (side, seed), curve in curves.items():
        print(f"{side:<11}{seed:>5}" + "".join(f"{r:>10.0f}" for r in curve[:n]))
    finals = [curves[("ding_lite", s)][n - 1] / max(curves[("sb3", s)][n - 1], 1e-6) for s in args.seeds]
    print(f"ratio {statistics.median(finals):.2f}")


if __name__ == "__main__":
    main()

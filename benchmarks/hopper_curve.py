"""Hopper-v4 PPO return curves, ding_lite against SB3 at the same env-step budget and the same hyperparameters
(rl-zoo's Hopper set, 8 envs x 64 steps; the dizoo config on ding_lite's side, envpool manager; SB3 with
``VecNormalize`` as rl-zoo runs it).

Every ``--eval-every`` env steps each side plays ``--episodes`` deterministic episodes (mean action) on fresh
envs: ding_lite through its evaluator (envpool Hopper-v4, the model's observation statistics, which the evaluator
does not update), SB3 through ``evaluate_policy`` on gymnasium Hopper-v4 with a frozen copy of the training run's
observation statistics. Both sides' episodes end at 1,000 steps.

Long runs: every checkpoint is appended to ``--out`` as a JSON line the moment it is measured, so a partial run is
usable, and one process can run one side and some seeds (``--side sb3 --seeds 1``) so runs go in parallel.
``--report FILE...`` prints the side-by-side table of the saved checkpoints (mean return per checkpoint and seed,
then mean +- std over seeds), each run's final return (the mean of the last 3 checkpoints every run reached: one
evaluation swings, a policy standing at 1,000 can fall over once), the mean over the last fifth of the checkpoints,
and the last line: the median over seeds of ding_lite's final return divided by SB3's, e.g. ``ratio 1.05``. Without
``--report`` the runs are made, then reported.

    python benchmarks/hopper_curve.py [--steps 50000] [--eval-every 10000] [--seeds 0 1 2] [--episodes 5]
                                      [--side ding_lite sb3] [--out curves.jsonl]
    python benchmarks/hopper_curve.py --report curves_*.jsonl
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import torch  # noqa: E402

from benchmarks.throughput_real import CONFIGS, sb3_hopper  # noqa: E402
from ding_lite.entry.common import (  # noqa: E402
    EVAL_SEED_OFFSET,
    build,
    build_env_managers,
    build_evaluator,
    load_config,
)
from ding_lite.utils.torch_setup import configure_torch  # noqa: E402

FINAL_CHECKPOINTS = 3  # the final return: the mean of the last checkpoints every run reached
Record = Callable[[int, int, float], None]  # (checkpoint, env steps done, mean eval return)


def ding_lite_curve(seed: int, steps: int, every: int, episodes: int, record: Record) -> None:
    """Train the dizoo Hopper config for ``steps`` env steps, recording the eval return every ``every`` steps."""
    configure_torch()  # as the pipelines: DING_LITE_TORCH_THREADS threads (main sets it), denormals flushed
    torch.manual_seed(seed)
    cfg = load_config(str(CONFIGS["hopper"]), seed=seed, overrides=[f"env.n_evaluator_episode={episodes}"])
    collector_env, evaluator_env = build_env_managers(cfg, seed=seed)
    with collector_env, evaluator_env:
        policy = build(cfg, "policy")
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        evaluator = build_evaluator(cfg, evaluator_env, policy, seed + EVAL_SEED_OFFSET)
        n_sample, next_eval = int(cfg.policy.collect.n_sample), every
        while collector.env_step < steps:
            policy.learn_mode.forward(collector.collect(n_sample)[0])
            if collector.env_step >= next_eval:
                record(next_eval, collector.env_step, evaluator.eval(0, collector.env_step).mean)
                next_eval += every


def sb3_curve(seed: int, steps: int, every: int, episodes: int, record: Record) -> None:
    """Train SB3 PPO with rl-zoo's Hopper hyperparameters, recording the eval return every ``every`` env steps."""
    torch.set_flush_denormal(False)  # torch's default, which SB3 keeps
    import gymnasium as gym
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    model = sb3_hopper(seed)
    eval_env = VecNormalize(DummyVecEnv([lambda: Monitor(gym.make("Hopper-v4"))]), training=False, norm_reward=False)
    eval_env.seed(seed + EVAL_SEED_OFFSET)
    mark = every
    while model.num_timesteps < steps:
        model.learn(total_timesteps=mark - model.num_timesteps, reset_num_timesteps=False)
        eval_env.obs_rms = model.get_env().obs_rms.copy()  # frozen: training=False never updates it
        mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=episodes, deterministic=True)
        record(mark, model.num_timesteps, float(mean))
        mark += every


def run(args: argparse.Namespace, out: Path) -> None:
    """Run the requested sides and seeds, appending one JSON line per checkpoint to ``out``."""
    curves = {"ding_lite": ding_lite_curve, "sb3": sb3_curve}
    for seed in args.seeds:
        for side in args.side:
            start = time.perf_counter()

            def record(mark: int, env_step: int, ret: float, side: str = side, seed: int = seed,
                       start: float = start) -> None:
                line = dict(side=side, seed=seed, mark=mark, env_step=env_step, ret=ret,
                            wall_s=round(time.perf_counter() - start, 1))
                with out.open("a") as f:
                    f.write(json.dumps(line) + "\n")
                print(json.dumps(line), flush=True)

            curves[side](seed, args.steps, args.eval_every, args.episodes, record)


def report(files: list[Path]) -> None:
    """Print the side-by-side table of the checkpoints saved in ``files`` and the last line ``ratio X``."""
    runs: dict[tuple[str, int], dict[int, float]] = {}
    for path in files:
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                runs.setdefault((r["side"], r["seed"]), {})[r["mark"]] = r["ret"]
    sides = sorted({side for side, _ in runs})
    if sides != ["ding_lite", "sb3"]:
        sys.exit(f"hopper_curve: the report needs checkpoints of both sides, found {sides} in {files}")
    common = set.intersection(*(set(c) for c in runs.values()))
    if not common:
        sys.exit("hopper_curve: no checkpoint that every run reached; run longer or drop the short runs")
    marks = sorted(set.union(*(set(c) for c in runs.values())))
    print("Hopper-v4 PPO, mean return of the deterministic eval episodes after N env steps")
    print(f"{'side':<11}{'seed':>6}" + "".join(f"{m:>11}" for m in (f"{m // 1000}k" for m in marks)))
    for (side, seed), curve in sorted(runs.items()):
        print(f"{side:<11}{seed:>6}" + "".join(f"{curve[m]:>11.0f}" if m in curve else f"{'-':>11}" for m in marks))
    for side in sides:
        cells = []
        for m in marks:
            rets = [c[m] for (s, _), c in runs.items() if s == side and m in c]
            cells.append(f"{statistics.mean(rets):>6.0f}+-{statistics.pstdev(rets):<3.0f}" if rets else f"{'-':>11}")
        print(f"{side:<11}{'mean':>6}" + "".join(cells))
    tail = sorted(common)[-FINAL_CHECKPOINTS:]  # one evaluation swings (a policy at 1,000 can fall over once)
    seeds = sorted({s for side, s in runs if side == "ding_lite"} & {s for side, s in runs if side == "sb3"})
    final = {(side, s): statistics.mean(runs[(side, s)][m] for m in tail) for side in sides for s in seeds}
    print(f"final return: mean of the checkpoints at {', '.join(f'{m:,}' for m in tail)} env steps (the last "
          f"{len(tail)} every run reached)")
    for side in sides:
        vals = [final[(side, s)] for s in seeds]
        print(f"{side:<11}" + "".join(f"  seed {s}: {v:.0f}" for s, v in zip(seeds, vals, strict=True))
              + f"  mean {statistics.mean(vals):.0f} +- {statistics.pstdev(vals):.0f}")
    # steadier than three checkpoints: every checkpoint of the last fifth of the budget every run reached
    late = [m for m in sorted(common) if m > 0.8 * max(common)]
    for side in sides:
        vals = [statistics.mean(runs[(side, s)][m] for m in late) for s in seeds]
        print(f"{side:<11} mean over the {len(late)} checkpoints from {late[0]:,} on: "
              + ", ".join(f"seed {s}: {v:.0f}" for s, v in zip(seeds, vals, strict=True))
              + f"  mean {statistics.mean(vals):.0f} +- {statistics.pstdev(vals):.0f}")
    ratios = [final[("ding_lite", s)] / max(final[("sb3", s)], 1e-6) for s in seeds]
    print("ding_lite / SB3 per seed: " + ", ".join(f"{r:.2f}" for r in ratios))
    print(f"ratio {statistics.median(ratios):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50000)
    parser.add_argument("--eval-every", type=int, default=10000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--side", nargs="+", default=["ding_lite", "sb3"], choices=["ding_lite", "sb3"])
    parser.add_argument("--out", type=Path, help="JSON-lines file the checkpoints are appended to")
    parser.add_argument("--report", type=Path, nargs="+", metavar="FILE", help="only report these saved runs")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.report:
        report(args.report)
        return
    torch.set_num_threads(args.threads)
    os.environ["DING_LITE_TORCH_THREADS"] = str(args.threads)
    out = args.out or Path(tempfile.mkdtemp(prefix="hopper_curve_")) / "curves.jsonl"
    run(args, out)
    if set(args.side) == {"ding_lite", "sb3"}:
        report([out])


if __name__ == "__main__":
    main()

"""PPO vs PPO-DAPG on CartPole-v1: env steps until the eval return reaches the stop value, from the same seeds.

Recipe in one script: train a PPO expert (to 500), collect its successful episodes with ``collect_demo``, then train
PPO (cartpole_ppo_config.py) and PPO-DAPG (cartpole_ppo_dapg_config.py, demo_path pointed at the demos) from each
seed. Both evaluate after every iteration (eval_freq=1) so that the step counts are comparable. A third row,
``dapg_gsl_defaults``, runs the policy's default demo settings (probability term, c = 0.5, every 4th minibatch).

Run (not part of CI):
    python benchmarks/dapg_vs_ppo.py                      # stop value 195, seeds 0 1 2
    python benchmarks/dapg_vs_ppo.py --stop-value 500     # how fast each reaches the expert's level

The last line is ``ratio R``: median env steps of PPO-DAPG (dizoo config) over PPO's (< 1: demos help).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ding_lite.entry import serial_pipeline  # noqa: E402
from ding_lite.entry.collect_demo import collect_demo_pipeline  # noqa: E402

pytestmark = pytest.mark.benchmark
CONFIGS = REPO / "dizoo" / "classic_control" / "cartpole" / "config"
PPO = str(CONFIGS / "cartpole_ppo_config.py")
DAPG = str(CONFIGS / "cartpole_ppo_dapg_config.py")
GSL_DEFAULTS = ("policy.learn.demo_freq=4", "policy.learn.demo_coeff=0.5", "policy.learn.demo_log_likelihood=False")


def make_demos(work: Path, expert_seed: int, n_episode: int) -> tuple[Path, dict]:
    """Train a PPO expert to 500 and collect its successful episodes (eval mode, return ≥ 195)."""
    demo = work / "expert" / "demo.npz"
    with contextlib.redirect_stderr(io.StringIO()):
        expert = serial_pipeline(PPO, expert_seed, max_env_step=100_000, exp_dir=work / "expert",
                                 overrides=("env.stop_value=500",), progress=False)
        summary = collect_demo_pipeline(PPO, expert_seed, work / "expert" / "ckpt" / "ckpt_best.pth.tar", n_episode,
                                        demo)
    return demo, {"expert_env_steps": expert["env_step"], "expert_eval": expert["eval_return"], **summary}


def run(config: str, seed: int, work: Path, name: str, stop_value: float, budget: int,
        overrides: tuple[str, ...]) -> dict:
    ov = ("policy.eval.evaluator.eval_freq=1", f"env.stop_value={stop_value}") + overrides
    with contextlib.redirect_stderr(io.StringIO()):  # the per-eval log lines; the table goes to stdout
        return serial_pipeline(config, seed, max_env_step=budget, exp_dir=work / f"{name}_seed{seed}", overrides=ov,
                               progress=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--stop-value", type=float, default=195)
    parser.add_argument("--budget", type=int, default=40_000, help="max env steps per run")
    parser.add_argument("--expert-seed", type=int, default=0)
    parser.add_argument("--n-demo-episode", type=int, default=20)
    parser.add_argument("--no-gsl-defaults", action="store_true", help="skip the default-settings row")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dapg_vs_ppo_") as tmp:
        work = Path(tmp)
        t0 = time.perf_counter()
        demo, info = make_demos(work, args.expert_seed, args.n_demo_episode)
        print(f"expert: seed {args.expert_seed}, {info['expert_env_steps']} env steps to eval "
              f"{info['expert_eval']:.0f}; demos: {info['n_episode_kept']}/{info['n_episode_rolled_out']} episodes, "
              f"{info['n_step']} steps ({time.perf_counter() - t0:.1f} s)")
        variants = [("ppo", PPO, ()), ("ppo_dapg", DAPG, (f"policy.learn.demo_path='{demo}'",))]
        if not args.no_gsl_defaults:
            variants.append(("dapg_gsl_defaults", DAPG, (f"policy.learn.demo_path='{demo}'",) + GSL_DEFAULTS))
        steps: dict[str, list[float]] = {}
        print(f"\nenv steps to eval >= {args.stop_value:g} (budget {args.budget}; '>' = not reached)")
        print(f"{'variant':<20}" + "".join(f"{'seed ' + str(s):>14}" for s in args.seeds) + f"{'median':>10}")
        for name, config, overrides in variants:
            cells, steps[name] = [], []
            for seed in args.seeds:
                r = run(config, seed, work, name, args.stop_value, args.budget, overrides)
                n = r["env_step"] if r["stop"] else float("inf")
                steps[name].append(n)
                cells.append(f"{r['env_step'] if r['stop'] else '>' + str(r['env_step'])} ({r['wall_seconds']:.0f}s)")
            median = statistics.median(steps[name])
            print(f"{name:<20}" + "".join(f"{c:>14}" for c in cells) + f"{median:>10g}", flush=True)
    ratio = statistics.median(steps["ppo_dapg"]) / statistics.median(steps["ppo"])
    print(f"ratio {ratio:.2f}")


if __name__ == "__main__":
    main()

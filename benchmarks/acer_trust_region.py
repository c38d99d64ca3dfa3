"""ACER's trust region in the paper's coordinates (probabilities) against logit coordinates: env steps to solve per
seed on CartPole-v1 (dizoo config, stop 195) and Acrobot-v1 (stop -100), each run a whole CLI process. Not collected
by pytest.

    python benchmarks/acer_trust_region.py                    # seeds 0 1 2, both tasks, 2 runs at a time
    python benchmarks/acer_trust_region.py --tasks cartpole --seeds 0 1 2 3 4 5
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CARTPOLE = ROOT / "dizoo" / "classic_control" / "cartpole" / "config" / "cartpole_acer_config.py"
# Acrobot-v1: the CartPole settings with γ = 0.99 (its episodes run to 500 steps), evaluated every 1,600 env steps
ACROBOT = '''
main_config = dict(
    env=dict(type="gymnasium", env_id="Acrobot-v1", collector_env_num=8, evaluator_env_num=5,
             n_evaluator_episode=5, stop_value=-100),
    policy=dict(type="acer", model=dict(encoder_hidden_size_list=[64, 64]),
                learn=dict(update_per_collect=4, batch_size=16, learning_rate_actor=0.001,
                           learning_rate_critic=0.001, discount_factor=0.99, c_clip_ratio=10,
                           trust_region_value=1.0, target_theta=0.01),
                collect=dict(n_sample=16, unroll_len=32),
                eval=dict(evaluator=dict(eval_freq=400)),
                other=dict(replay_buffer=dict(replay_buffer_size=1000))),
)
'''
BUDGET = {"cartpole": 20_000, "acrobot": 40_000}
VARIANTS = ("probability", "logit")


def run_once(task: str, variant: str, seed: int, workdir: Path) -> dict:
    config = CARTPOLE if task == "cartpole" else workdir / "acrobot_acer_config.py"
    exp = workdir / f"{task}_{variant}_s{seed}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "ding_lite", "-m", "serial", "-c", str(config), "-s", str(seed),
                           "--exp-name", str(exp), "--max-env-step", str(BUDGET[task]), "--no-progress",
                           "--set", f"policy.learn.trust_region_statistics='{variant}'"],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{task} {variant} seed {seed} failed: {proc.stderr[-2000:]}")
    result = json.loads((exp / "result.json").read_text())
    return {"task": task, "variant": variant, "seed": seed, "stop": bool(result["stop"]),
            "env_step": int(result["env_step"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tasks", nargs="+", default=["cartpole", "acrobot"], choices=sorted(BUDGET))
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        (workdir / "acrobot_acer_config.py").write_text(ACROBOT)
        runs = [(t, v, s) for t in args.tasks for s in args.seeds for v in VARIANTS]
        with ThreadPoolExecutor(args.jobs) as pool:
            rows = list(pool.map(lambda r: run_once(*r, workdir), runs))
    print(f"{'task':10} {'seed':>4} " + " ".join(f"{v + ' env_step':>22}" for v in VARIANTS))
    ratios = []
    for task in args.tasks:
        medians = {}
        for seed in args.seeds:
            cells = {r["variant"]: r for r in rows if r["task"] == task and r["seed"] == seed}
            print(f"{task:10} {seed:>4} " + " ".join(
                f"{cells[v]['env_step']:>15,} {'solved' if cells[v]['stop'] else 'budget':>6}" for v in VARIANTS))
        for v in VARIANTS:  # a run that did not solve counts with its whole budget
            medians[v] = statistics.median(r["env_step"] for r in rows if r["task"] == task and r["variant"] == v)
        solved = {v: sum(r["stop"] for r in rows if r["task"] == task and r["variant"] == v) for v in VARIANTS}
        print(f"median {task:10}  " + "  ".join(f"{v} {medians[v]:,.0f} ({solved[v]}/{len(args.seeds)} solved)"
                                               for v in VARIANTS))
        ratios.append(medians["probability"] / medians["logit"])
    print(f"ratio {max(ratios):.2f}")  # env steps of the paper's coordinates over logit ones, worst task


if __name__ == "__main__":
    main()

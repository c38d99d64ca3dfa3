"""DQN on two checkouts of ding_lite, the sides taking turns: did a change to the off-policy code change DQN?

Per seed and side: env steps and seconds to the stop value of the dizoo CartPole DQN config (``time_to_solve.py``'s
clock) and env steps of DI-engine's own ``cartpole_dqn_config.py`` (``di_engine_configs.py``); then ``--rounds``
runs of a fixed budget (dizoo config, seed 0, 4,000 env steps, no stop value, one final evaluation) whose CPU
seconds (user + system of the CLI process) compare the cost of the same updates on both sides.

    git archive main | tar -x -C /tmp/main_src          # the checkout to compare against
    python benchmarks/dqn_before_after.py --before /tmp/main_src [--seeds 0 1 2] [--rounds 3]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
DQN = "dizoo/classic_control/cartpole/config/cartpole_dqn_config.py"


def benchmark_module(root: Path, name: str) -> ModuleType:
    """``root/benchmarks/<name>.py``, loaded under a name of its own (each side runs its own checkout's CLI)."""
    spec = importlib.util.spec_from_file_location(f"{name}_{abs(hash(str(root)))}", root / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fixed_budget_cpu(root: Path, workdir: Path) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "ding_lite", "-m", "serial", "-c", str(root / DQN), "-s", "0",
                    "--exp-name", str(workdir / "exp"), "--max-env-step", "4000", "--no-progress",
                    "--set", "env.stop_value=100000", "--set", "policy.eval.final_episodes=0",
                    "--set", "policy.eval.evaluator.eval_freq=100000"],
                   env=dict(os.environ, PYTHONPATH=str(root)), check=True, capture_output=True, cwd=workdir)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = json.loads((workdir / "exp" / "result.json").read_text())
    return dict(cpu_s=round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 2),
                train_iter=result["train_iter"], eval_return=result["eval_return"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (e.g. main's files)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=3, help="fixed-budget runs per side")
    args = parser.parse_args()
    sides = {"before": args.before.resolve(), "after": ROOT}
    cpu: dict[str, list[float]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for k, seed in enumerate(args.seeds):
            for side in (list(sides) if k % 2 == 0 else list(sides)[::-1]):
                work = Path(tmp) / f"{side}_s{seed}"
                work.mkdir()
                solve = benchmark_module(sides[side], "time_to_solve").run_once(DQN, seed, 500_000, work)
                di_engine = benchmark_module(sides[side], "di_engine_configs").run_once("dqn", seed, work)
                print(json.dumps(dict(side=side, seed=seed, env_step=solve["env_step"],
                                      solved_s=round(solve["solved_s"], 2), di_engine_env_step=di_engine["env_step"],
                                      load=os.getloadavg()[0])), flush=True)
        for k in range(args.rounds):
            for side in (list(sides) if k % 2 == 0 else list(sides)[::-1]):
                work = Path(tmp) / f"{side}_r{k}"
                work.mkdir()
                row = fixed_budget_cpu(sides[side], work)
                cpu[side].append(row["cpu_s"])
                print(json.dumps(dict(side=side, round=k, **row, load=os.getloadavg()[0])), flush=True)
    med = {side: statistics.median(v) for side, v in cpu.items()}
    print(f"median CPU s of the fixed budget: before {med['before']:.2f}, after {med['after']:.2f} "
          f"(ratio after/before {med['after'] / med['before']:.3f})")


if __name__ == "__main__":
    main()

"""DI-engine's own dizoo CartPole configs (tests/di_engine_configs/, unchanged) run here: env steps to the stop value
per seed, next to the env steps DI-engine needs (issue 10's reference numbers for DI-engine 0.5.x), and whether a
warning was printed.

    python benchmarks/di_engine_configs.py                 # DQN, PPO, ACER; seeds 0 1 2
    python benchmarks/di_engine_configs.py --algos ppo --seeds 0

The last line is ``ratio X``: the largest, over the algorithms, of our median env steps over DI-engine's upper
reference (the acceptance bound is 1.5).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "di_engine_configs"
# env steps DI-engine needs to reach the stop value (low, high over seeds), and our budget per run
DI_ENGINE_STEPS = {"dqn": (1000, 1000), "ppo": (9200, 13000), "acer": (19000, 41000)}
BUDGET = {"dqn": 30000, "ppo": 100000, "acer": 150000}


def run_once(algo: str, seed: int, workdir: Path) -> dict:
    exp = workdir / f"{algo}_s{seed}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "ding_lite", "-m", "serial", "-c",
                           str(CONFIGS / f"cartpole_{algo}_config.py"), "-s", str(seed), "--exp-name", str(exp),
                           "--max-env-step", str(BUDGET[algo]), "--no-progress"],
                          env=env, capture_output=True, text=True, cwd=workdir)
    if proc.returncode != 0:
        raise RuntimeError(f"{algo} seed {seed} failed:\n{proc.stderr}")
    result = json.loads((exp / "result.json").read_text())
    warned = any("warning" in line.lower() for line in proc.stderr.splitlines())
    return dict(algo=algo, seed=seed, stop=result["stop"], env_step=result["env_step"],
                final=result.get("final_eval_return"), warned=warned, wall=result["wall_seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=list(DI_ENGINE_STEPS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    args = parser.parse_args()
    print(f"{'config':<22}{'seed':>5}{'stop':>6}{'env_step':>10}{'final20':>9}{'warning':>8}{'wall_s':>8}")
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for algo in args.algos:
            rows = [run_once(algo, seed, Path(tmp)) for seed in args.seeds]
            for r in rows:
                final = "-" if r["final"] is None else f"{r['final']:.1f}"
                print(f"cartpole_{algo}_config{r['seed']:>5}{str(r['stop']):>6}{r['env_step']:>10}{final:>9}"
                      f"{str(r['warned']):>8}{r['wall']:>8.1f}", flush=True)
            median = statistics.median(r["env_step"] if r["stop"] else float("inf") for r in rows)
            low, high = DI_ENGINE_STEPS[algo]
            ratios.append(median / high)
            print(f"median cartpole_{algo}_config env_step {median:.0f}  DI-engine {low}-{high}  "
                  f"ratio {median / high:.2f} (of the high end), {median / low:.2f} (of the low end)", flush=True)
    print(f"ratio {max(ratios):.2f}")


if __name__ == "__main__":
    main()

"""ACER time to solve CartPole-v1: env steps and wall seconds per seed, next to DI-engine's ACER (BENCHMARKS.md).

Each run is a whole ``python -m ding_lite -m serial`` process on ``cartpole_acer_config.py`` (the clock of
BENCHMARKS.md: interpreter start, imports, training, the stopping eval), plus the CPU seconds the process used (what
the wall clock would be on idle cores: on a shared box the wall clock is inflated by others' load). Not collected
by pytest.

    python benchmarks/acer_cartpole.py                 # seeds 0 1 2
    python benchmarks/acer_cartpole.py --seeds 0 1 2 3 4 5 6 7 8 9
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "dizoo" / "classic_control" / "cartpole" / "config" / "cartpole_acer_config.py"
# DI-engine 0.5.3 ACER on its cartpole_acer_config, same machine kind and stop rule (BENCHMARKS.md)
DI_ENGINE = "DI-engine ACER: 19k-41k env steps, 35-49 s"


def run_once(seed: int, max_env_step: int, workdir: Path) -> dict:
    exp = workdir / f"acer_s{seed}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    cpu_start = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "ding_lite", "-m", "serial", "-c", str(CONFIG), "-s", str(seed),
                           "--exp-name", str(exp), "--max-env-step", str(max_env_step), "--no-progress"],
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    cpu_end = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_end.ru_utime - cpu_start.ru_utime) + (cpu_end.ru_stime - cpu_start.ru_stime)
    if proc.returncode != 0:
        raise RuntimeError(f"seed {seed} failed:\n{proc.stderr}")
    result = json.loads((exp / "result.json").read_text())
    return dict(seed=seed, stop=result["stop"], env_step=result["env_step"], train_iter=result["train_iter"],
                process_s=wall, cpu_s=cpu, pipeline_s=result["wall_seconds"], eval_return=result["eval_return"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--max-env-step", type=int, default=100_000)
    args = parser.parse_args()
    rows = []
    print(f"{'seed':>4s} {'stop':>5s} {'env_step':>9s} {'train_iter':>10s} {'process_s':>9s} {'cpu_s':>6s} "
          f"{'pipeline_s':>10s} {'eval':>7s}")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            row = run_once(seed, args.max_env_step, Path(tmp))
            rows.append(row)
            print(f"{seed:4d} {row['stop']!s:>5s} {row['env_step']:9d} {row['train_iter']:10d} "
                  f"{row['process_s']:9.2f} {row['cpu_s']:6.2f} {row['pipeline_s']:10.2f} "
                  f"{row['eval_return']:7.1f}", flush=True)
    median_steps = statistics.median(r["env_step"] for r in rows)
    median_s = statistics.median(r["process_s"] for r in rows)
    median_cpu = statistics.median(r["cpu_s"] for r in rows)
    solved = sum(r["stop"] for r in rows)
    print(f"median env_step {median_steps:.0f}  process_s {median_s:.2f}  cpu_s {median_cpu:.2f}  "
          f"solved {solved}/{len(rows)}   ({DI_ENGINE})")
    # key ratio: median env steps against the middle of DI-engine's range (30k)
    print(f"ratio {median_steps / 30000:.3f}")


if __name__ == "__main__":
    main()

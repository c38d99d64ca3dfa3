"""Time to solve: per dizoo config and seed, env steps and wall seconds until the eval reaches the stop value.

Each run is a whole `python -m ding_lite -m serial` process. `solved_s` is the clock of BENCHMARKS.md: from the CLI
start to the evaluation line that reports the stop value (interpreter start, imports, building, training, evals);
`process_s` runs to the process exit, `pipeline_s` is the pipeline's own time (result.json). Prints one row per run,
the medians per config, and the `import ding_lite` time.

    python benchmarks/time_to_solve.py                      # CartPole DQN and PPO, seeds 0 1 2
    python benchmarks/time_to_solve.py --configs dizoo/classic_control/pendulum/config/pendulum_ppo_config.py
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIGS = [
    "dizoo/classic_control/cartpole/config/cartpole_dqn_config.py",
    "dizoo/classic_control/cartpole/config/cartpole_ppo_config.py",
]


def run_once(config: str, seed: int, max_env_step: int, workdir: Path) -> dict:
    exp = workdir / f"{Path(config).stem}_s{seed}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ding_lite", "-m", "serial", "-c", str(ROOT / config), "-s",
                             str(seed), "--exp-name", str(exp), "--max-env-step", str(max_env_step), "--no-progress"],
                            env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    solved_s = float("nan")  # CLI start to the eval line that reports the stop value
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("[eval]") and "stop value reached" in line:
            solved_s = time.perf_counter() - start
    proc.wait()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{config} seed {seed} failed:\n{''.join(lines)}")
    result = json.loads((exp / "result.json").read_text())
    return dict(config=Path(config).stem, seed=seed, stop=result["stop"], env_step=result["env_step"],
                solved_s=solved_s, process_s=wall, pipeline_s=result["wall_seconds"],
                eval_return=result["eval_return"])


def import_seconds(repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import ding_lite"], check=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=DEFAULT_CONFIGS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--max-env-step", type=int, default=500_000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'config':32s} {'seed':>4s} {'stop':>5s} {'env_step':>9s} {'solved_s':>9s} {'process_s':>9s} "
              f"{'pipeline_s':>10s}")
        for config in args.configs:
            for seed in args.seeds:
                row = run_once(config, seed, args.max_env_step, Path(tmp))
                rows.append(row)
                print(f"{row['config']:32s} {seed:4d} {row['stop']!s:>5s} {row['env_step']:9d} "
                      f"{row['solved_s']:9.2f} {row['process_s']:9.2f} {row['pipeline_s']:10.2f}", flush=True)
    print()
    for config in args.configs:
        mine = [r for r in rows if r["config"] == Path(config).stem]
        print(f"median {Path(config).stem:32s} env_step {statistics.median(r['env_step'] for r in mine):9.0f} "
              f"solved_s {statistics.median(r['solved_s'] for r in mine):6.2f} "
              f"process_s {statistics.median(r['process_s'] for r in mine):6.2f} "
              f"solved {sum(r['stop'] for r in mine)}/{len(mine)}")
    print(f"import ding_lite: {import_seconds():.3f} s")
    print(f"median_solved_s {statistics.median(r['solved_s'] for r in rows):.2f}")


if __name__ == "__main__":
    main()

"""GSL against the PPO generalist alone at the same total env steps, on 50 maze levels (dizoo/grid/maze).

Per seed: ``ding_lite -m gsl`` with maze_gsl_config.py; then PPO (maze_ppo_config.py, the same network and settings)
from the same seed for exactly GSL's total env steps (phase I + every specialist + demo roll-outs + phase II). Both
final policies are evaluated alike: one greedy episode on each of the 50 levels (GSL's per-variation evaluation).
Seeds run as subprocesses, ``--jobs`` at a time. Runs that finished in ``--work`` are not redone (a killed
benchmark, or seeds run on their own, are completed and reported together).

Run (not part of CI; about 10 minutes per seed and method on one free core):
    python benchmarks/gsl_vs_ppo.py                       # seeds 0 1 2
    python benchmarks/gsl_vs_ppo.py --seeds 0 --jobs 1

Prints one row per seed and method (mean return and success rate over all levels, env steps), the means ± std over
seeds, and a last line ``ratio R``: GSL's mean success rate over PPO's (> 1: GSL better).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ding_lite.entry.common import load_config  # noqa: E402
from ding_lite.entry.gsl import evaluate_per_variation  # noqa: E402
from ding_lite.utils.checkpoint import latest_checkpoint  # noqa: E402

pytestmark = pytest.mark.benchmark
CONFIGS = REPO / "dizoo" / "grid" / "maze" / "config"
GSL = str(CONFIGS / "maze_gsl_config.py")
PPO = str(CONFIGS / "maze_ppo_config.py")


def _cli(args: list[str], cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "ding_lite", *args, "--no-progress"], cwd=cwd, env=env,
                          capture_output=True, text=True)
    (cwd / f"{args[1]}_{args[-1]}.log").write_text(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"{args} failed: {proc.stderr[-2000:]}")


def _finished(folder: Path, key: str) -> bool:
    result = folder / "result.json"
    return result.is_file() and key in json.loads(result.read_text())


def _means(table: dict) -> tuple[float, float]:
    rows = list(table.values())
    return (statistics.fmean(r["return_mean"] for r in rows), statistics.fmean(r["success_rate"] for r in rows))


def run_seed(seed: int, work: Path, gsl_config: str = GSL, ppo_config: str = PPO) -> dict:
    """GSL, then PPO for GSL's total env steps; both final policies evaluated on every variation."""
    if not _finished(work / f"gsl_{seed}", "phase2_per_variation"):  # runs a killed benchmark finished are kept
        _cli(["-m", "gsl", "-c", gsl_config, "-s", str(seed), "--exp-name", f"gsl_{seed}"]
             + (["--resume"] if (work / f"gsl_{seed}").exists() else []), work)
    gsl = json.loads((work / f"gsl_{seed}" / "result.json").read_text())
    total = gsl["env_steps"]["total"]
    if not _finished(work / f"ppo_{seed}", "env_step"):
        shutil.rmtree(work / f"ppo_{seed}", ignore_errors=True)
        _cli(["-m", "serial", "-c", ppo_config, "-s", str(seed), "--max-env-step", str(total), "--exp-name",
              f"ppo_{seed}"], work)
    cfg = load_config(gsl_config, seed=seed)
    ckpt = latest_checkpoint(work / f"ppo_{seed}" / "ckpt")
    assert ckpt is not None
    ppo_table = evaluate_per_variation(cfg, ckpt, gsl["variations"], seed)
    ppo_steps = json.loads((work / f"ppo_{seed}" / "result.json").read_text())["env_step"]
    return {"seed": seed, "gsl": _means(gsl["phase2_per_variation"]), "gsl_phase1": _means(gsl["phase1_per_variation"]),
            "ppo": _means(ppo_table), "gsl_steps": gsl["env_steps"], "ppo_steps": ppo_steps,
            "phase1_ended_by": gsl["phases"]["phase1_generalist"].get("ended_by"),
            "specialists": gsl["specialists"], "demos": gsl["demos"]["n_episode_kept"]}


def main(gsl_config: str = GSL, ppo_config: str = PPO) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", default=None, help="folder for the runs (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="gsl_vs_ppo_"))
    work.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda s: run_seed(s, work, gsl_config, ppo_config), args.seeds))
    (work / "rows.json").write_text(json.dumps(rows, indent=2))
    report(rows, work)


def report(rows: list[dict], work: Path) -> None:
    """The side-by-side table, the means ± std over seeds, and the last line ``ratio R``."""
    print(f"{'seed':>4} {'method':<12} {'return':>7} {'success':>8} {'env steps':>10}  notes")
    for r in rows:
        s = r["gsl_steps"]
        print(f"{r['seed']:>4} {'gsl phase I':<12} {r['gsl_phase1'][0]:7.3f} {r['gsl_phase1'][1]:8.3f} "
              f"{s['phase1']:>10}  ended by {r['phase1_ended_by']}")
        print(f"{r['seed']:>4} {'gsl':<12} {r['gsl'][0]:7.3f} {r['gsl'][1]:8.3f} {s['total']:>10}  specialists "
              f"{s['specialists']}, demos {s['demos']} steps ({r['demos']} episodes), phase II {s['phase2']}")
        print(f"{r['seed']:>4} {'ppo':<12} {r['ppo'][0]:7.3f} {r['ppo'][1]:8.3f} {r['ppo_steps']:>10}")
    for name in ("gsl", "ppo"):
        ret = [r[name][0] for r in rows]
        suc = [r[name][1] for r in rows]
        spread = (statistics.stdev(ret), statistics.stdev(suc)) if len(rows) > 1 else (0.0, 0.0)
        print(f"mean {name:<12} return {statistics.fmean(ret):.3f} ± {spread[0]:.3f}  success "
              f"{statistics.fmean(suc):.3f} ± {spread[1]:.3f}")
    print(f"runs in {work}")
    gsl, ppo = statistics.fmean(r["gsl"][1] for r in rows), statistics.fmean(r["ppo"][1] for r in rows)
    print(f"ratio {gsl / ppo if ppo > 0 else float('nan'):.3f}")


if __name__ == "__main__":
    main()

"""GSL against the PPO generalist alone at the same total env steps, on an env family of 50 levels: ``--family
trap`` (default; dizoo/grid/maze: 40 staircases and 10 traps), ``mountain_car`` (dizoo/classic_control/
mountain_car_family: 40 direct levels and 10 swing levels) or ``far`` (the earlier far-apart maze family).

Per seed: ``ding_lite -m gsl`` with the family's GSL config (``--gsl-set`` overrides in it); then PPO (the family's
PPO config: the same network and settings) from the same seed for exactly GSL's total env steps (phase I + every
specialist + demo roll-outs + phase II). Both final policies are evaluated alike: one greedy episode on each of the
50 levels (GSL's per-variation evaluation). Seeds run as subprocesses, ``--jobs`` at a time. Runs that finished in
``--work`` are not redone (a killed benchmark, or seeds run on their own, are completed and reported together).

Run (not part of CI; about 10-15 minutes per seed and method on one free core for the maze, 25-30 minutes for 3
seeds and both methods on 2 cores loaded by other jobs):
    python benchmarks/gsl_vs_ppo.py                       # seeds 0 1 2
    python benchmarks/gsl_vs_ppo.py --seeds 0 --jobs 1 --work /tmp/gsl_bench
    python benchmarks/gsl_vs_ppo.py --family mountain_car --jobs 1 --gsl-set gsl.use_ray=False

Prints one row per seed and method (mean return and success rate over all levels, success on the levels GSL's phase I
found worst, env steps), the means ± std over seeds, the load average, and a last line ``ratio R``: GSL's mean success
rate over PPO's (> 1: GSL better). Each finished seed is also written to ``<work>/rows.json`` at once.
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

from ding_lite.build import load_config  # noqa: E402
from ding_lite.entry.gsl import evaluate_per_variation  # noqa: E402
from ding_lite.utils.checkpoint import latest_checkpoint  # noqa: E402

pytestmark = pytest.mark.benchmark
MAZE = REPO / "dizoo" / "grid" / "maze" / "config"
MOUNTAIN_CAR = REPO / "dizoo" / "classic_control" / "mountain_car_family" / "config"
FAMILIES = {"trap": (MAZE / "maze_trap_gsl_config.py", MAZE / "maze_trap_ppo_config.py"),
            "far": (MAZE / "maze_gsl_config.py", MAZE / "maze_ppo_config.py"),
            "mountain_car": (MOUNTAIN_CAR / "mountain_car_family_gsl_config.py",
                             MOUNTAIN_CAR / "mountain_car_family_ppo_config.py")}
GSL, PPO = (str(path) for path in FAMILIES["trap"])


def _cli(args: list[str], cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "ding_lite", *args, "--no-progress"], cwd=cwd, env=env,
                          capture_output=True, text=True)
    (cwd / f"{args[args.index('--exp-name') + 1]}.log").write_text(proc.stderr)  # gsl_0.log, ppo_0.log, ...
    if proc.returncode != 0:
        raise RuntimeError(f"{args} failed: {proc.stderr[-2000:]}")


def _finished(folder: Path, key: str) -> bool:
    result = folder / "result.json"
    return result.is_file() and key in json.loads(result.read_text())


def _means(table: dict, only: list[int] | None = None) -> tuple[float, float]:
    rows = [r for v, r in table.items() if only is None or int(v) in only]
    return (statistics.fmean(r["return_mean"] for r in rows), statistics.fmean(r["success_rate"] for r in rows))


def _name(method: str, overrides: tuple[str, ...], seed: int) -> str:
    """A run's folder: e.g. ``ppo_entropy_weight=0.05_0`` for PPO with ``policy.learn.entropy_weight=0.05``, seed 0."""
    tags = [kv.split("=", 1)[0].rsplit(".", 1)[-1] + "=" + kv.split("=", 1)[-1] for kv in overrides]
    return "_".join([method, *tags, str(seed)])


def run_seed(seed: int, work: Path, gsl_config: str = GSL, ppo_config: str = PPO,
             ppo_set: tuple[str, ...] = (), gsl_set: tuple[str, ...] = ()) -> dict:
    """GSL (its config with the ``--set`` overrides ``gsl_set``), then PPO (with ``ppo_set``) for GSL's total env
    steps; both final policies evaluated on every variation."""
    name = _name("gsl", tuple(kv for kv in gsl_set if not kv.startswith("gsl.use_ray")), seed)
    if not _finished(work / name, "phase2_per_variation"):  # runs a killed benchmark finished are kept
        _cli(["-m", "gsl", "-c", gsl_config, "-s", str(seed), "--exp-name", name]
             + [arg for kv in gsl_set for arg in ("--set", kv)]
             + (["--resume"] if (work / name).exists() else []), work)
    gsl = json.loads((work / name / "result.json").read_text())
    total = gsl["env_steps"]["total"]
    ppo = _name("ppo", ppo_set, seed)
    if not _finished(work / ppo, "env_step"):
        shutil.rmtree(work / ppo, ignore_errors=True)
        _cli(["-m", "serial", "-c", ppo_config, "-s", str(seed), "--max-env-step", str(total)]
             + [arg for kv in ppo_set for arg in ("--set", kv)] + ["--exp-name", ppo], work)
    cfg = load_config(gsl_config, seed=seed)
    ckpt = latest_checkpoint(work / ppo / "ckpt")
    assert ckpt is not None
    ppo_table = evaluate_per_variation(cfg, ckpt, gsl["variations"], seed)
    ppo_steps = json.loads((work / ppo / "result.json").read_text())["env_step"]
    low = gsl["low_variations"]
    return {"seed": seed, "gsl": _means(gsl["phase2_per_variation"]), "gsl_phase1": _means(gsl["phase1_per_variation"]),
            "ppo": _means(ppo_table), "gsl_steps": gsl["env_steps"], "ppo_steps": ppo_steps, "low": low,
            "low_success": {"gsl_phase1": _means(gsl["phase1_per_variation"], low)[1],
                            "gsl": _means(gsl["phase2_per_variation"], low)[1], "ppo": _means(ppo_table, low)[1]},
            "phase1_ended_by": gsl["phases"]["phase1_generalist"].get("ended_by"),
            "specialists": gsl["specialists"], "demos": gsl["demos"]["n_episode_kept"]}


def main(gsl_config: str | None = None, ppo_config: str | None = None) -> None:
    """Parse the command line and run every seed; the configs default to ``--family``'s."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--family", choices=sorted(FAMILIES), default="trap", help="env family (default: trap)")
    parser.add_argument("--ppo-set", action="append", default=[], metavar="KEY=VALUE",
                        help="override in the PPO baseline's config only, e.g. policy.learn.entropy_weight=0.05")
    parser.add_argument("--gsl-set", action="append", default=[], metavar="KEY=VALUE",
                        help="override in the GSL config only, e.g. gsl.use_ray=False (specialists one after the "
                             "other: one process per seed)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--work", default=None, help="folder for the runs (default: a temporary one)")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="gsl_vs_ppo_"))
    work.mkdir(parents=True, exist_ok=True)
    if gsl_config is None or ppo_config is None:
        gsl_config, ppo_config = (str(path) for path in FAMILIES[args.family])
    load_config(gsl_config)  # registers every component once: lazy imports from several threads at once race
    rows: list[dict] = []
    print(f"family {args.family}; GSL overrides: {args.gsl_set or 'none'}; PPO baseline overrides: "
          f"{args.ppo_set or 'none'}")

    def one(seed: int) -> dict:
        row = run_seed(seed, work, gsl_config, ppo_config, tuple(args.ppo_set), tuple(args.gsl_set))
        rows.append(row)  # partial results, as the seeds finish
        (work / "rows.json").write_text(json.dumps(sorted(rows, key=lambda r: r["seed"]), indent=2))
        return row

    with ThreadPoolExecutor(args.jobs) as pool:
        rows_in_order = list(pool.map(one, args.seeds))
    report(rows_in_order, work)


def report(rows: list[dict], work: Path) -> None:
    """The side-by-side table, the means ± std over seeds, and the last line ``ratio R``."""
    print(f"{'seed':>4} {'method':<12} {'return':>7} {'success':>8} {'low lv':>7} {'env steps':>10}  notes")
    for r in rows:
        s, low = r["gsl_steps"], r["low_success"]
        print(f"{r['seed']:>4} {'gsl phase I':<12} {r['gsl_phase1'][0]:7.3f} {r['gsl_phase1'][1]:8.3f} "
              f"{low['gsl_phase1']:7.2f} {s['phase1']:>10}  ended by {r['phase1_ended_by']}; low levels {r['low']}")
        print(f"{r['seed']:>4} {'gsl':<12} {r['gsl'][0]:7.3f} {r['gsl'][1]:8.3f} {low['gsl']:7.2f} {s['total']:>10}  "
              f"specialists {s['specialists']}, demos {s['demos']} steps ({r['demos']} episodes), "
              f"phase II {s['phase2']}")
        print(f"{r['seed']:>4} {'ppo':<12} {r['ppo'][0]:7.3f} {r['ppo'][1]:8.3f} {low['ppo']:7.2f} "
              f"{r['ppo_steps']:>10}")
    for name in ("gsl", "ppo"):
        ret = [r[name][0] for r in rows]
        suc = [r[name][1] for r in rows]
        spread = (statistics.stdev(ret), statistics.stdev(suc)) if len(rows) > 1 else (0.0, 0.0)
        print(f"mean {name:<12} return {statistics.fmean(ret):.3f} ± {spread[0]:.3f}  success "
              f"{statistics.fmean(suc):.3f} ± {spread[1]:.3f}")
    print(f"runs in {work}; load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores, shared)")
    gsl, ppo = statistics.fmean(r["gsl"][1] for r in rows), statistics.fmean(r["ppo"][1] for r in rows)
    print(f"ratio {gsl / ppo if ppo > 0 else float('nan'):.3f}")


if __name__ == "__main__":
    main()

"""EPPO against PPO and EPPO's ablations (learning benchmark, not run by CI).

CartPole-v1 (default): every variant trains a fixed budget of env steps (no early stop) per seed; the table gives the
env steps of the first evaluation at or above 195 (0: the untrained policy already did) and the final return, the mean
of the last 5 evaluations (one evaluation swings a lot on CartPole, where a policy at 500 can drop to 150 and back).
Pendulum-v1 (``--env pendulum``): PPO and EPPO train until the eval mean reaches -250 (or the budget ends); the table
gives the env steps and the whole-run seconds at that evaluation.

    python benchmarks/eppo_vs_ppo.py                  # CartPole, seeds 0 1 2
    python benchmarks/eppo_vs_ppo.py --env pendulum   # Pendulum, seeds 0 1 2

Evaluations: 5 deterministic episodes (the dizoo configs' evaluator), every 2 (CartPole) or 5 (Pendulum) collects.
The last line is ``ratio X``: median env steps to the threshold of EPPO over PPO (lower is better for EPPO).
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ding_lite.entry import serial_pipeline  # noqa: E402

CARTPOLE = REPO / "dizoo/classic_control/cartpole/config"
PENDULUM = REPO / "dizoo/classic_control/pendulum/config"
EVAL_LINE = re.compile(r"\[eval\] iter\s+\d+\s+env_step\s+(\d+)\s+return\s+(-?[\d.]+)")

# name -> (config file, overrides)
CARTPOLE_VARIANTS: dict[str, tuple[Path, tuple[str, ...]]] = {
    "PPO": (CARTPOLE / "cartpole_ppo_config.py", ()),
    "EPPO": (CARTPOLE / "cartpole_eppo_config.py", ()),
    "EPPO c_div=0": (CARTPOLE / "cartpole_eppo_config.py", ("policy.learn.diverse_coef=0.0",)),
    "EPPO c_center=0": (CARTPOLE / "cartpole_eppo_config.py", ("policy.learn.center_policy_coef=0.0",)),
    "EPPO value_weighted": (CARTPOLE / "cartpole_eppo_config.py",
                            ("policy.collect.ensemble_action=value_weighted",)),
}
PENDULUM_VARIANTS: dict[str, tuple[Path, tuple[str, ...]]] = {
    # PPO at EPPO's collect size (its own config collects 4,096 steps): the two differ only in the ensemble
    "PPO": (PENDULUM / "pendulum_ppo_config.py", ("policy.collect.n_sample=2048",)),
    "EPPO": (PENDULUM / "pendulum_eppo_config.py", ()),
}


def run(config: Path, overrides: tuple[str, ...], seed: int, budget: int, stop_value: float | None,
        threshold: float, exp: Path) -> dict:
    """One training run; returns env steps of the first eval >= threshold (None: never), the final return (mean of
    the last 5 evals; the stopping eval when the run stops at ``stop_value``) and the whole-run seconds."""
    result = serial_pipeline(str(config), seed=seed, max_env_step=budget, exp_dir=exp, progress=False,
                             overrides=(*overrides, f"env.stop_value={stop_value}"))
    evals = [(int(m[1]), float(m[2])) for m in map(EVAL_LINE.search, (exp / "log/train.log").read_text().splitlines())
             if m]
    first = next((step for step, ret in evals if ret >= threshold), None)
    final = result["eval_return"] if result["stop"] else statistics.mean(ret for _, ret in evals[-5:])
    return {"steps": first, "final": final, "seconds": result["wall_seconds"]}


def _cell(values: list, fmt: str) -> str:
    return " ".join("—" if v is None else format(v, fmt) for v in values)


def _median(values: list) -> float | None:
    """Median where unsolved runs count as infinitely slow; None if at least half never reached the threshold."""
    ranked = sorted(float("inf") if v is None else v for v in values)
    mid = statistics.median(ranked)
    return None if mid == float("inf") else mid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", choices=("cartpole", "pendulum"), default="cartpole")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=None, help="env steps per run (default 12288 / 200000)")
    parser.add_argument("--variants", nargs="+", default=None, help="subset of the variant names")
    args = parser.parse_args()
    cartpole = args.env == "cartpole"
    variants = CARTPOLE_VARIANTS if cartpole else PENDULUM_VARIANTS
    threshold = 195.0 if cartpole else -250.0
    budget = args.budget or (12288 if cartpole else 200_000)
    stop_value = None if cartpole else threshold  # CartPole: whole budget, for the final return
    names = args.variants or list(variants)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            config, overrides = variants[name]
            rows[name] = [run(config, overrides, s, budget, stop_value, threshold, Path(tmp) / f"{name}_{s}")
                          for s in args.seeds]
            print(f"done {name}: {rows[name]}", file=sys.stderr, flush=True)
    print(f"\n{args.env}: env steps to {threshold:g} and final eval return, seeds {args.seeds}, budget {budget} steps")
    print(f"{'variant':<22}| {'steps to threshold':<24}| {'median':>7} | {'final return':<24}| {'median':>7} |"
          f" {'s/run (median)':>14}")
    for name, runs in rows.items():
        steps = [r["steps"] for r in runs]
        finals = [r["final"] for r in runs]
        med = _median(steps)
        print(f"{name:<22}| {_cell(steps, 'd'):<24}| {'—' if med is None else f'{med:.0f}':>7} | "
              f"{_cell(finals, '.1f'):<24}| {statistics.median(finals):7.1f} | "
              f"{statistics.median(r['seconds'] for r in runs):14.1f}")
    ppo, eppo = (_median([r["steps"] for r in rows[n]]) if n in rows else None for n in ("PPO", "EPPO"))
    print(f"ratio {eppo / ppo:.2f}" if ppo and eppo else "ratio nan")


if __name__ == "__main__":
    main()

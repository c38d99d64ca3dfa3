"""EPPO vs PPO and PPO-DAPG vs PPO on MiniGrid-DoorKey-5x5-v0 (learning benchmark, not run by CI).

Every variant trains the same env-step budget (``--budget``, no early stop) from the same seeds with the dizoo
DoorKey PPO config's hyperparameters (rl-zoo's: 8 envs x 128 steps, 10 epochs of minibatches of 64, lr 2.5e-4, clip
0.2, no entropy bonus), through the minigrid package (envpool's MiniGrid gives dict observations, which the envpool
manager does not batch):

- ``ppo``: the config as shipped (one conv encoder shared by actor and critic);
- ``eppo``: EPPO (``ensemble_ppo``, 4 members, the mixture collects; EPPO's loss weights c_center 1, c_sub 0.5,
  c_div 0.01), each member and the critic with their own small conv encoder;
- ``ppo_dapg``: PPO-DAPG with demos that ``collect_demo`` rolls out from the best checkpoint of a ``ppo`` run
  (seed ``--demo-seed``, default 0; 40 episodes, those with return >= 0.5 kept), the demo term as tuned on
  CartPole (log-likelihood, every minibatch, c = 2).

Every run evaluates 8 deterministic episodes every 5 collects (800 gradient steps). Each run is a ``serial``
experiment under ``--work`` whose ``log/train.log`` holds its evaluations as they come, so runs can go in parallel
processes (``--variants eppo --seeds 1``) and ``--report`` reads whatever has been written, finished or not. The
table: per variant and seed the eval return at the furthest env step every PPO and PPO-DAPG run reached (the budget
once they are done), the last eval return, and the env steps of the first eval at or above ``--threshold``; then
mean +- std over seeds. The last line is the smaller of EPPO's and PPO-DAPG's median env steps to the threshold
over PPO's, e.g. ``ratio 0.80`` (below 1: a variant reached it sooner); a run that never reached it counts as its
budget.

    python benchmarks/doorkey_variants.py --work /tmp/doorkey                     # everything, then the table
    python benchmarks/doorkey_variants.py --work /tmp/doorkey --variants ppo --seeds 0
    python benchmarks/doorkey_variants.py --work /tmp/doorkey --make-demos [--demo-seed 1]
    python benchmarks/doorkey_variants.py --work /tmp/doorkey --report
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import io
import re
import statistics
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's ding_lite, not an installed one

from ding_lite.config import read_config  # noqa: E402
from ding_lite.entry import serial_pipeline  # noqa: E402
from ding_lite.entry.collect_demo import collect_demo_pipeline  # noqa: E402

PPO_CONFIG = REPO / "dizoo/minigrid/doorkey/config/doorkey_ppo_config.py"
VARIANTS = ("ppo", "eppo", "ppo_dapg")
EVAL_LINE = re.compile(r"\[eval\] iter\s+\d+\s+env_step\s+(\d+)\s+return\s+(-?[\d.]+)")
DEMO_EPISODES, DEMO_THRESHOLD = 40, 0.5


def variant_config(variant: str, demo: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(main, create) config of a variant: the DoorKey PPO config with the variant's policy and model."""
    main, create = (copy.deepcopy(dict(c)) for c in read_config(PPO_CONFIG))
    if variant == "eppo":
        create["policy"] = dict(type="ensemble_ppo")
        model = main["policy"]["model"]
        model.pop("share_encoder")  # EPPO's members and critic each have their own encoder
        model.update(type="ensemble_vac", ensemble_size=4)
        main["policy"]["learn"].update(center_policy_coef=1.0, sub_policy_coef=0.5, diverse_coef=0.01)
        main["policy"]["collect"].update(ensemble_action="mixture")
    elif variant == "ppo_dapg":
        create["policy"] = dict(type="ppo_dapg")
        main["policy"]["learn"].update(demo_path=str(demo), demo_freq=1, demo_coeff=2.0, demo_batch_size=64,
                                       demo_log_likelihood=True, demo_adv_scale="raw")  # as measured
    return main, create


def train(variant: str, seed: int, work: Path, budget: int) -> None:
    """One run of ``budget`` env steps; its evaluations go to ``<work>/<variant>_seed<seed>/log/train.log``."""
    overrides = ("env.stop_value=2", "policy.eval.evaluator.eval_freq=800")  # returns are below 1: no early stop
    with contextlib.redirect_stderr(io.StringIO()):
        serial_pipeline(variant_config(variant, work / "demo.npz"), seed, max_env_step=budget,
                        exp_dir=work / f"{variant}_seed{seed}", overrides=overrides, progress=False)


def make_demos(work: Path, demo_seed: int) -> None:
    """Demos from the best checkpoint of the ``ppo`` run of seed ``demo_seed`` (its eval-mode policy, as far as it
    has trained), into ``<work>/demo.npz``."""
    ckpt = work / f"ppo_seed{demo_seed}" / "ckpt" / "ckpt_best.pth.tar"
    summary = collect_demo_pipeline(str(PPO_CONFIG), 0, ckpt, DEMO_EPISODES, work / "demo.npz",
                                    overrides=(f"demo.return_threshold={DEMO_THRESHOLD}",))
    print(f"demos from {ckpt}: kept {summary['n_episode_kept']}/{summary['n_episode_rolled_out']} episodes "
          f"(return >= {DEMO_THRESHOLD}), {summary['n_step']} steps, mean kept return "
          f"{statistics.mean(summary['kept_returns']):.3f}")


def read_curves(work: Path) -> dict[tuple[str, int], tuple[bool, list[tuple[int, float]]]]:
    """Per run under ``work``: whether it finished (its ``result.json`` is written after the final evaluation) and
    its (env step, eval return) in the order written."""
    curves = {}
    for log in sorted(work.glob("*_seed*/log/train.log")):
        run = log.parents[1]
        variant, seed = run.name.rsplit("_seed", 1)
        if variant in VARIANTS and seed.isdigit():
            evals = [(int(m[1]), float(m[2])) for m in EVAL_LINE.finditer(log.read_text())]
            curves[(variant, int(seed))] = ((run / "result.json").is_file(), evals)
    return curves


def return_at(curve: list[tuple[int, float]], step: int) -> float | None:
    """The eval return of the last evaluation at or before ``step`` env steps (None: none that late)."""
    before = [r for s, r in curve if s <= step]
    return before[-1] if before and curve[-1][0] >= step else None


def report(work: Path, threshold: float, budget: int) -> None:
    """The side-by-side table of the runs under ``work`` and the last line ``ratio X``."""
    curves = {k: v for k, v in read_curves(work).items() if v[1]}
    # the comparison at equal env steps: the furthest every PPO and PPO-DAPG run has reached (the budget once done)
    common = min((c[-1][0] for (v, _), (_, c) in curves.items() if v != "eppo"), default=budget)
    print(f"MiniGrid-DoorKey-5x5-v0, budget {budget:,} env steps per run: eval return (8 episodes) at {common:,} env "
          f"steps and at the run's end, env steps of the first eval >= {threshold:g} ('>' = not reached, counted as "
          f"the budget; '*' = run unfinished)")
    print(f"{'variant':<10}{'seed':>5}{'steps done':>12}{f'at {common:,}':>10}{'last':>8}{'steps to thr':>14}")
    steps: dict[str, list[float]] = {}
    at_common: dict[str, list[float]] = {}
    for (variant, seed), (finished, curve) in sorted(curves.items(),
                                                     key=lambda kv: (VARIANTS.index(kv[0][0]), kv[0][1])):
        done, last = curve[-1]
        reached = next((s for s, r in curve if r >= threshold), None)
        at = return_at(curve, common)
        cell = f"{reached:,}" if reached is not None else f">{done:,}"
        print(f"{variant:<10}{seed:>5}{f'{done:,}' + ('' if finished else '*'):>12}"
              f"{'-' if at is None else f'{at:.3f}':>10}{last:>8.3f}{cell:>14}")
        if finished or reached is not None:
            steps.setdefault(variant, []).append(reached if reached is not None else budget)
        if at is not None:
            at_common.setdefault(variant, []).append(at)
    print(f"{'variant':<10}{f'return at {common:,}, mean +- std':>32}{'steps to thr, median (min-max)':>34}")
    for variant in VARIANTS:
        f, s = at_common.get(variant, []), steps.get(variant, [])
        fin = f"{statistics.mean(f):.3f} +- {statistics.pstdev(f):.3f} (n={len(f)})" if f else "-"
        thr = f"{statistics.median(s):,.0f} ({min(s):,.0f}-{max(s):,.0f}) (n={len(s)})" if s else "-"
        print(f"{variant:<10}{fin:>32}{thr:>34}")
    if "ppo" not in steps or not any(v in steps for v in ("eppo", "ppo_dapg")):
        sys.exit("doorkey_variants: no ratio without PPO's runs and one variant's")
    base = statistics.median(steps["ppo"])
    ratios = {v: statistics.median(steps[v]) / base for v in ("eppo", "ppo_dapg") if v in steps}
    print("env steps to the threshold over PPO's (median): " + ", ".join(f"{v} {r:.2f}" for v, r in ratios.items()))
    print(f"ratio {min(ratios.values()):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="folder of the runs (and the demo file)")
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=100_000, help="env steps per run")
    parser.add_argument("--threshold", type=float, default=0.9, help="eval return the step counts refer to")
    parser.add_argument("--make-demos", action="store_true", help="only collect the demos (needs a ppo run)")
    parser.add_argument("--demo-seed", type=int, default=0, help="the ppo run whose best checkpoint makes the demos")
    parser.add_argument("--report", action="store_true", help="only print the table of the runs under --work")
    args = parser.parse_args()
    if args.report:
        report(args.work, args.threshold, args.budget)
        return
    if args.make_demos:
        make_demos(args.work, args.demo_seed)
        return
    for variant in args.variants:
        if variant == "ppo_dapg" and not (args.work / "demo.npz").is_file():
            make_demos(args.work, args.demo_seed)
        for seed in args.seeds:
            train(variant, seed, args.work, args.budget)
    if set(args.variants) == set(VARIANTS):
        report(args.work, args.threshold, args.budget)


if __name__ == "__main__":
    main()

"""Benchmark suites: the dizoo configs trained over seeds, next to the published result they reproduce and, where a
suite names one, a peer framework (SB3) run with the same hyperparameters side by side.

Each run writes its learning curve as it goes: every ``eval_every`` env steps (10,240 for the PPO MuJoCo configs,
five collects of 2,048) 10 deterministic episodes on fresh eval envs, one JSON line per evaluation with the env step,
the mean return, the evaluation's own seconds and the training seconds so far (wall time minus evaluations). The
report gives per task the final return (the mean of the last 3 evaluations), its median and range over seeds, the
wall time, the published reference with its source, the training seconds to first reach the reference (against the
peer's, as a ratio), and the aggregate over tasks as the field reports it (Agarwal et al. 2021, "Deep RL at the Edge
of the Statistical Precipice"): interquartile mean and median of normalised scores, ``(return - random) / (reference
- random)``, with stratified-bootstrap 95% intervals (``rliable``). Results go to ``--out`` (curves, ``summary.json``,
figures) and into the suite's block of ``docs/results.md``.

Runs are separate processes, ``--jobs`` at a time (each one torch thread), or Ray tasks with ``--address``. Every run
is resumable: a finished run is skipped, an interrupted one continues from its last checkpoint (ding_lite's resume
checkpoints; SB3's model saved at each evaluation), so the same command finishes a suite. Runs are queued task by
task and seed by seed with the peer's run next to ding_lite's, so with ``--jobs 2`` the two sides of a seed run at the
same time under the same load.

    python benchmarks/zoo.py --suite mujoco-ppo [--tasks Hopper-v4 ...] [--seeds 0 1 2] [--sides ding_lite sb3]
                             [--routes envpool gym] [--jobs 2] [--address ADDR] [--work zoo_runs] [--out DIR]
                             [--env-steps N] [--report-only] [--list]

The last line is the largest ratio over tasks of ding_lite's median training seconds to the reference over the
peer's (``ratio 0.43``), or the smallest median final return over the reference (``ratio 1.07``) without a peer.
Extra ``[bench]`` (rliable, matplotlib, stable-baselines3).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # this checkout's ding_lite, not an installed one

FINAL_EVALS = 3  # the final return: the mean of the last evaluations (one evaluation swings)
CURVE = "curve.jsonl"
DONE = "done.json"

# the suites as data (zoo_suites.py); named here too, so ``zoo.SUITES``, ``zoo.Task`` ... keep working
from benchmarks.zoo_suites import SUITES, Reference, Suite, Task  # noqa: E402,F401


# ---- one run -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    """One run of a suite: a task on a route by one side with one seed, in ``folder``."""

    suite: str
    task: str
    side: str  # 'ding_lite' or a peer ('sb3')
    route: str
    seed: int
    folder: str
    env_steps: int

    @property
    def key(self) -> str:
        return f"{self.task}/{self.side}-{self.route}/seed{self.seed}"

    def task_spec(self) -> Task:
        return next(t for t in SUITES[self.suite].tasks if t.name == self.task)


class RunClock:
    """Training seconds of a run across its resumed segments: wall time since the segment began minus the
    evaluations' seconds, plus what the segments before it (as the curve file recorded) had reached."""

    def __init__(self, offset: float = 0.0) -> None:
        self.start = time.perf_counter()
        self.offset = offset
        self.eval_seconds = 0.0

    def train_seconds(self) -> float:
        return self.offset + time.perf_counter() - self.start - self.eval_seconds


def kept_curve(folder: Path, up_to_env_step: int | None) -> list[dict[str, Any]]:
    """The curve lines of an interrupted run that its resume point covers (all of them for ``None``), rewritten."""
    path = folder / CURVE
    if not path.is_file():
        return []
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    kept = [r for r in lines if up_to_env_step is None or r["env_step"] <= up_to_env_step]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept))
    return kept


def curve_line(env_step: int, returns: Sequence[float], eval_seconds: float, clock: RunClock,
               final: bool = False) -> dict[str, Any]:
    """One evaluation as a curve line (``final``: the run's final evaluation, not a point of the curve)."""
    return {"env_step": int(env_step), "return_mean": float(sum(returns) / len(returns)),
            "return_std": float(_std(returns)), "episodes": len(returns), "eval_seconds": round(eval_seconds, 3),
            "train_seconds": round(clock.train_seconds(), 3), "load": round(os.getloadavg()[0], 2), "final": final}


def append_line(folder: Path, line: Mapping[str, Any]) -> None:
    with (folder / CURVE).open("a") as f:
        f.write(json.dumps(line) + "\n")


def _std(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


def run_ding_lite(spec: RunSpec) -> dict[str, Any]:
    """Train the task's dizoo config with the serial pipeline (resumed from the run's last checkpoint if it has
    one), recording each evaluation through :class:`CurveEvaluator`."""
    from ding_lite.build import load_config
    from ding_lite.entry.serial import serial_pipeline
    from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint

    evaluator = _register_curve_evaluator()
    task, folder = spec.task_spec(), Path(spec.folder)
    exp = folder / "exp"
    ckpt = latest_checkpoint(exp / "ckpt") if exp.is_dir() else None
    if exp.is_dir() and ckpt is None:  # stopped before its first checkpoint: start again in the same folder
        shutil.rmtree(exp)
    kept = kept_curve(folder, int(load_checkpoint(ckpt)["env_step"]) if ckpt is not None else -1)
    overrides = [*task.routes[spec.route], f"env.n_evaluator_episode={task.eval_episodes}",
                 f"env.evaluator_env_num={task.eval_episodes}", "policy.eval.evaluator.type=zoo_curve",
                 f"policy.eval.evaluator.eval_freq={task.eval_freq}", f"policy.eval.evaluator.curve_folder={folder}"]
    if not task.final_eval:
        overrides.append("policy.eval.final_episodes=0")
    cfg = load_config(str(REPO / task.config), overrides=overrides, seed=spec.seed)
    cfg.env.stop_value = math.inf  # the budget ends every run (the config's stop value is for users)
    evaluator.clock = RunClock(kept[-1]["train_seconds"] if kept else 0.0)
    result = serial_pipeline(cfg, spec.seed, spec.env_steps, exp_dir=exp, resume=ckpt is not None, progress=False)
    return {"wall_seconds": result["wall_seconds"], "env_step": result["env_step"], "resumed": ckpt is not None,
            **{k: result[k] for k in ("final_eval_return", "final_eval_episodes") if k in result}}


def _register_curve_evaluator() -> type:
    from ding_lite.registry import EVALUATOR_REGISTRY
    from ding_lite.worker.evaluator import InteractionEvaluator

    class CurveEvaluatorImpl(InteractionEvaluator):
        """The interaction evaluator that appends each evaluation to the run's curve file: the periodic ones (the
        evaluator built with a stop value) as curve points, the final one (built without) marked ``final``."""

        config: dict[str, Any] = dict(
            InteractionEvaluator.config,  # every setting of the interaction evaluator (the step cap too)
            type="zoo_curve",
            curve_folder=None,  # the run's folder (its curve.jsonl)
        )
        clock = RunClock()

        def eval(self, train_iter: int = 0, env_step: int = 0) -> Any:
            result = super().eval(train_iter, env_step)
            type(self).clock.eval_seconds += result.seconds
            final = self.stop_value is None
            append_line(Path(self.cfg["curve_folder"]), curve_line(env_step, result.returns.tolist(),
                                                                   result.seconds, type(self).clock, final))
            return result

    if "zoo_curve" not in EVALUATOR_REGISTRY.names():
        EVALUATOR_REGISTRY.register("zoo_curve")(CurveEvaluatorImpl)
    return EVALUATOR_REGISTRY.get("zoo_curve")


def run_one(spec: RunSpec) -> dict[str, Any]:
    """Run ``spec`` to its end in this process and mark it done; returns its ``done.json``."""
    folder = Path(spec.folder)
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("DING_LITE_TORCH_THREADS", "1")
    start = time.time()
    if spec.side == "ding_lite":
        out = run_ding_lite(spec)
    else:
        from benchmarks.zoo_sb3 import run_sb3
        out = run_sb3(spec)
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    cpu = sum(u.ru_utime + u.ru_stime for u in usage)  # with the env workers (reaped when the run closed them)
    done = {**asdict(spec), **out, "cpu_seconds": round(cpu, 1), "finished_at": start}
    (folder / DONE).write_text(json.dumps(done, indent=1))
    return done


# ---- scheduling --------------------------------------------------------------------------------------------------
@dataclass
class Plan:
    suite: Suite
    specs: list[RunSpec] = field(default_factory=list)


def plan_runs(suite: Suite, tasks: Sequence[str] | None, seeds: Sequence[int], sides: Sequence[str],
              routes: Sequence[str] | None, work: Path, env_steps: int | None) -> Plan:
    """The runs of a suite, task by task and seed by seed, each peer's run right after ding_lite's."""
    known = [t.name for t in suite.tasks]
    for name in tasks or ():
        if name not in known:
            raise SystemExit(f"zoo: suite '{suite.name}' has no task '{name}' (known: {', '.join(known)})")
    plan = Plan(suite)
    for task in suite.tasks:
        if tasks and task.name not in tasks:
            continue
        for route in routes or list(task.routes)[:1]:
            if route not in task.routes:
                raise SystemExit(f"zoo: task '{task.name}' has no route '{route}' (known: {', '.join(task.routes)})")
            for seed in seeds:
                for side in sides:
                    if side != "ding_lite" and (side not in task.peers or route != list(task.routes)[0]):
                        continue  # a peer runs each task once, next to ding_lite's first route
                    side_route = route if side == "ding_lite" else "gym"  # peers step gymnasium's envs
                    folder = work / suite.name / task.name / f"{side}-{side_route}" / f"seed{seed}"
                    plan.specs.append(RunSpec(suite.name, task.name, side, side_route, seed, str(folder),
                                              env_steps or task.env_steps))
    return plan


def run_local(specs: Sequence[RunSpec], jobs: int, log: Callable[[str], None]) -> None:
    """Each run in its own process (``python zoo.py --run-one``), ``jobs`` at a time, in the plan's order.

    A SIGTERM (a scheduler's time limit, ``kill``) or Ctrl-C stops the suite with its runs: the run processes are
    terminated (each keeps its last resume checkpoint; the same command continues them) and no queued run starts,
    so no run goes on writing into a folder that a later command resumes."""
    live: set[subprocess.Popen] = set()
    lock = threading.Lock()
    stopping = threading.Event()

    def one(spec: RunSpec) -> None:
        folder = Path(spec.folder)
        folder.mkdir(parents=True, exist_ok=True)
        with lock:
            if stopping.is_set():
                return
            log(f"start {spec.key}")
            out = (folder / "stdout.log").open("a")
            proc = subprocess.Popen([sys.executable, __file__, "--run-one", json.dumps(asdict(spec))], stdout=out,
                                    stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
            live.add(proc)
        with out:
            code = proc.wait()
        with lock:
            live.discard(proc)
        if not stopping.is_set():
            log(f"{'done' if code == 0 else f'FAILED (exit {code}, see {folder}/stdout.log)'} {spec.key}")

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, on_term) if threading.current_thread() is threading.main_thread() \
        else None
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = [pool.submit(one, spec) for spec in specs]
        for future in futures:
            future.result()
    except BaseException:
        stopping.set()
        with lock:
            procs = list(live)
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if procs:
            log(f"stopped: {len(procs)} run(s) terminated; the same command resumes them")
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def run_ray(specs: Sequence[RunSpec], address: str, log: Callable[[str], None]) -> None:
    """Each run as a Ray task of one CPU on the cluster at ``address``; the curves come back with the results, so
    the driver's folders hold every finished run (a node's own folder holds the checkpoints a resume needs: with a
    shared file system, or on one machine, interrupted runs resume; elsewhere they restart)."""
    import ray

    ray.init(address=address, runtime_env={"env_vars": {"PYTHONPATH": str(REPO), "DING_LITE_TORCH_THREADS": "1"}})

    @ray.remote(num_cpus=1)
    def remote(spec_json: str) -> tuple[dict, str]:
        sys.path.insert(0, str(REPO))
        from benchmarks.zoo import RunSpec as Spec
        from benchmarks.zoo import run_one as run
        spec = Spec(**json.loads(spec_json))
        done = run(spec)
        return done, (Path(spec.folder) / CURVE).read_text()

    pending = {remote.remote(json.dumps(asdict(s))): s for s in specs}
    while pending:
        ready, _ = ray.wait(list(pending))
        spec = pending.pop(ready[0])
        try:
            done, curve = ray.get(ready[0])
        except Exception as exc:  # a failed run is reported; the others go on
            log(f"FAILED {spec.key}: {type(exc).__name__}: {str(exc).splitlines()[0]}")
            continue
        folder = Path(spec.folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / CURVE).write_text(curve)
        (folder / DONE).write_text(json.dumps(done, indent=1))
        log(f"done {spec.key}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=sorted(SUITES))
    parser.add_argument("--tasks", nargs="+", help="a subset of the suite's tasks (env ids)")
    parser.add_argument("--seeds", type=int, nargs="+", help="default: the suite's")
    parser.add_argument("--sides", nargs="+", default=["ding_lite", "sb3"], choices=["ding_lite", "sb3"])
    parser.add_argument("--routes", nargs="+", help="default: each task's first route (envpool where it has one)")
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time (local processes)")
    parser.add_argument("--address", help="run the suite as Ray tasks on this cluster")
    parser.add_argument("--work", type=Path, default=Path("zoo_runs"), help="run folders (checkpoints, curves)")
    parser.add_argument("--out", type=Path, help="results folder (default docs/results/<suite>)")
    parser.add_argument("--docs", default=str(REPO / "docs" / "results.md"),
                        help="the page whose block of this suite the report rewrites ('' : none)")
    parser.add_argument("--env-steps", type=int, help="budget of every run (default: each task's)")
    parser.add_argument("--report-only", action="store_true", help="only report the runs already made")
    parser.add_argument("--list", action="store_true", help="list the suites and their tasks")
    parser.add_argument("--run-one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_one:
        run_one(RunSpec(**json.loads(args.run_one)))
        return
    if args.list or not args.suite:
        for suite in SUITES.values():
            print(f"{suite.name}: {suite.description}")
            for t in suite.tasks:
                print(f"  {t.name:<16} {t.config}  {t.env_steps:,} env steps, routes {', '.join(t.routes)}, "
                      f"reference {t.reference.value:g} ({t.reference.source})")
        return
    suite = SUITES[args.suite]
    plan = plan_runs(suite, args.tasks, args.seeds or suite.seeds, args.sides, args.routes, args.work.resolve(),
                     args.env_steps)

    def log(msg: str) -> None:
        print(f"[zoo {time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {msg}", flush=True)

    todo = [s for s in plan.specs if not (Path(s.folder) / DONE).is_file()]
    if not args.report_only and todo:
        log(f"{len(todo)} of {len(plan.specs)} runs to make ({len(plan.specs) - len(todo)} done)")
        if args.address:
            run_ray(todo, args.address, log)
        else:
            run_local(todo, max(1, args.jobs), log)
    from benchmarks.zoo_report import report
    report(plan, args.out or REPO / "docs" / "results" / suite.name, Path(args.docs) if args.docs else None)


if __name__ == "__main__":
    from benchmarks import zoo  # one module instance: the suite's runner and its sb3 side share these classes

    zoo.main()

"""SAC and TD3 on Hopper-v4 and HalfCheetah-v4 (and Pendulum-v1 with ``--envs pendulum``): ding_lite's dizoo configs
against Stable-Baselines3 at the same hyperparameters (rl-zoo's), side by side.

Two measurements:

- ``learn`` (default): each (algo, env, seed) trains ``--steps`` env steps on both sides, the two sides at the same
  time in two processes (so both see the same machine load). Every ``--eval-every`` env steps each side plays
  ``--episodes`` deterministic episodes (the mean action) on fresh envs (gymnasium's Hopper-v4 / HalfCheetah-v4 on
  both sides, 1,000-step episodes; Pendulum-v1, 200-step episodes). The final return of a run is the mean of its
  last 3 evaluations (ding_lite's closing evaluation, one update after a periodic one, counts once). SB3's run
  appends its evaluations to ``<out>/<algo>_<env>_s<seed>_sb3/curve.jsonl`` the moment they are measured, with the
  training-only seconds so far; ding_lite's are read from its run's event file (seconds there include its
  evaluations). A finished run leaves a ``done`` file and is skipped when the command is run again; an unfinished
  one continues from its last checkpoint (SB3: model and replay buffer, saved at every evaluation; ding_lite:
  ``--resume`` from the run's resume checkpoint, with its replay buffer, see docs/sac_td3.md).
- ``paired``: each finished run's final policy on both sides (ding_lite's last checkpoint, SB3's ``final.zip``),
  deterministic, on the same ``--paired-episodes`` starts (``reset(seed=20000 + k)``): the means and the mean
  per-start difference with its standard error. The evaluations above start each side's episodes from different
  states; on Pendulum-v1 the start alone moves a good policy's return between about 0 and -350.
- ``speed``: training env steps per wall second (collect + learn, after the random-action warm-up) in one process,
  the sides taking turns for ``--repeats`` rounds of ``--speed-steps`` steps each; the ratio per round, median.

``--report`` prints, per algo and env, each side's final return per seed and their medians, the training env steps
per second of the learn runs, and the last line ``ratio X``: the smallest over the (algo, env) pairs of ding_lite's
median final return over SB3's, or SB3's over ding_lite's where both are negative (Pendulum's returns are costs), so
that below 1 is always ding_lite behind (the speed ratio is printed by ``speed``).

    python benchmarks/offpolicy_mujoco.py [--algos sac td3] [--envs hopper halfcheetah] [--seeds 0 1 2]
                                          [--steps 300000] [--out /tmp/offpolicy_mujoco]
    python benchmarks/offpolicy_mujoco.py --envs pendulum --out /tmp/offpolicy_pendulum  # 20k steps, eval every 1k
    python benchmarks/offpolicy_mujoco.py --part speed [--algos sac td3] [--speed-steps 2000] [--repeats 3]
    python benchmarks/offpolicy_mujoco.py ... --set policy.learn.gradient_dtype=float32   # ding_lite's side overridden
    python benchmarks/offpolicy_mujoco.py --report [--out /tmp/offpolicy_mujoco]
    python benchmarks/offpolicy_mujoco.py --part paired --envs pendulum --out /tmp/offpolicy_pendulum
    python benchmarks/offpolicy_mujoco.py --run sac hopper 0 sb3 [--steps ...]  # one side of one run (learn: two)

The settings of both sides, and SB3's side itself: ``benchmarks/offpolicy_sb3.py``.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's ding_lite, not an installed one
from benchmarks.offpolicy_sb3 import (  # noqa: E402 - SB3's side, after the path
    ENV_IDS,
    SPEED_WARMUP,
    read_jsonl,
    sb3_rate,
    sb3_run,
)

MUJOCO = ("hopper", "halfcheetah")  # the default --envs
CONFIGS = {**{(algo, env): ROOT / "dizoo" / "mujoco" / env / "config" / f"{env}_{algo}_config.py"
              for algo in ("sac", "td3") for env in MUJOCO},
           **{(algo, "pendulum"): ROOT / "dizoo" / "classic_control" / "pendulum" / "config" /
              f"pendulum_{algo}_rlzoo_config.py" for algo in ("sac", "td3")}}
BUDGETS = {"hopper": (300_000, 10_000), "halfcheetah": (300_000, 10_000),  # env: (env steps, between evaluations)
           "pendulum": (20_000, 1_000)}  # rl-zoo's n_timesteps for Pendulum-v1 (SAC and TD3)
FINAL_EVALS = 3  # the final return: the mean of the last evaluations of a run
REPEATED_EVAL_STEPS = 10  # ding_lite evaluations this close are one policy evaluated twice: the later one counts


# ---- ding_lite's side ----------------------------------------------------------------------------------------------
def ding_lite_run(algo: str, env: str, seed: int, steps: int, every: int, episodes: int, run_dir: Path,
                  overrides: list[str]) -> None:
    """Train the dizoo config with the serial pipeline (CLI) to ``steps`` env steps, evaluating every ``every``
    gradient steps (one per env step after the random ones), with ``--set`` ``overrides``; continues an unfinished
    run with ``--resume``."""
    exp = run_dir / "exp"
    if (exp / "result.json").is_file():
        (run_dir / "done").write_text("")
        return
    resume = (exp / "ckpt").is_dir() and any((exp / "ckpt").glob("resume_*.pth.tar"))
    if exp.exists() and not resume:  # killed before its first resume checkpoint: start again in the same folder
        shutil.rmtree(exp)  # (else the CLI writes to exp_1, and the report reads the dead run in exp)
    cmd = [sys.executable, "-m", "ding_lite", "-m", "serial", "-c", str(CONFIGS[(algo, env)]), "-s", str(seed),
           "--exp-name", str(exp), "--max-env-step", str(steps), "--no-progress",
           "--set", f"policy.eval.evaluator.eval_freq={every}", "--set", f"env.n_evaluator_episode={episodes}",
           "--set", "policy.eval.final_episodes=0"] + [arg for kv in overrides for arg in ("--set", kv)] + \
        (["--resume"] if resume else [])
    run_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(cmd, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    (run_dir / "done").write_text("")


def ding_lite_curve(run_dir: Path) -> list[dict[str, Any]]:
    """The evaluations of a ding_lite run from its tensorboard events: env step, mean return, seconds so far. The
    pipeline logs its env steps per second every ``log_show_after_iter`` updates over the window since the last
    one; the seconds are those windows' lengths summed (they include the evaluations in them, where SB3's side
    excludes its own)."""
    from ding_lite.utils.events import read_scalars

    log = run_dir / "exp" / "log"
    if not log.is_dir():
        return []
    scalars = read_scalars(log).series
    returns = scalars.get("eval/return_mean")
    rates = scalars.get("speed/env_steps_per_second")
    if returns is None:
        return []
    seconds_at: list[tuple[int, float]] = []  # (env step, seconds up to it)
    total, last = 0.0, 0
    for step, rate in zip(rates.steps if rates is not None else [], rates.values if rates is not None else [],
                          strict=True):
        if step > last and rate > 0:
            total += (step - last) / rate
        last = step
        seconds_at.append((step, total))
    points: list[dict[str, Any]] = []
    for step, ret in zip(returns.steps, returns.values, strict=True):
        before = [s for k, s in seconds_at if k <= step]
        if points and step - points[-1]["env_step"] <= REPEATED_EVAL_STEPS:
            points.pop()  # the run's closing evaluation right after a periodic one: one evaluation, not two
        points.append(dict(env_step=step, ret=ret, train_s=round(before[-1], 2) if before else 0.0))
    return points


# ---- speed: the sides in turn -------------------------------------------------------------------------------------


def ding_lite_rate(algo: str, env: str, steps: int, overrides: list[str]) -> tuple[float, float]:
    """Training env steps per wall and per CPU second of the dizoo config after ``SPEED_WARMUP`` random steps: the
    serial train loop's work per collect (collect, then the replay schedule: push, sample, learn via the learner)."""
    from ding_lite.build import build, build_env_managers, load_config
    from ding_lite.utils.torch_setup import configure_torch
    from ding_lite.worker.learner import BaseLearner

    configure_torch()  # what the pipelines do: DING_LITE_TORCH_THREADS threads (set by main), denormals flushed
    cfg = load_config(str(CONFIGS[(algo, env)]), seed=0,
                      overrides=[f"policy.learning_starts={SPEED_WARMUP}", *overrides])
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        policy = build(cfg, "policy")
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        buffer = build(cfg, "policy.other.replay_buffer", seed=0)
        learner = BaseLearner(cfg.policy.learn.learner, policy, None, None, cfg.policy.type)
        replay, n_sample = policy.learn_mode.replay, int(cfg.policy.collect.n_sample)

        def run(until: int) -> None:
            while collector.env_step < until:
                samples, _ = collector.collect(n_sample, learner.train_iter)
                replay.train(buffer, samples, collector.env_step, learner.train)

        run(SPEED_WARMUP + 10)  # the random steps and the first updates (Adam's state)
        start, cpu, first = time.perf_counter(), time.process_time(), collector.env_step
        run(first + steps)
        done = collector.env_step - first
        return done / (time.perf_counter() - start), done / (time.process_time() - cpu)


def speed(algos: list[str], envs: list[str], steps: int, repeats: int, overrides: list[str]) -> None:
    """``repeats`` rounds of SB3 then ding_lite per (algo, env); the ratio of each round (wall and CPU clocks), and
    their medians."""
    load = os.getloadavg()[0]
    ratios: list[float] = []
    print(f"{'algo':<6}{'env':<13}{'round':>6}{'SB3 wall':>10}{'ours wall':>11}{'ratio':>7}{'SB3 cpu':>9}"
          f"{'ours cpu':>10}{'ratio':>7}")
    for algo in algos:
        for env in envs:
            wall, cpu = [], []
            for k in range(repeats):
                sb3, ours = sb3_rate(algo, env, steps), ding_lite_rate(algo, env, steps, overrides)
                wall.append(ours[0] / sb3[0])
                cpu.append(ours[1] / sb3[1])
                print(f"{algo:<6}{env:<13}{k + 1:>6}{sb3[0]:>10.1f}{ours[0]:>11.1f}{wall[-1]:>7.2f}{sb3[1]:>9.1f}"
                      f"{ours[1]:>10.1f}{cpu[-1]:>7.2f}", flush=True)
            ratios.append(statistics.median(wall))
            print(f"{algo} {env}: median training env steps/s ratio ding_lite/SB3 {ratios[-1]:.2f} per wall second, "
                  f"{statistics.median(cpu):.2f} per CPU second, over {repeats} rounds of {steps} steps", flush=True)
    import torch

    print(f"load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
          f"{torch.get_num_threads()} torch thread(s) per side")
    print(f"ratio {min(ratios):.2f}")


# ---- learn: both sides at once, and the report ----------------------------------------------------------------------
SIDES = ("ding_lite", "sb3")


def run_dir(out: Path, algo: str, env: str, seed: int, side: str) -> Path:
    return out / f"{algo}_{env}_s{seed}_{side}"


def budget(args: argparse.Namespace, env: str) -> tuple[int, int]:
    """(env steps per run, env steps between evaluations) for ``env``: ``--steps`` and ``--eval-every`` where given,
    else the env's own (``BUDGETS``)."""
    steps, every = BUDGETS[env]
    return (steps if args.steps is None else args.steps), (every if args.eval_every is None else args.eval_every)


def learn(args: argparse.Namespace) -> None:
    """Every (algo, env, seed) not done yet: the two sides at once, each in its own process (``--run``)."""
    for algo in args.algos:
        for env in args.envs:
            steps, every = budget(args, env)
            for seed in args.seeds:
                todo = [side for side in SIDES if not (run_dir(args.out, algo, env, seed, side) / "done").is_file()]
                procs = [subprocess.Popen([sys.executable, __file__, "--run", algo, env, str(seed), side,
                                           "--steps", str(steps), "--eval-every", str(every),
                                           "--episodes", str(args.episodes), "--out", str(args.out),
                                           "--threads", str(args.threads)]
                                          + [arg for kv in args.overrides for arg in ("--set", kv)]) for side in todo]
                for proc in procs:
                    if proc.wait() != 0:
                        raise SystemExit(f"{algo} {env} seed {seed}: a side failed (exit {proc.returncode})")
                print(f"# {algo} {env} seed {seed} done", flush=True)
    report(args)


def curve(out: Path, algo: str, env: str, seed: int, side: str) -> list[dict[str, Any]]:
    folder = run_dir(out, algo, env, seed, side)
    points = ding_lite_curve(folder) if side == "ding_lite" else read_jsonl(folder / "curve.jsonl")
    return [p for p in points if p["env_step"] > 0]


def return_ratio(ours: float, sb3: float) -> float:
    """ding_lite's return over SB3's, below 1 where ding_lite is behind: ``ours / sb3`` for SB3's positive returns,
    ``sb3 / ours`` where both are negative (costs, as Pendulum's: -200 against -150 is 0.75), nan otherwise."""
    if sb3 > 0:
        return ours / sb3
    if sb3 < 0 and ours < 0:
        return sb3 / ours
    return float("nan")


def report(args: argparse.Namespace) -> None:
    """Per (algo, env): each seed's final return and training env steps per second on both sides, the medians over
    the seeds that both sides finished (a run still going is listed, and left out of them), and the last line
    ``ratio X`` (the smallest median final-return ratio ding_lite / SB3 over the pairs)."""
    print(f"{'algo':<5}{'env':<13}{'seed':>5}{'side':>11}{'env_step':>10}{'final':>9}{'steps/s':>9}{'done':>6}")
    ratios: list[float] = []
    for algo in args.algos:
        for env in args.envs:
            finals: dict[str, list[float]] = {side: [] for side in SIDES}
            rates: dict[str, list[float]] = {side: [] for side in SIDES}
            for seed in args.seeds:
                both_done = all((run_dir(args.out, algo, env, seed, side) / "done").is_file() for side in SIDES)
                for side in SIDES:
                    points = curve(args.out, algo, env, seed, side)
                    if not points:
                        continue
                    final = statistics.mean(p["ret"] for p in points[-FINAL_EVALS:])
                    last = points[-1]
                    rate = last["env_step"] / last["train_s"] if last["train_s"] else float("nan")
                    done = (run_dir(args.out, algo, env, seed, side) / "done").is_file()
                    if both_done:
                        finals[side].append(final)
                        rates[side].append(rate)
                    print(f"{algo:<5}{env:<13}{seed:>5}{side:>11}{last['env_step']:>10}{final:>9.1f}{rate:>9.1f}"
                          f"{'yes' if done else 'no':>6}")
            if finals["ding_lite"] and finals["sb3"]:
                med = {side: statistics.median(v) for side, v in finals.items()}
                speed = statistics.median(rates["ding_lite"]) / statistics.median(rates["sb3"])
                ratios.append(return_ratio(med["ding_lite"], med["sb3"]))
                print(f"{algo} {env}: median final return over {len(finals['sb3'])} seed(s) ding_lite "
                      f"{med['ding_lite']:.1f}, SB3 {med['sb3']:.1f} (ratio {ratios[-1]:.2f}); training env steps/s "
                      f"ratio {speed:.2f}")
    print(f"ratio {min(ratios):.2f}" if ratios else "ratio nan (no pair has finished on both sides)")


# ---- paired: both sides' final policies on the same starts -------------------------------------------------------
PAIRED_SEED = 20_000  # episode k of the paired evaluation starts from env.reset(seed=PAIRED_SEED + k) on both sides


def episode_return(env: Any, act: Any, seed: int) -> float:
    """One episode of ``env`` from ``reset(seed=seed)``, actions ``act(obs)``: its return."""
    obs, _ = env.reset(seed=seed)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(act(obs))
        total, done = total + float(reward), terminated or truncated
    return total


def ding_lite_actor(algo: str, env: str, folder: Path) -> Any:
    """The final policy of a finished ding_lite run (its last ``iteration_*`` checkpoint): obs -> greedy action."""
    import torch

    from ding_lite.build import build, build_env_managers, load_config
    from ding_lite.utils.checkpoint import load_policy_weights

    ckpts = sorted((folder / "exp" / "ckpt").glob("iteration_*.pth.tar"), key=lambda c: int(c.name.split("_")[1]
                                                                                         .split(".")[0]))
    if not ckpts:
        raise SystemExit(f"{folder}: no iteration checkpoint")
    cfg = load_config(str(CONFIGS[(algo, env)]), seed=0)
    _, evaluator_env = build_env_managers(cfg, 0, collect=False)  # fills the model's shapes from the env
    evaluator_env.close()
    policy = build(cfg, "policy", enable_field=("eval",))
    load_policy_weights(policy.eval_mode, ckpts[-1])

    def act(obs: Any) -> Any:
        with torch.no_grad():
            return policy._greedy(torch.as_tensor(obs, dtype=torch.float32)[None])[0].numpy()

    return act


def paired(args: argparse.Namespace) -> None:
    """Each finished (algo, env, seed): both sides' final policies, deterministic, on the same ``--paired-episodes``
    starts; the means, and the mean of the per-start differences (ding_lite - SB3) with its standard error. The
    evaluations during training use different starts on the two sides, and on Pendulum-v1 the start alone moves a
    good policy's return between about 0 and -350, so a gap between 10-episode means can be the starts."""
    import gymnasium as gym
    import numpy as np
    import torch
    from stable_baselines3 import SAC, TD3

    torch.set_flush_denormal(False)
    print(f"{'algo':<5}{'env':<13}{'seed':>5}{'ding_lite':>11}{'SB3':>9}{'diff':>8}{'s.e.':>7}")
    for algo in args.algos:
        for env in args.envs:
            means: dict[str, list[float]] = {side: [] for side in SIDES}
            for seed in args.seeds:
                folders = {side: run_dir(args.out, algo, env, seed, side) for side in SIDES}
                if not all((f / "done").is_file() for f in folders.values()) or \
                        not (folders["sb3"] / "final.zip").is_file():
                    continue
                sb3 = {"sac": SAC, "td3": TD3}[algo].load(folders["sb3"] / "final.zip", device="cpu")
                actors = {"ding_lite": ding_lite_actor(algo, env, folders["ding_lite"]),
                          "sb3": lambda obs, model=sb3: model.predict(obs, deterministic=True)[0]}
                returns = {}
                for side, act in actors.items():
                    gym_env = gym.make(ENV_IDS[env])
                    returns[side] = np.array([episode_return(gym_env, act, PAIRED_SEED + k)
                                              for k in range(args.paired_episodes)])
                    gym_env.close()
                    means[side].append(float(returns[side].mean()))
                diff = returns["ding_lite"] - returns["sb3"]
                err = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
                print(f"{algo:<5}{env:<13}{seed:>5}{means['ding_lite'][-1]:>11.1f}{means['sb3'][-1]:>9.1f}"
                      f"{diff.mean():>8.1f}{err:>7.1f}", flush=True)
            if means["sb3"]:
                print(f"{algo} {env}: median over {len(means['sb3'])} seed(s) of the paired means: ding_lite "
                      f"{statistics.median(means['ding_lite']):.1f}, SB3 {statistics.median(means['sb3']):.1f} "
                      f"({args.paired_episodes} starts each)")


# ---- driver --------------------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algos", nargs="+", default=["sac", "td3"], choices=["sac", "td3"])
    parser.add_argument("--envs", nargs="+", default=list(MUJOCO), choices=list(ENV_IDS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=None,
                        help="env steps per run (default: the env's, 300,000 on MuJoCo, 20,000 on Pendulum-v1)")
    parser.add_argument("--eval-every", type=int, default=None,
                        help="env steps between evaluations (default: the env's, 10,000 on MuJoCo, 1,000 on "
                             "Pendulum-v1)")
    parser.add_argument("--episodes", type=int, default=10, help="episodes per evaluation")
    parser.add_argument("--out", type=Path, default=Path("/tmp/offpolicy_mujoco"))
    parser.add_argument("--part", choices=["learn", "speed", "paired"], default="learn",
                        help="paired: the finished runs' final policies on the same starts on both sides")
    parser.add_argument("--paired-episodes", type=int, default=100, help="starts per run (--part paired)")
    parser.add_argument("--speed-steps", type=int, default=2000, help="timed env steps per side and round")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the sides in turn (speed)")
    parser.add_argument("--report", action="store_true", help="print the table of the runs saved under --out")
    parser.add_argument("--run", nargs=4, metavar=("ALGO", "ENV", "SEED", "SIDE"), help="one side of one run")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on every side")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a config override for ding_lite's side (repeatable), e.g. "
                             "policy.learn.gradient_dtype=float32; give such runs their own --out")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    os.environ["DING_LITE_TORCH_THREADS"] = str(args.threads)
    if args.part == "speed":
        speed(args.algos, args.envs, args.speed_steps, args.repeats, args.overrides)
        return
    if args.part == "paired":
        paired(args)
        return
    if args.run:
        algo, env, seed, side = args.run
        folder = run_dir(args.out, algo, env, int(seed), side)
        steps, every = budget(args, env)
        if side == "sb3":
            sb3_run(algo, env, int(seed), steps, every, args.episodes, folder)
        else:
            ding_lite_run(algo, env, int(seed), steps, every, args.episodes, folder, args.overrides)
    elif args.report:
        report(args)
    else:
        learn(args)


if __name__ == "__main__":
    main()

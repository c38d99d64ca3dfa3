"""Training throughput on real workloads against Stable-Baselines3: env steps per second of collection plus learning,
PPO on Hopper-v4 and on Pong, same hyperparameters on both sides (the dizoo configs': CleanRL's ppo_continuous_action
set on Hopper, rl-zoo's Atari set on Pong), side by side in one run.

Sides:
- ``sb3``: SB3 PPO with the config's hyperparameters: Hopper through ``DummyVecEnv`` + ``VecNormalize``
  (observations and rewards; the translation of ``benchmarks/zoo_sb3.py``), Pong with rl-zoo's setup,
  ``AtariWrapper`` + ``VecFrameStack(4)`` over ``DummyVecEnv``;
- ``ding_lite envpool``: the dizoo config as shipped (the ``envpool`` manager);
- ``ding_lite gym``: the same config on the plain gymnasium route (``env.type`` mujoco / atari, ``base`` manager: in
  this process, as SB3's ``DummyVecEnv``).

Atari variant: every side plays ``Pong`` without sticky actions (``repeat_action_probability=0``), 4-frame skip with
max-pooling, 30 no-op starts, fire reset, 84x84 grey frames, 4 stacked. SB3's ``AtariWrapper`` also clips rewards
and ends an episode at a life loss (Pong has no lives) - neither changes the work per step.

Each side builds its envs and model, runs one collect + learn to warm up, then is timed over ``--steps`` env steps
(collects and learn steps, no evaluation). The sides run in turn, ``--repeats`` rounds (SB3, envpool, gym, SB3, ...),
and each ratio is taken within a round, so a load change on the shared machine hits both of its rates; the table
gives the median ratio over the rounds with its min-max, and the load average at the start and the end. Rates per
wall second and per CPU second of the process (all its threads: the CPU rate is the steadier one on a loaded
machine, the wall rate the one a user waits for). One torch thread on every side (``--threads``). Each side runs with
its own framework's torch settings: ding_lite's pipelines flush denormal floats to zero (``configure_torch``), SB3
leaves torch's default (denormals kept); ``--sb3-flush-denormal`` gives SB3 the flushing too. The last line is
the smallest median wall-clock envpool ratio over the tasks (ding_lite envpool steps/s divided by SB3's), e.g.
``ratio 1.62``.

    python benchmarks/throughput_real.py [--tasks hopper pong] [--steps 4096] [--pong-steps 4096] [--threads 1]
                                         [--repeats 5] [--sb3-flush-denormal]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite, not an installed one

import torch  # noqa: E402

from ding_lite.build import build, build_env_managers, load_config
from ding_lite.utils.torch_setup import configure_torch  # noqa: E402

DIZOO = Path(__file__).resolve().parents[1] / "dizoo"
CONFIGS = {"hopper": DIZOO / "mujoco/hopper/config/hopper_ppo_config.py",
           "pong": DIZOO / "atari/pong/config/pong_ppo_config.py"}
GYM_ROUTE = {"hopper": "mujoco", "pong": "atari"}


# ---- ding_lite ---------------------------------------------------------------------------------------------------
def ding_lite_rate(task: str, route: str, steps: int) -> tuple[float, float]:
    """Training env steps per wall second and per CPU second (all threads) of the dizoo config (``route``:
    'envpool' as shipped, or 'gym')."""
    overrides = [] if route == "envpool" else [f"env.type={GYM_ROUTE[task]}", "env.manager.type=base"]
    configure_torch()  # what the pipelines do: DING_LITE_TORCH_THREADS threads (set by main), denormals flushed
    cfg = load_config(str(CONFIGS[task]), overrides=overrides, seed=0)
    collector_env, _ = build_env_managers(cfg, seed=0, evaluate=False)
    with collector_env:
        policy = build(cfg, "policy", enable_field=["learn", "collect"])
        collector = build(cfg, "policy.collect.collector", collector_env, policy.collect_mode)
        n_sample = int(cfg.policy.collect.n_sample)
        policy.learn_mode.forward(collector.collect(n_sample)[0])  # warm-up
        start, cpu, start_step = time.perf_counter(), time.process_time(), collector.env_step
        while collector.env_step - start_step < steps:
            policy.learn_mode.forward(collector.collect(n_sample)[0])
        done = collector.env_step - start_step
        return done / (time.perf_counter() - start), done / (time.process_time() - cpu)


# ---- SB3 ---------------------------------------------------------------------------------------------------------
def sb3_hopper(seed: int = 0) -> Any:
    """SB3's PPO with the dizoo Hopper config's hyperparameters (8 envs x 256 steps, CleanRL's set)."""
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from benchmarks.zoo_sb3 import sb3_ppo_kwargs

    cfg = load_config(str(CONFIGS["hopper"]), seed=seed)
    ppo_kwargs, norm_kwargs = sb3_ppo_kwargs(cfg, 1_000_000)
    env = VecNormalize(DummyVecEnv([lambda: gym.make("Hopper-v4") for _ in range(int(cfg.env.collector_env_num))]),
                       **norm_kwargs)
    return PPO("MlpPolicy", env, seed=seed, device="cpu", **ppo_kwargs)


def sb3_pong() -> Any:
    """rl-zoo's PPO Atari hyperparameters: 8 envs x 128 steps, 4 epochs, minibatches of 256, CnnPolicy."""
    import ale_py
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.atari_wrappers import AtariWrapper
    from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

    gym.register_envs(ale_py)

    def make() -> gym.Env:
        return AtariWrapper(gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0))

    env = VecFrameStack(DummyVecEnv([make for _ in range(8)]), n_stack=4)
    return PPO("CnnPolicy", env, n_steps=128, batch_size=256, n_epochs=4, learning_rate=2.5e-4, clip_range=0.1,
               vf_coef=0.5, ent_coef=0.01, seed=0, device="cpu")


def sb3_rate(task: str, steps: int, flush_denormal: bool = False) -> tuple[float, float]:
    """Training env steps per wall second and per CPU second of SB3 with the config's settings (torch's default for
    denormal floats unless ``flush_denormal``)."""
    torch.set_flush_denormal(flush_denormal)
    model = {"hopper": sb3_hopper, "pong": sb3_pong}[task]()
    per_collect = model.n_steps * model.n_envs
    model.learn(total_timesteps=per_collect)  # warm-up
    start, cpu = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps, reset_num_timesteps=False)
    done = model.num_timesteps - per_collect
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    model.get_env().close()
    return done / wall, done / cpu


def measure(task: str, steps: int, repeats: int, sb3_flush: bool) -> dict[str, list[tuple[float, float]]]:
    """``repeats`` rounds of SB3, ding_lite envpool, ding_lite gym, one after the other in each round (A B C A B C
    ...), so a load change on the shared machine hits neighbouring runs of every side alike."""
    runs: dict[str, list[tuple[float, float]]] = {"sb3": [], "envpool": [], "gym": []}
    for k in range(repeats):
        runs["sb3"].append(sb3_rate(task, steps, sb3_flush))
        runs["envpool"].append(ding_lite_rate(task, "envpool", steps))
        runs["gym"].append(ding_lite_rate(task, "gym", steps))
        rates = ", ".join(f"{side} {r[-1][0]:,.0f}" for side, r in runs.items())
        print(f"# {task} round {k + 1}: wall steps/s {rates}", flush=True)
    return runs


def ratio_cell(side: list[tuple[float, float]], sb3: list[tuple[float, float]], k: int) -> tuple[float, str]:
    """Median over rounds of the side's rate divided by SB3's in the same round (clock ``k``: 0 wall, 1 CPU), and
    the cell 'median (min-max)'."""
    ratios = [a[k] / b[k] for a, b in zip(side, sb3, strict=True)]
    med = statistics.median(ratios)
    return med, f"{med:.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=["hopper", "pong"], choices=list(CONFIGS))
    parser.add_argument("--steps", type=int, default=4096, help="timed env steps per side and round for Hopper")
    parser.add_argument("--pong-steps", type=int, default=4096, help="timed env steps per side and round for Pong")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on every side")
    parser.add_argument("--repeats", type=int, default=5, help="rounds of the sides in turn (the median counts)")
    parser.add_argument("--sb3-flush-denormal", action="store_true",
                        help="flush denormal floats to zero on SB3's side too (ding_lite's default, not SB3's)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ["DING_LITE_TORCH_THREADS"] = str(args.threads)
    load = os.getloadavg()
    rows = [(task, measure(task, args.pong_steps if task == "pong" else args.steps, args.repeats,
                           args.sb3_flush_denormal)) for task in args.tasks]
    sb3_denormals = "flushed" if args.sb3_flush_denormal else "kept (torch's default)"
    print(f"PPO training env steps/s (collect + learn), {args.repeats} rounds of the sides in turn, {args.threads} "
          f"torch thread(s), denormals flushed on ding_lite's side and {sb3_denormals} on SB3's, Pong without sticky "
          f"actions; per wall second and per CPU second (all threads): median "
          f"rate over rounds, ratios to SB3 of the same round as median (min-max); load average "
          f"{load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end")
    print(f"{'task':<8}{'clock':<6}{'SB3':>7}{'envpool':>9}{'gym':>7}{'envpool/SB3':>19}{'gym/SB3':>19}")
    wall_envpool = []
    for task, runs in rows:
        for k, clock in enumerate(("wall", "cpu")):
            med = {side: statistics.median(r[k] for r in v) for side, v in runs.items()}
            pool, pool_cell = ratio_cell(runs["envpool"], runs["sb3"], k)
            _, gym_cell = ratio_cell(runs["gym"], runs["sb3"], k)
            if k == 0:
                wall_envpool.append(pool)
            print(f"{task:<8}{clock:<6}{med['sb3']:>7,.0f}{med['envpool']:>9,.0f}{med['gym']:>7,.0f}{pool_cell:>19}"
                  f"{gym_cell:>19}")
    print(f"ratio {min(wall_envpool):.2f}")


if __name__ == "__main__":
    main()

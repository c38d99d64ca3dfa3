"""The SB3 side of ``benchmarks/offpolicy_mujoco.py``: SAC and TD3 with rl-zoo's hyperparameters, trained,
evaluated and timed as ding_lite's side is, and resumable; and the curve files (JSON lines) both sides' runs write.

Settings (rl-zoo's hyperparams/sac.yml and td3.yml, entries Hopper-v4 and HalfCheetah-v4; SB3's defaults for the
rest): SAC 256x256 networks, Adam 3e-4, batch 256, buffer 1e6, tau 0.005, gamma 0.99, one gradient step per env
step, automatic temperature (target entropy -dim(A)), 10,000 uniform random steps first. TD3 400x300 networks, Adam
1e-3, batch 256, buffer 1e6, tau 0.005, gamma 0.99, exploration N(0, 0.1), target smoothing N(0, 0.2) clipped at
0.5, actor and targets every 2nd critic step, 10,000 random steps first. One torch thread on both sides. The
dizoo configs run their gradient-only products in bfloat16 (``policy.learn.gradient_dtype``, docs/sac_td3.md); SB3 is
float32 throughout.

Pendulum-v1 (rl-zoo's entries Pendulum-v1, 20,000 env steps; the dizoo configs ``pendulum_{sac,td3}_rlzoo_config.py``,
float32): SAC 256x256 networks, Adam 1e-3, 100 random steps first, SB3's SAC defaults otherwise (as above); TD3
400x300 networks, Adam 1e-3, gamma 0.98, buffer 200,000, exploration N(0, 0.1), one gradient step per env step,
10,000 random steps first, SB3's TD3 defaults otherwise. ``--steps`` and ``--eval-every`` default to each env's
budget and interval (``BUDGETS`` in ``offpolicy_mujoco.py``).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

ENV_IDS = {"hopper": "Hopper-v4", "halfcheetah": "HalfCheetah-v4", "pendulum": "Pendulum-v1"}
EVAL_SEED_OFFSET = 1000  # evaluation envs' seeds, apart from the training env's (as ding_lite's pipelines)
SPEED_WARMUP = 1000  # random env steps (learning_starts) before the timed ones, on both sides


# ---- SB3's side ----------------------------------------------------------------------------------------------------
# rl-zoo's hyperparams/sac.yml and td3.yml entries (less n_timesteps and policy: 'MlpPolicy'); SB3's defaults for the
# rest. Pendulum-v1: the entries as rl-baselines3-zoo has them at commit eec15dc (2026-04-01), which added a default
# entry and left them as they were; TD3's last changed in 8cecab4 (2024-01-16), SAC's settings not since it became
# Pendulum-v1 (7bfab98, 2022-02-23).
_TD3_MUJOCO = dict(learning_starts=10000, learning_rate=1e-3, batch_size=256, train_freq=1, gradient_steps=1,
                   noise_type="normal", noise_std=0.1, policy_kwargs=dict(net_arch=[400, 300]))
RLZOO = {
    ("sac", "Hopper-v4"): dict(learning_starts=10000),
    ("sac", "HalfCheetah-v4"): dict(learning_starts=10000),
    ("td3", "Hopper-v4"): _TD3_MUJOCO,
    ("td3", "HalfCheetah-v4"): _TD3_MUJOCO,
    ("sac", "Pendulum-v1"): dict(learning_rate=1e-3),
    ("td3", "Pendulum-v1"): dict(gamma=0.98, buffer_size=200000, learning_starts=10000, noise_type="normal",
                                 noise_std=0.1, gradient_steps=1, train_freq=1, learning_rate=1e-3,
                                 policy_kwargs=dict(net_arch=[400, 300])),
}


def sb3_kwargs(algo: str, env_id: str, n_act: int) -> dict[str, Any]:
    """SB3's keyword arguments for rl-zoo's entry of (``algo``, ``env_id``), as rl-zoo's ExpManager translates it:
    ``noise_type: normal`` with ``noise_std`` becomes ``NormalActionNoise`` with that sigma in every one of the
    ``n_act`` action dimensions (in units of the half-range: SB3 adds it to the action scaled to [-1, 1])."""
    import numpy as np
    from stable_baselines3.common.noise import NormalActionNoise

    kwargs = {k: (dict(v) if isinstance(v, dict) else v) for k, v in RLZOO[(algo, env_id)].items()}
    noise_type, noise_std = kwargs.pop("noise_type", None), kwargs.pop("noise_std", None)
    if noise_type is not None:
        if noise_type != "normal":
            raise ValueError(f"noise_type {noise_type!r}: only 'normal' is translated")
        kwargs["action_noise"] = NormalActionNoise(np.zeros(n_act), noise_std * np.ones(n_act))
    return kwargs


def sb3_model(algo: str, env_id: str, seed: int) -> Any:
    """SB3 with rl-zoo's settings for ``algo`` on ``env_id`` (its defaults where rl-zoo sets nothing)."""
    import gymnasium as gym
    from stable_baselines3 import SAC, TD3

    env = gym.make(env_id)
    kwargs = sb3_kwargs(algo, env_id, env.action_space.shape[0])
    return {"sac": SAC, "td3": TD3}[algo]("MlpPolicy", env, seed=seed, device="cpu", **kwargs)


def sb3_eval(model: Any, env_id: str, episodes: int, seed: int) -> float:
    import gymnasium as gym
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    env = DummyVecEnv([lambda: Monitor(gym.make(env_id))])
    env.seed(seed)
    mean, _ = evaluate_policy(model, env, n_eval_episodes=episodes, deterministic=True)
    env.close()
    return float(mean)


def sb3_run(algo: str, env: str, seed: int, steps: int, every: int, episodes: int, run_dir: Path) -> None:
    """Train SB3 to ``steps`` env steps, appending the evaluation every ``every`` steps to ``run_dir/curve.jsonl``;
    continues from the checkpoint (model and replay buffer, written at every evaluation) when there is one."""
    import torch

    torch.set_flush_denormal(False)  # torch's default, which SB3 keeps
    from stable_baselines3 import SAC, TD3

    env_id = ENV_IDS[env]
    run_dir.mkdir(parents=True, exist_ok=True)
    zip_path, buffer_path, curve_path = run_dir / "model.zip", run_dir / "buffer.pkl", run_dir / "curve.jsonl"
    points = read_jsonl(curve_path)
    if zip_path.is_file() and buffer_path.is_file() and points:
        import gymnasium as gym

        model = {"sac": SAC, "td3": TD3}[algo].load(zip_path, env=gym.make(env_id), device="cpu")
        model.load_replay_buffer(buffer_path)
        points = [p for p in points if p["env_step"] <= model.num_timesteps]  # those after the checkpoint go again
        write_jsonl(curve_path, points)
    else:
        model, points = sb3_model(algo, env_id, seed), []
        write_jsonl(curve_path, [])
    trained_s = points[-1]["train_s"] if points else 0.0
    while model.num_timesteps < steps:
        mark = min((model.num_timesteps // every + 1) * every, steps)
        start = time.perf_counter()
        model.learn(total_timesteps=mark - model.num_timesteps, reset_num_timesteps=False)
        trained_s += time.perf_counter() - start
        mean = sb3_eval(model, env_id, episodes, seed + EVAL_SEED_OFFSET)
        model.save(zip_path)  # before the point is appended: a point in the curve always has its checkpoint
        model.save_replay_buffer(buffer_path)
        append_jsonl(curve_path, dict(env_step=model.num_timesteps, ret=mean, train_s=round(trained_s, 2)))
        print(f"sb3 {algo} {env} s{seed} env_step {model.num_timesteps} return {mean:.1f} "
              f"({model.num_timesteps / trained_s:.1f} steps/s)", flush=True)
    zip_path.replace(run_dir / "final.zip")  # the final policy, for --part paired
    buffer_path.unlink(missing_ok=True)
    (run_dir / "done").write_text("")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")



def sb3_rate(algo: str, env: str, steps: int) -> tuple[float, float]:
    """Training env steps per wall and per CPU second of SB3 with the same settings after ``SPEED_WARMUP`` random
    steps."""
    import torch

    torch.set_flush_denormal(False)  # torch's default, which SB3 keeps
    model = sb3_model(algo, ENV_IDS[env], 0)
    model.learning_starts = SPEED_WARMUP
    model.learn(SPEED_WARMUP + 10)
    start, cpu, first = time.perf_counter(), time.process_time(), model.num_timesteps
    model.learn(steps, reset_num_timesteps=False)
    done = model.num_timesteps - first
    return done / (time.perf_counter() - start), done / (time.process_time() - cpu)



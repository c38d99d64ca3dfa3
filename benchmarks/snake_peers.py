"""Snake arena peers: does another library's learner beat three careful snakes more often than ding_lite's?

The self-play bar for the snake arena (docs/selfplay.md) is 0.4 wins for 1 learner against 3 ``snake_careful``
snakes. This script takes the self-play machinery out of the comparison: the arena with careful snakes in the other
seats is a single-agent gymnasium env (``SnakeVsCareful-v0``, dizoo/board_games/snake/envs/versus_scripted.py), and
the same learners train on it in ding_lite's serial pipeline and in Stable-Baselines3, with the settings of the dizoo
snake configs (``snake_arena_dqn_config.py``, ``snake_arena_ppo_config.py``) on both sides where SB3 has them (its DQN
has no dueling head and lowers epsilon linearly, ding_lite's exponentially). Each run is then measured
the same way: its final policy, greedy, in 200 games with seeds 10,000-10,199 (the agent's win as the arena books
it: its score beats every other snake's). A careful snake in the agent's seat is the reference (the ``careful``
side, no training).

    python benchmarks/snake_peers.py --sides ding_lite_dqn sb3_dqn ding_lite_ppo sb3_ppo careful --seeds 0 1 2 \
        --out DIR [--steps-dqn 60000] [--steps-ppo 300000]

A run whose ``result.json`` is in ``DIR`` is not run again; the table is printed at the end.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's ding_lite and dizoo

import numpy as np  # noqa: E402
import torch  # noqa: E402

from ding_lite.build import build, load_config  # noqa: E402
from ding_lite.config.reader import read_config  # noqa: E402
from ding_lite.entry.serial import serial_pipeline  # noqa: E402
from ding_lite.utils.checkpoint import latest_checkpoint, load_checkpoint  # noqa: E402
from dizoo.board_games.snake.envs.heuristic import SnakeCareful  # noqa: E402
from dizoo.board_games.snake.envs.versus_scripted import SnakeVersusScripted  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parents[1] / "dizoo" / "board_games" / "snake" / "config"
GAMES, GAME_SEED = 200, 10_000
SIDES = ("ding_lite_dqn", "sb3_dqn", "ding_lite_ppo", "sb3_ppo", "careful")
Act = Callable[[np.ndarray], int]


def measure(act: Act) -> dict[str, float]:
    """Wins and draws of ``act`` (observation -> move) in the agent's seat over the measurement's games."""
    env, wins, draws = SnakeVersusScripted(), 0.0, 0.0
    for game in range(GAMES):
        obs, _ = env.reset(seed=GAME_SEED + game)
        done, info = False, {}
        while not done:
            obs, _, terminated, truncated, info = env.step(act(obs))
            done = terminated or truncated
        wins, draws = wins + info["win"], draws + info["draw"]
    return {"win": wins / GAMES, "draw": draws / GAMES}


def policy_section(algo: str) -> dict[str, Any]:
    """The policy settings of the dizoo snake config of ``algo`` (its league and arena left out)."""
    main_config, _ = read_config(CONFIG_DIR / f"snake_arena_{algo}_config.py")
    return dict(main_config["policy"])


def ding_lite_config(algo: str) -> dict[str, Any]:
    policy = policy_section(algo)
    policy["eval"] = dict(evaluator=dict(eval_freq=100_000_000))  # measured after training, not during
    envs = 8 if algo == "dqn" else 16  # as the dizoo configs
    return dict(exp_name=f"snake_vs_careful_{algo}",
                env=dict(type="gymnasium", env_id="SnakeVsCareful-v0",
                         import_names=["dizoo.board_games.snake.envs.versus_scripted"], collector_env_num=envs,
                         evaluator_env_num=4, n_evaluator_episode=8, stop_value=1e9),
                policy=policy)


def ding_lite_side(algo: str, seed: int, steps: int, folder: Path) -> Act:
    cfg = ding_lite_config(algo)
    result = serial_pipeline(cfg, seed=seed, max_env_step=steps, exp_dir=folder / "run", progress=False)
    shapes = ["policy.model.obs_shape=21", "policy.model.action_shape=3"]  # the run inferred them from the env
    compiled = load_config(cfg, overrides=shapes + (["policy.model.action_space=discrete"] if algo == "ppo" else []))
    policy = build(compiled, "policy", enable_field=("eval",))
    ckpt = latest_checkpoint(Path(result["exp_dir"]) / "ckpt")
    assert ckpt is not None, folder
    policy.eval_mode.load_state_dict(load_checkpoint(ckpt)["policy"])
    model = policy.model.eval()

    def act(obs: np.ndarray) -> int:
        with torch.no_grad():
            x = torch.as_tensor(obs[None])
            out = model(x) if algo == "dqn" else model.compute_actor(x)
        return int(out["logit"].argmax())
    return act


def sb3_side(algo: str, seed: int, steps: int) -> Act:
    from stable_baselines3 import DQN, PPO
    from stable_baselines3.common.env_util import make_vec_env

    if algo == "dqn":  # snake_arena_dqn_config.py's settings in SB3's terms (counts in env steps, 8 envs)
        venv = make_vec_env(SnakeVersusScripted, n_envs=8, seed=seed)
        model: Any = DQN("MlpPolicy", venv, learning_rate=1e-3, buffer_size=20_000, learning_starts=1_000,
                         batch_size=64, gamma=0.97, n_steps=3,
                         train_freq=2, gradient_steps=1,  # 2 updates per 32 env steps
                         target_update_interval=200 * 16,  # every 200 updates
                         exploration_fraction=0.25, exploration_initial_eps=0.9, exploration_final_eps=0.05,
                         policy_kwargs=dict(net_arch=[64, 64]), seed=seed, device="cpu")
    else:  # snake_arena_ppo_config.py's: 16 envs x 128 steps = 2,048 a collect, 4 epochs of batches of 256
        venv = make_vec_env(SnakeVersusScripted, n_envs=16, seed=seed)
        model = PPO("MlpPolicy", venv, n_steps=128, batch_size=256, n_epochs=4, gamma=0.99, gae_lambda=0.95,
                    learning_rate=3e-4, ent_coef=0.01, policy_kwargs=dict(net_arch=[128, 128]), seed=seed,
                    device="cpu")
    model.learn(steps)
    return lambda obs: int(model.predict(obs, deterministic=True)[0])


def careful_side(seed: int) -> Act:
    snake = SnakeCareful(seed)
    return lambda obs: int(snake.act(obs[None], np.ones((1, 3), bool))[0])


def run(side: str, seed: int, steps: dict[str, int], out: Path) -> dict[str, Any]:
    folder = out / f"{side}_seed{seed}"
    done = folder / "result.json"
    if done.exists():
        return dict(json.loads(done.read_text()))
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    start = time.perf_counter()
    algo = side.rsplit("_", 1)[-1]
    if side == "careful":
        act, budget = careful_side(seed), 0
    elif side.startswith("sb3"):
        act, budget = sb3_side(algo, seed, steps[algo]), steps[algo]
    else:
        act, budget = ding_lite_side(algo, seed, steps[algo], folder), steps[algo]
    train_s = time.perf_counter() - start
    row = {"side": side, "seed": seed, "env_steps": budget, "train_s": round(train_s, 1), **measure(act)}
    done.write_text(json.dumps(row))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sides", nargs="+", choices=SIDES, default=list(SIDES))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--steps-dqn", type=int, default=60_000)
    parser.add_argument("--steps-ppo", type=int, default=300_000)
    parser.add_argument("--out", type=Path, default=Path("snake_peers"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    steps = {"dqn": args.steps_dqn, "ppo": args.steps_ppo}
    rows = [run(side, seed, steps, args.out) for side in args.sides for seed in args.seeds]
    print(f"{'side':14} {'seed':>4} {'env steps':>10} {'train s':>8} {'wins':>6} {'draws':>6}")
    for r in rows:
        print(f"{r['side']:14} {r['seed']:>4} {r['env_steps']:>10,} {r['train_s']:>8.0f} {r['win']:>6.3f} "
              f"{r['draw']:>6.3f}")


if __name__ == "__main__":
    main()
